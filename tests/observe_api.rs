//! Observe mode's HTTP side without a Ray cluster: a push-only observer takes event
//! batches in Ray 2.60's Event Export shape at `POST /api/observe/events`, and the
//! pages' APIs, Flow Insight and Ant flow-insight's endpoints show the job they describe; bad and hostile batches get
//! a 4xx that names the problem and change nothing; control requests are refused with
//! 409; `/metrics` carries only `rayscope_*`; a server running the model has no such
//! endpoint.

mod api_support;
mod browser;
mod observe_support;

use api_support::{request, Server, Tokens};
use observe_support::{b64, eventually, Observed};
use rayscope::observe::{ObserveOptions, Source};
use serde_json::{json, Value};
use std::time::Duration;

const TOKEN: &str = "observe-token";
const JOB: &str = "AQAAAA=="; // 01000000

fn at(ms: u64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + Duration::from_millis(1_795_000_000_000 + ms)).to_string()
}

/// A job whose driver calls `f` three times; each call calls `g` once.
fn batch() -> Value {
    let driver = format!("{}01000000", "f".repeat(40));
    let mut events = vec![
        json!({"eventType": "DRIVER_JOB_DEFINITION_EVENT", "driverJobDefinitionEvent": {"jobId": JOB, "entrypoint": "python app.py"}}),
        json!({"eventType": "DRIVER_JOB_LIFECYCLE_EVENT", "driverJobLifecycleEvent": {"jobId": JOB,
            "stateTransitions": [{"state": "CREATED", "timestamp": at(0)}, {"state": "FINISHED", "timestamp": at(1_000)}]}}),
    ];
    let task = |id: &str, parent: &str, name: &str, from: u64, to: u64| {
        vec![
            json!({"eventType": "TASK_DEFINITION_EVENT", "taskDefinitionEvent": {"taskId": b64(id), "taskName": name,
                "taskType": "NORMAL_TASK", "jobId": JOB, "parentTaskId": b64(parent), "taskAttempt": 0}}),
            json!({"eventType": "TASK_LIFECYCLE_EVENT", "taskLifecycleEvent": {"taskId": b64(id), "jobId": JOB, "taskAttempt": 0,
                "stateTransitions": [{"state": "PENDING_ARGS_AVAIL", "timestamp": at(from)},
                    {"state": "RUNNING", "timestamp": at(from + 1)}, {"state": "FINISHED", "timestamp": at(to)}]}}),
        ]
    };
    for i in 0..3u64 {
        let f = format!("{:016x}{}01000000", i + 1, "0".repeat(24));
        let g = format!("{:016x}{}01000000", i + 100, "0".repeat(24));
        events.extend(task(&f, &driver, "f", 10 + i * 100, 90 + i * 100));
        events.extend(task(&g, &f, "g", 20 + i * 100, 80 + i * 100));
    }
    Value::Array(events)
}

/// Waits Ray's rows do not record are inferred, and say so in the API and on the
/// page; the pages speak of an observed cluster, not of a simulation.
/// A push-only observer, served with the submit token.
async fn observed() -> Observed {
    let mut opts = ObserveOptions::new(Source::Push);
    opts.poll_every = Duration::from_millis(100);
    Observed::start_with_token(opts, Some(TOKEN)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inferred_waits_are_marked_and_the_pages_speak_of_a_cluster() {
    let s = observed().await;
    assert_eq!(s.push(batch().to_string().as_bytes()).await.status, 200);
    let b = eventually("the pushed job's bottlenecks", async || {
        let r = s.get("/api/flow/bottlenecks?job=01000000").await;
        (r.status == 200 && r.json()["entries"].as_array().is_some_and(|e| !e.is_empty()))
            .then(|| r.json())
            .ok_or(r.text())
    })
    .await;
    // The driver outlived its calls after its last submit: a wait in ray.get, read from
    // the times, not measured.
    assert_eq!(b["driver_waits_inferred"], true, "{b}");
    let f = b["entries"].as_array().unwrap().iter().find(|e| e["name"] == "f").expect("f is on the path");
    assert_eq!(f["inferred"], true, "{f}");
    let tl = s.get("/api/flow/timeline.json?job=01000000").await.json();
    let waits: Vec<&Value> = tl["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "blocked").collect();
    assert!(!waits.is_empty() && waits.iter().all(|e| e["args"]["inferred"] == true), "{tl}");
    let cluster = s.get("/api/cluster").await.json();
    assert_eq!(cluster["mode"], "observed", "{cluster}");
    let endpoints = s.get("/endpoints").await.text();
    assert!(endpoints.contains("an observed cluster") && !endpoints.contains("virtual time"), "{endpoints}");

    let Some(exe) = browser::chromium_or_skip("inferred_waits_are_marked_and_the_pages_speak_of_a_cluster") else {
        return;
    };
    let chrome = browser::Browser::launch(&exe).await;
    let page = chrome.page().await;
    page.goto(&format!("http://{}/", s.addr)).await;
    let text = page
        .wait_for(
            "the overview's clock",
            "document.body.dataset.mode ? document.querySelector('#session').textContent + ' | ' + document.querySelector('#clock').textContent : null",
            Duration::from_secs(30),
        )
        .await;
    let text = text.as_str().unwrap();
    assert!(text.contains("observed cluster") && !text.contains("seed") && !text.contains("Virtual time"), "{text}");
    page.goto(&format!("http://{}/flow?job=01000000", s.addr)).await;
    let note = page.loaded_text("#bottlenecks", Duration::from_secs(30)).await;
    assert!(note.contains("inferred from the calls' times") && note.contains("INFERRED"), "{note}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushed_events_become_the_job_and_its_call_graph() {
    let s = observed().await;
    let r = s.push(batch().to_string().as_bytes()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["records"], 14, "{}", r.text());
    let graph = eventually("the pushed job's graph", async || {
        let r = s.get("/api/flow/graph?job=01000000&level=class").await;
        (r.status == 200).then(|| r.json()).ok_or(r.text())
    })
    .await;
    let edges: Vec<(String, String, u64)> = graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (e["source"].as_str().unwrap().into(), e["target"].as_str().unwrap().into(), e["calls"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(edges, [("_main".into(), "f".into(), 3), ("f".into(), "g".into(), 3)]);
    // Ant flow-insight's endpoints read the same records.
    let ant = s.get("/get_call_graph_data?flow_id=01000000&stack_mode=false").await;
    assert_eq!(ant.status, 200, "{}", ant.text());
    assert!(ant.text().contains("\"g\""), "Ant's call graph names the pushed calls: {}", ant.text());
    let jobs = s.get("/api/jobs/").await.json();
    assert_eq!(jobs[0]["job_id"], "01000000", "{jobs}");
    assert_eq!(jobs[0]["status"], "SUCCEEDED", "{jobs}");
    let status = s.get("/api/observe").await.json();
    assert_eq!((status["mode"].as_str(), status["events_received"].as_u64()), (Some("push"), Some(14)), "{status}");
    // The same batch again (Ray's agent retries): nothing changes, nothing is counted twice.
    assert_eq!(s.push(batch().to_string().as_bytes()).await.status, 200);
    tokio::time::sleep(Duration::from_millis(700)).await;
    let again = s.get("/api/flow/graph?job=01000000&level=class").await.json();
    assert_eq!(again["edges"], graph["edges"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_batches_are_refused_with_the_reason_and_change_nothing() {
    let s = observed().await;
    let r = s.push(b"{\"not\": \"a list\"}").await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("JSON array"), "{}", r.text());
    let r = s.push(b"[{\"eventType\": ").await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().starts_with("the body is not JSON"), "{}", r.text());
    // Bad events are named and skipped; the good ones in the same batch are taken.
    let mixed = json!([
        {"eventType": "TASK_LIFECYCLE_EVENT", "taskLifecycleEvent": {"taskId": "!!", "jobId": JOB}},
        {"eventType": "SOMETHING_NEW", "somethingNew": {}},
        {"eventType": "DRIVER_JOB_DEFINITION_EVENT", "driverJobDefinitionEvent": {"jobId": JOB, "entrypoint": "x"}},
    ]);
    let r = s.push(mixed.to_string().as_bytes()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(
        (v["records"].as_u64(), v["ignored"].as_u64(), v["refused"].as_u64()),
        (Some(1), Some(1), Some(1)),
        "{v}"
    );
    assert!(v["errors"][0].as_str().unwrap().contains("taskId"), "{v}");
    // Past the size limit, before the body is read.
    let wire = format!(
        "POST /api/observe/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        64 << 20
    );
    let r = api_support::raw(s.addr, wire.as_bytes()).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["limit_bytes"], 16 << 20);
    // The counters reach the next snapshot (published at least every poll period).
    eventually("the refusals counted", async || {
        let status = s.get("/api/observe").await.json();
        (status["batches_refused"] == 2 && status["events_refused"] == 1).then_some(()).ok_or(status.to_string())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_on_the_cluster_can_be_changed_and_only_rayscope_metrics_are_served() {
    let s = observed().await;
    let auth = format!("Bearer {TOKEN}");
    for path in ["/api/control/speed", "/api/control/nodes/10.0.0.1/kill", "/api/jobs/"] {
        let body = if path == "/api/jobs/" { r#"{"entrypoint": "python x.py"}"# } else { r#"{"speed": 2}"# };
        let r = request(s.addr, "POST", path, &[("authorization", &auth)], Some(body.as_bytes())).await;
        assert_eq!(r.status, 409, "{path}: {}", r.text());
        assert!(r.json()["error"].as_str().unwrap().contains("observing a live Ray cluster"), "{}", r.text());
    }
    let metrics = s.get("/metrics").await.text();
    assert!(metrics.contains("rayscope_observe_info{"), "{metrics}");
    assert!(!metrics.lines().any(|l| l.starts_with("ray_")), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_running_the_model_takes_no_events() {
    let s = Server::start(api_support::config(), Tokens::default()).await;
    let r = s.post_as("/api/observe/events", None, "[]").await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.json()["error"].as_str().unwrap().contains("rayscope observe"), "{}", r.text());
    assert_eq!(s.get("/api/observe").await.status, 404);
    s.stop().await;
}
