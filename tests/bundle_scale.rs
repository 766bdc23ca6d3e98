//! The dashboards stay readable at 2,000 nodes: rayscope serves examples/scale.yaml
//! (a head and 1,999 workers, seed 7), the real Prometheus scrapes it with the bundle's
//! own prometheus.yml and rules, and every expression of every graph panel, with the
//! variables at "All" and the run so far as the time range, returns at most 50 series
//! (tables may list every node). bundle_structure checks the static half (a graph with a
//! line per node picks a fixed top k); this measures what Prometheus returns.
//!
//! Needs `prometheus` (Debian package; scripts/test installs it). Without it the test
//! is skipped, unless RAYSCOPE_REQUIRE_TOOLS is set.

mod bundle_support;

use bundle_support::*;
use std::time::Duration;

const MAX_SERIES: usize = 50;
const NODES: usize = 2_000;

#[test]
fn no_graph_panel_draws_more_than_50_series_at_2000_nodes() {
    let Some(prometheus) = tool("prometheus", "prometheus") else { return };
    let dir = tempfile::tempdir().unwrap();
    let started = unix_now();
    let (mut rayscope, rs) =
        start_rayscope(&repo().join("examples/scale.yaml"), "bundle-scale-token-0123456789", dir.path());

    // No Alertmanager: alerts are not what this measures (a closed port; Prometheus logs it).
    let am = format!("127.0.0.1:{}", free_port());
    let (mut prometheus, prom) = start_prometheus(&prometheus, dir.path(), &prometheus_config(&rs, &am));

    // Every node is in Prometheus, and the recording rules the panels read have run over it.
    let count = |expr: &str| -> Result<usize, String> {
        let r = prom_query(&prom, &format!("count({expr})"))?;
        Ok(r.first().and_then(|s| s["value"][1].as_str()).and_then(|v| v.parse().ok()).unwrap_or(0))
    };
    wait_for("2,000 nodes scraped and their recording rules evaluated", Duration::from_secs(180), || {
        prometheus.assert_alive();
        rayscope.assert_alive();
        let nodes = count("ray_node_cpu_utilization")?;
        let recorded = count("session_ip:ray_node_mem:ratio")?;
        let stores = count("session_node:ray_object_store:ratio")?;
        if nodes == NODES && recorded == NODES && stores == NODES {
            Ok(())
        } else {
            Err(format!("nodes {nodes}, memory ratios {recorded}, store ratios {stores}"))
        }
    });
    // A few more scrapes, so a graph's range holds several points per series.
    let settle = unix_now() + 15.0;
    wait_for("15 s of scrapes", Duration::from_secs(30), || {
        if unix_now() >= settle {
            Ok(())
        } else {
            Err("waiting".into())
        }
    });

    let end = unix_now();
    let mut too_many = Vec::new();
    let mut per_node_graphs = 0;
    for (file, d) in dashboards() {
        for p in panels(&d).into_iter().filter(|p| p["type"] == "timeseries") {
            let mut series = 0;
            for t in p["targets"].as_array().unwrap() {
                let expr = substitute_over(&d, t["expr"].as_str().unwrap(), end - started);
                let r = prom_range(&prom, &expr, started, end, 5.0)
                    .unwrap_or_else(|e| panic!("{file} / {}: {expr}: Prometheus rejects it: {e}", p["title"]));
                series += r.len();
                // A top-k graph of a per-node series: its selector alone has a line per node,
                // the graph has k. Proves the measurement sees the cluster's size.
                if expr.contains("topk(10,") && expr.contains("ray_node_cpu_utilization{") {
                    let raw = expr.split(" and on ").next().unwrap();
                    // Over the graph's own range, as a graph of the selector would draw
                    // it: an instant query at "now" sees no series when the latest scrape of
                    // the 2,000 nodes failed or timed out on a loaded runner (staleness).
                    let all = prom_range(&prom, raw, started, end, 5.0).unwrap().len();
                    assert_eq!((all, r.len()), (NODES, 10), "{file} / {}: {expr}", p["title"]);
                    per_node_graphs += 1;
                }
            }
            if series > MAX_SERIES {
                too_many.push(format!("{file} / {}: {series} series", p["title"]));
            }
        }
    }
    assert!(per_node_graphs > 0, "no top-k graph of per-node CPU was measured");
    assert!(too_many.is_empty(), "graphs over {MAX_SERIES} series at {NODES} nodes:\n{}", too_many.join("\n"));
}
