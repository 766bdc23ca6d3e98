//! The exposition serves every family Ray's dashboards need, with Ray's type and label
//! keys: checked against the list kept in tests/required_metrics.txt.

#[path = "metrics_support.rs"]
mod support;

use std::sync::Arc;

use rayscope::metrics::{render_all, render_node, RenderContext};
use rayscope::model::NodeState;
use rayscope::sim::Engine;
use rayscope::snapshot::Snapshot;
use support::{parse, Exposition};

fn fixture() -> std::sync::Arc<Snapshot> {
    let root = env!("CARGO_MANIFEST_DIR");
    let yaml = std::fs::read_to_string(format!("{root}/tests/fixtures/metrics_cluster.yaml")).unwrap();
    let mut engine = Engine::new(rayscope::config::load_str(&yaml, "metrics_cluster.yaml").unwrap());
    engine.run_until(40_000_000);
    Arc::new(engine.publish(rayscope::sim::PublishOptions::seq(1)))
}

fn ctx() -> RenderContext {
    RenderContext { metrics_export_port: 8080, ..RenderContext::default() }
}

/// (family, type, label keys) from the list file.
fn required() -> Vec<(String, String, Vec<String>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/required_metrics.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(cols.len(), 3, "bad line in required_metrics.txt: {l}");
            let keys = if cols[2] == "-" { vec![] } else { cols[2].split(',').map(String::from).collect() };
            (cols[0].to_string(), cols[1].to_string(), keys)
        })
        .collect()
}

fn check_required(e: &Exposition) -> Vec<String> {
    let mut problems = Vec::new();
    for (family, kind, keys) in required() {
        let Some(info) = e.families.get(&family) else {
            problems.push(format!("{family}: missing"));
            continue;
        };
        if info.kind != kind {
            problems.push(format!("{family}: type {} (want {kind})", info.kind));
        }
        if info.help.is_empty() {
            problems.push(format!("{family}: no help"));
        }
        let samples: Vec<_> = e.of(&family).collect();
        if samples.is_empty() {
            problems.push(format!("{family}: no samples"));
        }
        for s in samples {
            for key in &keys {
                if !s.has(key) {
                    problems.push(format!("{family}: sample without {key}: {:?}", s.labels));
                    break;
                }
            }
        }
    }
    problems
}

#[test]
fn every_required_family_is_served_with_its_type_and_label_keys() {
    let problems = check_required(&parse(&render_all(&fixture(), None, &ctx())));
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn every_ray_series_carries_session_version_and_instance() {
    let snap = fixture();
    let e = parse(&render_all(&snap, None, &ctx()));
    for s in &e.samples {
        if s.name.starts_with("autoscaler_") {
            // Ray's autoscaler (a Python registry) writes no Version.
            assert!(!s.has("Version"), "{s:?}");
        } else {
            assert_eq!(s.label("Version"), snap.version, "{s:?}");
        }
        if s.name.starts_with("rayscope_") {
            assert!(!s.has("SessionName"), "rayscope_ series stay lint-clean: {s:?}");
            continue;
        }
        assert!(s.name.starts_with("ray_") || s.name.starts_with("autoscaler_"), "unexpected family {}", s.name);
        assert_eq!(s.label("SessionName"), snap.session_name, "{s:?}");
        let instance = s.label("instance");
        let (ip, port) = instance.split_once(':').unwrap_or_else(|| panic!("no instance: {s:?}"));
        assert!(snap.nodes.iter().any(|n| &*n.ip == ip && n.state == NodeState::Alive), "{s:?}");
        assert_eq!(port, if s.name.starts_with("autoscaler_") { "44217" } else { "8080" });
    }
}

#[test]
fn no_series_has_unbounded_labels() {
    // Ids Ray would never put on a metric: task, actor, object, worker ids.
    let e = parse(&render_all(&fixture(), None, &ctx()));
    for s in &e.samples {
        for key in s.labels.keys() {
            assert!(
                !matches!(key.as_str(), "TaskId" | "ActorId" | "ObjectId" | "task_id" | "actor_id" | "object_id"),
                "{s:?}"
            );
        }
    }
}

#[test]
fn node_endpoints_partition_the_node_series() {
    // Every node-scoped series of render_all is served by exactly the endpoint of the
    // node in its instance label, and render_node serves nothing else.
    let snap = fixture();
    let ctx = ctx();
    let all = parse(&render_all(&snap, None, &ctx));
    let mut served = 0;
    for n in snap.nodes.iter().filter(|n| n.state == NodeState::Alive) {
        let e = parse(&render_node(&snap, &n.ip, None, &ctx).unwrap());
        for s in e.samples.iter().filter(|s| !s.name.starts_with("rayscope_")) {
            let ip = s.label("instance").split(':').next().unwrap();
            assert_eq!(ip, &*n.ip, "{}'s endpoint serves another node's series: {s:?}", n.ip);
        }
        served += e.samples.iter().filter(|s| !s.name.starts_with("rayscope_")).count();
    }
    assert_eq!(served, all.samples.iter().filter(|s| !s.name.starts_with("rayscope_")).count());
}

#[test]
fn unknown_and_dead_ips_have_no_endpoint() {
    let snap = fixture();
    let dead = snap.nodes.iter().find(|n| n.state == NodeState::Dead).expect("the fixture kills a node");
    assert!(render_node(&snap, &dead.ip, None, &ctx()).is_none());
    assert!(render_node(&snap, "192.0.2.1", None, &ctx()).is_none());
}
