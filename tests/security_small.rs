//! Issue 7, A8 (the small ones this branch owns): a UTF-8 byte-order mark is accepted,
//! `sim.speed` has the API's ceiling, the seed dashboard's endpoints refuse unknown
//! query parameters as the State API does, and every answer says `nosniff`.
//! (The WebSocket `Origin` allow-list is in `security_websocket.rs`.)

mod api_support;

use api_support::*;
use std::process::Command;

fn check(text: &[u8]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rayscope")).args(["check", path.to_str().unwrap()]).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let (code, err) = check(b"\xef\xbb\xbfcluster:\n  host_node: false\nsim: {seed: 9}\n");
    assert_eq!(code, Some(0), "{err}");
    let cfg = rayscope::config::load_str("\u{feff}sim: {seed: 9}\n", "bom.yaml").unwrap();
    assert_eq!(cfg.sim.seed, 9);
    // Errors after a BOM still point at the right line.
    let (code, err) = check(b"\xef\xbb\xbfsim:\n  sed: 9\n");
    assert_eq!(code, Some(2));
    assert!(err.contains("c.yaml:2") && err.contains("sim.sed"), "{err}");
}

#[test]
fn sim_speed_has_the_api_ceiling() {
    let (code, err) = check(b"sim:\n  speed: 1e308\n");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("c.yaml:2") && err.contains("sim.speed") && err.contains("1e9"), "{err}");
    assert_eq!(check(b"sim:\n  speed: 1e9\n").0, Some(0));
}

#[tokio::test]
async fn seed_endpoints_refuse_unknown_parameters() {
    let s = Server::without_token().await;
    for path in ["/api/cluster", "/api/nodes", "/api/memory", "/api/metrics", "/api/tasks", "/api/events"] {
        assert_eq!(s.get(path).await.status, 200, "{path}");
        let r = s.get(&format!("{path}?limt=5")).await;
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        assert_eq!(r.names(), "limt", "{path}");
    }
    s.stop().await;
}

#[tokio::test]
async fn every_answer_says_nosniff() {
    let s = Server::without_token().await;
    let answers = [
        s.get("/").await,
        s.get("/metrics").await,
        s.get("/api/cluster").await,
        s.get("/api/v0/nodes?bogus=1").await,
        s.get("/no/such/page").await,
        s.post_as("/api/control/speed", None, "{}").await,
        request(s.addr, "POST", "/api/jobs/", &[("content-length", "999999999")], None).await,
    ];
    for r in answers {
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "status {}: {:?}", r.status, r.headers);
    }
    s.stop().await;
}
