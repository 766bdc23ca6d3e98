//! The pages on a job with an anti-pattern, in a real headless Chromium: `/flow` opens on
//! the job that made calls (not a newer one of a single call), names the finding the
//! API names, links a bottleneck's slowest call to `/tasks`, which shows that task with
//! its duration and sorts its list by duration; the Gantt's executions are scaled to
//! the job, not to "now"; the Actors page counts the restarts the State API writes as
//! strings.
//!
//! Needs Chromium (Debian package `chromium`): skipped with a message without it,
//! failed instead when RAYSCOPE_REQUIRE_TOOLS is set.

mod api_support;
mod browser;

use api_support::request;
use browser::{chromium_or_skip, Browser, Rayscope};
use rayscope::config::replay::{ReplayCall, ReplayConfig, ReplayJob, ReplayKind, ReplayStep};
use rayscope::config::{self, WorkloadConfig};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

async fn get_json(addr: SocketAddr, path: &str) -> Value {
    let r = request(addr, "GET", path, &[], None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

fn replay(name: &str, calls: Vec<ReplayCall>) -> WorkloadConfig {
    let job = Arc::new(ReplayJob { source: name.into(), calls, actors: 0, recorded_makespan_us: 0, ends_lost: 0 });
    WorkloadConfig::Replay(ReplayConfig { name: name.into(), job })
}

fn call(kind: ReplayKind, name: &str, steps: Vec<ReplayStep>) -> ReplayCall {
    ReplayCall {
        kind,
        name: name.into(),
        class: name.into(),
        actor: None,
        resources: if kind == ReplayKind::Function { vec![("CPU".into(), 1.0)] } else { Vec::new() },
        deps: Vec::new(),
        return_bytes: 0,
        first_on_worker: false,
        steps,
        computes: Default::default(),
    }
}

/// Two jobs: `ray.get` in a loop over eight 2 s calls of `f`, one of them 6 s; then a
/// job whose driver makes no call.
fn config() -> config::Config {
    let mut cfg = config::load_str("cluster:\n  host_node: false\n  head: {cpu: 8, memory: 16GiB}\n", "page.yaml")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut driver = call(ReplayKind::Driver, "_main", Vec::new());
    let mut calls = Vec::new();
    for k in 1..=8u32 {
        driver.steps.extend([ReplayStep::Submit(k), ReplayStep::Get]);
        let secs = if k == 4 { 6 } else { 2 };
        calls.push(call(ReplayKind::Function, "f", vec![ReplayStep::Hold(secs * 1_000_000)]));
    }
    calls.insert(0, driver);
    let lone = vec![call(ReplayKind::Driver, "_main", vec![ReplayStep::Hold(30_000_000)])];
    cfg.workloads = vec![replay("get-loop", calls), replay("lone-driver", lone)];
    cfg.sim.speed = 20.0;
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flow_page_names_the_finding_and_reaches_the_slow_call_on_the_tasks_page() {
    let Some(exe) = chromium_or_skip("the_flow_page_names_the_finding_and_reaches_the_slow_call_on_the_tasks_page")
    else {
        return;
    };
    let mut rs = Rayscope::start(config(), None).await;
    let addr = rs.addr;
    // The loop's job ends (its findings and saves are then computed); the lone driver
    // is newer and still running.
    let deadline = Instant::now() + WAIT;
    let (job, lone) = loop {
        let jobs = get_json(addr, "/api/flow/jobs").await;
        let list = jobs["jobs"].as_array().cloned().unwrap_or_default();
        if list.len() == 2 && list[0]["status"] == "SUCCEEDED" {
            break (list[0]["job_id"].as_str().unwrap().to_string(), list[1]["job_id"].as_str().unwrap().to_string());
        }
        assert!(Instant::now() < deadline, "the loop's job never finished: {jobs}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let api = get_json(addr, &format!("/api/flow/findings?job={job}")).await;
    assert_eq!(api["findings"][0]["kind"], "get_in_loop", "{api}");
    let b = get_json(addr, &format!("/api/flow/bottlenecks?job={job}")).await;
    let slow = b["entries"][0]["slowest_call"]["task_id"].as_str().unwrap().to_string();
    // The State API's tables are rebuilt only while someone reads them (at most once a
    // second): wait until they list the slow call, as a user's second look would.
    let deadline = Instant::now() + WAIT;
    let filter = format!("/api/v0/tasks?filter_keys=task_id&filter_predicates=%3D&filter_values={slow}");
    while get_json(addr, &filter).await["data"]["result"]["result"].as_array().is_none_or(|r| r.is_empty()) {
        assert!(Instant::now() < deadline, "the State API never listed the slow call {slow}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let browser = Browser::launch(&exe).await;
    let page = browser.page().await;
    page.goto(&rs.url("/flow")).await;
    for view in ["#findings", "#bottlenecks", "#gantt"] {
        page.wait_for(&format!("{view} to render"), &format!("document.querySelector('{view}').dataset.loaded"), WAIT)
            .await;
    }
    // The job that made calls, not the newer one whose driver made none.
    let shown = page.eval("document.querySelector('#flow-job').value").await.unwrap();
    assert_eq!(shown.as_str(), Some(job.as_str()), "not the lone driver {lone}");
    let kinds = page.eval("document.querySelector('#findings').dataset.kinds").await.unwrap();
    assert_eq!(kinds.as_str(), Some("get_in_loop"));
    let text = page.eval("document.querySelector('#findings').textContent").await.unwrap();
    assert!(text.as_str().unwrap().contains("fixing saves"), "{text}");
    // The Gantt's executions span the job (8 calls, 20 s in all), not the instant now.
    let axis = page
        .eval("[document.querySelector('#gantt').dataset.axisTo, document.querySelector('#gantt').dataset.jobTo]")
        .await
        .unwrap();
    let to: f64 = axis[0].as_str().unwrap().parse().unwrap();
    let job_to: f64 = axis[1].as_str().unwrap().parse().unwrap();
    assert!((to - job_to).abs() < 1e-6, "the axis ends at {to} s, the job at {job_to} s");

    // The slowest call is a link to its row on the tasks page.
    let href = page
        .eval("[...document.querySelectorAll('#bottlenecks a')].map((a) => a.getAttribute('href')).find((h) => h.startsWith('/tasks'))")
        .await
        .unwrap();
    assert_eq!(href.as_str(), Some(format!("/tasks?task_id={slow}").as_str()));
    page.goto(&rs.url(href.as_str().unwrap())).await;
    page.wait_for("the tasks list", "document.querySelector('#tasks').dataset.loaded", WAIT).await;
    let rows = page.eval("[document.querySelector('#tasks').dataset.rows, [...document.querySelectorAll('#tasks tbody [data-duration]')].map((e) => Number(e.dataset.duration))]").await.unwrap();
    assert_eq!(rows[0].as_str(), Some("1"), "{rows}");
    // The slow call held 6 s of virtual time.
    let d = rows[1][0].as_f64().unwrap();
    assert!(d > 0.0, "{rows}");

    // The whole list, sorted by duration with a click on its header: longest first.
    page.goto(&rs.url("/tasks")).await;
    page.wait_for("the tasks list", "document.querySelector('#tasks').dataset.loaded", WAIT).await;
    page.eval(
        "[...document.querySelectorAll('#tasks th button')].find((b) => b.textContent.startsWith('Duration')).click()",
    )
    .await
    .unwrap();
    let sorted = page
        .wait_for(
            "the list sorted by duration",
            "(() => { const th = [...document.querySelectorAll('#tasks th')].find((t) => t.textContent.startsWith('Duration')); \
             const d = [...document.querySelectorAll('#tasks tbody [data-duration]')].map((e) => Number(e.dataset.duration)); \
             return th && th.getAttribute('aria-sort') === 'descending' && d.length > 2 ? d : null; })()",
            WAIT,
        )
        .await;
    let d: Vec<f64> = sorted.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(d.windows(2).all(|w| w[0] >= w[1]), "not longest first: {d:?}");
    assert!(page.errors().is_empty(), "{:?}", page.errors());
    rs.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_actors_page_counts_restarts_the_api_writes_as_strings() {
    let Some(exe) = chromium_or_skip("the_actors_page_counts_restarts_the_api_writes_as_strings") else { return };
    let yaml = r"
cluster:
  host_node: false
  head: {cpu: 8, memory: 16GiB}
workloads:
  - {kind: actor_pool, name: pool, actors: 2, calls_per_actor: 1, call_duration: 1h, num_cpus: 1, class: Replica, max_restarts: 5, max_task_retries: 5}
faults:
  - {kind: kill_actor, at: 10s, class: Replica}
";
    let mut cfg = config::load_str(yaml, "actors.yaml").unwrap_or_else(|e| panic!("{e}"));
    cfg.sim.speed = 50.0;
    let mut rs = Rayscope::start(cfg, None).await;
    let addr = rs.addr;
    let deadline = Instant::now() + WAIT;
    let restarted = loop {
        let v = get_json(addr, "/api/v0/actors?detail=true").await;
        let rows = v["data"]["result"]["result"].as_array().cloned().unwrap_or_default();
        if let Some(a) = rows.iter().find(|a| a["num_restarts"].as_str().is_some_and(|n| n != "0")) {
            break a.clone();
        }
        assert!(Instant::now() < deadline, "no actor restarted: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let id = restarted["actor_id"].as_str().unwrap().to_string();
    let n = restarted["num_restarts"].as_str().unwrap().to_string();
    let browser = Browser::launch(&exe).await;
    let page = browser.page().await;
    page.goto(&rs.url("/actors")).await;
    let shown = page
        .wait_for(
            "the restarted actor's row",
            &format!(
                "(() => {{ const r = document.querySelector('#actors tr[data-id=\"{id}\"]'); \
                 if (!r) return null; const i = [...r.closest('table').querySelectorAll('th')].findIndex((h) => h.textContent === 'Restarts'); \
                 return r.children[i].textContent; }})()"
            ),
            WAIT,
        )
        .await;
    assert_eq!(shown.as_str(), Some(n.as_str()), "the API says {n} restarts");
    rs.stop().await;
}
