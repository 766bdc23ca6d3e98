//! Ray's cluster events (`/api/v0/cluster_events`, `/api/cluster_events`): the engine
//! records them as they happen, in a bounded ring of their own; they hold no task
//! transitions; their ids are the State API's; the cap holds; the search finds OOM
//! kills; and recording them never changes the run (the event log's digest).

mod api_support;

use api_support::{eventually, Server, Tokens};
use rayscope::config::{self, Config};
use rayscope::sim::Engine;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// Faults at fixed times: a worker killed at 2 s, for which the autoscaler's tick at 5 s
/// launches a replacement (3 s to boot); the dead worker is restored at 6 s, so when the
/// replacement lands every one of the type's three addresses is taken and the launch
/// fails. Memory pressure on another worker from 3 s (OOM kills), a Replica killed for
/// good at 4 s, and the idle gpu-workers above their minimum are removed.
pub const CONFIG: &str = r#"
cluster:
  host_node: false
  head: {cpu: 4, memory: 8GiB}
  # The GCS notices a crash at its next check (every second): the kill at 2 s is a
  # death at 2 s, so the autoscaler's tick at 5 s sees it.
  health_check: {initial_delay: 1s, period: 1s, failure_threshold: 1}
  node_types:
    - name: cpu-worker
      count: 3
      cpu: 4
      memory: 8GiB
      ip_range: 10.0.1.1-10.0.1.3
      autoscaler: {min_workers: 3, max_workers: 3, launch_delay: 3s, idle_timeout: 1h}
    - name: gpu-worker
      count: 2
      cpu: 2
      gpu: 1
      memory: 8GiB
      ip_range: 10.0.2.0/24
      autoscaler: {min_workers: 0, max_workers: 2, launch_delay: 1s, idle_timeout: 2s}
workloads:
  - kind: fan_out
    name: etl
    tasks: 120
    task_duration: 2s
    memory: 1GiB
    max_retries: 3
  - kind: actor_pool
    name: serving
    actors: 3
    calls_per_actor: 1000
    call_duration: 1s
    class: Replica
faults:
  - {kind: kill_node, at: 2s, node: 10.0.1.1}
  - {kind: restore_node, at: 6s, node: 10.0.1.1}
  - {kind: memory_pressure, at: 3s, node: 10.0.1.2, fraction: 0.97, duration: 30s}
  - {kind: kill_actor, at: 4s, class: Replica, no_restart: true}
sim:
  seed: 5
  speed: 10
"#;

fn config(capacity: Option<usize>) -> Config {
    let mut cfg = config::load_str(CONFIG, "cluster events test").expect("the test config is valid");
    if let Some(c) = capacity {
        cfg.sim.cluster_event_capacity = c;
    }
    cfg
}

/// Every cluster event the engine kept by virtual time `secs`, as (severity, source,
/// label, message).
fn run_engine(cfg: Config, secs: u64) -> (Engine, Vec<(String, String, String, String)>) {
    let mut engine = Engine::new(cfg);
    engine.run_until(secs * 1_000_000);
    let events = engine
        .model
        .cluster_events
        .view()
        .iter()
        .map(|e| (e.severity.as_str().into(), e.source.as_str().into(), e.label.into(), e.message.clone()))
        .collect();
    (engine, events)
}

#[test]
fn the_engine_records_each_kind_of_cluster_event_and_the_log_stays_the_same() {
    let (with, events) = run_engine(config(None), 120);
    let (without, none) = run_engine(config(Some(0)), 120);
    assert!(none.is_empty(), "a disabled store records nothing");
    let (_, again) = run_engine(config(None), 120);
    assert_eq!(events, again, "the same config and seed record the same cluster events");
    assert_eq!(
        with.model.log.sha256_hex(),
        without.model.log.sha256_hex(),
        "recording cluster events changes nothing in the event log"
    );
    let has = |severity: &str, source: &str, text: &str| {
        events.iter().any(|(s, src, _, m)| s == severity && src == source && m.contains(text))
    };
    assert!(has("INFO", "GCS", "and address: 10.0.1.2 and node name: 10.0.1.2 has joined the cluster"), "{events:#?}");
    assert!(has("ERROR", "GCS", "and address: 10.0.1.1 and node name: 10.0.1.1 has been marked dead"), "{events:#?}");
    assert!(has("ERROR", "RAYLET", "Memory on the node (IP: 10.0.1.2, ID: "), "{events:#?}");
    assert!(has("INFO", "AUTOSCALER", "Adding 1 node(s) of type cpu-worker."), "{events:#?}");
    assert!(has("INFO", "AUTOSCALER", "Failed to launch 1 node(s) of type cpu-worker."), "{events:#?}");
    assert!(has("INFO", "AUTOSCALER", "Removing 1 nodes of type gpu-worker (idle)."), "{events:#?}");
    assert!(has("INFO", "JOBS", "Started a ray job raysubmit_"), "{events:#?}");
    assert!(has("INFO", "JOBS", "with a status SUCCEEDED."), "{events:#?}");
    assert!(has("INFO", "GCS", "of class Replica is dead: killed by ray.kill"), "{events:#?}");
    let labels: BTreeSet<&str> = events.iter().map(|e| e.2.as_str()).collect();
    assert!(labels.contains("RAY_NODE_REMOVED") && labels.contains("Out of Memory"), "{labels:?}");
    // Ray's raylet writes the OOM event at most once per 10 s: 30 s of pressure from
    // 3 s is at most 4 events, though the monitor kills every 250 ms.
    let ooms = events.iter().filter(|e| e.2 == "Out of Memory").count();
    let kills: u64 = with.model.nodes().iter().map(|n| n.stats.oom_kills).sum();
    assert!((1..=4).contains(&ooms) && kills > ooms as u64, "{ooms} OOM events for {kills} kills");
}

fn rows(v: &Value) -> Vec<Value> {
    v["data"]["result"]["result"].as_array().unwrap_or_else(|| panic!("a State API list: {v}")).clone()
}

async fn ids(s: &Server, path: &str, key: &str) -> BTreeSet<String> {
    rows(&s.get(path).await.json()).iter().map(|r| r[key].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_events_hold_no_task_transitions_and_name_the_state_apis_ids() {
    let s = Server::start(config(None), Tokens::default()).await;
    // Wait for the last of the scenario's kinds: the OOM kill at 3 s, the Replica at 4 s.
    let path = "/api/v0/cluster_events?detail=true&limit=10000";
    let events = eventually("an OOM kill and an actor's death", Duration::from_secs(60), || async {
        let r = rows(&s.get(path).await.json());
        let oom = r.iter().any(|e| e["message"].as_str().unwrap().contains("running low on memory"));
        let actor = r.iter().any(|e| e["custom_fields"]["actor_id"].is_string() && e["severity"] == "INFO");
        (oom && actor).then_some(r)
    })
    .await;
    let nodes = ids(&s, "/api/v0/nodes?limit=10000", "node_id").await;
    let actors = ids(&s, "/api/v0/actors?limit=10000", "actor_id").await;
    let jobs = ids(&s, "/api/v0/jobs?limit=10000", "job_id").await;
    let submissions = ids(&s, "/api/v0/jobs?limit=10000", "submission_id").await;
    let tasks = ids(&s, "/api/v0/tasks?limit=10000&detail=true", "task_id").await;
    let transitions = ["PENDING_NODE_ASSIGNMENT", "SUBMITTED_TO_WORKER", "RUNNING attempt", "FINISHED", "LEASED"];
    for e in &events {
        let (source, message) = (e["source_type"].as_str().unwrap(), e["message"].as_str().unwrap());
        assert!(["GCS", "RAYLET", "AUTOSCALER", "JOBS"].contains(&source), "{e}");
        assert!(["INFO", "WARNING", "ERROR"].contains(&e["severity"].as_str().unwrap()), "{e}");
        assert!(!transitions.iter().any(|t| message.contains(t)), "a task transition among cluster events: {e}");
        assert_eq!(e["event_id"].as_str().unwrap().len(), 36, "{e}");
        let f = &e["custom_fields"];
        let id = |k: &str| f[k].as_str().map(str::to_string);
        for (key, known) in [("node_id", &nodes), ("actor_id", &actors), ("job_id", &jobs), ("task_id", &tasks)] {
            if let Some(v) = id(key) {
                assert!(known.contains(&v), "{key} {v} of {e} is not in the State API's {known:?}");
                assert!(key == "job_id" || key == "task_id" || message.contains(&v), "the message names {key}: {e}");
            }
        }
        if let Some(sub) = id("submission_id") {
            assert!(submissions.contains(&sub) && message.contains(&sub), "{e}");
        }
    }
    // A node's death names its IP and cause; an OOM kill, its task and node.
    let dead = events.iter().find(|e| e["message"].as_str().unwrap().contains("has been marked dead")).unwrap();
    assert_eq!((dead["severity"].as_str(), dead["custom_fields"]["ip"].as_str()), (Some("ERROR"), Some("10.0.1.1")));
    assert_eq!(dead["custom_fields"]["cause"], "fault injection: node killed");
    let oom = events.iter().find(|e| e["message"].as_str().unwrap().contains("running low on memory")).unwrap();
    let task = oom["custom_fields"]["task_id"].as_str().unwrap();
    assert!(oom["message"].as_str().unwrap().contains(&format!("task ID: {task}")), "{oom}");
    assert_eq!((oom["source_type"].as_str(), oom["custom_fields"]["ip"].as_str()), (Some("RAYLET"), Some("10.0.1.2")));
    // Oldest first, as Ray lists them; Ray's filters apply (case-insensitive).
    let seqs: Vec<u64> =
        events.iter().map(|e| u64::from_str_radix(e["event_id"].as_str().unwrap(), 16).unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let errors = rows(
        &s.get("/api/v0/cluster_events?filter_keys=severity&filter_predicates=%3D&filter_values=error").await.json(),
    );
    assert!(!errors.is_empty() && errors.iter().all(|e| e["severity"] == "ERROR"), "{errors:?}");
    assert!(errors.iter().all(|e| e.get("custom_fields").is_none()), "custom_fields only with detail");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ring_keeps_its_cap_and_the_pages_search_finds_oom_kills() {
    const CAP: usize = 8;
    let s = Server::start(config(Some(CAP)), Tokens::default()).await;
    let page = eventually("more cluster events than the cap", Duration::from_secs(60), || async {
        let v = s.get("/api/cluster_events?limit=100").await.json();
        (v["recorded"].as_u64().unwrap() > 2 * CAP as u64).then_some(v)
    })
    .await;
    assert_eq!((page["total"].as_u64(), page["capacity"].as_u64()), (Some(CAP as u64), Some(CAP as u64)), "{page}");
    // The kept ones are the newest, newest first, with no gap.
    let seqs: Vec<u64> = page["events"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let newest = seqs[0];
    assert_eq!(seqs, (newest + 1 - CAP as u64..=newest).rev().collect::<Vec<_>>());
    let state = s.get("/api/v0/cluster_events?limit=10000").await.json();
    assert_eq!(state["data"]["result"]["total"], CAP, "{state}");
    // The Events page's search: "oom" (any case) keeps only events that say it, and
    // finds the OOM kills among them; the other filters combine with it.
    let s2 = Server::start(config(None), Tokens::default()).await;
    let found = eventually("an OOM kill", Duration::from_secs(60), || async {
        let v = s2.get("/api/cluster_events?search=OoM&limit=1000").await.json();
        let events = v["events"].as_array().unwrap().clone();
        events.iter().any(|e| e["label"] == "Out of Memory").then_some((v, events))
    })
    .await;
    let (v, events) = found;
    let all = s2.get("/api/cluster_events?limit=1000").await.json();
    assert!(v["num_filtered"].as_u64() < all["num_filtered"].as_u64(), "the search filters: {v}");
    for e in &events {
        let text = format!("{} {} {} {}", e["message"], e["label"], e["source_type"], e["severity"]).to_lowercase();
        assert!(text.contains("oom"), "{e}");
    }
    let raylet = s2.get("/api/cluster_events?search=oom&source_type=raylet&severity=ERROR").await.json();
    let raylet = raylet["events"].as_array().unwrap();
    assert!(!raylet.is_empty() && raylet.iter().all(|e| e["label"] == "Out of Memory"), "{raylet:?}");
    let bad = s2.get("/api/cluster_events?severity=LOUD").await;
    assert_eq!(bad.status, 400, "{}", bad.text());
    s.stop().await;
    s2.stop().await;
}
