//! The connection loop: accepting TCP connections and serving HTTP/1.1 on each.
//!
//! Owns: the connection cap (`server.max_connections`), the header-read timeout
//! (`server.header_read_timeout`), closing connections gracefully on shutdown, and the
//! counters behind `rayscope_http_*`. `axum::serve` exposes neither limit, so this drives
//! hyper's HTTP/1 connection directly, as `axum::serve` does inside.
//!
//! Why both limits: a client that sends its headers one byte at a time (or never) holds a
//! connection and its task forever; thousands of them exhaust file descriptors and
//! memory without a token. The timeout closes each such connection; the cap bounds how
//! many can be open at once, answering 503 beyond it rather than queueing.
//!
//! Must never: block on a client (the over-cap answer is one non-blocking write), or
//! hold a connection past the shutdown grace the caller applies.

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

/// The limits and what they did, shared with the exporter (`rayscope_http_*`).
#[derive(Debug)]
pub struct ConnectionStats {
    /// `server.max_connections`.
    pub max_connections: usize,
    /// `server.header_read_timeout`.
    pub header_read_timeout: Duration,
    permits: Arc<Semaphore>,
    accepted: AtomicU64,
    rejected: AtomicU64,
    header_timeouts: AtomicU64,
}

impl ConnectionStats {
    pub fn new(max_connections: usize, header_read_timeout: Duration) -> ConnectionStats {
        let max_connections = max_connections.clamp(1, Semaphore::MAX_PERMITS);
        ConnectionStats {
            max_connections,
            header_read_timeout,
            permits: Arc::new(Semaphore::new(max_connections)),
            accepted: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            header_timeouts: AtomicU64::new(0),
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.max_connections - self.permits.available_permits()
    }
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }
    /// Connections refused because `max_connections` were open.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }
    /// Connections closed because a request's headers did not arrive in time.
    pub fn header_timeouts(&self) -> u64 {
        self.header_timeouts.load(Ordering::Relaxed)
    }
}

/// Accept and serve until `stop` turns true, then wait for open connections to finish
/// (each is asked to close once its in-flight request is answered).
pub(crate) async fn run(
    listener: TcpListener,
    router: Router,
    stats: Arc<ConnectionStats>,
    mut stop: watch::Receiver<bool>,
) {
    let refusing = Arc::new(Semaphore::new(REFUSING));
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped(&mut stop) => break,
        };
        let Ok(permit) = stats.permits.clone().try_acquire_owned() else {
            stats.rejected.fetch_add(1, Ordering::Relaxed);
            match refusing.clone().try_acquire_owned() {
                Ok(p) => {
                    let max = stats.max_connections;
                    tokio::spawn(async move {
                        refuse(tcp, max).await;
                        drop(p);
                    });
                }
                Err(_) => drop(tcp),
            }
            continue;
        };
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        let (router, stats, stop) = (router.clone(), stats.clone(), stop.clone());
        tokio::spawn(async move {
            serve_connection(tcp, peer, router, &stats, stop).await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = stats.permits.acquire_many(stats.max_connections as u32).await;
}

async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    router: Router,
    stats: &ConnectionStats,
    mut stop: watch::Receiver<bool>,
) {
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        let mut router = router.clone();
        // A Router is always ready, so calling without `poll_ready` is allowed.
        async move { tower_service::Service::call(&mut router, req).await }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(stats.header_read_timeout);
    let conn = builder.serve_connection(TokioIo::new(tcp), service).with_upgrades();
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        _ = stopped(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            conn.as_mut().await
        }
    };
    if let Err(e) = result {
        if e.is_timeout() {
            stats.header_timeouts.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(peer = %peer, "closed a connection whose request headers did not arrive in time");
        } else {
            tracing::trace!(peer = %peer, error = %e, "connection ended with an error");
        }
    }
}

/// Connections over the cap being answered at once; beyond these they are just closed.
const REFUSING: usize = 64;

/// Answer 503 on a connection over the cap. The answer is one non-blocking write; then
/// the request is read and discarded for a moment (at most 64 KiB, 1 s), because
/// closing with unread input makes the kernel reset the connection, and a reset can
/// destroy the answer before the client reads it.
async fn refuse(mut tcp: TcpStream, max: usize) {
    let body = format!(
        "{{\"error\": \"the server already has its maximum of {max} open connections (server.max_connections); retry later\"}}"
    );
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nx-content-type-options: nosniff\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    // Best effort: a client whose socket cannot take ~300 bytes now just sees the close.
    let _ = tcp.try_write(response.as_bytes());
    let _ = tcp.shutdown().await;
    let drain = async {
        let mut buf = [0u8; 4096];
        let mut left = 64 * 1024usize;
        while left > 0 {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}

/// Resolves when the server starts shutting down (holding no lock across awaits).
pub(crate) async fn stopped(rx: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}
