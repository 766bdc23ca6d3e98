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
    cfg.sim.seed = 3; // a tree under the timeline's default limit (the draw depends on the model's timing)
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
        ("findings", "application/json"),
    ] {
        let (name, extra) = view.split_once('&').map(|(a, b)| (a, format!("&{b}"))).unwrap_or((view, String::new()));
        let r = s.get(&format!("/api/flow/{name}?job={id}{extra}")).await;
        assert_eq!(r.status, 200, "{view}: {}", r.text());
        assert!(r.header("content-type").unwrap().starts_with(ctype), "{view}: {:?}", r.header("content-type"));
    }

    // The bottleneck list names the flagged worker with leaf children first.
    let b = s.get(&format!("/api/flow/bottlenecks?job={id}")).await.json();
    let first = &b["entries"][0];
    assert_eq!(
        (first["name"].as_str(), first["program_flag"].as_bool(), first["level"].as_u64()),
        (Some("Worker.process"), Some(true), Some(1))
    );
    assert!(first["callers"][0]["waiting_calls"].as_u64().unwrap() > 0);

    // Instance level carries the workload's attributes on each actor.
    let g = s.get(&format!("/api/flow/graph?job={id}&level=instance")).await.json();
    let flagged = g["groups"].as_array().unwrap().iter().filter(|a| a["program_flag"] == true).count();
    assert!(flagged >= 1, "{g}");
    assert!(g["groups"].as_array().unwrap().iter().all(|a| a["level"].is_u64() && a["node"].is_u64()));
    // Its actor ids are the State API's: each one answers `ray get actors <id>`.
    for a in g["groups"].as_array().unwrap() {
        let aid = a["actor_id"].as_str().unwrap();
        let listed = s.get(&format!("/api/v0/actors?actor_id={aid}&detail=true")).await.state();
        assert_eq!(listed["result"][0]["actor_id"].as_str(), Some(aid), "{listed}");
        assert_eq!(listed["result"][0]["class_name"], a["class"], "{listed}");
    }

    // The physical view answers the busiest nodes first, and says how many it left out.
    let all = s.get(&format!("/api/flow/physical?job={id}&limit=10000")).await.json();
    let one = s.get(&format!("/api/flow/physical?job={id}&limit=1")).await.json();
    let total = all["nodes_total"].as_u64().unwrap();
    assert!(total >= 2, "{all}");
    assert_eq!((one["nodes"].as_array().unwrap().len() as u64, one["more"].as_u64()), (1, Some(total - 1)), "{one}");
    let busy = |n: &Value| -> f64 {
        ["actors", "workers"]
            .iter()
            .flat_map(|k| n[*k].as_array().unwrap())
            .map(|a| a["busy_s"].as_f64().unwrap())
            .sum()
    };
    let busiest = all["nodes"].as_array().unwrap().iter().map(busy).fold(0.0, f64::max);
    assert_eq!(busy(&one["nodes"][0]), busiest, "the busiest node first");
    let r = s.get(&format!("/api/flow/physical?job={id}&limit=0")).await;
    assert_eq!((r.status, r.names().as_str()), (400, "limit"), "{}", r.text());

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
    // Without a level, the tree of one class is shown by instance (classes would fold
    // it into one self-loop), and the answer says so.
    assert_eq!(all["level"], "instance", "the default shows the tree");
    let class_level = s.get(&format!("/api/flow/graph?job={id}&level=class")).await.json();
    assert!(class_level["edges"].as_array().unwrap().iter().any(|e| e["source"] == e["target"]), "{class_level}");
    assert!(all["edges"].as_array().unwrap().iter().all(|e| e["source"] != e["target"]), "a tree has no self-loop");

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
    assert!(
        p["data"]["nodes"].as_object().unwrap().len() == 3 && !p["data"]["services"].as_array().unwrap().is_empty()
    );

    // The metrics agree with the class-level graph, edge by edge.
    let metrics = s.get("/metrics").await.text();
    let class = s.get(&format!("/api/flow/graph?job={id}&level=class")).await.json();
    for e in class["edges"].as_array().unwrap() {
        let series =
            format!("caller=\"{}\",callee=\"{}\"}}", e["source"].as_str().unwrap(), e["target"].as_str().unwrap());
        let line = metrics
            .lines()
            .find(|l| l.starts_with("rayscope_flow_calls_total{") && l.contains(&series))
            .unwrap_or_else(|| panic!("{series} missing"));
        assert_eq!(line.rsplit(' ').next().unwrap().parse::<u64>().unwrap(), e["calls"].as_u64().unwrap(), "{line}");
    }
    let count = metrics
        .lines()
        .find(|l| {
            l.starts_with("rayscope_flow_call_duration_seconds_count{") && l.contains("callee=\"Worker.process\"")
        })
        .expect("the duration histogram");
    let process = class["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "Worker.process").unwrap();
    assert_eq!(count.rsplit(' ').next().unwrap().parse::<u64>().unwrap(), process["calls"].as_u64().unwrap());

    // Findings: the seed's tree is written the documented way, so none is named; the
    // answer has the documented shape.
    let f = s.get(&format!("/api/flow/findings?job={id}")).await.json();
    assert_eq!((f["job_id"].as_str(), f["finished"].as_bool()), (Some(id.as_str()), Some(true)), "{f}");
    assert_eq!(f["findings"].as_array().map(Vec::len), Some(0), "{f}");
    // Each of the top entries made instant: what it saves, from a re-run, and its slowest call.
    let top = &b["entries"][0];
    assert!(top["saves_s"].as_f64().is_some_and(|v| v > 0.0 && v <= top["self_s"].as_f64().unwrap() * 1.01), "{top}");
    assert!(top["slowest_call"]["task_id"].as_str().is_some_and(|t| t.len() == 48), "{top}");

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
        ("/api/flow/findings".to_string(), 400, "job"),
        (format!("/api/flow/findings?job={id}&kind=get_in_loop"), 400, "kind"),
        ("/api/flow/findings?job=ffffffff".to_string(), 404, "job"),
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
        format!("/get_context?flow_id={id}&end_time=soon"),
        format!("/get_flow_creation_time?flow_id={id}&end_time=1"),
        "/get_call_graph_data".to_string(),
        "/get_resource_usage".to_string(),
    ] {
        let r = s.get(&path).await;
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        let v = r.json();
        assert_eq!(v["result"], false, "{path}: {v}");
        assert!(!v["msg"].as_str().unwrap().is_empty());
    }
    // A flow with no records is answered as Ant answers it: empty, not an error.
    let v = s.get("/get_call_graph_data?flow_id=ffffffff").await.json();
    assert_eq!((&v["result"], v["data"]["callFlows"].as_array().map(Vec::len)), (&Value::Bool(true), Some(0)), "{v}");
    s.stop().await;
}

/// The X events of a timeline answer: (ts, dur, span), in the answer's order.
fn executions(tl: &Value) -> Vec<(u64, u64, String)> {
    tl["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "task")
        .map(|e| {
            (e["ts"].as_u64().unwrap(), e["dur"].as_u64().unwrap(), e["args"]["span"].as_str().unwrap().to_string())
        })
        .collect()
}

#[tokio::test]
async fn the_timeline_takes_a_window_and_a_limit_and_says_when_it_is_cut() {
    let s = Server::start(config(), Tokens::default()).await;
    let job = ended_job(&s).await;
    let id = job["job_id"].as_str().unwrap().to_string();
    let end = job["end_time_s"].as_f64().unwrap();

    // Unwindowed, the seed job is under the default limit: everything, not cut.
    let r = s.get(&format!("/api/flow/timeline.json?job={id}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let full = r.json();
    let all = executions(&full);
    assert!(all.len() > 100, "{}", all.len());
    assert_eq!(
        (r.header("x-rayscope-truncated"), r.header("x-rayscope-total-executions")),
        (Some("false"), Some(all.len().to_string().as_str()))
    );
    let o = &full["otherData"];
    assert_eq!(
        (o["total"].as_u64(), o["returned"].as_u64(), o["truncated"].as_bool()),
        (Some(all.len() as u64), Some(all.len() as u64), Some(false)),
        "{o}"
    );
    assert_eq!(o["limit"].as_u64(), Some(rayscope::flow::timeline::DEFAULT_LIMIT as u64));
    assert!(o["next_from_s"].is_null() && o["more"].is_null(), "{o}");
    assert!(all.windows(2).all(|w| w[0].0 <= w[1].0), "earliest start first");

    // A window in whole seconds: the executions overlapping it, from the full answer.
    let (from, to) = ((end / 3.0).floor() as u64, (end / 2.0).floor() as u64);
    let want: Vec<&(u64, u64, String)> =
        all.iter().filter(|e| e.0 <= to * 1_000_000 && e.0 + e.1 >= from * 1_000_000).collect();
    assert!(want.len() > 10 && want.len() < all.len(), "{}", want.len());
    let r = s.get(&format!("/api/flow/timeline.json?job={id}&from={from}&to={to}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let got = executions(&r.json());
    assert_eq!(got.iter().collect::<Vec<_>>(), want, "the window's executions, in the same order");
    assert_eq!(r.header("x-rayscope-truncated"), Some("false"));

    // Cut at 5: the 5 earliest-starting, reported as cut, with the right total.
    let r = s.get(&format!("/api/flow/timeline.json?job={id}&from={from}&to={to}&limit=5")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-rayscope-truncated"), Some("true"));
    assert_eq!(r.header("x-rayscope-total-executions"), Some(want.len().to_string().as_str()));
    assert_eq!(r.header("x-rayscope-returned-executions"), Some("5"));
    let cut = r.json();
    assert_eq!(executions(&cut).iter().collect::<Vec<_>>(), want[..5].to_vec());
    let o = &cut["otherData"];
    assert_eq!(
        (o["total"].as_u64(), o["returned"].as_u64(), o["truncated"].as_bool()),
        (Some(want.len() as u64), Some(5), Some(true)),
        "{o}"
    );
    assert_eq!(
        (o["from_s"].as_f64(), o["to_s"].as_f64(), o["limit"].as_u64()),
        (Some(from as f64), Some(to as f64), Some(5))
    );
    let next = o["next_from_s"].as_f64().unwrap();
    assert_eq!(next, want[5].0 as f64 / 1e6);
    // Asking from there gets the first one left out.
    let rest = s.get(&format!("/api/flow/timeline.json?job={id}&from={next}&to={to}&limit=100000")).await.json();
    assert!(executions(&rest).iter().any(|e| e.2 == want[5].2), "the next page holds the first left out");

    // `at`: the window ends at the instant.
    let at = (end / 2.0).floor();
    let r = s.get(&format!("/api/flow/timeline.json?job={id}&at={at}&from=0&to={end}")).await.json();
    assert_eq!(r["otherData"]["to_s"].as_f64(), Some(at));
    assert!(executions(&r).iter().all(|e| e.0 + e.1 <= (at * 1e6) as u64));

    // Bad values and parameters other views do not take: 400 naming the parameter.
    for (query, names) in [
        ("from=soon", "from"),
        ("to=-1", "to"),
        ("from=20&to=10", "from"),
        ("limit=0", "limit"),
        ("limit=100001", "limit"),
        ("limit=2.5", "limit"),
        ("limit=all", "limit"),
        ("offset=10", "offset"),
    ] {
        let r = s.get(&format!("/api/flow/timeline.json?job={id}&{query}")).await;
        assert_eq!(r.status, 400, "{query}: {}", r.text());
        assert_eq!(r.names(), names, "{query}");
    }
    for path in [format!("/api/flow/graph?job={id}&from=1"), format!("/api/flow/stack?job={id}&limit=5")] {
        let r = s.get(&path).await;
        assert_eq!(r.status, 400, "{path}: {}", r.text());
    }
    s.stop().await;
}

#[tokio::test]
async fn a_job_past_the_default_limit_answers_the_earliest_executions_and_the_total() {
    let yaml = r#"
cluster:
  host_node: false
  head: {cpu: 16, memory: 64GiB}
  node_types:
    - {name: worker, count: 3, cpu: 16, memory: 64GiB, ip_range: 10.0.1.0/24}
workloads:
  - {kind: fan_out, name: wide, tasks: 12000, task_duration: 1s}
sim: {seed: 11, speed: 1000000}
"#;
    let cfg = rayscope::config::load_str(yaml, "wide.yaml").expect("valid");
    let s = Server::start(cfg, Tokens::default()).await;
    let job = ended_job(&s).await;
    let id = job["job_id"].as_str().unwrap().to_string();
    let r = s.get(&format!("/api/flow/timeline.json?job={id}")).await;
    assert_eq!(r.status, 200);
    let limit = rayscope::flow::timeline::DEFAULT_LIMIT;
    // 12,000 tasks and the driver ran.
    assert_eq!(r.header("x-rayscope-total-executions"), Some("12001"));
    assert_eq!(
        (r.header("x-rayscope-truncated"), r.header("x-rayscope-returned-executions")),
        (Some("true"), Some(limit.to_string().as_str()))
    );
    let v = r.json();
    assert_eq!(
        (v["otherData"]["total"].as_u64(), v["otherData"]["returned"].as_u64()),
        (Some(12001), Some(limit as u64))
    );
    let kept = executions(&v);
    assert_eq!(kept.len(), limit);
    // The earliest: none left out started before the last one kept.
    let all = executions(&s.get(&format!("/api/flow/timeline.json?job={id}&limit=100000")).await.json());
    assert_eq!(all.len(), 12001);
    assert_eq!(kept[..], all[..limit], "the default answer is the first {limit} of the whole");
    assert_eq!(v["otherData"]["next_from_s"].as_f64(), Some(all[limit].0 as f64 / 1e6));
    s.stop().await;
}
