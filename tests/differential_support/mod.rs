//! The differential harness's two sides as one structure: per step, each family's label
//! keys and the targets (by role: head, worker-N, head-autoscaler, head-dashboard) that
//! serve it. Ray's side is read from a recording of scripts/ray-differential/scenario.py;
//! rayscope's is rendered from the model running tests/fixtures/ray-differential.yaml.
#![allow(dead_code)]

mod allow;
mod live;
#[path = "../metrics_support.rs"]
mod metrics_support;
#[path = "../ray_env/mod.rs"]
mod ray_env;

pub use allow::{differences, differences_for, volatile_kinds, volatile_presence, Diff, STALE_AFTER_HEAD_DEATH};
pub use live::LiveRun;
pub use ray_env::{ray_oldest_python, ray_python};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rayscope::metrics::{render_node, RenderContext, AUTOSCALER_METRIC_PORT};
use rayscope::model::NodeState;
use rayscope::sim::Engine;

/// The scenario's steps and the model's virtual time (µs) at which each is observed
/// (see the timeline in tests/fixtures/ray-differential.yaml).
pub const STEPS: &[(&str, u64)] = &[
    ("idle", 5_000_000),
    ("tasks_running", 25_000_000),
    ("task_retried", 50_000_000),
    ("actor_restarted", 75_000_000),
    ("oom_kill", 110_000_000),
    ("objects_spilled", 140_000_000),
    ("worker_killed", 165_000_000),
    ("head_killed", 190_000_000),
];

/// Counters Ray creates at their first event: the step that event happens in, and the
/// one target that serves it (the node where it happened, or the head for the GCS's).
pub const FIRST_EVENT: &[(&str, &str, &str)] = &[
    ("ray_node_manager_unexpected_worker_failure_total", "actor_restarted", "worker-2"),
    ("ray_memory_manager_worker_eviction_total", "oom_kill", "worker-1"),
    ("ray_node_failure_total", "worker_killed", "head"),
];

/// One family at one step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fam {
    pub label_keys: BTreeSet<String>,
    /// Targets by role: head, worker-1, worker-2, head-autoscaler, head-dashboard.
    pub roles: BTreeSet<String>,
    /// The roles with workers folded together: head, worker, head-autoscaler, ...
    pub kinds: BTreeSet<String>,
}

pub type Shape = BTreeMap<String, Fam>;

pub fn kind_of(role: &str) -> String {
    if role.starts_with("worker-") {
        "worker".into()
    } else {
        role.into()
    }
}

pub fn fixture_path() -> String {
    fixture_path_for(NEWEST)
}

/// The newest and the oldest Ray the harness runs on (the bundle supports those between).
pub const NEWEST: &str = "2.60";
pub const OLDEST: &str = "2.49";

/// The recording of Ray `version` (`2.60`, `2.49`), kept side by side.
pub fn fixture_path_for(version: &str) -> String {
    format!("{}/tests/fixtures/ray-{version}/differential.json", env!("CARGO_MANIFEST_DIR"))
}

/// The steps of a recording, in order.
pub fn recording(path: &str) -> Vec<(String, Shape)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let strings = |v: &serde_json::Value| -> BTreeSet<String> {
        v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
    };
    v["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: no steps"))
        .iter()
        .map(|step| {
            let shape = step["families"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, f)| {
                    let roles = strings(&f["targets"]);
                    let kinds = roles.iter().map(|r| kind_of(r)).collect();
                    (name.clone(), Fam { label_keys: strings(&f["label_keys"]), roles, kinds })
                })
                .collect();
            (step["step"].as_str().unwrap().to_string(), shape)
        })
        .collect()
}

/// The family a sample belongs to, as PromQL names it (histograms without their suffix).
fn family_of<'a>(e: &'a metrics_support::Exposition, sample: &'a str) -> &'a str {
    if e.families.contains_key(sample) {
        return sample;
    }
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = sample.strip_suffix(suffix) {
            if e.families.get(base).is_some_and(|f| f.kind == "histogram" || f.kind == "summary") {
                return base;
            }
        }
    }
    sample
}

/// The model's side: every alive node's endpoint rendered at each step's virtual time.
/// The `instance` label is left out of the keys: Prometheus adds it on Ray's targets,
/// rayscope writes it so one scrape of `/metrics` reads as one scrape per node.
pub fn model_steps() -> Vec<(String, Shape)> {
    model_steps_as(NEWEST)
}

/// [`model_steps`] with the exporter imitating Ray `version`, at its default
/// `RAY_metric_cardinality_level` (as the recording ran).
pub fn model_steps_as(version: &str) -> Vec<(String, Shape)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ray-differential.yaml");
    let yaml = std::fs::read_to_string(path).unwrap();
    let mut cfg = rayscope::config::load_str(&yaml, "ray-differential.yaml").unwrap_or_else(|e| panic!("{e}"));
    cfg.cluster.ray_version = format!("{version}.0");
    let mut engine = Engine::new(cfg);
    let ctx = RenderContext { metrics_export_port: 8080, ..RenderContext::default() };
    let autoscaler = format!(":{AUTOSCALER_METRIC_PORT}");
    let mut out = Vec::new();
    for (step, t) in STEPS {
        engine.run_until(*t);
        let snap = Arc::new(engine.publish(rayscope::sim::PublishOptions::seq(1)));
        let mut workers: Vec<&str> = snap.nodes.iter().filter(|n| !n.is_head).map(|n| &*n.ip).collect();
        workers.sort();
        workers.dedup();
        let mut shape = Shape::new();
        for n in snap.nodes.iter().filter(|n| n.state == NodeState::Alive) {
            let role = if n.is_head {
                "head".to_string()
            } else {
                format!("worker-{}", workers.iter().position(|w| *w == &*n.ip).unwrap() + 1)
            };
            let text = render_node(&snap, &n.ip, None, &ctx).unwrap();
            let e = metrics_support::parse(&text);
            for s in &e.samples {
                let fam = shape.entry(family_of(&e, &s.name).to_string()).or_default();
                let r =
                    if s.label("instance").ends_with(&autoscaler) { "head-autoscaler".into() } else { role.clone() };
                fam.kinds.insert(kind_of(&r));
                fam.roles.insert(r);
                fam.label_keys
                    .extend(s.labels.keys().filter(|k| !matches!(k.as_str(), "instance" | "le" | "quantile")).cloned());
            }
        }
        out.push((step.to_string(), shape));
    }
    out
}

/// Two recordings of real Ray: the same families per step and kind of node, with the
/// same label keys, except the families [`volatile_kinds`] says are served by other nodes
/// from run to run. A family whose presence comes and goes ([`volatile_presence`]) comes
/// and goes per node too: Ray creates it per process, at that process's first event.
pub fn compare_ray_runs(want: &[(String, Shape)], got: &[(String, Shape)]) -> Vec<String> {
    let volatile = volatile_kinds();
    let comes_and_goes = volatile_presence();
    let may_be_absent = |f: &str| comes_and_goes.iter().any(|(p, _)| matches_pattern(p, f));
    let is_volatile = |f: &str| volatile.iter().any(|(p, _)| matches_pattern(p, f)) || may_be_absent(f);
    let mut out = Vec::new();
    if want.len() != got.len() {
        out.push(format!("{} steps recorded, {} now", want.len(), got.len()));
    }
    for ((step, a), (step2, b)) in want.iter().zip(got) {
        if step != step2 {
            out.push(format!("step {step} recorded, {step2} now"));
            continue;
        }
        if step == "head_killed" {
            // What the surviving worker's agent still serves once the head is gone depends
            // on when its cached raylet series expire (measured: all of them 21 s after the
            // head died, none 62 s after): compare only who serves anything.
            let roles =
                |shape: &Shape| -> BTreeSet<String> { shape.values().flat_map(|f| f.roles.iter().cloned()).collect() };
            if roles(a) != roles(b) {
                out.push(format!("{step}: served by {:?}, now by {:?}", roles(a), roles(b)));
            }
            continue;
        }
        let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for f in names {
            match (a.get(f), b.get(f)) {
                (Some(x), Some(y)) => {
                    if x.kinds != y.kinds && !is_volatile(f) {
                        out.push(format!("{step}: {f} served by {:?}, now by {:?}", x.kinds, y.kinds));
                    }
                    if x.label_keys != y.label_keys {
                        out.push(format!("{step}: {f} label keys {:?}, now {:?}", x.label_keys, y.label_keys));
                    }
                }
                (Some(_), None) if !may_be_absent(f) => out.push(format!("{step}: {f} recorded, not exported now")),
                (None, Some(_)) if !may_be_absent(f) => out.push(format!("{step}: {f} exported now, not recorded")),
                (Some(_), None) | (None, Some(_)) => {}
                (None, None) => {}
            }
        }
    }
    out
}

/// Why, once the head is dead, rayscope's surviving workers still serve their node
/// families and Ray's do not: a Ray raylet that cannot reach the GCS exits after
/// `gcs_rpc_server_reconnect_timeout_s` and its node series go with it (its metrics agent
/// keeps serving only its own Python and gRPC families), while rayscope's model keeps the
/// worker nodes alive with the head gone. A model change, noted in docs/ray-differential.md.
pub const AFTER_HEAD_DEATH: &str = "Ray's workers' raylets exit when the GCS is gone; rayscope's workers stay";

/// Label keys Ray's series carry that rayscope does not write: the reporting process's
/// `WorkerId` (but see [`CARDINALITY_FAMILIES`]) and Ray 2.60's OpenTelemetry
/// instrumentation scope. No dashboard or rule of Ray's or of the bundle selects or
/// groups by them.
pub const RAY_ONLY_KEYS: &[&str] = &["WorkerId", "otel_scope_name", "otel_scope_schema_url", "otel_scope_version"];

/// The families whose `WorkerId` `RAY_metric_cardinality_level` governs, which rayscope
/// imitates: there the key is compared (Ray 2.49's default level keeps it, 2.60's drops it).
pub const CARDINALITY_FAMILIES: &[&str] = &["ray_tasks", "ray_actors"];

pub fn without_ray_only_keys(steps: &[(String, Shape)]) -> Vec<(String, Shape)> {
    let mut steps = steps.to_vec();
    for (_, shape) in &mut steps {
        for (name, f) in shape.iter_mut() {
            let compared = |k: &str| k == "WorkerId" && CARDINALITY_FAMILIES.contains(&name.as_str());
            f.label_keys.retain(|k| compared(k) || !RAY_ONLY_KEYS.contains(&k.as_str()));
        }
    }
    steps
}

/// `name`, or a pattern with one `*` standing for any text (`ray_grpc_*`, `*_created`).
pub fn matches_pattern(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        Some((head, tail)) => name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail),
        None => pattern == name,
    }
}
