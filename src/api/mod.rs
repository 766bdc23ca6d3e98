//! The HTTP server: what `rayscope serve` answers on its port.
//!
//! Owns: turning snapshots into HTTP answers (Prometheus exposition and service
//! discovery, Ray's State and Jobs REST shapes, the seed dashboard's JSON, a WebSocket
//! live stream), and turning authorised HTTP requests into [`Control`] requests for the
//! engine and the engine's typed answers back into HTTP. One file per concern:
//!
//! | file | owns |
//! | --- | --- |
//! | `server` | the connection loop: connection cap, header-read timeout, graceful close |
//! | `router` | the route table, health, body limit, request log |
//! | `pages` | the built-in dashboard pages and their embedded assets |
//! | `app` | [`ServeOptions`] and the state every handler shares |
//! | `error` | the JSON error body (`{"error", "parameter" / "field"}`) and body parsing |
//! | `budget` | the memory that large responses in flight may take together (503 beyond) |
//! | `auth` | bearer tokens for state-changing endpoints |
//! | `exposition`, `sd` | `/metrics`, `/metrics/nodes/<ip>`, `/sd` |
//! | `query`, `state_api` | Ray's State API (`/api/v0/...`): filters and paging, handlers and summaries |
//! | `rows/` | the State API's row shapes: the shared column and cell machinery, one file per table, Ray's id layouts |
//! | `cluster_rows` | the State API's derived lists: workers, runtime envs; the object summary |
//! | `cluster_events` | Ray's cluster events: `/api/v0/cluster_events` and the Events page's `/api/cluster_events` |
//! | `jobs`, `entrypoint` | Ray's Jobs REST API and parsing workload entrypoints |
//! | `job_logs` | a job's driver log, whole and as a WebSocket tail |
//! | `control`, `alerts` | `/api/control/...` (the engine's outcomes and refusals as JSON) and the Alertmanager webhook |
//! | `seed_dashboard`, `dashboard_history` | the seed dashboard's `/api/*` endpoints and its 1 h aggregator |
//! | `stream` | `/ws/realtime` |
//! | `state_dir` | `--state-dir`: alerts and submitted jobs kept across restarts, written atomically |
//! | `observe` | observe mode: `POST /api/observe/events` (Ray's Event Export) and `GET /api/observe` |
//! | `flow` | Flow Insight's `/api/flow/...` views and Ant `flow-insight`'s `/get_*_data` |
//! | `logging` | the log subscriber; control characters in logged values escaped |
//!
//! Must never: block the engine (readers only load `Arc<Snapshot>`s; control requests
//! go over the engine's channel), write the model, do CPU-heavy encoding on the async
//! workers (it goes to `spawn_blocking`), or change state without a configured token.
//!
//! [`Control`]: crate::sim::control::Control

mod alerts;
mod ant;
mod app;
mod auth;
mod background;
mod budget;
mod cluster_events;
mod cluster_rows;
mod control;
mod entrypoint;
mod error;
mod exposition;
mod flow;
mod job_logs;
mod jobs;
pub mod logging;
mod observe;
mod pages;
mod query;
mod router;
mod rows;
mod runbooks;
mod sd;
mod seed_dashboard;
mod server;
mod state_api;
pub mod state_dir;
mod stores;
mod stream;

pub use app::{ObserveServe, ServeOptions};
pub use entrypoint::{parse_entrypoint, parse_workload_yaml, WorkloadError};

use crate::sim::runner::EngineHandle;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Content-Type of `/metrics` answers (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Largest request body accepted; larger ones get 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Serve HTTP on `listener` until `shutdown` completes, then stop within
/// [`ServeOptions::shutdown_grace`]: new connections are refused, live-stream clients
/// get a close frame, in-flight requests may finish, and the engine thread is stopped.
///
/// Errors only if the listener itself fails.
pub async fn serve(
    listener: TcpListener,
    handle: EngineHandle,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let local_addr = listener.local_addr()?;
    let grace = opts.shutdown_grace;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let app = Arc::new(app::App::new(handle.clone(), opts, local_addr, stop_rx.clone()));
    let background = [
        tokio::spawn(background::sample_history(app.clone())),
        tokio::spawn(stream::run_ticker(app.clone())),
        tokio::spawn(background::run_prewarm(app.clone())),
    ];
    let persist = tokio::spawn(background::save_state(app.clone()));
    let router = router::build(app.clone());
    let server = server::run(listener, router, app.connections.clone(), stop_rx.clone());
    tokio::pin!(server);
    tracing::info!(address = %local_addr, "serving");
    tokio::select! {
        _ = &mut server => {}
        _ = shutdown => {
            tracing::info!("shutdown requested; closing connections");
            let _ = stop_tx.send(true);
            if tokio::time::timeout(grace, &mut server).await.is_err() {
                tracing::warn!(grace_ms = grace.as_millis() as u64, "connections still open after the grace period; dropping them");
            }
        }
    }
    let _ = stop_tx.send(true);
    for task in background {
        task.abort();
    }
    // The state directory's last write, so a clean stop loses nothing.
    if tokio::time::timeout(Duration::from_millis(500), persist).await.is_err() {
        tracing::warn!("the state directory's last write did not finish within 500 ms");
    }
    // The engine checks its stop flag at least every publish period (100 ms).
    let engine = tokio::task::spawn_blocking(move || handle.shutdown());
    if tokio::time::timeout(Duration::from_millis(500), engine).await.is_err() {
        tracing::warn!("the engine thread did not stop within 500 ms");
    }
    tracing::info!("stopped");
    Ok(())
}
