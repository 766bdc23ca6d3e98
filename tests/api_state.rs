//! The read-only endpoints: health, the endpoint index, Prometheus exposition and service
//! discovery, Ray's State API (shapes, paging, filters, summaries, every 400), and the
//! seed dashboard's JSON.

mod api_support;

use api_support::*;
use serde_json::Value;
use std::time::Duration;

#[tokio::test]
async fn health_ready_overview_and_endpoint_index() {
    let s = Server::without_token().await;
    let r = s.get("/-/healthy").await;
    assert_eq!((r.status, r.text().as_str()), (200, "OK\n"));
    let r = s.get("/-/ready").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["ready"], true);
    let r = s.get("/").await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    assert!(r.text().contains("href=\"/endpoints\""), "the overview links the endpoint index");
    let r = s.get("/endpoints").await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let page = r.text();
    for link in [
        "/metrics",
        "/sd",
        "/api/v0/tasks",
        "/api/jobs/",
        "/api/cluster",
        "/ws/realtime",
        "/api/control/speed",
        "RAYSCOPE_TOKEN",
    ] {
        assert!(page.contains(link), "the endpoint index lacks {link}");
    }
    let r = s.get("/no/such/thing").await;
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().contains("/no/such/thing"));
    s.stop().await;
}

#[tokio::test]
async fn metrics_exposition_and_service_discovery() {
    let s = Server::with_token().await;
    let r = s.get("/metrics").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some(rayscope::api::CONTENT_TYPE));
    assert!(!r.body.is_empty(), "the metrics module's exposition, served as is");

    let sd = s.get("/sd").await;
    assert_eq!(sd.status, 200);
    assert!(sd.header("content-type").unwrap().starts_with("application/json"));
    let groups = sd.json();
    let groups = groups.as_array().unwrap();
    assert_eq!(groups.len(), 3, "{groups:?}");
    let addr = s.addr.to_string();
    for g in groups {
        assert_eq!(g["targets"], serde_json::json!([addr]));
        let ip = g["labels"]["ray_node_ip"].as_str().unwrap();
        assert_eq!(g["labels"]["__metrics_path__"], format!("/metrics/nodes/{ip}"));
        assert_eq!(g["labels"]["instance"], format!("{ip}:8080"));
    }

    // A node's endpoint: 404 for an unknown IP, 503 once the node is dead.
    let worker = groups
        .iter()
        .map(|g| g["labels"]["ray_node_ip"].as_str().unwrap().to_string())
        .find(|ip| ip != "10.0.0.1")
        .unwrap();
    let r = s.get("/metrics/nodes/10.9.9.9").await;
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().contains("10.9.9.9"));
    let r = s.get(&format!("/metrics/nodes/{worker}")).await;
    let expected = rayscope::metrics::render_node(&s.handle.snapshot(), &worker, None, &Default::default());
    match expected {
        Some(_) => assert_eq!((r.status, r.header("content-type")), (200, Some(rayscope::api::CONTENT_TYPE))),
        // The metrics module is still a stub on this branch: it renders no node.
        None => assert_eq!(r.status, 503),
    }
    assert_eq!(s.post(&format!("/api/control/nodes/{worker}/kill"), "").await.status, 200);
    // Its raylet is down at once: the endpoint answers 503 while the GCS still lists it.
    let r = s.get(&format!("/metrics/nodes/{worker}")).await;
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.json()["error"].as_str().unwrap().contains("not answering"), "{}", r.text());
    // Once the GCS's health checks give up, it is dead.
    let r = eventually("the GCS marking the node dead", std::time::Duration::from_secs(20), || async {
        let r = s.get(&format!("/metrics/nodes/{worker}")).await;
        (r.json()["state"] == "DEAD").then_some(r)
    })
    .await;
    assert_eq!(r.status, 503, "{}", r.text());
    let body = r.json();
    assert_eq!((body["state"].as_str(), body["node_ip"].as_str()), (Some("DEAD"), Some(worker.as_str())));
    assert!(body["error"].as_str().unwrap().contains("dead"));
    // And it leaves service discovery.
    let groups = s.get("/sd").await.json();
    assert_eq!(groups.as_array().unwrap().len(), 2);
    assert!(groups.as_array().unwrap().iter().all(|g| g["labels"]["ray_node_ip"] != worker.as_str()));
    s.stop().await;
}

#[tokio::test]
async fn state_api_lists_in_rays_shapes() {
    let s = Server::without_token().await;
    let nodes = s.get("/api/v0/nodes").await.state();
    assert_eq!((nodes["total"].as_u64(), nodes["num_filtered"].as_u64()), (Some(3), Some(3)));
    assert_eq!(nodes["num_after_truncation"], 3);
    assert!(nodes["partial_failure_warning"].is_null());
    let head = &nodes["result"][0];
    for key in ["node_id", "node_ip", "is_head_node", "state", "node_name", "resources_total", "labels"] {
        assert!(head.get(key).is_some(), "node row lacks {key}: {head}");
    }
    assert_eq!(head["node_id"].as_str().unwrap().len(), 56);
    assert_eq!(head["resources_total"]["CPU"], 4.0);
    assert!(head.get("start_time_ms").is_none(), "start_time_ms is a detail column");
    let detailed = s.get("/api/v0/nodes?detail=true").await.state();
    assert!(detailed["result"][0]["start_time_ms"].is_u64());

    // Wait until the pool's actors run, then check actor and task rows.
    let actors = eventually("alive actors", Duration::from_secs(20), || async {
        let a = s.get("/api/v0/actors?state=ALIVE").await.state();
        (a["num_filtered"] == 4).then_some(a)
    })
    .await;
    let a = &actors["result"][0];
    for key in ["actor_id", "class_name", "state", "job_id", "name", "node_id", "pid", "ray_namespace"] {
        assert!(a.get(key).is_some(), "actor row lacks {key}: {a}");
    }
    assert_eq!((a["class_name"].as_str(), a["actor_id"].as_str().unwrap().len()), (Some("PoolActor"), 32));
    let d = s.get("/api/v0/actors?detail=true&limit=1").await.state();
    // int64 fields are strings in Ray's JSON.
    assert_eq!(d["result"][0]["num_restarts"], "0");
    assert!(d["result"][0].get("death_cause").is_some());

    let tasks = s.get("/api/v0/tasks?detail=true&limit=5").await.state();
    assert_eq!(tasks["result"].as_array().unwrap().len(), 5);
    let t = &tasks["result"][0];
    for key in [
        "task_id",
        "attempt_number",
        "name",
        "state",
        "job_id",
        "actor_id",
        "type",
        "func_or_class_name",
        "parent_task_id",
        "node_id",
        "worker_id",
        "error_type",
        "start_time_ms",
        "end_time_ms",
        "creation_time_ms",
    ] {
        assert!(t.get(key).is_some(), "task row lacks {key}: {t}");
    }
    assert_eq!(t["task_id"].as_str().unwrap().len(), 48);
    // Drivers are left out by default, as `ray list tasks` does.
    let drivers = s.get("/api/v0/tasks?type=DRIVER_TASK").await.state();
    assert_eq!(drivers["num_filtered"], 0);
    let drivers = s.get("/api/v0/tasks?type=DRIVER_TASK&exclude_driver=false").await.state();
    assert_eq!(drivers["num_filtered"], 2);

    for r in ["objects", "placement_groups", "jobs"] {
        let v = s.get(&format!("/api/v0/{r}")).await.state();
        assert!(v["result"].is_array(), "{r}: {v}");
    }
    let jobs = s.get("/api/v0/jobs").await.state();
    assert_eq!(jobs["total"], 2);
    assert_eq!(jobs["result"][0]["type"], "SUBMISSION");
    // One driver worker per job, on the head, plus the actors' and running tasks' workers.
    let workers = s.get("/api/v0/workers?worker_type=DRIVER").await.state();
    assert_eq!(workers["num_filtered"], 2, "{workers}");
    assert!(workers["result"].as_array().unwrap().iter().all(|w| w["worker_id"].as_str().unwrap().len() == 56));
    let workers = s.get("/api/v0/workers?limit=1000").await.state();
    assert!(workers["num_filtered"].as_u64().unwrap() > 2, "{workers}");
    assert_eq!(s.get("/api/v0/nonsense").await.status, 404);
    s.stop().await;
}

#[tokio::test]
async fn state_api_pages_through_any_limit_and_filters_like_ray_list() {
    let s = Server::without_token().await;
    // The fan-out submits 200 maps and the pool 4,000 calls at once.
    let total = eventually("all tasks submitted", Duration::from_secs(20), || async {
        let v = s.get("/api/v0/tasks?limit=1").await.state();
        (v["num_filtered"].as_u64().unwrap() >= 4204).then(|| v["num_filtered"].as_u64().unwrap())
    })
    .await;
    // Page through everything 1,000 at a time while tasks keep finishing: the page
    // token pins the first page's table, so every row comes exactly once.
    let mut seen = std::collections::HashSet::new();
    let mut rows = 0;
    let mut query = "limit=1000".to_string();
    let mut first_total = None;
    loop {
        let r = s.get(&format!("/api/v0/tasks?{query}")).await;
        let next = r.header("x-rayscope-next-page-token").map(str::to_string);
        let page = r.state();
        first_total.get_or_insert(page["num_filtered"].as_u64().unwrap());
        assert_eq!(Some(page["num_filtered"].as_u64().unwrap()), first_total, "the same table on every page");
        for row in page["result"].as_array().unwrap() {
            seen.insert(format!("{}:{}", row["task_id"], row["attempt_number"]));
            rows += 1;
        }
        match next {
            Some(token) => query = format!("limit=1000&page_token={token}"),
            None => break,
        }
    }
    assert_eq!(rows, seen.len(), "no row twice");
    assert_eq!(Some(rows as u64), first_total, "every row once");
    assert!(rows as u64 >= total);
    let r = s.get("/api/v0/tasks?page_token=999999999-0").await;
    assert_eq!((r.status, r.names().as_str()), (400, "page_token"));
    let r = s.get("/api/v0/tasks?page_token=soon").await;
    assert_eq!((r.status, r.names().as_str()), (400, "page_token"));

    // What `ray list tasks --filter "func_or_class_name=PoolActor.run" --filter "state!=FINISHED"` sends.
    let q = "limit=100&timeout=30&detail=False&exclude_driver=True&server_timeout_multiplier=0.8\
             &filter_keys=func_or_class_name&filter_predicates=%3D&filter_values=poolactor.run\
             &filter_keys=state&filter_predicates=!%3D&filter_values=FINISHED";
    let v = s.get(&format!("/api/v0/tasks?{q}")).await.state();
    let rows = v["result"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["func_or_class_name"] == "PoolActor.run" && r["state"] != "FINISHED"));
    assert!(v["num_filtered"].as_u64().unwrap() <= v["total"].as_u64().unwrap());
    s.stop().await;
}

#[tokio::test]
async fn bad_state_api_parameters_are_400_naming_the_parameter() {
    let s = Server::without_token().await;
    for (query, parameter) in [
        ("limit=0", "limit"),
        ("limit=lots", "limit"),
        ("offset=-3", "offset"),
        ("detail=perhaps", "detail"),
        ("filter_keys=colour&filter_predicates=%3D&filter_values=red", "filter_keys"),
        ("filter_keys=state&filter_predicates=%3C&filter_values=RUNNING", "filter_predicates"),
        ("filter_keys=state", "filter_values"),
        ("filter_keys=attempt_number&filter_predicates=%3D&filter_values=first", "filter_values"),
        ("stat=RUNNING", "stat"),
    ] {
        let r = s.get(&format!("/api/v0/tasks?{query}")).await;
        assert_eq!(r.status, 400, "{query}: {}", r.text());
        assert_eq!(r.names(), parameter, "{query}: {}", r.text());
    }
    let r = s.get("/api/v0/tasks?filter_keys=colour&filter_values=red").await;
    assert!(r.json()["valid"].as_array().unwrap().iter().any(|v| v == "state"), "{}", r.text());
    let r = s.get("/api/v0/tasks/summarize?summary_by=lineage").await;
    assert_eq!((r.status, r.names().as_str()), (400, "summary_by"));
    for path in
        ["/api/events?limit=0", "/api/tasks?limit=x", "/api/alerts?offset=y", "/api/metrics/history?start=yesterday"]
    {
        let r = s.get(path).await;
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        assert!(!r.names().is_empty(), "{path}");
    }
    s.stop().await;
}

#[tokio::test]
async fn summaries_in_rays_shapes() {
    let s = Server::without_token().await;
    let v = eventually("actor calls submitted", Duration::from_secs(20), || async {
        let v = s.get("/api/v0/tasks/summarize").await.state();
        let c = v["result"]["node_id_to_summary"]["cluster"].clone();
        (c["total_actor_tasks"].as_u64() == Some(4000)).then_some(c)
    })
    .await;
    assert_eq!(v["summary_by"], "func_name");
    assert_eq!((v["total_tasks"].as_u64(), v["total_actor_scheduled"].as_u64()), (Some(200), Some(4)));
    let run = &v["summary"]["PoolActor.run"];
    assert_eq!(run["type"], "ACTOR_TASK");
    let counted: u64 = run["state_counts"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(counted, 4000);

    let a = s.get("/api/v0/actors/summarize").await.state();
    let c = &a["result"]["node_id_to_summary"]["cluster"];
    assert_eq!((c["total_actors"].as_u64(), c["summary_by"].as_str()), (Some(4), Some("class")));
    assert_eq!(c["summary"]["PoolActor"]["class_name"], "PoolActor");
    s.stop().await;
}

#[tokio::test]
async fn a_page_of_tasks_is_served_with_100k_tasks_held() {
    // Latency (the ≤ 10 ms target) is measured by scripts/bench-serve; this checks the
    // behaviour at that size: every page answers with exactly its rows.
    // 100,000 one-hour tasks on 12 CPUs: all held, nearly all pending.
    let yaml = api_support::CONFIG
        .replace("tasks: 200\n    task_duration: 1s", "tasks: 100000\n    task_duration: 1h")
        .replace("calls_per_actor: 1000", "calls_per_actor: 1");
    let s = Server::start(rayscope::config::load_str(&yaml, "big").unwrap(), Tokens::default()).await;
    eventually("100,000 tasks in the table", Duration::from_secs(60), || async {
        let v = s.get("/api/v0/tasks?limit=1").await.state();
        (v["num_filtered"].as_u64().unwrap() >= 100_000).then_some(())
    })
    .await;
    for offset in [0, 50_000, 99_950] {
        let r = s.get(&format!("/api/v0/tasks?limit=50&offset={offset}")).await;
        assert_eq!(r.state()["result"].as_array().unwrap().len(), 50, "page at offset {offset}");
    }
    s.stop().await;
}

#[tokio::test]
async fn seed_dashboard_endpoints() {
    let s = Server::without_token().await;
    let c = s.get("/api/cluster").await.json();
    assert_eq!(c["nodes"]["alive"], 3);
    assert_eq!(c["resources"]["CPU"]["total"], 12.0);
    assert_eq!(c["seed"], 7);
    assert_eq!(c["control_enabled"], false);
    let n = s.get("/api/nodes").await.json();
    assert_eq!(n["nodes"].as_array().unwrap().len(), 3);
    assert_eq!(n["nodes"][0]["alive"], true);
    let running = eventually("running tasks", Duration::from_secs(20), || async {
        let t = s.get("/api/tasks").await.json();
        (t["total_running"].as_u64().unwrap_or(0) > 0).then_some(t)
    })
    .await;
    assert!(running["tasks"].as_array().unwrap().iter().all(|t| t["state"].as_str().unwrap().starts_with("RUNNING")));
    let a = s.get("/api/actors?limit=2").await.json();
    assert_eq!((a["total"].as_u64(), a["actors"].as_array().unwrap().len()), (Some(4), 2));
    let m = s.get("/api/memory").await.json();
    assert_eq!(m["nodes"].as_array().unwrap().len(), 3);
    assert!(m["cluster"]["memory_total"].as_u64().unwrap() > 0);

    // The aggregator samples every 100 ms here (5 s by default).
    let h = eventually("three history samples", Duration::from_secs(10), || async {
        let h = s.get("/api/metrics/history").await.json();
        (h["points"].as_array().unwrap().len() >= 3).then_some(h)
    })
    .await;
    assert_eq!(h["capacity"], 720);
    let p = &h["points"][0];
    for k in ["node_metrics", "task_metrics", "actor_metrics", "memory_metrics", "object_metrics", "timestamp"] {
        assert!(p.get(k).is_some(), "sample lacks {k}: {p}");
    }
    let latest = s.get("/api/metrics").await.json();
    assert!(latest["task_metrics"]["throughput"].is_number());
    let later = h["points"].as_array().unwrap().last().unwrap()["timestamp"].as_f64().unwrap();
    let h2 = s.get(&format!("/api/metrics/history?start={later}")).await.json();
    assert!(h2["points"].as_array().unwrap().iter().all(|p| p["timestamp"].as_f64().unwrap() >= later));

    let e = s.get("/api/events?limit=5").await.json();
    let events = e["events"].as_array().unwrap();
    assert_eq!(events.len(), 5);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] > w[1]), "newest first: {seqs:?}");
    let e2 = s.get("/api/events?limit=5&offset=5").await.json();
    assert_eq!(e2["events"].as_array().unwrap().len(), 5);
    assert!(e["events_recorded"].as_u64().unwrap() >= e["total"].as_u64().unwrap());
    let v: Value = s.get("/api/version").await.json();
    assert_eq!((v["version"].as_str(), v["ray_version"].as_str()), (Some("4"), Some("2.60.0")));
    s.stop().await;
}

#[tokio::test]
async fn metrics_are_gzipped_when_asked_and_concurrent_scrapes_share_a_render() {
    use std::io::Read as _;
    let s = Server::without_token().await;
    let plain = s.get("/metrics").await;
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), None);
    let zipped = api_support::request(s.addr, "GET", "/metrics", &[("accept-encoding", "gzip")], None).await;
    assert_eq!(zipped.status, 200);
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(&zipped.body[..]).read_to_string(&mut text).expect("a valid gzip body");
    assert!(text.contains("# TYPE ray_running_jobs gauge"), "{}", &text[..text.len().min(300)]);
    assert!(zipped.body.len() * 3 < text.len(), "compressed {} of {} bytes", zipped.body.len(), text.len());
    // Scrapes that arrive together get the same render (same collector timings inside).
    let (a, b) = tokio::join!(s.get("/metrics"), s.get("/metrics"));
    let line = |r: &api_support::Resp| {
        r.text().lines().find(|l| l.starts_with("rayscope_scrape_duration_seconds")).map(str::to_string)
    };
    assert!(line(&a).is_some());
    assert_eq!(line(&a), line(&b));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_past_the_reuse_window_gets_the_last_render_at_once_and_the_next_is_made_behind_it() {
    let s = Server::without_token().await;
    let body = |r: api_support::Resp| r.text();
    let first = body(s.get("/metrics").await);
    let seq = s.handle.snapshot().seq;
    // Past the reuse window, on a newer snapshot: the render is old but still servable.
    eventually("a newer snapshot past the reuse window", Duration::from_secs(10), || async {
        (s.handle.snapshot().seq != seq).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let stale = body(s.get("/metrics").await);
    assert_eq!(stale, first, "the scrape waited for a new render instead of taking the last one");
    // The render it started lands without anyone waiting for it.
    eventually("the background render", Duration::from_secs(10), || async {
        let now = body(s.get("/metrics").await);
        (now != first).then_some(())
    })
    .await;
    s.stop().await;
}
