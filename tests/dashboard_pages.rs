//! The built-in pages in a real headless Chromium, against a running rayscope: every
//! page renders, its numbers and rows are what the JSON APIs say, the charts move, the
//! connection indicator follows the server down and back up, and nothing leaves the
//! origin or asks to change state. Screenshots go to `target/screenshots/`.
//!
//! Needs Chromium (Debian package `chromium`). Without it the tests are skipped with
//! a message, unless RAYSCOPE_REQUIRE_TOOLS is set, in which case they fail.

mod api_support;
mod browser;

use api_support::request;
use browser::{chromium_or_skip, Browser, Page, Rayscope};
use rayscope::config;
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Three node types (one worker is killed at 1 s, so some are dead), a fan-out that
/// finishes in seconds, and actors whose calls outlast the test, so the cluster
/// settles and the pages can be compared with the APIs. Few enough tasks and calls
/// (each logs four to seven lines) that the node events stay among the last 1,000
/// events `/api/events` keeps (the Events page reads the cluster events, which hold
/// no task lines).
const CONFIG: &str = r#"
cluster:
  host_node: false
  head: {cpu: 4, memory: 8GiB}
  # The GCS notices the kill at its next check, at once: the pages see the death early.
  health_check: {initial_delay: 1s, period: 1s, failure_threshold: 1}
  node_types:
    - name: cpu-worker
      count: 2
      cpu: 4
      memory: 8GiB
      ip_range: 10.0.1.0/24
    - name: gpu-worker
      count: 1
      cpu: 4
      gpu: 2
      memory: 16GiB
      ip_range: 10.0.2.0/24
workloads:
  - kind: fan_out
    name: fan-out
    tasks: 60
    task_duration: 1s
  - kind: actor_pool
    name: pool
    actors: 3
    calls_per_actor: 20
    call_duration: 1000s
faults:
  - {kind: kill_node, at: 1s, node: 10.0.1.2}
sim:
  seed: 11
  speed: 5
server:
  stream_interval: 200ms
  grafana_url: "http://127.0.0.1:3999/grafana/"
"#;

const TOKEN: &str = "pages-test-token-0123456789";
const WAIT: Duration = Duration::from_secs(30);

async fn get_json(addr: SocketAddr, path: &str) -> Value {
    let r = request(addr, "GET", path, &[], None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

async fn state_ids(addr: SocketAddr, path: &str, id: impl Fn(&Value) -> String) -> BTreeSet<String> {
    let v = get_json(addr, path).await;
    v["data"]["result"]["result"].as_array().expect("a State API list").iter().map(id).collect()
}

async fn dom_ids(page: &Page<'_>, table: &str) -> BTreeSet<String> {
    let v = page
        .eval(&format!("[...document.querySelectorAll('{table} tbody tr[data-id]')].map(r => r.dataset.id)"))
        .await
        .unwrap();
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

/// Poll until the page's rows in `table` are the rows `expected` gives (both read
/// afresh each time, since the cluster moves).
async fn rows_match<F, Fut>(page: &Page<'_>, table: &str, what: &str, expected: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = BTreeSet<String>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        let want = expected().await;
        let got = dom_ids(page, table).await;
        if !want.is_empty() && got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: the page lists {got:?}, the API {want:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn sum_where(map: &Value, keep: impl Fn(&str) -> bool) -> f64 {
    map.as_object()
        .map(|m| m.iter().filter(|(k, _)| keep(k)).map(|(_, v)| v.as_f64().unwrap_or(0.0)).sum())
        .unwrap_or(0.0)
}

/// What the overview's status should show for one `/api/cluster` answer.
fn expected_status(c: &Value) -> Value {
    let tasks = &c["tasks"];
    let mut resources = serde_json::Map::new();
    for r in ["CPU", "GPU", "memory"] {
        let total = c["resources"][r]["total"].as_f64().unwrap_or(0.0);
        let used = total - c["resources"][r]["available"].as_f64().unwrap_or(0.0);
        resources.insert(r.to_string(), serde_json::json!([used, total]));
    }
    // The object store tile: the plasma bytes in use, not the logical resource.
    let store = &c["object_store"];
    resources.insert("object_store".into(), serde_json::json!([store["used_bytes"], store["capacity_bytes"]]));
    serde_json::json!({
        "nodes.alive": c["nodes"]["alive"].as_f64(),
        "nodes.dead": c["nodes"]["dead"].as_f64(),
        "by_type": c["nodes"]["by_type"],
        "tasks.running": sum_where(tasks, |k| k.starts_with("RUNNING")),
        "tasks.pending": sum_where(tasks, |k| k.starts_with("PENDING_") || k == "SUBMITTED_TO_WORKER" || k == "NIL"),
        "actors.alive": c["actors"]["ALIVE"].as_f64().unwrap_or(0.0),
        "jobs.running": c["jobs"]["running"].as_f64(),
        "jobs": c["jobs"]["by_status"],
        "resources": resources,
    })
}

/// The same, read from the page's DOM.
const STATUS_JS: &str = r#"(() => {
  const v = (s) => Number(document.querySelector(`[data-stat="${s}"]`).dataset.value);
  const by_type = {};
  for (const r of document.querySelectorAll('#node-types tr')) by_type[r.dataset.nodeType] = {alive: Number(r.dataset.alive), dead: Number(r.dataset.dead)};
  const jobs = {};
  for (const r of document.querySelectorAll('#job-status tr')) jobs[r.dataset.jobStatus] = Number(r.dataset.count);
  const resources = {};
  for (const e of document.querySelectorAll('[data-stat-pct]')) resources[e.dataset.statPct] = [Number(e.dataset.used), Number(e.dataset.total)];
  return {'nodes.alive': v('nodes.alive'), 'nodes.dead': v('nodes.dead'), by_type, 'tasks.running': v('tasks.running'),
    'tasks.pending': v('tasks.pending'), 'actors.alive': v('actors.alive'), 'jobs.running': v('jobs.running'), jobs, resources};
})()"#;

fn close(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() <= 1e-6 * (1.0 + y.as_f64().unwrap().abs())
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| close(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
        }
        _ => a == b,
    }
}

async fn overview(page: &Page<'_>, rs: &mut Rayscope) {
    let addr = rs.addr;
    page.goto(&rs.url("/")).await;
    page.wait_for("the overview's first full render", "document.body.dataset.rendered", WAIT).await;

    // The four charts are seeded from the history, then gain points from the stream.
    let charts = ["#chart-cpu", "#chart-memory", "#chart-throughput", "#chart-actors"];
    let pushed = |c: &str| format!("Number(document.querySelector('{c}').dataset.pushed)");
    for c in charts {
        let before = page.eval(&pushed(c)).await.unwrap().as_f64().unwrap();
        page.wait_for(&format!("{c} to gain points"), &format!("{} >= {} + 3", pushed(c), before), WAIT).await;
        let shown = page.eval(&format!("Number(document.querySelector('{c}').dataset.points)")).await.unwrap();
        let shown = shown.as_f64().unwrap();
        assert!((2.0..=50.0).contains(&shown), "{c} shows {shown} points; the window is 50");
        let drawn =
            page.eval(&format!("document.querySelector('{c} path.line').getAttribute('d').split('L').length")).await;
        assert!(drawn.unwrap().as_f64().unwrap() >= 2.0, "{c} draws a line");
    }

    // The status numbers are /api/cluster's (polled: both sides move until the
    // fan-out is done).
    let deadline = Instant::now() + WAIT;
    loop {
        let want = expected_status(&get_json(addr, "/api/cluster").await);
        let got = page.eval(STATUS_JS).await.unwrap();
        if close(&got, &want) {
            break;
        }
        assert!(Instant::now() < deadline, "the overview's status {got} never matched /api/cluster's {want}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let c = get_json(addr, "/api/cluster").await;
    assert_eq!(c["nodes"]["by_type"]["cpu-worker"]["dead"], 1, "the fault killed one cpu-worker: {c}");
    assert_eq!(
        page.eval("document.querySelector('#node-types [data-node-type=\"cpu-worker\"]').dataset.dead").await.unwrap(),
        "1"
    );
    assert!(
        page.eval("document.querySelectorAll('#tasks tbody tr, #actors tbody tr').length")
            .await
            .unwrap()
            .as_f64()
            .unwrap()
            >= 2.0
    );

    // An alert that Alertmanager delivered shows in the banner.
    let alert = r#"{"version":"4","status":"firing","receiver":"rayscope","groupKey":"{}:{alertname=\"RayNodeDown\"}",
      "alerts":[{"status":"firing","labels":{"alertname":"RayNodeDown","severity":"critical"},
      "annotations":{"summary":"Node 10.0.1.2 is down"},"startsAt":"2026-01-01T00:00:00Z","fingerprint":"abc"}]}"#;
    let auth = format!("Bearer {TOKEN}");
    let r = request(addr, "POST", "/api/alerts", &[("authorization", &auth)], Some(alert.as_bytes())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    page.wait_for(
        "the alert banner",
        "document.querySelector('#alerts').dataset.firing === '1' && !document.querySelector('#alerts').hidden",
        WAIT,
    )
    .await;
    let text = page.eval("document.querySelector('#alerts').textContent").await.unwrap();
    assert!(text.as_str().unwrap().contains("RayNodeDown"), "{text}");
    page.wait_for("connected", "document.querySelector('#conn').dataset.state === 'connected'", WAIT).await;
    page.screenshot("overview").await;

    // Stop the server: the indicator turns disconnected; start it again on the same
    // port: it reconnects (it retries every 5 s) and the charts move again.
    rs.stop().await;
    page.wait_for(
        "the indicator to show the drop",
        "document.querySelector('#conn').dataset.state === 'disconnected'",
        WAIT,
    )
    .await;
    page.screenshot("overview-disconnected").await;
    rs.start_again().await;
    page.wait_for("the indicator to reconnect", "document.querySelector('#conn').dataset.state === 'connected'", WAIT)
        .await;
    let before = page.eval(&pushed("#chart-cpu")).await.unwrap().as_f64().unwrap();
    page.wait_for("the CPU chart to move again", &format!("{} > {before}", pushed("#chart-cpu")), WAIT).await;
}

async fn nodes(page: &Page<'_>, addr: SocketAddr) {
    // The restart began a fresh run: let the fan-out finish so that what runs on each
    // node holds still (the pool's calls outlast the test).
    api_support::eventually("the fan-out job to finish", WAIT, || async move {
        let c = get_json(addr, "/api/cluster").await;
        (c["jobs"]["by_status"]["SUCCEEDED"].as_u64() == Some(1)).then_some(())
    })
    .await;
    page.goto(&format!("http://{addr}/nodes")).await;
    page.wait_for("the nodes table", "document.querySelector('#nodes').dataset.loaded", WAIT).await;
    rows_match(page, "#nodes", "nodes", || {
        state_ids(addr, "/api/v0/nodes?limit=50", |r| r["node_id"].as_str().unwrap().to_string())
    })
    .await;
    // Each node links to its own metrics, and a GPU node shows its GPUs.
    let links = page
        .eval("[...document.querySelectorAll('#nodes a[href^=\"/metrics/nodes/\"]')].map(a => a.getAttribute('href'))")
        .await
        .unwrap();
    assert!(links.as_array().unwrap().iter().any(|l| l == "/metrics/nodes/10.0.2.1"), "{links}");
    let gpu = page
        .eval("[...document.querySelectorAll('#nodes .bar')].filter(b => b.title && b.dataset.total === '2').length")
        .await
        .unwrap();
    assert!(gpu.as_f64().unwrap() >= 1.0, "the GPU node shows a GPU bar of 2");
    // Opening a node lists its workers: a node one of the pool's actors lives on (which
    // node that is, is the scheduler's choice).
    let rows = |v: &Value| v["data"]["result"]["result"].as_array().unwrap().clone();
    let alive = get_json(addr, "/api/v0/actors?state=ALIVE&limit=50").await;
    let node_id = rows(&alive).first().expect("the pool's actors are alive")["node_id"].as_str().unwrap().to_string();
    page.eval(&format!("document.querySelector('#nodes tbody tr[data-id=\"{node_id}\"]').click()")).await.unwrap();
    page.wait_for("a node's workers", "document.querySelector('#nodes .workers[data-loaded]')", WAIT).await;
    // One row per worker process on that node: its running tasks' and alive actors'
    // pids, as the State API lists them.
    let tasks = get_json(addr, &format!("/api/v0/tasks?node_id={node_id}&state=RUNNING&limit=50")).await;
    let actors = get_json(addr, &format!("/api/v0/actors?node_id={node_id}&state=ALIVE&limit=50")).await;
    let mut pids: BTreeSet<String> = rows(&tasks).iter().map(|t| t["worker_pid"].to_string()).collect();
    pids.extend(rows(&actors).iter().map(|a| a["pid"].to_string()));
    assert!(!pids.is_empty(), "the node an actor lives on runs it");
    let shown = page
        .eval("[...document.querySelectorAll('#nodes .workers tbody tr[data-pid]')].map(r => r.dataset.pid)")
        .await
        .unwrap();
    let shown: BTreeSet<String> = shown.as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
    assert_eq!(shown, pids, "workers shown on the node");
    page.screenshot("nodes").await;
}

async fn jobs(page: &Page<'_>, addr: SocketAddr) {
    page.goto(&format!("http://{addr}/jobs")).await;
    page.wait_for("the jobs table", "document.querySelector('#jobs').dataset.loaded", WAIT).await;
    rows_match(page, "#jobs", "jobs", || {
        state_ids(addr, "/api/v0/jobs?limit=25", |r| r["job_id"].as_str().unwrap().to_string())
    })
    .await;
    // A job opens to its task counts and its log, which is the Jobs API's.
    page.eval("document.querySelector('#jobs tbody tr[data-id]').click()").await.unwrap();
    page.wait_for("the job detail", "document.querySelector('#job-detail').dataset.loaded", WAIT).await;
    let job = page.eval("document.querySelector('#job-detail').dataset.jobId").await.unwrap();
    let job = job.as_str().unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let logs = get_json(addr, &format!("/api/jobs/{job}/logs")).await["logs"].as_str().unwrap().to_string();
        let shown = page.eval("document.querySelector('#job-log').textContent").await.unwrap();
        if !logs.is_empty() && shown == logs.as_str() {
            break;
        }
        assert!(Instant::now() < deadline, "job {job}'s log on the page {shown} is not the API's {logs:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let counted = page.eval("[...document.querySelectorAll('#job-tasks tr[data-count]')].reduce((a, r) => a + Number(r.dataset.count), 0)").await.unwrap();
    assert!(counted.as_f64().unwrap() > 0.0, "the job's tasks by state");
    page.screenshot("jobs").await;
}

async fn actors(page: &Page<'_>, addr: SocketAddr) {
    page.goto(&format!("http://{addr}/actors")).await;
    page.wait_for("the actors table", "document.querySelector('#actors').dataset.loaded", WAIT).await;
    rows_match(page, "#actors", "actors", || {
        state_ids(addr, "/api/v0/actors?limit=50", |r| r["actor_id"].as_str().unwrap().to_string())
    })
    .await;
    // Filter by state and class on the server.
    let loads = page.eval("Number(document.querySelector('#actors').dataset.loaded)").await.unwrap().as_f64().unwrap();
    page.eval("(() => { const s = document.querySelector('#actors select[aria-label=State]'); s.value = 'ALIVE'; s.dispatchEvent(new Event('change')); })()").await.unwrap();
    page.wait_for(
        "the state filter",
        &format!("Number(document.querySelector('#actors').dataset.loaded) > {loads}"),
        WAIT,
    )
    .await;
    rows_match(page, "#actors", "alive actors", || {
        state_ids(addr, "/api/v0/actors?limit=50&state=ALIVE", |r| r["actor_id"].as_str().unwrap().to_string())
    })
    .await;
    page.wait_for(
        "class options",
        "document.querySelectorAll('#actors select[aria-label=Class] option').length > 1",
        WAIT,
    )
    .await;
    page.eval("(() => { const s = document.querySelector('#actors select[aria-label=Class]'); s.value = s.options[1].value; s.dispatchEvent(new Event('change')); })()").await.unwrap();
    let class = page.eval("document.querySelector('#actors select[aria-label=Class]').value").await.unwrap();
    let class = class.as_str().unwrap().to_string();
    rows_match(page, "#actors", "actors of one class", || {
        let path = format!("/api/v0/actors?limit=50&state=ALIVE&class_name={class}");
        async move { state_ids(addr, &path, |r| r["actor_id"].as_str().unwrap().to_string()).await }
    })
    .await;
    page.screenshot("actors").await;
}

async fn tasks(page: &Page<'_>, addr: SocketAddr) {
    page.goto(&format!("http://{addr}/tasks")).await;
    page.wait_for("the task summary", "document.querySelector('#task-summary').dataset.groups", WAIT).await;
    let summary = get_json(addr, "/api/v0/tasks/summarize").await;
    let groups =
        summary["data"]["result"]["result"]["node_id_to_summary"]["cluster"]["summary"].as_object().unwrap().len();
    assert_eq!(
        page.eval("Number(document.querySelector('#task-summary').dataset.groups)").await.unwrap().as_u64().unwrap()
            as usize,
        groups
    );
    // Column heads are Ray's TaskStatus names.
    let heads = page.eval("[...document.querySelectorAll('#task-summary th')].map(t => t.textContent)").await.unwrap();
    assert!(heads.as_array().unwrap().iter().any(|h| h == "FINISHED"), "{heads}");
    rows_match(page, "#tasks", "tasks", || {
        state_ids(addr, "/api/v0/tasks?limit=50&detail=true", |r| {
            format!("{}:{}", r["task_id"].as_str().unwrap(), r["attempt_number"])
        })
    })
    .await;
    page.screenshot("tasks").await;
}

async fn events(page: &Page<'_>, addr: SocketAddr) {
    page.goto(&format!("http://{addr}/events")).await;
    page.wait_for("the cluster events", "document.querySelector('#events').dataset.loaded", WAIT).await;
    let ids = |path: &'static str| async move {
        get_json(addr, path).await["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event_id"].as_str().unwrap().to_string())
            .collect::<BTreeSet<_>>()
    };
    rows_match(page, "#events", "events", || ids("/api/cluster_events?limit=50")).await;
    let newest_first = "(() => { const r = [...document.querySelectorAll('#events tbody tr[data-seq]')]; \
        return r.length > 1 && Number(r[0].dataset.seq) > Number(r[r.length - 1].dataset.seq); })()";
    assert_eq!(page.eval(newest_first).await.unwrap(), true, "newest first");
    // The first select is the severity: ERROR keeps the node the fault killed.
    let error = "(() => { const s = document.querySelector('#events select'); s.value = 'ERROR'; \
        s.dispatchEvent(new Event('change')); })()";
    page.eval(error).await.unwrap();
    rows_match(page, "#events", "error events", || ids("/api/cluster_events?limit=50&severity=ERROR")).await;
    let text = page.eval("document.querySelector('#events tbody').textContent").await.unwrap();
    assert!(text.as_str().unwrap().contains("10.0.1.2"), "the dead node's IP: {text}");
    page.screenshot("events").await;
}

async fn metrics_and_endpoints(page: &Page<'_>, addr: SocketAddr) {
    page.goto(&format!("http://{addr}/metrics-view")).await;
    let hrefs = page
        .wait_for(
            "the dashboard links",
            "[...document.querySelectorAll('#dashboards a')].map(a => a.getAttribute('href'))",
            WAIT,
        )
        .await;
    let hrefs: Vec<&str> = hrefs.as_array().unwrap().iter().map(|h| h.as_str().unwrap()).collect();
    // Every dashboard the bundle provisions, by the uid in its own JSON.
    let dashboards = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("grafana/dashboards");
    let mut uids = Vec::new();
    for entry in std::fs::read_dir(&dashboards).unwrap() {
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        uids.push(json["uid"].as_str().expect("a provisioned dashboard has a uid").to_string());
    }
    assert!(uids.len() >= 7, "{uids:?}");
    for uid in &uids {
        assert!(hrefs.contains(&format!("http://127.0.0.1:3999/grafana/d/{uid}").as_str()), "{uid} in {hrefs:?}");
    }
    assert_eq!(page.eval("!!document.querySelector('a[href=\"/metrics\"]')").await.unwrap(), true);
    page.screenshot("metrics").await;
    page.goto(&format!("http://{addr}/endpoints")).await;
    assert_eq!(page.eval("!!document.querySelector('main a[href=\"/api/v0/tasks\"]')").await.unwrap(), true);
    page.screenshot("endpoints").await;
}

/// Every request stayed on rayscope's origin and none could change state.
fn assert_read_only_and_local(page: &Page<'_>, addr: SocketAddr) -> u64 {
    let requests = page.requests();
    assert!(requests.len() > 20, "requests were recorded: {requests:?}");
    let (http, ws) = (format!("http://{addr}/"), format!("ws://{addr}/"));
    for r in &requests {
        assert!(r.url.starts_with(&http) || r.url.starts_with(&ws), "a request left rayscope: {r:?}");
        assert_eq!(r.method, "GET", "the pages must not change state: {r:?}");
    }
    assert!(requests.iter().any(|r| r.url == format!("{ws}ws/realtime")), "the overview opened the stream");
    requests.iter().filter_map(|r| r.encoded_bytes).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_renders_what_the_apis_say_and_stays_on_the_origin() {
    let Some(exe) = chromium_or_skip("every_page_renders_what_the_apis_say_and_stays_on_the_origin") else { return };
    let cfg = config::load_str(CONFIG, "pages test config").expect("the test config is valid");
    // A token is set: the pages stay read-only whatever the token.
    let mut rs = Rayscope::start(cfg, Some(TOKEN)).await;
    let browser = Browser::launch(&exe).await;
    let page = browser.page().await;
    overview(&page, &mut rs).await;
    let addr = rs.addr;
    nodes(&page, addr).await;
    jobs(&page, addr).await;
    actors(&page, addr).await;
    tasks(&page, addr).await;
    events(&page, addr).await;
    metrics_and_endpoints(&page, addr).await;
    assert_read_only_and_local(&page, addr);
    let errors: Vec<String> = page
        .errors()
        .into_iter()
        .filter(|e| !e.contains("ERR_CONNECTION_REFUSED") && !e.contains("WebSocket"))
        .collect();
    assert!(errors.is_empty(), "the pages threw: {errors:?}");
    rs.stop().await;
}

/// The pages at `examples/scale.yaml` size (2,000 nodes, 20,000 actors): the nodes
/// view pages, and the overview's time to first full render is printed, with the
/// page weight. A benchmark, not a timed test: `scripts/bench-pages` runs it against a
/// release build (`RAYSCOPE_BENCH_ADDR`); without that it serves scale.yaml itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark at scale.yaml size; run scripts/bench-pages"]
async fn bench_overview_first_render_at_scale() {
    let Some(exe) = chromium_or_skip("bench_overview_first_render_at_scale") else { return };
    let mut local = None;
    let addr: SocketAddr = match std::env::var("RAYSCOPE_BENCH_ADDR") {
        Ok(a) => a.parse().expect("RAYSCOPE_BENCH_ADDR is host:port"),
        Err(_) => {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/scale.yaml");
            let cfg = config::load_file(std::path::Path::new(path)).expect("examples/scale.yaml is valid");
            let rs = Rayscope::start(cfg, None).await;
            let a = rs.addr;
            local = Some(rs);
            a
        }
    };
    let url = |p: &str| format!("http://{addr}{p}");
    let browser = Browser::launch(&exe).await;
    // Let the cluster come up, as a user would find it.
    api_support::eventually("the scale cluster's actors", Duration::from_secs(120), || async move {
        let c = get_json(addr, "/api/cluster").await;
        (c["actors"]["ALIVE"].as_f64().unwrap_or(0.0) >= 1000.0).then_some(())
    })
    .await;
    let c = get_json(addr, "/api/cluster").await;
    println!("cluster: {} nodes, {} alive actors, tasks {}", c["nodes"]["total"], c["actors"]["ALIVE"], c["tasks"]);
    let (mut renders, mut alives) = (Vec::new(), Vec::new());
    for run in 0..7 {
        let page = browser.page().await;
        page.call("Page.navigate", serde_json::json!({"url": url("/")})).await.unwrap();
        page.wait_for(
            "the overview's first full render",
            "document.body && document.body.dataset.rendered",
            Duration::from_secs(60),
        )
        .await;
        let ms = page.eval("Number(document.body.dataset.rendered)").await.unwrap().as_f64().unwrap();
        let alive = page.eval("Number(document.body.dataset.alive)").await.unwrap().as_f64().unwrap();
        let (bytes, assets) = page_weight(&page, addr);
        println!(
            "run {run}: status and charts {alive:.0} ms, first full render (with the tables) {ms:.0} ms after \
             navigation start; {bytes} bytes transferred, of which page and assets {assets} bytes"
        );
        alives.push(alive);
        if run == 0 {
            page.screenshot("scale-overview").await;
        }
        renders.push(ms);
        page.call("Page.close", serde_json::json!({})).await.ok();
    }
    println!(
        "overview at scale.yaml over {} loads (the first with a cold browser cache and cold engine tables): \
         status and charts median {:.0} ms, max {:.0} ms; first full render median {:.0} ms, max {:.0} ms",
        renders.len(),
        median(&mut alives),
        alives[alives.len() - 1],
        median(&mut renders),
        renders[renders.len() - 1]
    );
    // The nodes view pages through 2,000 nodes 50 at a time.
    let page = browser.page().await;
    page.goto(&url("/nodes")).await;
    page.wait_for("the nodes table", "document.querySelector('#nodes').dataset.loaded", Duration::from_secs(60)).await;
    assert_eq!(page.eval("document.querySelector('#nodes').dataset.rows").await.unwrap(), "50");
    let nodes = page.eval("Number(document.querySelector('#nodes').dataset.filtered)").await.unwrap();
    assert!(nodes.as_f64().unwrap() >= 2000.0, "{nodes}");
    page.screenshot("scale-nodes").await;
    for view in ["/actors", "/tasks", "/jobs", "/events"] {
        page.goto(&url(view)).await;
        let id = &view[1..];
        page.wait_for(view, &format!("document.querySelector('#{id}').dataset.loaded"), Duration::from_secs(60)).await;
        let rows = page.eval(&format!("Number(document.querySelector('#{id}').dataset.rows)")).await.unwrap();
        assert!(rows.as_f64().unwrap() <= 50.0, "{view} shows one page");
        page.screenshot(&format!("scale-{id}")).await;
        let (bytes, _) = page_weight(&page, addr);
        println!("{view}: {bytes} bytes transferred so far in this tab");
    }
    if let Some(mut rs) = local {
        rs.stop().await;
    }
}

/// Bytes a tab received (all, and the HTML, CSS and JS alone), after checking that
/// everything it asked for stayed on rayscope and was a GET.
fn page_weight(page: &Page<'_>, addr: SocketAddr) -> (u64, u64) {
    let requests = page.requests();
    for r in &requests {
        assert!(r.url.starts_with(&format!("http://{addr}/")) || r.url.starts_with(&format!("ws://{addr}/")), "{r:?}");
        assert_eq!(r.method, "GET", "{r:?}");
    }
    let total = requests.iter().filter_map(|r| r.encoded_bytes).sum();
    let assets = requests.iter().filter(|r| !r.url.contains("/api/")).filter_map(|r| r.encoded_bytes).sum();
    (total, assets)
}

/// Sorts `v` and returns its median.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
