//! The bundle end to end, with the real binaries: rayscope serves examples/faults.yaml,
//! the real Prometheus scrapes it with the bundle's own prometheus.yml and rules, and
//! the real Alertmanager routes with the bundle's own alertmanager.yml back into
//! rayscope's webhook. Only addresses and file paths are rewritten (service names to
//! loopback ports, /etc paths to the repository and a temporary token file).
//!
//! Proves, waiting on conditions with deadlines: the target is up; RayNodeDown fires,
//! reaches Alertmanager and arrives at rayscope's `/api/alerts`; a dead node's other
//! alert is inhibited; every expression of every dashboard panel returns data with the
//! variables at their "All" values.
//!
//! Needs `prometheus` and `prometheus-alertmanager` (Debian packages; scripts/test
//! installs them). Without them the test is skipped, unless RAYSCOPE_REQUIRE_TOOLS is set.

mod bundle_support;

use bundle_support::*;
use std::time::Duration;

const TOKEN: &str = "bundle-e2e-token-0123456789";

#[test]
fn prometheus_and_alertmanager_with_the_bundles_configs_close_the_loop() {
    let (Some(prometheus), Some(alertmanager)) =
        (tool("prometheus", "prometheus"), tool("prometheus-alertmanager", "prometheus-alertmanager"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let started = unix_now();

    let (mut rayscope, rs) = start_rayscope(&repo().join("examples/faults.yaml"), TOKEN, dir.path());

    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let (mut alertmanager, am) =
        start_alertmanager(&alertmanager, dir.path(), &alertmanager_config(&rs, token_file.to_str().unwrap()));
    let (mut prometheus, prom) = start_prometheus(&prometheus, dir.path(), &prometheus_config(&rs, &am));

    // The target is up.
    wait_for("the rayscope target up in Prometheus", Duration::from_secs(60), || {
        prometheus.assert_alive();
        alertmanager.assert_alive();
        rayscope.assert_alive();
        let up = prom_query(&prom, "up{job=\"rayscope\"}")?;
        match up.first().and_then(|s| s["value"][1].as_str()) {
            Some("1") => Ok(()),
            other => Err(format!("up = {other:?}")),
        }
    });

    // faults.yaml kills 10.0.1.2 at 60 s: RayNodeDown fires in Prometheus, and
    // Alertmanager delivers it to rayscope's webhook with the token.
    let down =
        wait_for("RayNodeDown firing in Prometheus", Duration::from_secs(120), || firing_alerts(&prom, "RayNodeDown"));
    assert!(down.iter().any(|a| a["metric"]["ip"] == "10.0.1.2"), "{down:?}");
    wait_for("RayNodeDown at rayscope's /api/alerts", Duration::from_secs(60), || {
        let got = get_json(&rs, "/api/alerts?limit=1000").ok_or("no /api/alerts")?;
        let alerts = got["alerts"].as_array().cloned().unwrap_or_default();
        if alerts.iter().any(|a| {
            a["labels"]["alertname"] == "RayNodeDown" && a["status"] == "firing" && a["labels"]["ip"] == "10.0.1.2"
        }) {
            Ok(())
        } else {
            Err(format!("received so far: {}", got["counts"]))
        }
    });

    // The Alerts dashboard's table asks Alertmanager what the panel asks (its path and
    // parameters, the variables at "All"): the firing RayNodeDown is there, and every
    // column the panel shows has a value, the summary and the runbook link included.
    let all = dashboards();
    let alerts_json = &all.iter().find(|(f, _)| f == "alerts.json").unwrap().1;
    let table = panels(alerts_json).into_iter().find(|p| p["datasource"]["uid"] == "${alertmanager}").unwrap();
    let t = &table["targets"][0];
    let query: Vec<String> = t["url_options"]["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let value = p["value"].as_str().unwrap().replace("${SessionName}", ".+").replace("${Cluster}", ".*");
            format!("{}={}", p["key"].as_str().unwrap(), form_encode(&value))
        })
        .collect();
    let path = format!("{}?{}", t["url"].as_str().unwrap(), query.join("&"));
    wait_for("RayNodeDown in the Alerts dashboard's table, with every column", Duration::from_secs(60), || {
        let got = get_json(&am, &path).ok_or_else(|| format!("no answer from Alertmanager for {path}"))?;
        let rows = got.as_array().cloned().unwrap_or_default();
        let row = rows
            .iter()
            .find(|a| a["labels"]["alertname"] == "RayNodeDown")
            .ok_or(format!("{} rows, no RayNodeDown", rows.len()))?;
        for c in t["columns"].as_array().unwrap() {
            let sel = c["selector"].as_str().unwrap();
            let value = sel.split('.').fold(row, |v, k| &v[k]);
            if value.as_str().is_none_or(str::is_empty) {
                return Err(format!("{sel} empty in {row}"));
            }
        }
        Ok(())
    });

    // A busy worker's CPU alert fires; killing that node inhibits it at Alertmanager.
    let hot = wait_for("RayNodeHighCpu firing on a live worker", Duration::from_secs(240), || {
        let alerts = firing_alerts(&prom, "RayNodeHighCpu")?;
        alerts
            .iter()
            .filter_map(|a| a["metric"]["ip"].as_str())
            .find(|ip| ip.starts_with("10.0.1.") && *ip != "10.0.1.2" && *ip != "10.0.1.3")
            .map(str::to_string)
            .ok_or_else(|| format!("firing on {alerts:?}"))
    });
    let auth = format!("Bearer {TOKEN}");
    let (status, body) = http("POST", &rs, &format!("/api/control/nodes/{hot}/kill"), &[("Authorization", &auth)], "");
    assert_eq!(status, 200, "{body}");
    wait_for("RayNodeHighCpu on the killed node inhibited by RayNodeDown", Duration::from_secs(90), || {
        let alerts = get_json(&am, "/api/v2/alerts").ok_or("no Alertmanager alerts")?;
        let alerts = alerts.as_array().cloned().unwrap_or_default();
        let on = |name: &str| {
            alerts.iter().find(|a| a["labels"]["alertname"] == name && a["labels"]["ip"] == hot.as_str()).cloned()
        };
        let down = on("RayNodeDown").ok_or("no RayNodeDown for the node yet")?;
        let cpu = on("RayNodeHighCpu").ok_or("the node's CPU alert is gone")?;
        let by = cpu["status"]["inhibitedBy"].as_array().cloned().unwrap_or_default();
        if cpu["status"]["state"] == "suppressed" && by.contains(&down["fingerprint"]) {
            Ok(())
        } else {
            Err(format!("CPU alert status: {}", cpu["status"]))
        }
    });

    // Every expression of every panel returns data over the run so far.
    wait_for("every dashboard expression returning data", Duration::from_secs(180), || {
        let end = unix_now();
        let mut empty = Vec::new();
        for (file, d) in dashboards() {
            for p in panels(&d) {
                // PromQL targets; the Alertmanager table is checked above.
                for t in p["targets"].as_array().into_iter().flatten().filter(|t| t["expr"].is_string()) {
                    let expr = substitute(&d, t["expr"].as_str().unwrap());
                    match prom_range(&prom, &expr, started, end, 5.0) {
                        Ok(r) if !r.is_empty() => {}
                        Ok(_) => empty.push(format!("{file} / {}: {expr}", p["title"])),
                        Err(e) => panic!("{file} / {}: {expr}: Prometheus rejects it: {e}", p["title"]),
                    }
                }
            }
        }
        if empty.is_empty() {
            Ok(())
        } else {
            Err(format!("{} without data:\n{}", empty.len(), empty.join("\n")))
        }
    });
}
