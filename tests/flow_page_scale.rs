//! Flow Insight's page in a real headless Chromium on jobs past every cap the page
//! has (tests/fixtures/flow-page-scale.yaml; `scripts/bench-flow` runs the same checks
//! on examples/scale.yaml and reports the first-render times printed here):
//! - the physical view shows the busiest nodes, then "N more";
//! - the instance graph shows "showing N of M" and no edge to a node it left out;
//! - the Gantt's overview covers the whole job, and the window picked on it (a button,
//!   a drag of the mouse, the URL) is what the per-worker Gantt below shows;
//! - the page makes no request off rayscope, changes nothing, and throws nothing.
//!
//! Needs Chromium (Debian package `chromium`): skipped with a message without it,
//! failed instead when RAYSCOPE_REQUIRE_TOOLS is set.

mod api_support;
mod browser;

use api_support::request;
use browser::{chromium_or_skip, int_text, Browser, Page, Rayscope};
use rayscope::config;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

async fn get_json(addr: SocketAddr, path: &str) -> Value {
    let r = request(addr, "GET", path, &[], None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

/// Every job recorded, once all of them (at least `jobs`) have ended.
async fn ended_jobs(addr: SocketAddr, jobs: usize, within: Duration) -> Vec<Value> {
    let deadline = Instant::now() + within;
    loop {
        let list = get_json(addr, "/api/flow/jobs").await["jobs"].as_array().cloned().unwrap_or_default();
        if list.len() >= jobs && list.iter().all(|j| !j["end_time_s"].is_null()) {
            return list;
        }
        assert!(Instant::now() < deadline, "the jobs did not end within {within:?}: {list:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn loaded(page: &Page<'_>) {
    for view in ["#impact", "#bottlenecks", "#graph", "#physical", "#gantt", "#flame", "#stack"] {
        page.wait_for(&format!("{view} to render"), &format!("document.querySelector('{view}').dataset.loaded"), WAIT)
            .await;
    }
}

/// The Gantt's window (`dataset.from/to`) and the detail's answered window, once the
/// detail shows the window picked.
async fn window(page: &Page<'_>) -> (f64, f64) {
    let v = page
        .wait_for(
            "the detail to show the window",
            "(() => { const g = document.querySelector('#gantt').dataset; return g.from && Math.abs(Number(g.detailFrom) - Number(g.from)) < 1e-5 && Math.abs(Number(g.detailTo) - Number(g.to)) < 1e-5 && [Number(g.from), Number(g.to)]; })()",
            WAIT,
        )
        .await;
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

/// Press, move and release the mouse over the overview between two fractions of its
/// width (real input events, through Chromium's input pipeline).
async fn drag(page: &Page<'_>, from: f64, to: f64) {
    page.eval("document.querySelector('#gantt .gantt-overview').scrollIntoView({block: 'center'})").await.unwrap();
    let r = page
        .eval("(() => { const r = document.querySelector('#gantt .gantt-overview').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()")
        .await
        .unwrap();
    let (left, top, width, height) =
        (r[0].as_f64().unwrap(), r[1].as_f64().unwrap(), r[2].as_f64().unwrap(), r[3].as_f64().unwrap());
    let y = top + height / 2.0;
    let x = |f: f64| left + f * width;
    let mouse = |kind: &str, f: f64, buttons: u32| json!({"type": kind, "x": x(f), "y": y, "button": "left", "buttons": buttons, "clickCount": 1});
    page.call("Input.dispatchMouseEvent", mouse("mousePressed", from, 1)).await.unwrap();
    for k in 1..=4 {
        let f = from + (to - from) * k as f64 / 4.0;
        page.call("Input.dispatchMouseEvent", mouse("mouseMoved", f, 1)).await.unwrap();
    }
    page.call("Input.dispatchMouseEvent", mouse("mouseReleased", to, 0)).await.unwrap();
}

/// The checks, on a server whose map-reduce and actor jobs have ended.
async fn check(browser: &Browser, addr: SocketAddr, label: &str) {
    let url = |p: &str| format!("http://{addr}{p}");
    let jobs = ended_jobs(addr, 2, Duration::from_secs(600)).await;
    let job_of = |name: &str| {
        jobs.iter().find(|j| j["name"] == name).unwrap_or_else(|| panic!("no job {name}: {jobs:?}"))["job_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (mr, actors) = (job_of("map-reduce"), job_of("actors"));
    let page = browser.page().await;

    // ---- the map-reduce job: physical view, Gantt overview and window
    page.goto(&url(&format!("/flow?job={mr}"))).await;
    loaded(&page).await;
    let first = page.wait_for("the first render", "document.body.dataset.firstRenderMs", WAIT).await;
    let view = page.eval("document.body.dataset.firstViewMs").await.unwrap();
    println!(
        "{label}: /flow?job={mr} first render: the first view drawn {} ms, every view drawn {} ms after navigation start",
        view.as_str().unwrap_or("?"),
        first.as_str().unwrap()
    );
    let timing = page.eval("performance.getEntriesByType('resource').map(e => `${Math.round(e.startTime)}..${Math.round(e.responseEnd)} ms ${e.name.replace(location.origin, '').slice(0, 60)}`).join('\\n')").await.unwrap();
    println!("{label}: requests (start..end since navigation start):\n{}", timing.as_str().unwrap_or(""));

    let physical = get_json(addr, &format!("/api/flow/physical?job={mr}")).await;
    let more = physical["more"].as_u64().unwrap();
    assert!(more > 0, "the job used more nodes than the view shows: {}", physical["nodes_total"]);
    let p = page
        .eval("[document.querySelectorAll('#physical tbody tr').length, document.querySelector('#physical .flow-note').textContent]")
        .await
        .unwrap();
    assert_eq!(p[0].as_u64(), physical["nodes"].as_array().map(|n| n.len() as u64));
    let total = physical["nodes_total"].as_u64().unwrap();
    assert!(p[1].as_str().unwrap().contains(&format!("more of {}", int_text(total))), "{p}");

    // The overview is the whole job: from its start to its end.
    let job = jobs.iter().find(|j| j["job_id"] == mr.as_str()).unwrap();
    let overview = get_json(addr, &format!("/api/flow/gantt?job={mr}")).await;
    assert_eq!(overview["from_s"], job["start_time_s"], "{overview:?}");
    assert_eq!(overview["to_s"], job["end_time_s"]);
    let g = page
        .eval("(() => { const g = document.querySelector('#gantt'); return [Number(g.dataset.jobFrom), Number(g.dataset.jobTo), Number(g.dataset.lanes), g.querySelectorAll('path.gantt-lane').length, g.dataset.truncated, g.dataset.from]; })()")
        .await
        .unwrap();
    let lanes = overview["lanes"].as_array().unwrap().len() as u64;
    assert_eq!(g[0].as_f64(), overview["from_s"].as_f64());
    assert_eq!(g[1].as_f64(), overview["to_s"].as_f64());
    assert_eq!((g[2].as_u64(), g[3].as_u64()), (Some(lanes), Some(lanes)), "{g}");
    assert_eq!(g[4], "true", "the whole job is past the detail's default limit: {g}");
    assert_eq!(g[5], "", "no window yet: the whole job");
    let (start, end) = (overview["from_s"].as_f64().unwrap(), overview["to_s"].as_f64().unwrap());

    // Zoom in: the middle half of the job; then later by one window.
    page.eval("document.querySelector('#gantt button[data-zoom=\"0.5\"]').click()").await.unwrap();
    let (a, b) = window(&page).await;
    let mid = (start + end) / 2.0;
    assert!(
        (a - (mid - (end - start) / 4.0)).abs() < 1e-3 && (b - (mid + (end - start) / 4.0)).abs() < 1e-3,
        "{a} {b}"
    );
    page.eval("document.querySelector('#gantt button[data-move=\"1\"]').click()").await.unwrap();
    let (a2, b2) = page
        .wait_for(
            "the window to move",
            &format!("(() => {{ const g = document.querySelector('#gantt').dataset; return Number(g.from) > {a} + 1e-6 && Math.abs(Number(g.detailFrom) - Number(g.from)) < 1e-5 && [Number(g.from), Number(g.to)]; }})()"),
            WAIT,
        )
        .await
        .as_array()
        .map(|v| (v[0].as_f64().unwrap(), v[1].as_f64().unwrap()))
        .unwrap();
    // Moved by its width, and held inside the job.
    assert!((b2 - a2 - (b - a)).abs() < 1e-3 && b2 <= end + 1e-6 && a2 > a, "{a}..{b} then {a2}..{b2}");
    // The detail draws that window's executions: its axis is the window.
    let tl = get_json(addr, &format!("/api/flow/timeline.json?job={mr}&from={a2:.6}&to={b2:.6}")).await;
    assert!(tl["otherData"]["returned"].as_u64().unwrap() > 0, "{}", tl["otherData"]);
    let axis =
        page.eval("[...document.querySelectorAll('#gantt-detail text.gantt-label')].pop().textContent").await.unwrap();
    // "8.25 s … 16.5 s (virtual time)": seconds to 3 places under 10 s, else to 1.
    let shown: f64 = axis.as_str().unwrap().split(" s").next().unwrap().replace(',', "").parse().unwrap();
    assert!((shown - a2).abs() <= if a2 < 10.0 { 5e-4 } else { 0.05 }, "{axis} vs the window {a2}..{b2}");
    let bars = page.eval("document.querySelectorAll('#gantt rect.gantt-bar').length").await.unwrap();
    assert!(bars.as_u64() > Some(0), "{bars}");

    // A drag from 10 % to 30 % of the overview's width picks about that stretch of the job.
    drag(&page, 0.10, 0.30).await;
    let (da, db) = page
        .wait_for(
            "the dragged window",
            &format!("(() => {{ const g = document.querySelector('#gantt').dataset; return Number(g.to) < {a2} && Math.abs(Number(g.detailFrom) - Number(g.from)) < 1e-5 && [Number(g.from), Number(g.to)]; }})()"),
            WAIT,
        )
        .await
        .as_array()
        .map(|v| (v[0].as_f64().unwrap(), v[1].as_f64().unwrap()))
        .unwrap();
    assert!(da >= start && da < db && db <= end, "{da}..{db} in {start}..{end}");
    // The window is in the URL: a reload shows the same.
    let href = page.eval("location.search").await.unwrap();
    assert!(href.as_str().unwrap().contains("from=") && href.as_str().unwrap().contains("to="), "{href}");
    page.goto(&url(&format!("/flow{}", href.as_str().unwrap()))).await;
    loaded(&page).await;
    let (ra, rb) = window(&page).await;
    assert!((ra - da).abs() < 1e-5 && (rb - db).abs() < 1e-5, "{da}..{db} after reload: {ra}..{rb}");
    // "Whole job" goes back.
    page.eval("document.querySelector('#gantt button[data-whole]').click()").await.unwrap();
    page.wait_for(
        "the whole job again",
        "(() => { const g = document.querySelector('#gantt').dataset; return g.from === '' && g.truncated === 'true'; })()",
        WAIT,
    )
    .await;
    page.eval("document.querySelector('#gantt').scrollIntoView()").await.unwrap();
    page.screenshot(&format!("flow-{label}-map-reduce")).await;

    // ---- the actor job at instance level: capped with no dangling edge
    page.goto(&url(&format!("/flow?job={actors}&level=instance"))).await;
    loaded(&page).await;
    let graph = get_json(addr, &format!("/api/flow/graph?job={actors}&level=instance")).await;
    let (shown, total) = (graph["nodes"].as_array().unwrap().len(), graph["nodes_total"].as_u64().unwrap());
    assert!((total as usize) > shown, "the instance graph is capped: {shown} of {total}");
    let drawn = page
        .eval("(() => { const ids = new Set([...document.querySelectorAll('#graph .flow-node')].map(n => n.dataset.id)); const edges = [...document.querySelectorAll('#graph .flow-edge')]; return [ids.size, edges.length, edges.filter(e => !ids.has(e.dataset.source) || !ids.has(e.dataset.target)).length, document.querySelector('#graph .flow-note').textContent]; })()")
        .await
        .unwrap();
    assert_eq!(drawn[0].as_u64(), Some(shown as u64), "{drawn}");
    assert_eq!(drawn[1].as_u64(), graph["edges"].as_array().map(|e| e.len() as u64));
    assert_eq!(drawn[2].as_u64(), Some(0), "no edge to a node not drawn: {drawn}");
    let note = drawn[3].as_str().unwrap();
    assert!(note.starts_with(&format!("showing {shown} of ")), "{note}");
    page.screenshot(&format!("flow-{label}-actors")).await;

    for r in page.requests().into_iter().filter(|r| !r.url.starts_with("data:")) {
        assert!(r.url.starts_with(&format!("http://{addr}/")), "a request left rayscope: {r:?}");
        assert_eq!(r.method, "GET", "the page must not change state: {r:?}");
    }
    let errors = page.errors();
    assert!(errors.is_empty(), "the page threw: {errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flow_page_holds_past_every_cap() {
    let Some(exe) = chromium_or_skip("the_flow_page_holds_past_every_cap") else { return };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/flow-page-scale.yaml");
    let mut cfg = config::load_file(&path).expect("the fixture loads");
    // 30 s of virtual time in well under a second of wall time.
    cfg.sim.speed = 1_000.0;
    cfg.cluster.host_node = false;
    let mut rs = Rayscope::start(cfg, None).await;
    let browser = Browser::launch(&exe).await;
    check(&browser, rs.addr, "caps").await;
    rs.stop().await;
}

/// The same at examples/scale.yaml (2,000 nodes, 1,001,001 and 60,001 calls): run by
/// `scripts/bench-flow` against a release server (`RAYSCOPE_BENCH_ADDR`), which prints
/// the first-render times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark at scale.yaml size; run scripts/bench-flow"]
async fn bench_flow_page_at_scale() {
    let Some(exe) = chromium_or_skip("bench_flow_page_at_scale") else { return };
    let addr: SocketAddr = std::env::var("RAYSCOPE_BENCH_ADDR")
        .expect("RAYSCOPE_BENCH_ADDR: the address of a release rayscope serving examples/scale.yaml")
        .parse()
        .expect("RAYSCOPE_BENCH_ADDR is host:port");
    let browser = Browser::launch(&exe).await;
    check(&browser, addr, "scale").await;
    check(&browser, addr, "scale-again").await;
}
