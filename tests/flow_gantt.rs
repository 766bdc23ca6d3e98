//! The Gantt's overview (`/api/flow/gantt`, `flow::lanes`): the whole job in time
//! buckets, a lane per function or per node. What it shows is what the calls did: each
//! lane's buckets add up to the execution and blocked time of its calls (by function,
//! and again by node), a window holds exactly the time inside it, lanes past the cap are
//! summed in one, and the API answers by default and refuses bad parameters by name.
//! (Also here: the server prepares an ended job's views in the background.)

mod api_support;
mod common;

use api_support::{request, Server, Tokens};
use rayscope::flow::lanes::{self, Ask, By};
use rayscope::flow::spans::{Phase, Spans};
use rayscope::snapshot::flow::JobRecord;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn seed_run() -> (rayscope::snapshot::Snapshot, Arc<JobRecord>) {
    let engine = common::run(common::seed_example(2));
    let snap = engine.publish(rayscope::sim::PublishOptions::seq(0));
    let job = snap.flow.jobs.values().next().expect("the seed job has records").clone();
    (snap, job)
}

fn answer(job: &JobRecord, spans: &Spans, snap: &rayscope::snapshot::Snapshot, ask: Ask) -> Value {
    serde_json::from_slice(&lanes::lanes_json(job, spans, &snap.nodes, &ask)).expect("JSON")
}

/// Seconds of `phase` each lane's buckets hold (mean calls × bucket width, summed).
fn bucket_seconds(a: &Value, phase: &str) -> BTreeMap<String, f64> {
    let w = a["bucket_s"].as_f64().unwrap();
    a["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let sum: f64 = l[phase].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).sum();
            (l["name"].as_str().unwrap().to_string(), sum * w)
        })
        .collect()
}

/// Seconds of `phase` per class-level name within [from, to] (µs), from the spans.
fn truth(job: &JobRecord, spans: &Spans, phase: Phase, from: u64, to: u64) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate() {
        let us = s.overlap(phase, from, to, spans.end_or_at(i));
        *out.entry(job.target(s.target).class_name()).or_default() += us as f64 / 1e6;
    }
    out.retain(|_, v| *v > 0.0);
    out
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

#[test]
fn each_lane_holds_the_time_its_calls_spent_over_the_whole_job_and_in_a_window() {
    let (snap, job) = seed_run();
    let spans = Spans::replay(&job, snap.sim_time_us.as_micros());
    let whole = answer(&job, &spans, &snap, Ask::default());
    let end = job.end_us.expect("the seed job ends");
    assert_eq!(whole["from_s"].as_f64(), Some(job.start_us as f64 / 1e6), "{whole}");
    assert_eq!(whole["to_s"].as_f64(), Some(end as f64 / 1e6), "the overview ends with the job");
    assert_eq!(whole["buckets"], lanes::DEFAULT_BUCKETS);
    assert_eq!(whole["lanes_merged"], 0);

    for (phase, name) in [(Phase::Executing, "executing"), (Phase::Blocked, "blocked"), (Phase::Queued, "queued")] {
        let want = truth(&job, &spans, phase, job.start_us, end);
        let got = bucket_seconds(&whole, name);
        assert!(!want.is_empty() || phase == Phase::Blocked, "{name}: the seed job has some");
        for (lane, secs) in &want {
            // Buckets are rounded to 1/1000 of a call: 200 of them can be off by 0.1 of a bucket.
            let tol = 0.1 * whole["bucket_s"].as_f64().unwrap();
            let g = got.get(lane).copied().unwrap_or(0.0);
            assert!((g - secs).abs() <= tol + 1e-6 * secs, "{name} of {lane}: buckets {g} s, calls {secs} s");
        }
        if phase != Phase::Queued {
            let totals: BTreeMap<String, f64> = whole["lanes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| (l["name"].as_str().unwrap().to_string(), l[&format!("{name}_s")].as_f64().unwrap()))
                .filter(|(_, v)| *v > 0.0)
                .collect();
            assert_eq!(totals.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{name}");
            for (lane, secs) in &want {
                assert!(close(totals[lane], *secs, 1e-9), "{name}_s of {lane}: {} vs {secs}", totals[lane]);
            }
        }
    }
    // Lanes come busiest first.
    let exec: Vec<f64> =
        whole["lanes"].as_array().unwrap().iter().map(|l| l["executing_s"].as_f64().unwrap()).collect();
    assert!(exec.windows(2).all(|w| w[0] >= w[1]), "{exec:?}");

    // A window from a quarter to the middle of the job holds what happened in it, no more.
    let (a, b) = (job.start_us + (end - job.start_us) / 4, job.start_us + (end - job.start_us) / 2);
    let ask = Ask { from_us: Some(a), to_us: Some(b), buckets: 50, by: By::Function };
    let win = answer(&job, &spans, &snap, ask);
    assert_eq!((win["from_s"].as_f64(), win["to_s"].as_f64()), (Some(a as f64 / 1e6), Some(b as f64 / 1e6)));
    assert_eq!(win["lanes"][0]["executing"].as_array().unwrap().len(), 50);
    let want = truth(&job, &spans, Phase::Executing, a, b);
    for l in win["lanes"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        let w = want.get(name).copied().unwrap_or(0.0);
        assert!(close(l["executing_s"].as_f64().unwrap(), w, 1e-9), "{name} in the window: {l} vs {w}");
    }

    // By node: the same execution, spread over the nodes the calls ran on; nothing queued.
    let by_node = answer(&job, &spans, &snap, Ask { by: By::Node, ..Ask::default() });
    let total =
        |v: &Value| v["lanes"].as_array().unwrap().iter().map(|l| l["executing_s"].as_f64().unwrap()).sum::<f64>();
    assert!(close(total(&by_node), total(&whole), 1e-9), "{} vs {}", total(&by_node), total(&whole));
    for l in by_node["lanes"].as_array().unwrap() {
        assert!(l["queued"].is_null(), "a node has no queued calls: {l}");
        let id = l["node_id"].as_str().expect("a node lane names its node");
        assert!(snap.nodes.iter().any(|n| &*n.node_id == id), "{id}");
    }
}

#[test]
fn lanes_past_the_cap_are_summed_in_one() {
    // 40 one-CPU nodes under a map-reduce: 41 lanes by node.
    let cfg = common::load(
        r#"
cluster:
  head: {cpu: 1, memory: 8GiB}
  node_types:
    - {name: w, count: 40, cpu: 1, memory: 8GiB, ip_range: 10.1.0.0/24}
workloads:
  - {kind: fan_out, name: mr, tasks: 400, reducers: 4, task_duration: {min: 1s, max: 2s}, reduce_duration: 1s, output_size: 1KiB}
sim: {seed: 3}
"#,
    );
    let engine = common::run(cfg);
    let snap = engine.publish(rayscope::sim::PublishOptions::seq(0));
    let job = snap.flow.jobs.values().next().unwrap().clone();
    let spans = Spans::replay(&job, snap.sim_time_us.as_micros());
    let all = |by| answer(&job, &spans, &snap, Ask { by, ..Ask::default() });
    let a = all(By::Node);
    let lanes = a["lanes"].as_array().unwrap();
    let total = a["lanes_total"].as_u64().unwrap() as usize;
    assert!(total > lanes::MAX_LANES, "{total} nodes ran calls");
    assert_eq!(lanes.len(), lanes::MAX_LANES);
    let merged = total - (lanes::MAX_LANES - 1);
    assert_eq!(a["lanes_merged"].as_u64(), Some(merged as u64));
    assert_eq!(lanes.last().unwrap()["name"], format!("{merged} more"));
    // Nothing is lost in the sum: the node lanes hold the function lanes' execution.
    let sum =
        |v: &Value| v["lanes"].as_array().unwrap().iter().map(|l| l["executing_s"].as_f64().unwrap()).sum::<f64>();
    assert!(close(sum(&a), sum(&all(By::Function)), 1e-9));
    let calls: u64 = lanes.iter().map(|l| l["calls"].as_u64().unwrap()).sum();
    assert_eq!(calls, spans.spans.iter().filter(|s| s.node != u32::MAX).count() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_answers_the_overview_and_refuses_bad_parameters_by_name() {
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/flow-insight.yaml")).unwrap();
    let mut cfg = common::load(&yaml);
    cfg.sim.speed = 100_000.0;
    cfg.cluster.host_node = false;
    let s = Server::start(cfg, Tokens::default()).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let job = loop {
        let r = request(s.addr, "GET", "/api/flow/jobs", &[], None).await.json();
        if let Some(j) = r["jobs"].as_array().and_then(|a| a.first()).filter(|j| !j["end_time_s"].is_null()) {
            break j["job_id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "the seed job never ended: {r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // The ended job (2,117 calls) is prepared in the background: replayed and ranked
    // before anyone asks.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = request(s.addr, "GET", "/api/flow/jobs", &[], None).await.json();
        if r["jobs"][0]["prepared"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "the ended job was never prepared: {r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = request(s.addr, "GET", &format!("/api/flow/gantt?job={job}"), &[], None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let g = r.json();
    assert_eq!(g["by"], "function");
    assert_eq!(g["buckets"], lanes::DEFAULT_BUCKETS);
    assert!(g["lanes"].as_array().unwrap().len() >= 2, "{g}");
    let r = request(s.addr, "GET", &format!("/api/flow/gantt?job={job}&by=node&buckets=10&from=100&to=200"), &[], None)
        .await
        .json();
    assert_eq!((r["by"].as_str(), r["buckets"].as_u64(), r["from_s"].as_f64()), (Some("node"), Some(10), Some(100.0)));
    for (query, param) in [
        ("buckets=0", "buckets"),
        ("buckets=2001", "buckets"),
        ("buckets=many", "buckets"),
        ("by=actor", "by"),
        ("from=20&to=10", "from"),
        ("limit=5", "limit"),
    ] {
        let r = request(s.addr, "GET", &format!("/api/flow/gantt?job={job}&{query}"), &[], None).await;
        assert_eq!(r.status, 400, "{query}: {}", r.text());
        assert_eq!(r.json()["parameter"], param, "{query}: {}", r.text());
    }
    s.stop().await;
}
