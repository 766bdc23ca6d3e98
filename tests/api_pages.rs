//! Serving the built-in pages (content types, cache headers, nosniff, CSP, unknown
//! assets), and the additions to the seed endpoints the pages read: nodes by type and
//! jobs by status in `/api/cluster`, `/api/nodes` paging, `/api/events` filters, and
//! memory and the finished-task counter in the live stream's summary.

mod api_support;

use api_support::{eventually, Server};
use futures_util::StreamExt;
use serde_json::Value;
use std::time::Duration;

#[tokio::test]
async fn pages_and_assets_are_served_with_their_types_and_headers() {
    let s = Server::without_token().await;
    let mut scripts = Vec::new();
    for path in ["/", "/nodes", "/jobs", "/actors", "/tasks", "/events", "/metrics-view", "/flow", "/endpoints"] {
        let r = s.get(path).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"), "{path}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{path}");
        assert_eq!(r.header("cache-control"), Some("no-cache"), "{path}");
        let csp = r.header("content-security-policy").unwrap();
        assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"), "{csp}");
        let page = r.text();
        assert!(page.contains(&format!("href=\"{path}\" aria-current=\"page\"")), "{path} marks itself in the nav");
        for src in page.split("src=\"").skip(1).chain(page.split("href=\"/static/").skip(1)) {
            let url = src.split('"').next().unwrap();
            let url = if url.starts_with('/') { url.to_string() } else { format!("/static/{url}") };
            scripts.push(url);
        }
    }
    scripts.sort();
    scripts.dedup();
    assert!(scripts.len() >= 10, "{scripts:?}");
    assert!(scripts.iter().any(|u| u.starts_with("/static/flow.js?v=")), "{scripts:?}");
    let index = s.get("/endpoints").await.text();
    for path in ["/flow", "/api/flow/jobs", "/api/flow/bottlenecks?job=ID", "/get_call_graph_data"] {
        assert!(index.contains(path), "the endpoint index lists {path}");
    }
    for url in &scripts {
        let r = s.get(url).await;
        assert_eq!(r.status, 200, "{url}");
        let ct = r.header("content-type").unwrap();
        let want = if url.contains(".js") {
            "text/javascript; charset=utf-8"
        } else if url.contains(".css") {
            "text/css; charset=utf-8"
        } else {
            "image/svg+xml"
        };
        assert_eq!(ct, want, "{url}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{url}");
        // Pages name their assets by version, so those may be cached for good.
        assert_eq!(r.header("cache-control"), Some("public, max-age=31536000, immutable"), "{url}");
        let unversioned = s.get(url.split('?').next().unwrap()).await;
        assert_eq!((unversioned.status, unversioned.header("cache-control")), (200, Some("no-cache")), "{url}");
    }
    let r = s.get("/static/nope.js").await;
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().contains("rayscope.js"), "{}", r.text());
    s.stop().await;
}

#[tokio::test]
async fn seed_endpoints_answer_what_the_pages_need() {
    let s = Server::without_token().await;
    let c = s.get("/api/cluster").await.json();
    assert_eq!(c["nodes"]["by_type"]["worker"], serde_json::json!({"alive": 2, "dead": 0}), "{c}");
    assert_eq!(c["nodes"]["by_type"].as_object().unwrap().len(), 2, "{c}");
    let by_status: u64 = c["jobs"]["by_status"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(by_status, c["jobs"]["total"].as_u64().unwrap());

    // /api/nodes pages when asked, and answers as before when not.
    assert_eq!(s.get("/api/nodes").await.json()["nodes"].as_array().unwrap().len(), 3);
    let all: Vec<Value> = s.get("/api/nodes").await.json()["nodes"].as_array().unwrap().clone();
    let p = s.get("/api/nodes?limit=2&offset=1").await.json();
    assert_eq!(p["total"], 3);
    let ids: Vec<&Value> = p["nodes"].as_array().unwrap().iter().map(|n| &n["node_id"]).collect();
    assert_eq!(ids, vec![&all[1]["node_id"], &all[2]["node_id"]]);
    assert_eq!(s.get("/api/nodes?state=dead").await.json()["total"], 0);
    assert_eq!(s.get("/api/nodes?state=ALIVE&limit=1").await.json()["total"], 3);
    assert_eq!(s.get("/api/nodes?state=sleepy").await.names(), "state");
    assert_eq!(s.get("/api/nodes?limit=0").await.names(), "limit");

    // /api/events filters by source and text, and counts what it keeps.
    let all = eventually("events from several sources", Duration::from_secs(10), || async {
        let e = s.get("/api/events?limit=10000").await.json();
        let sources: std::collections::BTreeSet<String> =
            e["events"].as_array().unwrap().iter().map(|e| e["source"].as_str().unwrap().to_string()).collect();
        (sources.len() >= 2).then_some(e)
    })
    .await;
    let source = all["events"][0]["source"].as_str().unwrap().to_string();
    let f = s.get(&format!("/api/events?limit=10000&source={}", source.to_uppercase())).await.json();
    let kept = f["events"].as_array().unwrap();
    assert!(!kept.is_empty() && kept.iter().all(|e| e["source"] == source.as_str()), "{f}");
    assert_eq!(f["total"].as_u64().unwrap() as usize, kept.len());
    assert!(kept.len() < all["events"].as_array().unwrap().len());
    let word = all["events"][0]["message"].as_str().unwrap().split_whitespace().next().unwrap().to_string();
    let f = s.get(&format!("/api/events?limit=10000&search={}", word.to_lowercase())).await.json();
    assert!(
        f["events"].as_array().unwrap().iter().all(|e| e["message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains(&word.to_lowercase())),
        "{f}"
    );
    assert_eq!(s.get("/api/events?kind=node").await.names(), "kind");

    // The stream's summary carries memory and the finished-task counter.
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws/realtime", s.addr)).await.unwrap();
    let m = loop {
        let msg = tokio::time::timeout(Duration::from_secs(5), ws.next()).await.unwrap().unwrap().unwrap();
        if let Ok(text) = msg.to_text() {
            if let Ok(v) = serde_json::from_str::<Value>(text) {
                break v;
            }
        }
    };
    assert!(m["memory"]["total"].as_u64().unwrap() > 0, "{m}");
    assert!(m["memory"]["used"].as_u64().is_some(), "{m}");
    assert!(m["tasks_finished_total"].as_u64().is_some(), "{m}");
    drop(ws);
    s.stop().await;
}
