//! `/metrics` and `/metrics/nodes/<ip>`: the metrics module's exposition of the latest
//! snapshot, encoded on the blocking pool (it is CPU work proportional to the cluster).
//!
//! A node's endpoint behaves as a Ray node's metrics agent would: unknown IPs are 404,
//! and once the node is dead its endpoint is down (503), which is what makes
//! Prometheus's `up` go to 0 for it. Host readings (this machine as the head node) are
//! taken only when `cluster.host_node` is set; the monitor caches them for a second.
//!
//! The whole-cluster exposition is large (about 200,000 samples at 2,000 nodes), so
//! concurrent scrapes share one render (single flight) and a render is reused for up to
//! [`REUSE_FOR`]: many scrapers cost one render a second, and the engine thread keeps
//! its core. Past that the render is still served while the next is made in the
//! background (up to [`SERVE_WHILE_RENDERING_FOR`]), so steady scrapes never wait for a
//! render. Prometheus asks for gzip; the compressed body is made once per render too.

use super::app::AppState;
use super::error::ApiError;
use super::stores::exposition::Rendered;
use super::CONTENT_TYPE;
use crate::model::NodeState;
use crate::snapshot::{NodeView, Snapshot};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one render of `/metrics` serves further scrapes as it is.
pub(crate) const REUSE_FOR: Duration = Duration::from_secs(1);

/// How long after it was begun a render may still be served while the next one is made
/// in the background. Past it a scrape waits for a fresh render, so a scraper that comes
/// every 15 s never gets the render made for the previous scrape.
pub(crate) const SERVE_WHILE_RENDERING_FOR: Duration = Duration::from_secs(3);

fn wants_gzip(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(
        |e| {
            let mut parts = e.trim().split(';');
            let name = parts.next().unwrap_or("").trim();
            let q_zero = parts.any(|p| p.trim().replace(' ', "") == "q=0");
            name.eq_ignore_ascii_case("gzip") && !q_zero
        },
    )
}

fn gzip(body: &[u8]) -> std::io::Result<Bytes> {
    let mut enc = flate2::write::GzEncoder::new(Vec::with_capacity(body.len() / 8), flate2::Compression::fast());
    enc.write_all(body)?;
    Ok(Bytes::from(enc.finish()?))
}

/// The host reading (blocking /proc reads, cached for a second), timed as the `host` collector.
fn read_host(
    host: Option<crate::host::HostMonitor>,
    ctx: &mut crate::metrics::RenderContext,
) -> Option<std::sync::Arc<crate::host::HostReading>> {
    let h = host?;
    let start = std::time::Instant::now();
    let reading = h.latest();
    ctx.collector_seconds.push(("host".into(), start.elapsed().as_secs_f64()));
    Some(reading)
}

fn exposition(body: String) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response()
}

/// `GET /metrics`: every node's series plus the cluster-wide families.
///
/// A render older than [`REUSE_FOR`] (and of an older snapshot) is still served, at
/// once, while the next is made in the background, until it is
/// [`SERVE_WHILE_RENDERING_FOR`] old: under steady scraping no scrape waits for a
/// render, and renders stay one a second. Only the first scrape, and one after a pause,
/// waits for its render.
pub(crate) async fn all(State(app): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let gz = wants_gzip(&headers);
    let seq = app.handle().snapshot().seq;
    let r = match app.exposition.latest() {
        Some(r) if r.seq == seq || r.at.elapsed() < REUSE_FOR => r,
        // The next is on its way (and this one was young enough when it was started).
        Some(r) if app.exposition.refreshing.load(Ordering::Acquire) => r,
        Some(r) if r.at.elapsed() < SERVE_WHILE_RENDERING_FOR => {
            refresh_in_background(&app, gz);
            r
        }
        _ => render_now(&app, gz).await?,
    };
    respond(&r, gz).await
}

/// Start the next render unless one is being made.
fn refresh_in_background(app: &AppState, gz: bool) {
    let Ok(guard) = app.exposition.rendering.clone().try_lock_owned() else {
        return;
    };
    app.exposition.refreshing.store(true, Ordering::Release);
    let app = app.clone();
    tokio::spawn(async move {
        let _one_at_a_time = guard;
        let snap = app.handle().snapshot();
        if let Err(e) = render(&app, snap, gz).await {
            tracing::warn!(error = ?e, "a background /metrics render failed; the next scrape renders");
        }
        app.exposition.refreshing.store(false, Ordering::Release);
    });
}

/// Wait for a render no older than [`REUSE_FOR`], making it unless another scrape is.
async fn render_now(app: &AppState, gz: bool) -> Result<Arc<Rendered>, ApiError> {
    let _one_at_a_time = app.exposition.rendering.lock().await;
    let snap = app.handle().snapshot();
    // Made by the scrape this one waited behind?
    if let Some(r) = app.exposition.latest().filter(|r| r.seq == snap.seq || r.at.elapsed() < REUSE_FOR) {
        return Ok(r);
    }
    render(app, snap, gz).await
}

/// Render the snapshot on the blocking pool (with its gzip when `gz`) and store it.
async fn render(app: &AppState, snap: Arc<Snapshot>, gz: bool) -> Result<Arc<Rendered>, ApiError> {
    let begun = Instant::now();
    let mut ctx = app.render_context(&snap);
    let host = app.host.clone();
    let seq = snap.seq;
    let mut buffer = app.exposition.take_spare();
    let (body, zipped) = tokio::task::spawn_blocking(move || {
        let reading = read_host(host, &mut ctx);
        crate::metrics::render_all_into(&mut buffer, &snap, reading.as_ref(), &ctx);
        let body = Bytes::from(buffer);
        let zipped = gz.then(|| gzip(&body));
        (body, zipped)
    })
    .await
    .map_err(super::error::internal)?;
    let gzip = tokio::sync::OnceCell::new();
    if let Some(z) = zipped {
        let _ = gzip.set(z.map_err(super::error::internal)?);
    }
    let r = Arc::new(Rendered { seq, at: begun, body, gzip });
    app.exposition.store(r.clone());
    Ok(r)
}

/// The render as the scrape asked for it; its gzip is made once, by the first to ask.
async fn respond(r: &Rendered, gz: bool) -> Result<Response, ApiError> {
    if !gz {
        return Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], r.body.clone()).into_response());
    }
    let zipped = r
        .gzip
        .get_or_try_init(|| async {
            let body = r.body.clone();
            tokio::task::spawn_blocking(move || gzip(&body))
                .await
                .map_err(super::error::internal)?
                .map_err(super::error::internal)
        })
        .await?
        .clone();
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE), (header::CONTENT_ENCODING, "gzip")], zipped).into_response())
}

/// `GET /metrics/nodes/{ip}`: one node's endpoint, as Ray's per-node agent serves it.
pub(crate) async fn node(State(app): State<AppState>, Path(ip): Path<String>) -> Result<Response, ApiError> {
    let snap = app.handle().snapshot();
    // A restored node is a new node at the same IP: prefer the alive one.
    let mut at_ip = snap.nodes.iter().filter(|n| *n.ip == *ip);
    let Some(first) = at_ip.next() else {
        return Err(ApiError::not_found(format!("no node has IP {ip}; /sd lists the alive nodes' endpoints")));
    };
    let dead = |n: &NodeView| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("node {ip} is dead; its metrics endpoint is down, as a dead Ray node's is"),
        )
        .with("node_ip", ip.clone())
        .with("node_id", n.node_id.to_string())
        .with("state", n.state.as_str())
        .with("death_reason", n.death_reason)
    };
    let Some(alive) = std::iter::once(first).chain(at_ip).find(|n| n.state == NodeState::Alive) else {
        return Err(dead(first));
    };
    if let Some(crashed) = alive.crashed_at_us {
        // Its raylet and agent are gone; the GCS still lists it until its health checks
        // give up, so service discovery still names this endpoint: the target is down.
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "node {ip} is not answering: its raylet crashed; the GCS marks it dead once its health checks fail"
            ),
        )
        .with("node_ip", ip.clone())
        .with("node_id", alive.node_id.to_string())
        .with("state", alive.state.as_str())
        .with("crashed_at_s", crashed.as_secs_f64()));
    }
    let mut ctx = app.render_context(&snap);
    let host = app.host.clone();
    let ip2 = ip.clone();
    let body = tokio::task::spawn_blocking(move || {
        let reading = read_host(host, &mut ctx);
        crate::metrics::render_node(&snap, &ip2, reading.as_ref(), &ctx)
    })
    .await
    .map_err(super::error::internal)?;
    match body {
        Some(b) => Ok(exposition(b)),
        // The metrics module found no alive node there (it died since the snapshot was taken).
        None => {
            Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, format!("node {ip} has no metrics: it is not alive"))
                .with("node_ip", ip))
        }
    }
}
