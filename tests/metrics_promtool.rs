//! `promtool check metrics` accepts what rayscope serves: no parse error, and every lint
//! finding is one of Ray's own names or label keys, listed with its reason in
//! tests/fixtures/promtool_allowlist.txt (none for rayscope_ families).
//!
//! Needs `promtool` (Debian package `prometheus`). Without it the test is skipped with
//! a message, unless RAYSCOPE_REQUIRE_TOOLS is set, in which case it fails.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use rayscope::host::{GpuReading, HostReading, ProcessReading, MIB};
use rayscope::metrics::{render_all, render_node, RenderContext};
use rayscope::model::NodeState;
use rayscope::sim::Engine;
use rayscope::snapshot::Snapshot;

fn fixture() -> std::sync::Arc<Snapshot> {
    let root = env!("CARGO_MANIFEST_DIR");
    let yaml = std::fs::read_to_string(format!("{root}/tests/fixtures/metrics_cluster.yaml")).unwrap();
    let mut engine = Engine::new(rayscope::config::load_str(&yaml, "metrics_cluster.yaml").unwrap());
    engine.run_until(40_000_000);
    Arc::new(engine.publish(rayscope::sim::PublishOptions::seq(1)))
}

/// A head machine with everything optional present: a GPU, a cgroup limit, shared memory.
fn host() -> HostReading {
    HostReading {
        cpu_count: 4,
        cpu_utilization_percent: 12.5,
        mem_total_bytes: 8 << 30,
        mem_used_bytes: 3 << 30,
        mem_available_bytes: 5 << 30,
        mem_shared_bytes: 1 << 20,
        host_mem_total_bytes: 16 << 30,
        host_mem_used_bytes: 6 << 30,
        cgroup_mem_used_bytes: Some(3 << 30),
        cgroup_mem_limit_bytes: Some(8 << 30),
        disk_total_bytes: 100 << 30,
        disk_used_bytes: 40 << 30,
        disk_free_bytes: 60 << 30,
        disk_utilization_percent: 40.0,
        gpus: vec![GpuReading {
            index: 0,
            name: "NVIDIA \"Quoted\" GPU".into(),
            uuid: "GPU-00000000-1111-2222-3333-444444444444".into(),
            utilization_percent: 50.0,
            memory_used_bytes: 100 * MIB,
            memory_total_bytes: 1000 * MIB,
            power_milliwatts: Some(70_000),
            temperature_celsius: Some(50),
        }],
        process: ProcessReading {
            pid: 4321,
            cpu_percent: 3.0,
            rss_bytes: 50 << 20,
            uss_bytes: Some(40 << 20),
            shared_bytes: Some(10 << 20),
            num_fds: 30,
        },
        ..HostReading::default()
    }
}

/// (family pattern, finding) pairs from the allowlist.
fn allowlist() -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/promtool_allowlist.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let cols: Vec<&str> = l.split(" | ").collect();
            assert_eq!(cols.len(), 3, "allowlist entries are `family | finding | reason`: {l}");
            assert!(!cols[2].trim().is_empty(), "allowlist entry without a reason: {l}");
            assert!(
                !cols[0].starts_with("rayscope_") && cols[0] != "*",
                "the allowlist may not cover rayscope_ families: {l}"
            );
            (cols[0].trim().to_string(), cols[1].trim().to_string())
        })
        .collect()
}

fn allowed(list: &[(String, String)], family: &str, finding: &str) -> bool {
    list.iter().any(|(pattern, f)| {
        let family_matches = match pattern.strip_suffix('*') {
            Some(prefix) => family.starts_with(prefix),
            None => family == pattern,
        };
        family_matches && f == finding
    })
}

fn promtool_present() -> bool {
    match Command::new("promtool").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) => s.success(),
        Err(_) => false,
    }
}

/// Run promtool on `text`; panic on a parse error or a finding not in the allowlist.
fn check(what: &str, text: &str, list: &[(String, String)]) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    let mut stdin = child.stdin.take().unwrap();
    let owned = text.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(owned.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    match out.status.code() {
        Some(0) => {}
        Some(3) => {
            let mut unexpected = Vec::new();
            for line in report.lines().filter(|l| !l.trim().is_empty()) {
                let (family, finding) = line.split_once(' ').unwrap_or((line, ""));
                if family.starts_with("rayscope_") || !allowed(list, family, finding) {
                    unexpected.push(line);
                }
            }
            unexpected.sort();
            unexpected.dedup();
            assert!(
                unexpected.is_empty(),
                "{what}: promtool findings not in the allowlist:\n{}",
                unexpected.join("\n")
            );
        }
        code => {
            panic!("{what}: promtool check metrics exited {code:?} (a parse error?):\n{report}")
        }
    }
}

#[test]
fn promtool_accepts_every_endpoint() {
    if !promtool_present() {
        if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some() {
            panic!("promtool not found and RAYSCOPE_REQUIRE_TOOLS is set: install the Debian package `prometheus`");
        }
        eprintln!("SKIPPED promtool_accepts_every_endpoint: promtool not found (apt-get install prometheus; set RAYSCOPE_REQUIRE_TOOLS=1 to make this a failure)");
        return;
    }
    let list = allowlist();
    let snap = fixture();
    let ctx = RenderContext {
        metrics_export_port: 8080,
        alerts_received: vec![("RayNodeDown".into(), "firing".into(), 1)],
        collector_seconds: vec![("host".into(), 0.001)],
        snapshot_taken_at: Some(std::time::Instant::now()),
        ..RenderContext::default()
    };
    let host = Arc::new(host());
    check("render_all", &render_all(&snap, None, &ctx), &list);
    check("render_all with the host", &render_all(&snap, Some(&host), &ctx), &list);
    let head = snap.head_node().unwrap();
    check("render_node(head)", &render_node(&snap, &head.ip, Some(&host), &ctx).unwrap(), &list);
    for n in snap.nodes.iter().filter(|n| n.state == NodeState::Alive && !n.is_head) {
        check(&format!("render_node({})", n.ip), &render_node(&snap, &n.ip, None, &ctx).unwrap(), &list);
    }
    let mut old = (*snap).clone();
    old.version = "2.44.1".into();
    check("render_all as Ray 2.44", &render_all(&Arc::new(old), None, &ctx), &list);
}

#[test]
fn the_allowlist_matches_findings_by_family_and_text() {
    let list = vec![("ray_*".to_string(), "x y".to_string()), ("ray_job_duration_s".to_string(), "z".to_string())];
    assert!(allowed(&list, "ray_tasks", "x y"));
    assert!(!allowed(&list, "rayscope_sim_lag_seconds", "x y"));
    assert!(allowed(&list, "ray_job_duration_s", "z"));
    assert!(!allowed(&list, "ray_job_duration_seconds", "z"));
}
