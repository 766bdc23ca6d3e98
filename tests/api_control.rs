//! The endpoints that change state: auth (403 without a token, 401 with a wrong one),
//! node and actor control, speed, Ray's Jobs API, the Alertmanager webhook, and the
//! 400 / 404 / 409 / 413 answers, each leaving the model untouched.

mod api_support;

use api_support::*;
use serde_json::{json, Value};
use std::time::Duration;

const STATE_CHANGING: &[&str] = &[
    "/api/control/nodes/10.0.1.1/kill",
    "/api/control/nodes/10.0.1.1/restore",
    "/api/control/actors/00000000000000000000000102000000/kill",
    "/api/control/speed",
    "/api/jobs/",
    "/api/jobs/01000000/stop",
    "/api/alerts",
];

#[tokio::test]
async fn without_a_token_every_state_changing_endpoint_is_403_and_says_how_to_enable_it() {
    let s = Server::without_token().await;
    for path in STATE_CHANGING {
        let r = s.post_as(path, Some("anything"), r#"{"speed": 2}"#).await;
        assert_eq!(r.status, 403, "{path}: {}", r.text());
        assert!(r.json()["error"].as_str().unwrap().contains("RAYSCOPE_"), "{path}: {}", r.text());
    }
    // Nothing changed.
    let c = s.get("/api/cluster").await.json();
    assert_eq!((c["nodes"]["alive"].as_u64(), c["speed"].as_f64()), (Some(3), Some(20.0)));
    s.stop().await;
}

#[tokio::test]
async fn with_a_token_requests_need_the_bearer_token() {
    let s = Server::with_token().await;
    for path in STATE_CHANGING {
        let r = s.post_as(path, None, "{}").await;
        assert_eq!(r.status, 401, "{path}: {}", r.text());
        assert_eq!(r.header("www-authenticate"), Some("Bearer realm=\"rayscope\""));
        let r = s.post_as(path, Some("wrong-token"), "{}").await;
        assert_eq!(r.status, 401, "{path}: {}", r.text());
    }
    // The alert token opens the webhook and nothing else.
    let r = s.post_as("/api/control/speed", Some(ALERT_TOKEN), r#"{"speed": 2}"#).await;
    assert_eq!(r.status, 401);
    assert_eq!(s.get("/api/cluster").await.json()["nodes"]["alive"], 3);
    s.stop().await;
}

#[tokio::test]
async fn kill_and_restore_nodes() {
    let s = Server::with_token().await;
    let r = s.post("/api/control/nodes/10.0.1.1/kill", "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["killed"], "10.0.1.1");
    // Its raylet stops answering at once (the reply waits for a snapshot that shows it),
    // and the GCS marks it dead at its health checks' threshold: the first check 5 s
    // after it joined, then every 3 s, five failures (Ray's defaults).
    let dead_at = r.json()["dead_at_s"].as_f64().expect("the reply says when the GCS marks it dead");
    let down = s.get("/metrics/nodes/10.0.1.1").await;
    assert_eq!(down.status, 503, "{}", down.text());
    assert_eq!(down.json()["state"], "ALIVE");
    let r = s.post("/api/control/nodes/10.0.1.1/kill", "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.json()["error"].as_str().unwrap().contains("already crashed"), "{}", r.text());
    let r = s.post("/api/control/nodes/10.0.1.1/restore", "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.json()["error"].as_str().unwrap().contains("not marked it dead yet"), "{}", r.text());
    let c = s.get("/api/cluster").await.json();
    if c["sim_time_seconds"].as_f64().unwrap() < dead_at {
        assert_eq!(c["nodes"]["alive"], 3, "the GCS marks it dead only at {dead_at} s");
    }
    // At speed 20, 17 s of virtual time is under a second of wall time.
    eventually("the GCS marking the node dead", Duration::from_secs(20), || async {
        (s.get("/api/cluster").await.json()["nodes"]["alive"] == 2).then_some(())
    })
    .await;
    let r = s.post("/api/control/nodes/10.0.1.1/kill", "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.json()["error"].as_str().unwrap().contains("already dead"));
    let r = s.post("/api/control/nodes/10.9.9.9/kill", "").await;
    assert_eq!(r.status, 404, "{}", r.text());
    let r = s.post("/api/control/nodes/10.0.1.1/restore", "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(s.get("/api/cluster").await.json()["nodes"]["alive"], 3);
    let r = s.post("/api/control/nodes/10.0.1.1/restore", "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    let r = s.post("/api/control/nodes/192.168.7.7/restore", "").await;
    assert_eq!(r.status, 404, "{}", r.text());
    s.stop().await;
}

#[tokio::test]
async fn kill_an_actor_by_its_state_api_id() {
    let s = Server::with_token().await;
    let actors = eventually("alive actors", Duration::from_secs(20), || async {
        let a = s.get("/api/v0/actors?state=ALIVE").await.state();
        (a["num_filtered"] == 4).then_some(a)
    })
    .await;
    let id = actors["result"][0]["actor_id"].as_str().unwrap().to_string();
    let r = s.post(&format!("/api/control/actors/{id}/kill"), r#"{"no_restart": true}"#).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!((r.json()["actor_id"].as_str(), r.json()["state"].as_str()), (Some(id.as_str()), Some("DEAD")));
    eventually("the actor listed as DEAD", Duration::from_secs(10), || async {
        let a = s.get(&format!("/api/v0/actors?actor_id={id}&detail=true")).await.state();
        (a["result"][0]["state"] == "DEAD").then_some(())
    })
    .await;
    let r = s.post(&format!("/api/control/actors/{id}/kill"), "").await;
    assert_eq!(r.status, 409, "{}", r.text());
    let r = s.post("/api/control/actors/00000000000000000000ffff01000000/kill", "").await;
    assert_eq!(r.status, 404, "{}", r.text());
    let r = s.post("/api/control/actors/not-an-id/kill", "").await;
    assert_eq!((r.status, r.names().as_str()), (400, "actor_id"));
    let r = s.post(&format!("/api/control/actors/{id}/kill"), r#"{"no_restart": "yes"}"#).await;
    assert_eq!((r.status, r.names().as_str()), (400, "no_restart"));
    s.stop().await;
}

#[tokio::test]
async fn speed_changes_and_bad_bodies_name_the_field() {
    let s = Server::with_token().await;
    let r = s.post("/api/control/speed", r#"{"speed": 50}"#).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(s.get("/api/cluster").await.json()["speed"], 50.0);
    for (body, field) in [
        (r#"{"speed": 0}"#, "speed"),
        (r#"{"speed": -1}"#, "speed"),
        (r#"{"speed": "fast"}"#, "speed"),
        (r#"{}"#, "speed"),
        (r#"{"speed": 2, "sped": 3}"#, "sped"),
        (r#"{"speed": "#, "speed"),
        ("", ""),
    ] {
        let r = s.post("/api/control/speed", body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.names(), field, "{body}: {}", r.text());
    }
    assert_eq!(s.get("/api/cluster").await.json()["speed"], 50.0, "a refused request changes nothing");
    s.stop().await;
}

#[tokio::test]
async fn bodies_over_1_mib_are_413() {
    let s = Server::with_token().await;
    // Declared too large: refused before the body is read (so only the head is sent).
    let head = format!(
        "POST /api/jobs/ HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        s.addr,
        2 * 1024 * 1024
    );
    let r = raw(s.addr, head.as_bytes()).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["limit_bytes"], 1024 * 1024);
    // Just over the limit, sent in full.
    let body =
        format!(r#"{{"entrypoint": "fan-out --tasks 1", "metadata": {{"pad": "{}"}}}}"#, "x".repeat(1024 * 1024));
    let r = s.post("/api/jobs/", &body).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert_only_config_jobs(&s).await;
    s.stop().await;
}

/// No job but the config's two workloads exists.
async fn assert_only_config_jobs(s: &Server) {
    let jobs = s.get("/api/jobs/").await.json();
    for j in jobs.as_array().unwrap() {
        let ep = j["entrypoint"].as_str().unwrap();
        assert!(ep.starts_with("fan-out --tasks 200") || ep.starts_with("actor-pool --actors 4"), "unexpected job {j}");
    }
}

#[tokio::test]
async fn jobs_submit_list_get_stop_and_logs_in_rays_shapes() {
    let s = Server::with_token().await;
    let body = json!({
        "entrypoint": "fan-out --tasks 50 --task-duration 1h",
        "submission_id": "my-job-1",
        "metadata": {"owner": "alice"},
        "runtime_env": {"pip": ["numpy"]},
    });
    let r = s.post("/api/jobs/", &body.to_string()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let submitted = r.json();
    assert_eq!(submitted["submission_id"], "my-job-1");
    let job_id = submitted["job_id"].as_str().unwrap().to_string();
    assert_eq!(job_id.len(), 8);

    let jobs = s.get("/api/jobs/").await.json();
    let job = jobs.as_array().unwrap().iter().find(|j| j["submission_id"] == "my-job-1").unwrap().clone();
    for key in [
        "type",
        "job_id",
        "submission_id",
        "driver_info",
        "status",
        "entrypoint",
        "message",
        "start_time",
        "end_time",
        "metadata",
        "runtime_env",
    ] {
        assert!(job.get(key).is_some(), "JobDetails lacks {key}: {job}");
    }
    assert_eq!((job["type"].as_str(), job["status"].as_str()), (Some("SUBMISSION"), Some("RUNNING")));
    assert_eq!(job["metadata"], json!({"owner": "alice"}));
    assert_eq!(job["entrypoint"], "fan-out --tasks 50 --task-duration 1h");
    for id in ["my-job-1", job_id.as_str()] {
        let r = s.get(&format!("/api/jobs/{id}")).await;
        assert_eq!((r.status, r.json()["job_id"].as_str()), (200, Some(job_id.as_str())));
    }
    let logs = s.get("/api/jobs/my-job-1/logs").await.json();
    assert!(logs["logs"].as_str().unwrap().contains("started"), "{logs}");

    // The same submission id again: 409, and nothing new.
    let r = s.post("/api/jobs/", &body.to_string()).await;
    assert_eq!(r.status, 409, "{}", r.text());

    let r = s.post("/api/jobs/my-job-1/stop", "").await;
    assert_eq!((r.status, r.json()["stopped"].as_bool()), (200, Some(true)), "{}", r.text());
    assert_eq!(s.get("/api/jobs/my-job-1").await.json()["status"], "STOPPED");
    let r = s.post("/api/jobs/my-job-1/stop", "").await;
    assert_eq!(r.json()["stopped"], false);
    assert_eq!(s.get("/api/jobs/nope").await.status, 404);
    assert_eq!(s.get("/api/jobs/nope/logs").await.status, 404);
    assert_eq!(s.post("/api/jobs/nope/stop", "").await.status, 404);
    let jobs = s.get("/api/jobs/").await.json();
    assert_eq!(jobs.as_array().unwrap().iter().filter(|j| j["submission_id"] == "my-job-1").count(), 1);
    s.stop().await;
}

#[tokio::test]
async fn submitted_workloads_are_validated_in_full() {
    let s = Server::with_token().await;
    let bad = |r: &Resp| -> Value {
        assert_eq!(r.status, 400, "{}", r.text());
        r.json()
    };
    let e = bad(&s.post("/api/jobs/", r#"{"entrypoint": "python train.py"}"#).await);
    assert_eq!((e["field"].as_str(), e["at"].as_str()), (Some("entrypoint"), Some("python")));
    let valid: Vec<&str> = e["valid"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(valid, ["flow-insight", "fan-out", "actor-pool", "train"]);
    let e = bad(&s.post("/api/jobs/", r#"{"entrypoint": "fan-out --tasks 10 --colour red"}"#).await);
    assert_eq!(e["at"], "--colour");
    assert!(e["error"].as_str().unwrap().contains("--reducers"), "{e}");
    let e = bad(&s.post("/api/jobs/", r#"{"entrypoint": "fan-out --tasks ten"}"#).await);
    assert_eq!(e["at"], "--tasks");
    let e = bad(&s.post("/api/jobs/", r#"{"entrypoint": "fan-out --tasks 10 --num-cpus 64"}"#).await);
    assert_eq!(e["at"], "--num-cpus", "infeasible on this cluster: {e}");
    let e = bad(&s.post("/api/jobs/", r#"{"submission_id": "x"}"#).await);
    assert_eq!(e["field"], "entrypoint");
    let e = bad(&s.post("/api/jobs/", r#"{"entrypoint": "fan-out --tasks 1", "runtime_env": "conda"}"#).await);
    assert_eq!(e["field"], "runtime_env");
    let e = bad(&s.post("/api/jobs/", r#"{"entrypoint": "fan-out --tasks 1", "colour": "red"}"#).await);
    assert!(e["error"].as_str().unwrap().contains("colour"), "{e}");

    // Workload YAML: errors point into the YAML that was sent.
    let yaml = "kind: fan_out\ntasks: 10\ntask_duration: 2 fortnights\n";
    let e = bad(&s.post("/api/jobs/", &json!({"workload": yaml}).to_string()).await);
    assert_eq!(
        (e["field"].as_str(), e["line"].as_u64(), e["column"].as_u64()),
        (Some("workload"), Some(3), Some(16)),
        "{e}"
    );
    let e = bad(&s.post("/api/jobs/", &json!({"workload": "kind: fan_out\ntasks: [1,\n"}).to_string()).await);
    assert!(e["line"].is_u64() && e["error"].as_str().unwrap().contains("invalid YAML"), "{e}");
    let e = bad(&s
        .post("/api/jobs/", &json!({"workload": "kind: job_mix\narrivals_per_minute: 1\ntemplates: []\n"}).to_string())
        .await);
    assert!(e["error"].is_string());
    assert_only_config_jobs(&s).await;

    let ok = s
        .post("/api/jobs/", &json!({"workload": "kind: actor_pool\nactors: 2\ncalls_per_actor: 3\n"}).to_string())
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let job = s.get(&format!("/api/jobs/{}", ok.json()["submission_id"].as_str().unwrap())).await.json();
    assert_eq!(job["entrypoint"], "workload: actor-pool");
    for entrypoint in [
        "flow-insight --depth 2",
        "actor-pool --actors 2 --calls 5",
        "train --workers 2 --steps 5 --bundle-gpu 0 --bundle-cpu 1",
    ] {
        let r = s.post("/api/jobs/", &json!({"entrypoint": entrypoint}).to_string()).await;
        assert_eq!(r.status, 200, "{entrypoint}: {}", r.text());
    }
    s.stop().await;
}

#[tokio::test]
async fn alertmanager_webhooks_are_received_counted_and_listed() {
    let s = Server::with_token().await;
    let hook = json!({
        "version": "4",
        "groupKey": "{}:{alertname=\"RayNodeDown\"}",
        "status": "firing",
        "receiver": "rayscope",
        "groupLabels": {"alertname": "RayNodeDown"},
        "commonLabels": {}, "commonAnnotations": {}, "externalURL": "http://am:9093", "truncatedAlerts": 0,
        "alerts": [
            {"status": "firing", "labels": {"alertname": "RayNodeDown", "severity": "critical", "instance": "10.0.1.1:8080"},
             "annotations": {"summary": "node down"}, "startsAt": "2026-01-01T00:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
             "generatorURL": "http://prom/graph", "fingerprint": "abc123"},
            {"status": "resolved", "labels": {"alertname": "RayHighMemory"}, "annotations": {},
             "startsAt": "2026-01-01T00:00:00Z", "endsAt": "2026-01-01T00:05:00Z", "fingerprint": "def456"}
        ]
    });
    let r = s.post_as("/api/alerts", Some(ALERT_TOKEN), &hook.to_string()).await;
    assert_eq!((r.status, r.json()["received"].as_u64()), (200, Some(2)), "{}", r.text());
    let r = s.post_as("/api/alerts", Some(TOKEN), &hook.to_string()).await;
    assert_eq!(r.status, 200, "the main token works too");
    let listed = s.get("/api/alerts?limit=3").await.json();
    assert_eq!((listed["total"].as_u64(), listed["alerts"].as_array().unwrap().len()), (Some(4), 3));
    assert_eq!(listed["alerts"][0]["labels"]["alertname"], "RayHighMemory", "newest first");
    let counts = listed["counts"].as_array().unwrap();
    assert!(counts.contains(&json!({"alertname": "RayNodeDown", "status": "firing", "count": 2})), "{counts:?}");
    assert!(counts.contains(&json!({"alertname": "RayHighMemory", "status": "resolved", "count": 2})), "{counts:?}");

    let mut bad = hook.clone();
    bad["alerts"][1]["status"] = json!("exploded");
    let r = s.post_as("/api/alerts", Some(ALERT_TOKEN), &bad.to_string()).await;
    assert_eq!((r.status, r.names().as_str()), (400, "alerts[1].status"), "{}", r.text());
    let mut bad = hook.clone();
    bad["alerts"][0]["labels"] = json!({"severity": "critical"});
    let r = s.post_as("/api/alerts", Some(ALERT_TOKEN), &bad.to_string()).await;
    assert_eq!((r.status, r.names().as_str()), (400, "alerts[0].labels"), "{}", r.text());
    assert_eq!(s.get("/api/alerts").await.json()["total"], 4, "refused webhooks store nothing");
    s.stop().await;
}
