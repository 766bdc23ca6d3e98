//! `/ws/realtime`: a compact cluster summary pushed to WebSocket clients every
//! `server.stream_interval` (2 s by default), and once on connect.
//!
//! One ticker builds each summary once and broadcasts it; every client has a bounded
//! queue (a `broadcast` receiver of [`QUEUE`] messages), so a slow client costs the
//! others nothing and never reaches the engine, which the stream only reads snapshots
//! from. A client is dropped when:
//! - it falls [`QUEUE`] messages behind (its sends are stuck), or a send takes longer
//!   than the deadline;
//! - it stops answering pings: the server pings every interval, and a client that
//!   never reads never pongs, even while the kernel's socket buffers still absorb
//!   what is sent to it. The deadline is 5 intervals (at least 0.5 s).
//!
//! At most `server.max_stream_clients` clients at once: the slot is taken before the
//! upgrade, and a request beyond the cap gets HTTP 503 instead of a WebSocket.
//!
//! Clients send nothing the server needs but pongs and close frames, so a frame or
//! message over [`MAX_CLIENT_MESSAGE`] bytes drops the client (the library default of
//! 64 MiB per message let a few clients hold gigabytes in unfinished messages).
//!
//! Browsers send `Origin` with every WebSocket request, and a page from any site may
//! open one, so `server.allowed_origins` lists the pages that may. Unset, any origin
//! may while the server listens on loopback only (a local tool), and otherwise only
//! the server's own pages (an `Origin` naming the `Host` asked for). Clients that send
//! no `Origin` (not browsers) are let in: the stream needs no token.

use super::app::{App, AppState};
use super::error::ApiError;
use super::stores::dashboard_history::{actor_states, resource_use, task_states};
use super::stores::hub::{Slot, MAX_CLIENT_MESSAGE};
use crate::model::NodeState;
use crate::snapshot::Snapshot;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::broadcast::error::RecvError;

/// WebSocket close codes (RFC 6455 §7.4.1).
const GOING_AWAY: u16 = 1001;
const POLICY_VIOLATION: u16 = 1008;
const MESSAGE_TOO_BIG: u16 = 1009;

/// The summary every client receives.
pub(crate) fn summary(app: &App, s: &Snapshot) -> Value {
    let alive = s.nodes.iter().filter(|n| n.state == NodeState::Alive).count();
    let resources = resource_use(s);
    let use_of = |r: &str| {
        let (total, used) = resources.get(r).copied().unwrap_or((0.0, 0.0));
        json!({"used": used, "total": total})
    };
    let live = s.nodes.iter().filter(|n| n.state == NodeState::Alive);
    let (store_used, store_total) =
        live.clone().fold((0u64, 0u64), |(u, t), n| (u + n.store_used.0, t + n.store_capacity.0));
    let (memory_used, memory_total) = live.fold((0u64, 0u64), |(u, t), n| (u + n.memory_used.0, t + n.memory_total.0));
    json!({
        "type": "summary",
        "seq": s.seq,
        "time": s.sim_time_us.as_secs_f64(),
        "timestamp_ms": app.epoch_ms(s.sim_time_us),
        "nodes": {"alive": alive, "dead": s.nodes.len() - alive},
        "cpu": use_of("CPU"),
        "gpu": use_of("GPU"),
        "tasks": task_states(s),
        "actors": actor_states(s),
        "jobs_running": s.running_jobs,
        "object_store": {"used": store_used, "total": store_total},
        "memory": {"used": memory_used, "total": memory_total},
        // A counter, so a client can chart throughput from any two summaries.
        "tasks_finished_total": s.counters.tasks_finished,
    })
}

fn summary_message(app: &App) -> Utf8Bytes {
    Utf8Bytes::from(summary(app, &app.handle().snapshot()).to_string())
}

/// Build and broadcast a summary every interval while anyone listens.
pub(crate) async fn run_ticker(app: AppState) {
    let mut tick = tokio::time::interval(app.stream.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopping = app.stopping.clone();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = super::server::stopped(&mut stopping) => return,
        }
        if app.stream.tx.receiver_count() > 0 {
            let _ = app.stream.tx.send(summary_message(&app));
        }
    }
}

/// `GET /ws/realtime`
pub(crate) async fn upgrade(
    State(app): State<AppState>,
    headers: HeaderMap,
    named: Option<axum::Extension<super::app::NamedCluster>>,
    ws: WebSocketUpgrade,
) -> Response {
    if let Err(message) = check_origin(&app, &headers) {
        return ApiError::new(StatusCode::FORBIDDEN, message.to_string()).into_response();
    }
    let Some(slot) = app.stream.reserve() else {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the live stream already has its maximum of {} clients (server.max_stream_clients)",
                app.stream.max_clients
            ),
        )
        .into_response();
    };
    // A client of a cluster it named (`?cluster=NAME`, observe mode) is sent that
    // cluster's summary at each of the shared ticks, which carry the first's; the
    // upgraded connection runs outside this request, so the cluster is taken now.
    let picked = app.picked();
    let own = named.is_some();
    ws.max_frame_size(MAX_CLIENT_MESSAGE)
        .max_message_size(MAX_CLIENT_MESSAGE)
        .on_upgrade(move |socket| super::app::with_cluster(picked, client(app, socket, slot, own)))
}

/// Whether the page asking (its `Origin`) may open the stream; the error names the
/// origin and the setting that admits it.
fn check_origin(app: &App, headers: &HeaderMap) -> Result<(), OriginRefused> {
    let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
    let origin = origin.to_str().unwrap_or("");
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    origin_allowed(origin, host, app.config.server.allowed_origins.as_deref(), app.local_addr.ip().is_loopback())
}

/// A page's origin the live stream refuses (shown escaped, at most 200 characters).
#[derive(Debug, thiserror::Error)]
#[error("origin `{0}` may not open the live stream: add it to server.allowed_origins (or \"*\" for any)")]
struct OriginRefused(String);

/// The rule behind [`check_origin`]: `allowed` is `server.allowed_origins`, `loopback`
/// whether the server listens on loopback only.
fn origin_allowed(origin: &str, host: &str, allowed: Option<&[String]>, loopback: bool) -> Result<(), OriginRefused> {
    let same_origin = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|authority| !host.is_empty() && authority.eq_ignore_ascii_case(host));
    let allowed = same_origin
        || match allowed {
            Some(list) => list.iter().any(|o| o == "*" || o.eq_ignore_ascii_case(origin)),
            None => loopback,
        };
    if allowed {
        return Ok(());
    }
    let shown: String = origin.chars().take(200).flat_map(char::escape_default).collect();
    Err(OriginRefused(shown))
}

async fn client(app: AppState, mut socket: WebSocket, _slot: Slot, own_cluster: bool) {
    let mut rx = app.stream.tx.subscribe();
    let deadline = app.stream.deadline();
    let mut ping = tokio::time::interval(app.stream.interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    let mut last_pong = Instant::now();
    let mut stopping = app.stopping.clone();
    tracing::debug!(clients = app.stream.clients(), "live-stream client connected");
    let why = 'session: {
        if !send(&mut socket, Message::Text(summary_message(&app)), deadline).await {
            break 'session "the first send did not complete";
        }
        loop {
            tokio::select! {
                msg = rx.recv() => match msg {
                    Ok(m) => {
                        let m = if own_cluster { summary_message(&app) } else { m };
                        if !send(&mut socket, Message::Text(m), deadline).await {
                            break 'session "a send did not complete in time";
                        }
                    }
                    Err(RecvError::Lagged(n)) => {
                        close(&mut socket, POLICY_VIOLATION, &format!("too slow: fell {n} messages behind")).await;
                        break 'session "it fell behind";
                    }
                    Err(RecvError::Closed) => break 'session "the stream ended",
                },
                incoming = socket.recv() => match incoming {
                    Some(Ok(Message::Pong(_))) => last_pong = Instant::now(),
                    Some(Ok(Message::Close(_))) | None => break 'session "the client left",
                    // Over MAX_CLIENT_MESSAGE, or not WebSocket at all.
                    Some(Err(_)) => {
                        app.stream.dropped.fetch_add(1, Ordering::Relaxed);
                        close(&mut socket, MESSAGE_TOO_BIG, "frames and messages from clients are limited to 4 KiB").await;
                        break 'session "it sent a frame or message over the limit, or an invalid one";
                    }
                    Some(Ok(_)) => {}
                },
                _ = ping.tick() => {
                    if last_pong.elapsed() > deadline {
                        close(&mut socket, POLICY_VIOLATION, "too slow: no pong within the deadline").await;
                        break 'session "it stopped answering pings";
                    }
                    if !send(&mut socket, Message::Ping(Default::default()), deadline).await {
                        break 'session "a ping did not go out in time";
                    }
                }
                _ = super::server::stopped(&mut stopping) => {
                    close(&mut socket, GOING_AWAY, "server shutting down").await;
                    break 'session "the server is shutting down";
                }
            }
        }
    };
    tracing::debug!(reason = why, "live-stream client dropped");
}

/// Send within `deadline`; false if the client did not take it.
async fn send(socket: &mut WebSocket, m: Message, deadline: Duration) -> bool {
    matches!(tokio::time::timeout(deadline, socket.send(m)).await, Ok(Ok(())))
}

async fn close(socket: &mut WebSocket, code: u16, reason: &str) {
    let frame = CloseFrame { code, reason: Utf8Bytes::from(reason) };
    let _ = tokio::time::timeout(Duration::from_millis(200), socket.send(Message::Close(Some(frame)))).await;
}

#[cfg(test)]
mod tests {
    use super::origin_allowed;

    #[test]
    fn off_by_default_only_on_loopback() {
        assert!(origin_allowed("https://evil.example", "127.0.0.1:8080", None, true).is_ok());
        // Bound to 0.0.0.0 and no allow-list: only the server's own pages.
        assert!(origin_allowed("https://evil.example", "rayscope:8080", None, false).is_err());
        assert!(origin_allowed("http://rayscope:8080", "rayscope:8080", None, false).is_ok());
        assert!(origin_allowed("null", "rayscope:8080", None, false).is_err());
    }

    #[test]
    fn a_list_admits_its_origins_and_star_admits_any() {
        let list = ["https://grafana.example.com".to_string()];
        assert!(origin_allowed("https://GRAFANA.example.com", "h:1", Some(&list), false).is_ok());
        assert!(
            origin_allowed("https://evil.example", "h:1", Some(&list), true).is_err(),
            "a list applies on loopback too"
        );
        assert!(origin_allowed("https://evil.example", "h:1", Some(&["*".to_string()]), false).is_ok());
    }
}
