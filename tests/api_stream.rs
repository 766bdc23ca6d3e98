//! The live stream `/ws/realtime` with a real WebSocket client: summaries arrive on
//! schedule, a client that never reads is dropped without slowing anyone, and clients
//! beyond `server.max_stream_clients` get HTTP 503 before any upgrade.

mod api_support;

use api_support::*;
use futures_util::StreamExt;
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{connect_async, MaybeTlsStream, WebSocketStream};

type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(s: &Server) -> Result<Ws, tungstenite::Error> {
    connect_async(format!("ws://{}/ws/realtime", s.addr)).await.map(|(ws, _)| ws)
}

/// The next summary; pings are answered by the client library as it reads.
async fn next_summary(ws: &mut Ws) -> Value {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await.expect("a message within 5 s") {
            Some(Ok(Message::Text(t))) => return serde_json::from_str(&t).expect("summary is JSON"),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a summary, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_client_receives_compact_summaries_every_interval() {
    let s = Server::without_token().await;
    let mut ws = connect(&s).await.unwrap();
    let first = next_summary(&mut ws).await;
    let started = Instant::now();
    let mut last = first.clone();
    for _ in 0..3 {
        last = next_summary(&mut ws).await;
    }
    // Three more at a 100 ms interval.
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    // Virtual time advances from summary to summary (allow a loaded machine 15 s).
    let deadline = Instant::now() + Duration::from_secs(15);
    while last["time"].as_f64().unwrap() <= first["time"].as_f64().unwrap() {
        assert!(Instant::now() < deadline, "virtual time did not advance: {first} {last}");
        last = next_summary(&mut ws).await;
    }
    assert_eq!(last["type"], "summary");
    assert_eq!(last["nodes"]["alive"], 3);
    assert_eq!(last["cpu"]["total"], 12.0);
    assert!(last["cpu"]["used"].as_f64().unwrap() >= 0.0);
    assert!(last["gpu"]["total"].is_number());
    assert!(last["tasks"].is_object() && last["actors"].is_object(), "{last}");
    assert!(last["jobs_running"].is_u64());
    assert!(last["object_store"]["total"].as_u64().unwrap() > 0);
    ws.close(None).await.unwrap();
    s.stop().await;
}

#[tokio::test]
async fn a_client_that_never_reads_is_dropped_while_others_stay_on_schedule() {
    let s = Server::without_token().await;
    // Connected, then never read: it never answers the server's pings.
    let mut slow = connect(&s).await.unwrap();
    let mut fast = connect(&s).await.unwrap();
    let mut arrivals = Vec::new();
    let mut times = Vec::new();
    let window = Instant::now();
    while window.elapsed() < Duration::from_millis(1500) {
        let m = next_summary(&mut fast).await;
        arrivals.push(Instant::now());
        times.push(m["time"].as_f64().unwrap());
    }
    // On schedule: a summary every 100 ms, allowing for a loaded 2-core machine.
    assert!(arrivals.len() >= 8, "only {} summaries in 1.5 s", arrivals.len());
    let worst = arrivals.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(worst < Duration::from_millis(600), "a {worst:?} gap");
    // The engine kept going: virtual time advanced at about 20× wall time.
    assert!(times.last().unwrap() - times[0] > 10.0, "virtual time {times:?}");

    // The slow client's slot was freed (the cap is 2): a new client gets in.
    let mut third = eventually("a free slot", Duration::from_secs(5), || async { connect(&s).await.ok() }).await;
    next_summary(&mut third).await;
    // Reading now, the slow client finds what was buffered, then the server's close.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match slow.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => continue,
                None | Some(Err(_)) => return None,
            }
        }
    })
    .await
    .expect("the slow client's stream ends");
    assert!(ended.is_none() || ended == Some(1008), "closed with {ended:?}");
    // And the fast one is still served.
    next_summary(&mut fast).await;
    s.stop().await;
}

#[tokio::test]
async fn clients_beyond_the_cap_get_503_before_upgrade() {
    let s = Server::without_token().await;
    let mut a = connect(&s).await.unwrap();
    let _b = connect(&s).await.unwrap();
    match connect(&s).await {
        Err(tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 503);
            let body = String::from_utf8_lossy(response.body().as_deref().unwrap_or_default()).into_owned();
            assert!(body.contains("max_stream_clients"), "{body}");
        }
        other => panic!("expected HTTP 503, got {:?}", other.map(|_| "a WebSocket")),
    }
    // Leaving frees the slot.
    a.close(None).await.unwrap();
    while a.next().await.is_some() {}
    let mut c = eventually("a free slot", Duration::from_secs(5), || async { connect(&s).await.ok() }).await;
    next_summary(&mut c).await;
    s.stop().await;
}
