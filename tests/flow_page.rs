//! Flow Insight's page (`/flow`) in a real headless Chromium against a running
//! rayscope serving the seed scenario: the call graph, the Gantt, the flame graph and
//! the bottleneck list render what `/api/flow/*` says, the flagged worker the API ranks
//! first is on top, and the page stays read-only on rayscope's origin. A screenshot is
//! saved as `target/screenshots/flow.png` (and `flow-cut.png`: the Gantt cut by a limit).
//!
//! Needs Chromium (Debian package `chromium`): skipped with a message without it,
//! failed instead when RAYSCOPE_REQUIRE_TOOLS is set.

mod api_support;
mod browser;

use api_support::request;
use browser::{chromium_or_skip, int_text, Browser, Rayscope};
use rayscope::config;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

async fn get_json(addr: SocketAddr, path: &str) -> Value {
    let r = request(addr, "GET", path, &[], None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flow_page_draws_the_five_views_of_the_seed_scenario() {
    let Some(exe) = chromium_or_skip("the_flow_page_draws_the_five_views_of_the_seed_scenario") else { return };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/flow-insight.yaml");
    let mut cfg = config::load_file(&path).expect("the example loads");
    // The seed's tree takes hours of virtual time: run it in a second or two of wall time.
    cfg.sim.speed = 100_000.0;
    cfg.cluster.host_node = false;
    let mut rs = Rayscope::start(cfg, None).await;
    let addr = rs.addr;

    // Wait for the job to end, so the page and the API see the same, final views.
    let deadline = Instant::now() + WAIT;
    let job = loop {
        let jobs = get_json(addr, "/api/flow/jobs").await;
        if let Some(j) = jobs["jobs"].as_array().and_then(|a| a.first()).filter(|j| j["status"] == "SUCCEEDED") {
            break j["job_id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "the seed scenario never finished: {jobs}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let browser = Browser::launch(&exe).await;
    let page = browser.page().await;
    page.goto(&rs.url("/flow")).await;
    for view in ["#impact", "#bottlenecks", "#graph", "#physical", "#gantt", "#flame", "#stack"] {
        page.wait_for(&format!("{view} to render"), &format!("document.querySelector('{view}').dataset.loaded"), WAIT)
            .await;
    }
    assert_eq!(
        page.eval("document.querySelector('#flow-job').value").await.unwrap(),
        job.as_str(),
        "the job is picked"
    );

    // The call graph: one box per node and one curve per edge of the API's graph, with
    // the API's call counts.
    let graph = get_json(addr, &format!("/api/flow/graph?job={job}")).await;
    assert_eq!(graph["level"], "instance", "the seed's tree is shown by instance");
    assert_eq!(
        page.eval("document.querySelector('#flow-toolbar select[aria-label=Level]').value").await.unwrap(),
        "instance"
    );
    let (nodes, edges) = (graph["nodes"].as_array().unwrap(), graph["edges"].as_array().unwrap());
    assert!(nodes.len() >= 3 && !edges.is_empty(), "{graph}");
    let drawn_nodes = page.eval("document.querySelectorAll('#graph .flow-node').length").await.unwrap();
    assert_eq!(drawn_nodes.as_u64(), Some(nodes.len() as u64));
    let drawn_edges = page
        .eval("[...document.querySelectorAll('#graph .flow-edge')].map(e => [e.dataset.source, e.dataset.target, Number(e.dataset.calls)])")
        .await
        .unwrap();
    let want_edges: Vec<Value> =
        edges.iter().map(|e| serde_json::json!([e["source"], e["target"], e["calls"]])).collect();
    assert_eq!(drawn_edges.as_array().unwrap(), &want_edges, "the drawn edges are the API's");

    // The bottleneck list: the API's ranking, its first entry on top, flagged as such.
    let b = get_json(addr, &format!("/api/flow/bottlenecks?job={job}")).await;
    let first = &b["entries"][0];
    assert!(first.is_object(), "the API ranks something: {b}");
    let top = page
        .eval("(() => { const r = document.querySelector('#bottlenecks tbody tr'); return [r.dataset.name, r.dataset.actor, r.textContent.includes('FLAGGED')]; })()")
        .await
        .unwrap();
    assert_eq!(top[0], first["name"], "{top} vs {first}");
    assert_eq!(top[1], first["actor_id"].as_str().unwrap_or(""), "{top} vs {first}");
    assert_eq!(top[2].as_bool(), first["program_flag"].as_bool(), "{top} vs {first}");

    // What fixing saves: the API's what-ifs, most saved first.
    let im = get_json(addr, &format!("/api/flow/impact?job={job}")).await;
    let entries = im["entries"].as_array().unwrap();
    let rows = page
        .eval("[...document.querySelectorAll('#impact tbody tr')].filter(r => r.dataset.saved).map(r => Number(r.dataset.saved))")
        .await
        .unwrap();
    let want: Vec<Value> = entries.iter().take(10).map(|e| e["saved_s"].clone()).collect();
    assert_eq!(rows.as_array().unwrap(), &want, "the page lists the API's what-ifs: {im}");
    assert_eq!(im["finished"], true, "{im}");
    if entries.is_empty() {
        // This seed's tree has no delay to remove: the page says so.
        let text = page.eval("document.querySelector('#impact').textContent").await.unwrap();
        assert!(text.as_str().unwrap().contains("No single fix saves"), "{text}");
    }

    // The Gantt: bars for the executions, on as many rows as it says.
    let gantt = page
        .eval("(() => { const g = document.querySelector('#gantt'); return [Number(g.dataset.rows), Number(g.dataset.bars), g.querySelectorAll('rect.gantt-bar').length]; })()")
        .await
        .unwrap();
    assert!(gantt[0].as_f64().unwrap() >= 3.0, "Gantt rows: {gantt}");
    assert!(gantt[1].as_f64().unwrap() >= 100.0, "Gantt bars: {gantt}");
    assert_eq!(gantt[1].as_f64(), gantt[2].as_f64(), "{gantt}");

    // The flame graph is the server's SVG, loaded with its own script running: inferno's
    // search and zoom are there to use, and its frames hold the execution time.
    page.wait_for(
        "the flame graph's script",
        "(() => { const o = document.querySelector('#flame iframe'); return o && o.contentWindow && typeof o.contentWindow.search === 'function' && typeof o.contentWindow.zoom === 'function'; })()",
        WAIT,
    )
    .await;
    let frames = page
        .eval("document.querySelector('#flame iframe').contentDocument.querySelectorAll('#frames g').length")
        .await
        .unwrap();
    assert!(frames.as_u64() > Some(3), "flame frames: {frames}");
    let title = page
        .eval("document.querySelector('#flame iframe').contentDocument.querySelector('#title').textContent")
        .await
        .unwrap();
    assert!(title.as_str().unwrap().contains("execution time"), "{title}");
    // The physical view lists the nodes the job used.
    let used = page.eval("document.querySelectorAll('#physical tbody tr').length").await.unwrap();
    assert!(used.as_f64().unwrap() >= 1.0);

    // An instant mid-run shows the calls in flight then, as the API does.
    let mid = (b["critical_path_s"].as_f64().unwrap() / 2.0).round();
    page.goto(&rs.url(&format!("/flow?job={job}&at={mid}"))).await;
    page.wait_for("the stack at an instant", "document.querySelector('#stack').dataset.loaded", WAIT).await;
    let stack = get_json(addr, &format!("/api/flow/stack?job={job}&at={mid}")).await;
    let shown = page.eval("document.querySelectorAll('#stack pre.flow-stack').length").await.unwrap();
    let in_flight = stack["stacks"].as_array().unwrap().len().min(50);
    assert!(in_flight > 0, "calls are in flight at {mid} s: {stack}");
    assert_eq!(shown.as_u64(), Some(in_flight as u64));
    // Every frame placed on a node names it, and says what it is doing.
    let text = page
        .eval("[...document.querySelectorAll('#stack pre.flow-stack')].map(p => p.textContent).join('\\n')")
        .await
        .unwrap();
    let text = text.as_str().unwrap();
    assert!(!text.contains("node —"), "frames name their node: {text}");
    assert!(text.contains("[blocked]") && text.contains("[running]"), "frames say what they do: {text}");

    for view in ["#bottlenecks", "#graph", "#gantt", "#flame"] {
        let js = format!("Number(document.querySelector('{view}').dataset.loaded) >= 1 && document.querySelector('{view} .flow-body').childElementCount > 0");
        page.wait_for(&format!("{view} at the instant"), &js, WAIT).await;
    }
    page.screenshot("flow").await;

    // The Gantt reads the windowed timeline and says when the answer was cut: the page
    // passes its URL's limit on, and shows "showing N of TOTAL executions".
    page.goto(&rs.url(&format!("/flow?job={job}&limit=100"))).await;
    page.wait_for("the cut Gantt", "document.querySelector('#gantt').dataset.truncated === 'true'", WAIT).await;
    let tl = get_json(addr, &format!("/api/flow/timeline.json?job={job}&limit=100")).await;
    let total = tl["otherData"]["total"].as_u64().unwrap();
    assert!(total > 100, "the seed job has more than 100 executions: {total}");
    let cut = page
        .eval("(() => { const g = document.querySelector('#gantt'); return [g.querySelector('.gantt-cut').textContent, Number(g.dataset.total), g.querySelectorAll('rect.gantt-bar').length]; })()")
        .await
        .unwrap();
    let shown = format!("showing 100 of {} executions", int_text(total));
    assert!(cut[0].as_str().unwrap().starts_with(&shown), "{cut} lacks {shown:?}");
    assert_eq!((cut[1].as_u64(), cut[2].as_u64()), (Some(total), Some(100)), "{cut}");
    page.screenshot("flow-cut").await;
    // Uncut (the seed job is under the default limit), nothing says it was.
    page.goto(&rs.url(&format!("/flow?job={job}"))).await;
    page.wait_for("the whole Gantt", "document.querySelector('#gantt').dataset.truncated === 'false'", WAIT).await;
    let note = page.eval("document.querySelector('#gantt .gantt-cut').textContent").await.unwrap();
    assert!(!note.as_str().unwrap().contains("showing"), "no cut, no cut note: {note}");
    // Every request the page made (the flame graph's SVG included) stayed on rayscope.
    for r in page.requests().into_iter().filter(|r| !r.url.starts_with("data:")) {
        assert!(r.url.starts_with(&format!("http://{addr}/")), "a request left rayscope: {r:?}");
        assert_eq!(r.method, "GET", "the page must not change state: {r:?}");
    }
    let errors = page.errors();
    assert!(errors.is_empty(), "the page threw: {errors:?}");
    rs.stop().await;
}
