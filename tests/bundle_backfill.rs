//! A simulated day in Grafana: `rayscope simulate --openmetrics` writes a file that
//! `promtool tsdb create-blocks-from openmetrics` accepts, the same config and seed give
//! the same file (and the same event log as without it), and a real Prometheus on the
//! backfilled blocks answers a range query of a dashboard expression over the whole
//! simulated hour.
//!
//! Needs promtool and prometheus (Debian package `prometheus`); without them the
//! backfill test is skipped, unless RAYSCOPE_REQUIRE_TOOLS is set.

mod bundle_support;

use bundle_support::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Small and fast in a debug build, but with every kind of series: a head, two CPU
/// workers and a GPU worker, map tasks, actors and a training job over an hour.
const CONFIG: &str = "
cluster:
  host_node: false
  head: {cpu: 4, memory: 16GiB}
  node_types:
    - {name: cpu-worker, count: 2, cpu: 8, memory: 32GiB, ip_range: 10.0.1.0/24}
    - {name: gpu-worker, count: 1, cpu: 8, gpu: 2, memory: 64GiB, ip_range: 10.0.2.0/24,
       gpu_model: NVIDIA A100-SXM4-80GB, gpu_memory: 80GiB}
workloads:
  - {kind: fan_out, name: etl, tasks: 2000, reducers: 4, task_duration: {min: 5s, max: 20s}, output_size: 8MiB}
  - {kind: actor_pool, name: pool, actors: 4, calls_per_actor: 200, call_duration: 10s}
  - {kind: training, name: train, workers: 2, bundle_cpu: 1, bundle_gpu: 1, steps: 300, step_duration: 10s}
sim: {seed: 5}
";

/// Run `simulate` for an hour at a 15 s scrape interval; returns (report JSON, file bytes).
fn simulate(dir: &Path, name: &str, extra: &[&str]) -> (serde_json::Value, Vec<u8>) {
    let cfg = dir.join("backfill.yaml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let file = dir.join(name);
    let out = Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["simulate", "--config", cfg.to_str().unwrap(), "--until", "1h", "--report", "json", "--quiet"])
        .args(["--openmetrics", file.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = serde_json::from_slice(&out.stdout).unwrap();
    (report, std::fs::read(&file).unwrap())
}

#[test]
fn the_file_is_deterministic_and_leaves_the_run_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let start = ["--openmetrics-start", "1767225600"];
    let (a, fa) = simulate(dir.path(), "a.om", &start);
    let (b, fb) = simulate(dir.path(), "b.om", &start);
    assert!(fa == fb, "same config, seed and start: the same file");
    assert_eq!(a["event_log_sha256"], b["event_log_sha256"]);
    let text = String::from_utf8(fa).unwrap();
    assert!(text.ends_with("# EOF\n"));
    // One scrape per 15 s of the hour, at 0 s, 15 s, ... 3600 s.
    let stamps: std::collections::BTreeSet<&str> =
        text.lines().filter(|l| l.starts_with("ray_node_cpu_count{")).map(|l| l.rsplit(' ').next().unwrap()).collect();
    assert_eq!(stamps.len(), 241, "scrape instants");
    assert!(stamps.contains("1767225600.000") && stamps.contains("1767229200.000"), "{:?}", stamps.iter().next());
    // Without the file, the same run.
    let cfg = dir.path().join("backfill.yaml");
    let plain = Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["simulate", "--config", cfg.to_str().unwrap(), "--until", "1h", "--report", "json", "--quiet"])
        .output()
        .unwrap();
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert_eq!(plain["event_log_sha256"], a["event_log_sha256"], "writing the file changes nothing in the run");
}

#[test]
fn a_backfilled_hour_answers_a_dashboard_range_query() {
    let (Some(promtool), Some(prometheus)) = (tool("promtool", "prometheus"), tool("prometheus", "prometheus")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The hour ends two hours ago: inside any retention, and wholly in the past.
    let start = ((unix_now() as i64 - 3 * 3600) / 3600) * 3600;
    let (_, _) = simulate(dir.path(), "day.om", &["--openmetrics-start", &start.to_string()]);
    let data = dir.path().join("data");
    let (ok, out) = run(Command::new(promtool)
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(dir.path().join("day.om"))
        .arg(&data));
    assert!(ok, "promtool rejects the file:\n{out}");

    std::fs::write(dir.path().join("prometheus.yml"), "global: {scrape_interval: 15s}\n").unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let mut prom = Proc::spawn(
        "prometheus",
        Command::new(prometheus)
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg(format!("--web.listen-address={addr}")),
        dir.path().join("prometheus.log"),
    );

    // The Nodes dashboard's CPU panel (its 10 busiest nodes: all 4), with its variables
    // at "All" and the hour as its time range.
    let (_, nodes) = dashboards().into_iter().find(|(f, _)| f == "nodes.json").unwrap();
    let panel =
        panels(&nodes).into_iter().find(|p| p["title"] == "CPU utilization, 10 busiest nodes").cloned().unwrap();
    let expr = substitute_over(&nodes, panel["targets"][0]["expr"].as_str().unwrap(), 3600.0);
    let (from, to) = (start as f64, start as f64 + 3600.0);
    let series = wait_for("the backfilled hour in a range query", Duration::from_secs(60), || {
        prom.assert_alive();
        let r = prom_range(&addr, &expr, from, to, 60.0)?;
        if r.len() == 4 {
            Ok(r)
        } else {
            Err(format!("{} series", r.len()))
        }
    });
    for s in &series {
        let points = s["values"].as_array().unwrap();
        assert_eq!(points.len(), 61, "one point a minute over the hour for {}", s["metric"]);
        let busy = points.iter().filter(|p| p[1].as_str().unwrap().parse::<f64>().unwrap() > 0.0).count();
        assert!(busy > 0, "the node was busy at some point: {}", s["metric"]);
    }
}
