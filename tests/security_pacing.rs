//! Issue 7, A4: a pace the engine cannot keep leaves no debt. Through the control
//! endpoint on a real server: at 1e9 virtual seconds per second the engine falls behind,
//! but its reported lag stays bounded; set back to 1, the lag is gone at once instead
//! of the engine catching up on years of virtual time at full CPU.

mod api_support;

use api_support::*;
use std::time::Duration;

/// The embedded default (a job mix that never ends), without host readings.
fn endless() -> rayscope::config::Config {
    let mut cfg = rayscope::config::default_config();
    cfg.cluster.host_node = false;
    cfg
}

async fn lag(s: &Server) -> f64 {
    s.get("/api/cluster").await.json()["lag_seconds"].as_f64().expect("lag_seconds")
}

#[tokio::test]
async fn a_pace_too_fast_leaves_no_lag_once_speed_is_back_to_one() {
    let s = Server::start(endless(), Tokens { token: Some(TOKEN), alert: None }).await;
    let r = s.post("/api/control/speed", r#"{"speed": 1e9}"#).await;
    assert_eq!(r.status, 200, "{}", r.text());
    // The engine cannot do 1e9 virtual seconds per second: it falls behind...
    let behind = eventually("the engine to fall behind", Duration::from_secs(30), || async {
        let l = lag(&s).await;
        (l > 0.5).then_some(l)
    })
    .await;
    // ...but never by more than the bound (2 s of wall time, plus a snapshot's age).
    for _ in 0..10 {
        let l = lag(&s).await;
        assert!(l <= 2.5, "lag {l} s at speed 1e9 (first seen {behind} s)");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = s.post("/api/control/speed", r#"{"speed": 1}"#).await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Back at speed 1 the engine is on time again, promptly.
    eventually("the lag to clear at speed 1", Duration::from_secs(5), || async { (lag(&s).await < 0.2).then_some(()) })
        .await;
    let cluster = s.get("/api/cluster").await.json();
    assert_eq!(cluster["speed"], 1.0);
    // And stays so: virtual time advances at about wall speed (not years per second).
    let t0 = cluster["sim_time_seconds"].as_f64().unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t1 = s.get("/api/cluster").await.json()["sim_time_seconds"].as_f64().unwrap();
    assert!(t1 - t0 < 5.0, "virtual time ran {} s in half a wall second at speed 1", t1 - t0);
    assert!(lag(&s).await < 0.2);
    s.stop().await;
}
