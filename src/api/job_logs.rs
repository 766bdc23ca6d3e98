//! A job's driver log as Ray's Jobs API serves it: `GET /api/jobs/<id>/logs` (all of
//! it at once) and the WebSocket `GET /api/jobs/<id>/logs/tail`, which streams lines
//! as the driver writes them and closes when the job has ended and every line is out.
//! `ray job submit` (without `--no-wait`) and `ray job logs --follow` read the tail,
//! then ask for the job's status, so the socket closes only once a snapshot shows the
//! job terminal.
//!
//! The tail only reads snapshots (it polls the newest every [`POLL`]); the log it reads
//! is bounded by the engine (the last 1,000 lines of each job), and `log_total` tells
//! which lines were already sent, so a tail that falls behind the cap skips what was
//! dropped instead of repeating lines. Clients send nothing but pongs and a close:
//! inbound messages are capped at [`MAX_INBOUND`] bytes, and at most [`MAX_TAILS`]
//! tails are open at once (503 beyond). A tail pings its client and drops it when
//! nothing comes back for `server.limits.websocket_idle_timeout`, as `/ws/realtime`
//! drops slow readers, so silent clients cannot hold every slot until their jobs end
//! (Ray's own clients, aiohttp and websockets, answer pings while they read).
//!
//! Must never: block the engine, or keep a socket open for a job that no longer exists.

use super::app::AppState;
use super::error::{json_ok, ApiError};
use crate::snapshot::{JobView, Snapshot};
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How often a tail looks at the newest snapshot (the engine publishes every 100 ms).
const POLL: Duration = Duration::from_millis(100);

/// Open tails in this process; each costs a task and a socket.
pub(crate) const MAX_TAILS: usize = 256;

/// Largest message or frame a tail client may send.
pub(crate) const MAX_INBOUND: usize = 4096;

/// A send that takes longer drops the client.
const SEND_DEADLINE: Duration = Duration::from_secs(10);

/// RFC 6455 close codes.
const NORMAL: u16 = 1000;
const GOING_AWAY: u16 = 1001;

static TAILS: AtomicUsize = AtomicUsize::new(0);

/// A taken tail slot; dropping it frees the slot.
struct Slot;

impl Slot {
    fn take() -> Option<Slot> {
        let before = TAILS.fetch_add(1, Ordering::AcqRel);
        let slot = Slot;
        (before < MAX_TAILS).then_some(slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        TAILS.fetch_sub(1, Ordering::AcqRel);
    }
}

fn find<'a>(snap: &'a Snapshot, id: &str) -> Option<&'a JobView> {
    snap.jobs.iter().find(|j| j.submission_id == id || j.id == id)
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("Job {id} does not exist"))
}

/// `GET /api/jobs/{id}/logs`
pub(crate) async fn logs(State(app): State<AppState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let snap = app.handle().snapshot();
    let job = find(&snap, &id).ok_or_else(|| not_found(&id))?;
    let mut logs = job.log.join("\n");
    if !logs.is_empty() {
        logs.push('\n');
    }
    Ok(json_ok(json!({"logs": logs})))
}

/// `GET /api/jobs/{id}/logs/tail` (WebSocket)
pub(crate) async fn tail(
    State(app): State<AppState>,
    Path(id): Path<String>,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    if find(&app.handle().snapshot(), &id).is_none() {
        return Err(not_found(&id));
    }
    let Some(slot) = Slot::take() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_TAILS} job log tails are already open; close one and retry"),
        ));
    };
    Ok(ws
        .max_message_size(MAX_INBOUND)
        .max_frame_size(MAX_INBOUND)
        .on_upgrade(move |socket| follow(app, id, socket, slot))
        .into_response())
}

/// The lines of `job` not yet sent (`sent` counts lines ever sent), as one chunk, and
/// the new count.
fn unsent(job: &JobView, sent: u64) -> (Option<String>, u64) {
    let first_kept = job.log_total - job.log.len() as u64;
    let from = sent.max(first_kept);
    if from >= job.log_total {
        return (None, sent);
    }
    let mut chunk = job.log[(from - first_kept) as usize..].join("\n");
    chunk.push('\n');
    (Some(chunk), job.log_total)
}

async fn follow(app: AppState, id: String, mut socket: WebSocket, _slot: Slot) {
    let mut sent = 0u64;
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let idle = Duration::from_micros(app.config.server.limits.websocket_idle_timeout.as_micros());
    // Three pings per idle period: one lost or late pong does not drop a live client.
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + idle / 3, idle / 3);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut heard = tokio::time::Instant::now();
    let mut stopping = app.stopping.clone();
    let why = loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = ping.tick() => {
                if heard.elapsed() > idle {
                    close(&mut socket, GOING_AWAY, "no answer to pings").await;
                    break "the client answered no ping within the idle timeout";
                }
                let send = socket.send(Message::Ping(Default::default()));
                if !matches!(tokio::time::timeout(SEND_DEADLINE.min(idle), send).await, Ok(Ok(()))) {
                    break "a ping could not be sent in time";
                }
                continue;
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break "the client left",
                Some(Ok(_)) => {
                    heard = tokio::time::Instant::now();
                    continue;
                }
            },
            _ = super::server::stopped(&mut stopping) => {
                close(&mut socket, GOING_AWAY, "server shutting down").await;
                break "the server is shutting down";
            }
        }
        let snap = app.handle().snapshot();
        let Some(job) = find(&snap, &id) else {
            close(&mut socket, NORMAL, "the job's record is gone").await;
            break "the job was deleted or evicted";
        };
        let (chunk, now_sent) = unsent(job, sent);
        sent = now_sent;
        if let Some(chunk) = chunk {
            let send = socket.send(Message::Text(Utf8Bytes::from(chunk)));
            if !matches!(tokio::time::timeout(SEND_DEADLINE, send).await, Ok(Ok(()))) {
                break "a send did not complete in time";
            }
        }
        if job.status.is_terminal() {
            close(&mut socket, NORMAL, "").await;
            break "the job ended";
        }
    };
    tracing::debug!(job = %id, reason = why, "job log tail closed");
}

async fn close(socket: &mut WebSocket, code: u16, reason: &str) {
    let frame = CloseFrame { code, reason: Utf8Bytes::from(reason) };
    let _ = tokio::time::timeout(Duration::from_millis(500), socket.send(Message::Close(Some(frame)))).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JobStatus;

    fn job(log: &[&str], total: u64) -> JobView {
        JobView {
            id: "01000000".into(),
            submission_id: "s".into(),
            name: "j".into(),
            entrypoint: "fan-out".into(),
            status: JobStatus::Running,
            message: String::new(),
            start_time_us: crate::snapshot::VirtualTime::ZERO,
            end_time_us: None,
            driver_node: 0,
            log: log.iter().map(|s| s.to_string()).collect(),
            log_total: total,
        }
    }

    #[test]
    fn a_tail_sends_each_line_once_and_skips_what_the_cap_dropped() {
        let (c, n) = unsent(&job(&["a", "b"], 2), 0);
        assert_eq!((c.as_deref(), n), (Some("a\nb\n"), 2));
        assert_eq!(unsent(&job(&["a", "b"], 2), 2), (None, 2));
        let (c, n) = unsent(&job(&["b", "c"], 3), 2);
        assert_eq!((c.as_deref(), n), (Some("c\n"), 3));
        // Lines 0..8 left the ring while the tail had sent 1: it goes on from line 8.
        let (c, n) = unsent(&job(&["i", "j"], 10), 1);
        assert_eq!((c.as_deref(), n), (Some("i\nj\n"), 10));
    }
}
