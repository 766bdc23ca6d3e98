//! What the overview's object-store tile and the Events page say, in a real headless
//! Chromium: the tile shows the plasma bytes the raylets hold (not the logical
//! `object_store_memory` resource, which no task asks for), and the Events page lists
//! Ray's cluster events, where a search for "oom" finds the OOM kills. Screenshots go
//! to `target/screenshots/`.
//!
//! Needs Chromium (Debian package `chromium`); skipped with a message without it,
//! unless RAYSCOPE_REQUIRE_TOOLS is set.

mod api_support;
mod browser;

use browser::{chromium_or_skip, Browser, Page, Rayscope};
use rayscope::config;
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A fan-out whose 60 map outputs of 200 MiB (12 GiB) fill plasma as the maps (up to
/// 200 s each) finish, and stay while the reduce that reads them runs; memory pressure on one worker from 2 s, so the
/// memory monitor kills workers there; a worker killed at 1 s.
const CONFIG: &str = r#"
cluster:
  host_node: false
  head: {cpu: 4, memory: 64GiB}
  node_types:
    - name: cpu-worker
      count: 3
      cpu: 8
      memory: 64GiB
      ip_range: 10.0.1.0/24
workloads:
  - kind: fan_out
    name: shuffle
    tasks: 60
    reducers: 1
    task_duration: {min: 1s, max: 200s}
    reduce_duration: 600s
    output_size: 200MiB
  - kind: actor_pool
    name: pool
    actors: 4
    calls_per_actor: 50
    call_duration: 10s
    memory: 2GiB
faults:
  - {kind: kill_node, at: 1s, node: 10.0.1.3}
  - {kind: memory_pressure, at: 2s, node: 10.0.1.2, fraction: 0.97, duration: 600s}
sim:
  seed: 23
  speed: 5
"#;

const WAIT: Duration = Duration::from_secs(60);

async fn get_json(addr: SocketAddr, path: &str) -> Value {
    let r = api_support::request(addr, "GET", path, &[], None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

async fn dom_ids(page: &Page<'_>) -> BTreeSet<String> {
    let v = page.eval("[...document.querySelectorAll('#events tbody tr[data-id]')].map(r => r.dataset.id)").await;
    v.unwrap().as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

/// The tile's used and total bytes equal the plasma bytes `/api/memory` reports (both
/// polled, since the store moves), with more than a GiB stored.
async fn object_store_tile(page: &Page<'_>, addr: SocketAddr) {
    page.goto(&format!("http://{addr}/")).await;
    page.wait_for("the overview's first full render", "document.body.dataset.rendered", WAIT).await;
    let tile = "(() => { const e = document.querySelector('[data-stat-pct=\"object_store\"]'); \
        return [Number(e.dataset.used), Number(e.dataset.total), e.textContent, \
        document.querySelector('[data-bar=\"object_store\"]').textContent]; })()";
    let deadline = Instant::now() + WAIT;
    loop {
        let memory = get_json(addr, "/api/memory").await;
        let (used, total) = (&memory["cluster"]["plasma_memory_used"], &memory["cluster"]["object_store_memory"]);
        let got = page.eval(tile).await.unwrap();
        let matches = got[0].as_f64() == used.as_f64() && got[1].as_f64() == total.as_f64();
        // Past 1 GiB, so the tile writes GiB (1,000 MiB is past 1e9 bytes but not 1 GiB).
        if matches && used.as_f64().unwrap() > (1u64 << 30) as f64 {
            let text = got[3].as_str().unwrap();
            assert!(text.contains("GiB of") && !text.starts_with("0 B"), "the tile says {got}");
            break;
        }
        assert!(Instant::now() < deadline, "the tile {got} never showed /api/memory's plasma {used} of {total}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The logical resource, which the tile used to show, is still unused.
    let c = get_json(addr, "/api/cluster").await;
    let logical = &c["resources"]["object_store_memory"];
    assert_eq!(logical["total"], logical["available"], "no task asks for object_store_memory: {c}");
    page.screenshot("overview-object-store").await;
}

/// The Events page lists `/api/cluster_events`; typing "oom" in its search keeps the
/// OOM kills and nothing that does not say it.
async fn events_search(page: &Page<'_>, addr: SocketAddr) {
    api_support::eventually("an OOM kill among the cluster events", WAIT, || async move {
        let v = get_json(addr, "/api/cluster_events?search=oom&limit=1").await;
        (v["num_filtered"].as_u64() > Some(0)).then_some(())
    })
    .await;
    page.goto(&format!("http://{addr}/events")).await;
    page.wait_for("the cluster events", "document.querySelector('#events').dataset.loaded", WAIT).await;
    let sources = page.eval("[...document.querySelectorAll('#events tbody tr[data-id]')].map(r => r.dataset.source)");
    for s in sources.await.unwrap().as_array().unwrap() {
        assert!(["GCS", "RAYLET", "AUTOSCALER", "JOBS"].contains(&s.as_str().unwrap()), "not a cluster event: {s}");
    }
    page.eval(
        "(() => { const b = document.querySelector('#events input[type=search]'); b.value = 'oom'; \
         b.dispatchEvent(new Event('input')); })()",
    )
    .await
    .unwrap();
    page.wait_for("the search to apply", "document.querySelector('#events').dataset.search === 'oom'", WAIT).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let api = get_json(addr, "/api/cluster_events?search=oom&limit=50").await;
        let want: BTreeSet<String> =
            api["events"].as_array().unwrap().iter().map(|e| e["event_id"].as_str().unwrap().to_string()).collect();
        let got = dom_ids(page).await;
        if !want.is_empty() && got == want {
            break;
        }
        assert!(Instant::now() < deadline, "the search lists {got:?}, the API {want:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rows = page.eval("[...document.querySelectorAll('#events tbody tr[data-id]')].map(r => r.textContent)").await;
    let rows = rows.unwrap();
    let rows: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(rows.iter().all(|r| r.to_lowercase().contains("oom")), "every row says oom: {rows:?}");
    let kills = rows.iter().filter(|r| r.contains("Out of Memory") && r.contains("10.0.1.2")).count();
    assert!(kills > 0, "the OOM kills on 10.0.1.2 are found: {rows:?}");
    assert!(rows.iter().any(|r| r.contains("task_id")), "an OOM kill names its task: {rows:?}");
    page.screenshot("events-oom").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_object_store_tile_and_the_events_search_say_what_is_true() {
    let Some(exe) = chromium_or_skip("the_object_store_tile_and_the_events_search_say_what_is_true") else {
        return;
    };
    let cfg = config::load_str(CONFIG, "events page test config").expect("the test config is valid");
    let mut rs = Rayscope::start(cfg, None).await;
    let browser = Browser::launch(&exe).await;
    let page = browser.page().await;
    object_store_tile(&page, rs.addr).await;
    events_search(&page, rs.addr).await;
    let errors = page.errors();
    assert!(errors.is_empty(), "the pages threw: {errors:?}");
    rs.stop().await;
}
