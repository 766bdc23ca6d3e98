//! The faults of the real-Ray alert test (tests/ray_alerts.rs), made on rayscope: each
//! fires the same alert, with the same label keys ([`FAULT_ALERTS`]), through the real
//! Prometheus (the bundle's prometheus.yml, job "rayscope") and the real Alertmanager
//! (the bundle's routing, delivering to rayscope's webhook).
//!
//! rayscope serves tests/fixtures/alerts-on-rayscope.yaml at wall speed: a fresh
//! cluster whose task attempts start failing at 5 s, whose worker 10.0.1.1 is
//! OOM-killing from 20 s, which spills throughout, whose worker 10.0.1.2 dies at 50 s
//! and whose head dies at 80 s; then the rayscope process itself is stopped (a lost
//! scrape target). The rules are the test copy with every `for:` at 10 s, as on Ray.
//! Each alert must fire within its fault's time plus its `for:`, two evaluation
//! intervals and one scrape.
//!
//! It also checks that every rule's runbook_url names a section of rayscope's
//! `/runbooks` page.
//!
//! Needs `prometheus` and `prometheus-alertmanager`; skipped without them unless
//! RAYSCOPE_REQUIRE_TOOLS is set.

mod bundle_support;

use bundle_support::*;
use serde_json::Value;
use std::time::{Duration, Instant};

const TOKEN: &str = "bundle-alerts-token-0123456789";
const EVAL_S: u64 = 5;
const SCRAPE_S: u64 = 5;

/// The bundle's Prometheus config with the test copy of the rules; the tests' timing
/// assumes its 5 s evaluation interval.
fn prometheus_config(rules: &std::path::Path, rayscope: &str, alertmanager: &str) -> String {
    let text = prometheus_config_with_rules(rules, rayscope, alertmanager);
    assert!(text.contains("evaluation_interval: 5s"), "{text}");
    text
}

/// The first time (s since `start`, Unix s) `expr` had a value, at a 1 s step.
fn first_time(prom: &str, expr: &str, start: f64) -> f64 {
    let r = prom_range(prom, expr, start, unix_now() + 2.0, 1.0).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let first = r.iter().filter_map(|s| s["values"][0][0].as_f64()).fold(f64::INFINITY, f64::min);
    assert!(first.is_finite(), "{expr} never had a value");
    first - start
}

#[test]
fn every_alert_for_a_fault_of_the_ray_scenario_fires_on_rayscope() {
    let (Some(prometheus), Some(alertmanager)) =
        (tool("prometheus", "prometheus"), tool("prometheus-alertmanager", "prometheus-alertmanager"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (rayscope, rs) = start_rayscope(&repo().join("tests/fixtures/alerts-on-rayscope.yaml"), TOKEN, dir.path());
    // Sim time 0 is about now (serve publishes its first snapshot before it listens).
    let t0_unix = unix_now();

    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let (mut am_proc, am) =
        start_alertmanager(&alertmanager, dir.path(), &alertmanager_config(&rs, token_file.to_str().unwrap()));
    let rules = test_rules(dir.path());
    let (mut prom_proc, prom) = start_prometheus(&prometheus, dir.path(), &prometheus_config(&rules, &rs, &am));
    // Every rule's runbook_url opens a section of the page rayscope serves.
    let (status, page) = http("GET", &rs, "/runbooks", &[], "");
    assert_eq!(status, 200, "{page}");
    for e in std::fs::read_dir(repo().join("prometheus/rules")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for url in text.lines().filter_map(|l| l.trim().strip_prefix("runbook_url: ")) {
            let anchor = url.trim_matches('"').strip_prefix("http://localhost:8080/runbooks#").expect(url);
            assert!(page.contains(&format!("<h2 id=\"{anchor}\">")), "/runbooks has no section #{anchor}");
        }
    }
    let mut rayscope = Some(rayscope);
    let mut timings = Vec::new();

    // (alert, the fault's time in s, for: in the test copy, which one).
    type Fault<'a> = (&'a str, u64, u64, &'a dyn Fn(&Value) -> bool);
    let faults: [Fault; 5] = [
        ("RayTaskFailureRateHigh", 5, TEST_FOR_S, &|_| true),
        ("RayWorkersOomKilled", 20, 0, &|a| a["metric"]["ip"] == "10.0.1.1"),
        ("RayObjectSpilling", 0, 0, &|_| true),
        ("RayNodeDown", 50, 0, &|a| a["metric"]["ip"] == "10.0.1.2"),
        ("RayHeadDown", 80, TEST_FOR_S, &|a| a["metric"]["ip"] == "10.0.0.1"),
    ];
    for (alertname, at, for_s, pred) in faults {
        let alert = wait_for(&format!("{alertname} on rayscope"), Duration::from_secs(150), || {
            prom_proc.assert_alive();
            am_proc.assert_alive();
            rayscope.as_mut().unwrap().assert_alive();
            let all = firing_alerts(&prom, alertname)?;
            all.iter().find(|a| pred(a)).cloned().ok_or_else(|| format!("firing, not as expected: {all:?}"))
        });
        // When it started firing, and when its fault began (spilling has no scheduled
        // time: the first spill request Prometheus saw), both in s since start.
        let at = match alertname {
            "RayObjectSpilling" => {
                first_time(&prom, "sum(ray_spill_manager_request_total{Type=\"Spilled\"}) > 0", t0_unix)
            }
            // A worker's death counts from when the GCS marks it dead, as on Ray: its
            // health checks (from 5 s after it joined, every 3 s) fail five times.
            "RayNodeDown" => rayscope::config::HealthCheckConfig::default().dead_at(0, at * 1_000_000) as f64 / 1e6,
            _ => at as f64,
        };
        let labels: Vec<String> = alert["metric"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k != "__name__" && *k != "alertstate")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let fired = first_time(&prom, &format!("ALERTS{{alertstate=\"firing\",{}}}", labels.join(",")), t0_unix);
        // Prometheus starts a few seconds after rayscope: one more scrape of slack.
        let bound = for_s + 2 * EVAL_S + 2 * SCRAPE_S;
        eprintln!(
            "rayscope: {alertname} firing {:.0} s after its fault (bound {bound} s): {}",
            fired - at,
            alert["metric"]
        );
        timings.push(format!("{alertname} {:.0} s after its fault", fired - at));
        assert!(fired - at <= bound as f64, "{alertname} fired {:.0} s after its fault, over {bound} s", fired - at);
        assert_eq!(alert_keys(&alert), fault_alert_keys(alertname), "{alertname}'s label keys on rayscope");
    }
    // Delivered through the bundle's routing to rayscope's own webhook.
    wait_for("RayNodeDown and RayHeadDown at rayscope's /api/alerts", Duration::from_secs(30), || {
        let got = get_json(&rs, "/api/alerts?limit=1000").ok_or("no /api/alerts")?;
        let alerts = got["alerts"].as_array().cloned().unwrap_or_default();
        let has = |n: &str| alerts.iter().any(|a| a["labels"]["alertname"] == n && a["status"] == "firing");
        (has("RayNodeDown") && has("RayHeadDown")).then_some(()).ok_or(format!("received: {}", got["counts"]))
    });

    // The scrape target lost: rayscope stops.
    drop(rayscope.take());
    let t = Instant::now();
    let bound = TEST_FOR_S + 2 * EVAL_S + SCRAPE_S;
    let alert = wait_for("RayTargetDown for job rayscope", Duration::from_secs(bound + 30), || {
        prom_proc.assert_alive();
        let all = firing_alerts(&prom, "RayTargetDown")?;
        all.into_iter().find(|a| a["metric"]["job"] == "rayscope").ok_or("not for job rayscope".to_string())
    });
    let took = t.elapsed().as_secs_f64();
    timings.push(format!("RayTargetDown {took:.0} s after rayscope stopped"));
    assert!(took <= bound as f64, "RayTargetDown {took:.0} s after rayscope stopped, over {bound} s");
    assert_eq!(alert_keys(&alert), fault_alert_keys("RayTargetDown"));
    eprintln!("rayscope alert timings: {}", timings.join(", "));
}
