//! The bundle's alerts on real Ray clusters of the newest and the oldest supported
//! versions (2.60, and 2.49 from `RAYSCOPE_RAY_OLDEST_CLI`), fault by fault: a head and one worker
//! node (`ray.cluster_utils.Cluster`, scripts/ray-alerts/cluster.py), scraped by a real
//! Prometheus through Ray's own service-discovery file (job "ray", as Ray's docs set it
//! up) with the bundle's rule files, and a real Alertmanager with the bundle's routing.
//!
//! One fresh cluster serves every fault, in order (the head last): task failures, an
//! OOM kill by Ray's memory monitor, spilling, the worker node killed without grace,
//! the head killed without grace. For each, the alert fires with the name and label
//! keys the rules give it on rayscope (`tests/bundle_alerts.rs` makes the same faults
//! there) and reaches Alertmanager on the route for its severity. Each first failure is
//! the cluster's first of its kind: Ray creates the counters at that moment.
//!
//! Timing: the rules are a test copy with every `for:` cut to 10 s (documented in
//! docs/alerts-on-ray.md); each alert must fire within its `for:` plus two evaluation
//! intervals after Ray has reported the fault (its metrics report interval, one scrape
//! and one evaluation's alignment, 20 s), plus, for a node's death, Ray's own detection (the GCS marks a node
//! dead after its health checks fail, about 20 s in Ray 2.60). The measured times are
//! printed.
//!
//! Needs Ray (RAYSCOPE_RAY_CLI, the venv scripts/test makes), `prometheus` and
//! `prometheus-alertmanager`; without them it is skipped unless
//! RAYSCOPE_REQUIRE_TOOLS is set. Only one real Ray cluster runs on the machine at a
//! time: the driver holds /tmp/real-ray.lock for its life.

mod bundle_support;

use bundle_support::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

const EVAL_S: u64 = 5;
/// Ray's metrics report interval (10 s by default), one scrape, and one evaluation's
/// alignment: the time from a fault to its series in Prometheus' rule evaluation.
const REPORT_S: u64 = 20;

/// The bundle's prometheus.yml, its rules the test copy, scraping Ray's own SD file
/// under the job name Ray's docs give it ("ray"); intervals and everything else kept.
/// `refresh_interval: 5s`: the file Ray's docs name is a symlink into the session
/// directory, where Ray rewrites the real file; Prometheus watches the symlink's
/// directory, sees none of those rewrites, and otherwise re-reads only every 5 m.
fn prometheus_config(rules: &std::path::Path, sd_file: &str, alertmanager: &str) -> String {
    let text = prometheus_config_with_rules(rules, "unused:8080", alertmanager);
    let mut cfg: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(cfg["global"]["evaluation_interval"].as_str(), Some("5s"));
    let job: serde_yaml::Value = serde_yaml::from_str(&format!(
        "{{job_name: ray, file_sd_configs: [{{files: [{sd_file:?}], refresh_interval: 5s}}]}}"
    ))
    .unwrap();
    cfg["scrape_configs"] = serde_yaml::to_value(vec![job]).unwrap();
    serde_yaml::to_string(&cfg).unwrap()
}

struct Run {
    version: String,
    prom: String,
    am: String,
    procs: Vec<Proc>,
    timings: Vec<String>,
}

impl Run {
    /// Waits for `alertname` firing with `pred`, within `limit` of `since`; checks its
    /// label keys and that Alertmanager holds it on the receiver for its severity.
    fn expect(&mut self, alertname: &str, since: Instant, limit: u64, pred: impl Fn(&Value) -> bool) {
        let procs = &mut self.procs;
        let prom = self.prom.clone();
        let alert = wait_for(&format!("{alertname} firing on real Ray"), Duration::from_secs(limit + 30), || {
            procs.iter_mut().for_each(Proc::assert_alive);
            let all = firing_alerts(&prom, alertname)?;
            all.iter().find(|a| pred(a)).cloned().ok_or_else(|| format!("firing, but not as expected: {all:?}"))
        });
        let took = since.elapsed().as_secs_f64();
        self.timings.push(format!("{alertname}: {took:.0} s (bound {limit} s)"));
        eprintln!(
            "real Ray {}: {alertname} firing {took:.0} s after the fault (bound {limit} s): {}",
            self.version, alert["metric"]
        );
        assert!(took <= limit as f64, "{alertname} took {took:.0} s, over its bound of {limit} s");
        assert_eq!(alert_keys(&alert), fault_alert_keys(alertname), "{alertname}'s label keys on real Ray");
        let am = self.am.clone();
        wait_for(&format!("{alertname} at Alertmanager"), Duration::from_secs(30), || {
            let alerts = get_json(&am, "/api/v2/alerts").ok_or("no Alertmanager alerts")?;
            let found = alerts.as_array().into_iter().flatten().any(|a| {
                a["labels"]["alertname"] == alertname
                    && a["receivers"].as_array().is_some_and(|r| r.iter().any(|r| r["name"] == "rayscope"))
            });
            found.then_some(()).ok_or_else(|| format!("{alertname} not routed to rayscope yet"))
        });
    }
}

#[test]
fn every_alert_for_a_fault_fires_on_a_real_ray_cluster() {
    let Some(python) = ray_python() else { return };
    every_alert_fires_on(&python, "2.60");
}

/// The same faults on the oldest supported Ray: its OpenCensus exporter, one `ray_tasks`
/// series per worker (the legacy cardinality level, its default) and its metric names.
#[test]
fn every_alert_for_a_fault_fires_on_ray_2_49() {
    let Some(python) = ray_oldest_python() else { return };
    every_alert_fires_on(&python, "2.49");
}

fn every_alert_fires_on(python: &std::path::Path, version: &str) {
    let (Some(prometheus), Some(alertmanager)) =
        (tool("prometheus", "prometheus"), tool("prometheus-alertmanager", "prometheus-alertmanager"))
    else {
        return;
    };
    let installed = Command::new(python).args(["-c", "import ray; print(ray.__version__)"]).output().unwrap();
    let installed = String::from_utf8_lossy(&installed.stdout).trim().to_string();
    assert!(installed.starts_with(&format!("{version}.")), "the venv's Ray is {installed}, not {version}");
    let started = Instant::now();
    let dir = tempfile::Builder::new().prefix("rayscope-alerts-").tempdir_in("/tmp").unwrap();
    // Ray's session paths must stay short (Unix socket names): a short temp dir of our own.
    let temp_dir = dir.path().join("ray");
    std::fs::create_dir_all(&temp_dir).unwrap();

    // cluster.py takes /tmp/real-ray.lock itself (flock(2), as flock(1) does), so the
    // child is the driver and killing it never orphans a lock holder.
    let mut cluster = ScriptDriver::spawn(
        Command::new(python)
            .arg(repo().join("scripts/ray-alerts/cluster.py"))
            .arg(&temp_dir)
            .stderr(std::fs::File::create(dir.path().join("cluster.log")).unwrap()),
    );
    // Waiting for the lock (another real Ray run, e.g. the differential harness, about
    // 4 min) counts here too.
    let ready = cluster.answer("ready", Duration::from_secs(600));
    let sd_file = ready["sd_file"].as_str().unwrap().to_string();
    let worker_ip = ready["worker_ip"].as_str().unwrap().to_string();
    let head_ip = ready["head_ip"].as_str().unwrap().to_string();

    // Nothing on Ray's side reads the webhook: it points at a closed port.
    std::fs::write(dir.path().join("token"), "unused").unwrap();
    let webhook = format!("127.0.0.1:{}", free_port());
    let (am_proc, am) = start_alertmanager(
        &alertmanager,
        dir.path(),
        &alertmanager_config(&webhook, dir.path().join("token").to_str().unwrap()),
    );
    let rules = test_rules(dir.path());
    let (prom_proc, prom) = start_prometheus(&prometheus, dir.path(), &prometheus_config(&rules, &sd_file, &am));
    let mut run = Run {
        version: version.to_string(),
        prom: prom.clone(),
        am,
        procs: vec![am_proc, prom_proc],
        timings: Vec::new(),
    };

    // Both nodes report through Ray's SD file; none of the failure counters exists yet.
    wait_for("both nodes reporting through Ray's service-discovery file", Duration::from_secs(120), || {
        let nodes = prom_query(&prom, "ray_node_mem_total")?;
        let ips: BTreeSet<&str> = nodes.iter().filter_map(|s| s["metric"]["ip"].as_str()).collect();
        (ips.contains(worker_ip.as_str()) && ips.contains(head_ip.as_str())).then_some(()).ok_or(format!("ips {ips:?}"))
    });
    for fresh in ["ray_node_failure_total", "ray_memory_manager_worker_eviction_total"] {
        assert_eq!(prom_query(&prom, fresh).unwrap(), Vec::<Value>::new(), "{fresh} exists before its first event");
    }
    // Each alert is timed from its fault's end: a step returns once its fault has
    // happened (its tasks failed, its worker killed, its objects spilled), and how long
    // Ray takes to run a fault is not the alerting's delay (a slow CPU once put the
    // task failures' step inside the bound).
    let bound = |for_s: u64| REPORT_S + for_s + 2 * EVAL_S;

    // Task failures: 20 tasks that raise, each retried once: 40 failed attempts. The
    // alert reads recording rules (`ray.records`), a group evaluated on its own phase:
    // one more evaluation before the alert's group sees the ratio (Ray 2.49 once took
    // 41 s of the 40 that left out).
    cluster.step("fail-tasks 20", Duration::from_secs(120));
    let t = Instant::now();
    run.expect("RayTaskFailureRateHigh", t, bound(TEST_FOR_S) + EVAL_S, |_| true);

    // An OOM kill by the worker's memory monitor, reported by the worker's raylet.
    cluster.step("oom", Duration::from_secs(150));
    let t = Instant::now();
    run.expect("RayWorkersOomKilled", t, bound(0), |a| a["metric"]["ip"] == worker_ip.as_str());

    // Spilling on the worker's object store.
    cluster.step("spill", Duration::from_secs(120));
    let t = Instant::now();
    run.expect("RayObjectSpilling", t, bound(0), |a| a["metric"]["ip"] == worker_ip.as_str());

    // The worker node killed without grace: down (Ray's GCS takes its health checks'
    // time to count the failure).
    cluster.step("kill-worker", Duration::from_secs(60));
    let t = Instant::now();
    run.expect("RayNodeDown", t, 30 + bound(0), |a| a["metric"]["ip"] == worker_ip.as_str());
    // The head killed without grace: the head is down, and so are the targets Ray's
    // service-discovery file still lists (nothing rewrites it any more).
    cluster.step("kill-head", Duration::from_secs(60));
    let t = Instant::now();
    run.expect("RayHeadDown", t, bound(TEST_FOR_S), |a| a["metric"]["ip"] == head_ip.as_str());
    run.expect("RayTargetDown", t, REPORT_S + bound(TEST_FOR_S), |a| a["metric"]["job"] == "ray");
    eprintln!(
        "real-Ray {version} alert timings: {}; whole run {:.0} s",
        run.timings.join(", "),
        started.elapsed().as_secs_f64()
    );
    drop(cluster);
}
