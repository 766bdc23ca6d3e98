//! Issue 7, A2: slow clients cannot hold the server's connections. Against the real
//! server over loopback:
//! - a request whose headers arrive one byte at a time is closed after
//!   `server.header_read_timeout`, even while bytes keep coming;
//! - beyond `server.max_connections` open connections a new one is answered 503 naming
//!   the setting, and service resumes once the slow ones are closed;
//! - both limits and what they did are in `rayscope_http_*`.

mod api_support;

use api_support::*;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn slow_config(max_connections: usize) -> rayscope::config::Config {
    let mut cfg = config();
    cfg.server.max_connections = max_connections;
    cfg.server.header_read_timeout = rayscope::config::DurationSpec::secs(1.0);
    cfg
}

/// Dribble a request head one byte every 100 ms until the server closes the
/// connection; how long that took. Panics if it is still open after `within`.
async fn dribble_until_closed(mut tcp: TcpStream, within: Duration) -> Duration {
    let started = Instant::now();
    let head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".iter().chain(std::iter::repeat(&b'a'));
    let mut buf = [0u8; 1024];
    for byte in head {
        assert!(started.elapsed() < within, "a slow client was still connected after {within:?}");
        if tcp.write_all(&[*byte]).await.is_err() {
            return started.elapsed();
        }
        match tokio::time::timeout(Duration::from_millis(100), tcp.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => {} // an error answer (408/400) before the close: keep reading
            Err(_) => {}    // nothing yet: send the next byte
        }
    }
    unreachable!()
}

#[tokio::test]
async fn headers_arriving_one_byte_at_a_time_are_timed_out() {
    let s = Server::start(slow_config(64), Tokens::default()).await;
    let clients: Vec<_> = (0..20).map(|_| TcpStream::connect(s.addr)).collect();
    let mut tasks = Vec::new();
    for c in clients {
        let tcp = c.await.unwrap();
        tasks.push(tokio::spawn(dribble_until_closed(tcp, Duration::from_secs(15))));
    }
    for t in tasks {
        let took = t.await.unwrap();
        assert!(took >= Duration::from_millis(900), "closed before the timeout: {took:?}");
    }
    assert_eq!(metric(&s, "rayscope_http_header_read_timeout_seconds").await, 1.0);
    assert!(metric(&s, "rayscope_http_header_read_timeouts_total").await >= 20.0);
    s.stop().await;
}

#[tokio::test]
async fn connections_beyond_the_cap_get_503_and_service_resumes() {
    let s = Server::start(slow_config(4), Tokens::default()).await;
    // Four connections that never finish their headers take every slot.
    let mut hogs = Vec::new();
    for _ in 0..4 {
        let mut tcp = TcpStream::connect(s.addr).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        hogs.push(tcp);
    }
    // The accept loop has taken all four once a fifth is refused; poll with a deadline.
    let refused = eventually("a connection over the cap to be refused", Duration::from_secs(10), || async {
        let r = raw(s.addr, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
        (r.status == 503).then_some(r)
    })
    .await;
    let error = refused.json()["error"].as_str().unwrap().to_string();
    assert!(error.contains("server.max_connections") && error.contains('4'), "{error}");
    assert_eq!(refused.header("x-content-type-options"), Some("nosniff"));
    // The hogs are closed by the header timeout; then requests are served again.
    for mut h in hogs {
        let mut buf = [0u8; 512];
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match h.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        });
        closed.await.expect("a connection that never finished its headers was closed");
    }
    let ok = eventually("service to resume", Duration::from_secs(10), || async {
        let r = s.get("/-/healthy").await;
        (r.status == 200).then_some(r)
    })
    .await;
    assert_eq!(ok.status, 200);
    assert_eq!(metric(&s, "rayscope_http_max_connections").await, 4.0);
    assert!(metric(&s, "rayscope_http_connections_rejected_total").await >= 1.0);
    s.stop().await;
}

#[tokio::test]
async fn silent_and_idle_keep_alive_connections_are_closed_too() {
    let s = Server::start(slow_config(64), Tokens::default()).await;
    // One connection that never sends a byte, one that goes idle after a request.
    let silent = TcpStream::connect(s.addr).await.unwrap();
    let mut idle = TcpStream::connect(s.addr).await.unwrap();
    idle.write_all(b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    for mut c in [silent, idle] {
        let mut buf = [0u8; 1024];
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match c.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {} // the idle one's answer first
                }
            }
        });
        closed.await.expect("a connection that sends no (further) request is closed");
    }
    s.stop().await;
}

#[test]
fn the_limits_are_checked_settings_with_defaults() {
    let cfg = config();
    assert_eq!(cfg.server.max_connections, 512);
    assert_eq!(cfg.server.header_read_timeout.as_micros(), 10_000_000);
    let bad = rayscope::config::load_str("server:\n  max_connections: 0\n  header_read_timeout: 0s\n", "bad.yaml")
        .expect_err("zero limits are refused");
    let text = bad.to_string();
    assert!(text.contains("bad.yaml:2") && text.contains("server.max_connections"), "{text}");
    assert!(text.contains("bad.yaml:3") && text.contains("server.header_read_timeout"), "{text}");
}
