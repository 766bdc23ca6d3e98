//! Flow Insight's HTTP API on a running server with the seed scenario: the job
//! picker, every view's status and content type, `at=` time travel, Ant's envelope,
//! and every 400/404 naming the problem.

mod api_support;

use api_support::*;
use serde_json::Value;
use std::time::Duration;

/// The seed scenario (seed 2: its tree has a flagged worker with leaf children), fast
/// enough to end in well under a second of wall time.
fn config() -> rayscope::config::Config {
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/flow-insight.yaml")).unwrap();
    let mut cfg = rayscope::config::load_str(&yaml, "flow-insight.yaml").expect("the example is valid");
    cfg.sim.seed = 2;
    cfg.sim.speed = 1_000_000.0;
    cfg.cluster.host_node = false;
    cfg
}

async fn ended_job(s: &Server) -> Value {
    eventually("the seed job to end", Duration::from_secs(30), || async {
        let v = s.get("/api/flow/jobs").await.json();
        let j = v["jobs"].get(0).cloned()?;
        (!j["end_time_s"].is_null()).then_some(j)
    })
    .await
}

#[tokio::test]
async fn views_answer_for_a_recorded_job_and_refuse_bad_queries() {
    let s = Server::start(config(), Tokens::default()).await;
    let job = ended_job(&s).await;
    let id = job["job_id"].as_str().unwrap().to_string();
    assert_eq!(id, "01000000");
    assert_eq!(job["truncated"], false);
    assert!(job["calls"].as_u64().unwrap() > 100);
    let end = job["end_time_s"].as_f64().unwrap();

    for (view, ctype) in [
        ("graph", "application/json"),
        ("graph&level=instance", "application/json"),
        ("physical", "application/json"),
        ("stack", "application/json"),
        ("flamegraph.folded", "text/plain"),
        ("flamegraph.svg", "image/svg+xml"),
        ("timeline.json", "application/json"),
        ("bottlenecks", "application/json"),
    ] {
        let (name, extra) = view.split_once('&').map(|(a, b)| (a, format!("&{b}"))).unwrap_or((view, String::new()));
        let r = s.get(&format!("/api/flow/{name}?job={id}{extra}")).await;
        assert_eq!(r.status, 200, "{view}: {}", r.text());
        assert!(r.header("content-type").unwrap().starts_with(ctype), "{view}: {:?}", r.header("content-type"));
    }

    // The bottleneck list names the flagged worker with leaf children first.
    let b = s.get(&format!("/api/flow/bottlenecks?job={id}")).await.json();
    let first = &b["entries"][0];
    assert_eq!((first["name"].as_str(), first["bottleneck"].as_bool(), first["level"].as_u64()), (Some("Worker.process"), Some(true), Some(1)));
    assert!(first["callers"][0]["waiting_calls"].as_u64().unwrap() > 0);

    // Instance level carries the workload's attributes on each actor.
    let g = s.get(&format!("/api/flow/graph?job={id}&level=instance")).await.json();
    let flagged = g["groups"].as_array().unwrap().iter().filter(|a| a["bottleneck"] == true).count();
    assert!(flagged >= 1, "{g}");
    assert!(g["groups"].as_array().unwrap().iter().all(|a| a["level"].is_u64() && a["node"].is_u64()));

    // Time travel: mid-run, calls are in flight; at the end none are.
    let mid = s.get(&format!("/api/flow/stack?job={id}&at={}", end / 2.0)).await.json();
    assert!(mid["in_flight"].as_u64().unwrap() > 0, "{mid}");
    assert_eq!(mid["at_s"].as_f64().unwrap(), (end / 2.0 * 1e6).round() / 1e6);
    let done = s.get(&format!("/api/flow/stack?job={id}")).await.json();
    assert_eq!(done["in_flight"], 0);
    let early = s.get(&format!("/api/flow/graph?job={id}&at={}", end / 10.0)).await.json();
    let calls = |g: &Value| g["edges"].as_array().unwrap().iter().map(|e| e["calls"].as_u64().unwrap()).sum::<u64>();
    let all = s.get(&format!("/api/flow/graph?job={id}")).await.json();
    assert!(calls(&early) < calls(&all), "fewer calls at an earlier instant");

    // Ant's endpoints, in Ant's envelope.
    let a = s.get(&format!("/get_call_graph_data?flow_id={id}&stack_mode=false")).await;
    assert_eq!(a.status, 200);
    let v = a.json();
    assert_eq!(v["result"], true);
    assert!(v["data"]["callFlows"].as_array().unwrap().len() >= 3);
    assert!(v["data"]["functions"].as_array().unwrap().iter().any(|f| f["id"] == "_main"));
    let end_ms = (end * 1e3) as u64;
    let st = s.get(&format!("/get_call_graph_data?flow_id={id}&stack_mode=true&end_time={}", end_ms / 2)).await.json();
    assert!(!st["data"]["callFlows"].as_array().unwrap().is_empty(), "calls in flight mid-run");
    let st = s.get(&format!("/get_call_graph_data?flow_id={id}&stack_mode=true")).await.json();
    assert!(st["data"]["callFlows"].as_array().unwrap().is_empty(), "nothing in flight at the end");
    let f = s.get(&format!("/get_flame_graph_data?flow_id={id}")).await.json();
    assert_eq!((f["result"].as_bool(), f["data"]["id"].as_str()), (Some(true), Some("_main")));
    let p = s.get(&format!("/get_physical_view_data?flow_id={id}")).await.json();
    assert_eq!(p["result"], true);
    assert!(p["data"]["nodes"].as_object().unwrap().len() == 3 && !p["data"]["services"].as_array().unwrap().is_empty());

    // The metrics agree with the class-level graph, edge by edge.
    let metrics = s.get("/metrics").await.text();
    let class = s.get(&format!("/api/flow/graph?job={id}")).await.json();
    for e in class["edges"].as_array().unwrap() {
        let series = format!("caller=\"{}\",callee=\"{}\"}}", e["source"].as_str().unwrap(), e["target"].as_str().unwrap());
        let line = metrics
            .lines()
            .find(|l| l.starts_with("rayscope_flow_calls_total{") && l.contains(&series))
            .unwrap_or_else(|| panic!("{series} missing"));
        assert_eq!(line.rsplit(' ').next().unwrap().parse::<u64>().unwrap(), e["calls"].as_u64().unwrap(), "{line}");
    }
    let count = metrics
        .lines()
        .find(|l| l.starts_with("rayscope_flow_call_duration_seconds_count{") && l.contains("callee=\"Worker.process\""))
        .expect("the duration histogram");
    let process = class["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "Worker.process").unwrap();
    assert_eq!(count.rsplit(' ').next().unwrap().parse::<u64>().unwrap(), process["calls"].as_u64().unwrap());

    // Errors: 400 naming the parameter, 404 for a job without records, JSON always.
    for (path, status, names) in [
        (format!("/api/flow/graph?job={id}&levle=class"), 400, "levle"),
        (format!("/api/flow/graph?job={id}&level=method"), 400, "level"),
        (format!("/api/flow/stack?job={id}&at=-1"), 400, "at"),
        (format!("/api/flow/stack?job={id}&at=soon"), 400, "at"),
        (format!("/api/flow/stack?job={id}&level=class"), 400, "level"),
        ("/api/flow/graph".to_string(), 400, "job"),
        ("/api/flow/jobs?job=1".to_string(), 400, "job"),
        ("/api/flow/graph?job=ffffffff".to_string(), 404, "job"),
    ] {
        let r = s.get(&path).await;
        assert_eq!(r.status, status, "{path}: {}", r.text());
        assert_eq!(r.names(), names, "{path}");
    }
    let r = s.get(&format!("/api/flow/nope?job={id}")).await;
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().contains("graph"));
    for path in [
        format!("/get_call_graph_data?flow_id={id}&stack_mode=maybe"),
        format!("/get_flame_graph_data?flow_id={id}&end_time=yesterday"),
        format!("/get_physical_view_data?flow_id={id}&bogus=1"),
        "/get_call_graph_data?flow_id=ffffffff".to_string(),
        "/get_call_graph_data".to_string(),
    ] {
        let r = s.get(&path).await;
        assert!(r.status == 400 || r.status == 404, "{path}: {}", r.status);
        let v = r.json();
        assert_eq!(v["result"], false, "{path}: {v}");
        assert!(!v["msg"].as_str().unwrap().is_empty());
    }
    s.stop().await;
}
