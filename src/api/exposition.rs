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
//! its core. Prometheus asks for gzip; the compressed body is made once per render too.

use super::app::AppState;
use super::error::ApiError;
use super::stores::exposition::Rendered;
use super::CONTENT_TYPE;
use crate::model::NodeState;
use crate::snapshot::NodeView;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::io::Write as _;
use std::time::{Duration, Instant};

/// How long one render of `/metrics` serves further scrapes.
pub(crate) const REUSE_FOR: Duration = Duration::from_secs(1);

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
pub(crate) async fn all(State(app): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let gz = wants_gzip(&headers);
    // One render at a time; scrapes that arrive meanwhile wait for it and share it.
    let mut latest = app.exposition.latest.lock().await;
    let snap = app.handle().snapshot();
    let fresh = latest.as_ref().is_some_and(|r| r.seq == snap.seq || r.at.elapsed() < REUSE_FOR);
    if !fresh {
        let mut ctx = app.render_context(&snap);
        let host = app.host.clone();
        let seq = snap.seq;
        let body = tokio::task::spawn_blocking(move || {
            let reading = read_host(host, &mut ctx);
            crate::metrics::render_all(&snap, reading.as_ref(), &ctx)
        })
        .await
        .map_err(super::error::internal)?;
        *latest = Some(Rendered { seq, at: Instant::now(), body: Bytes::from(body), gzip: None });
    }
    let Some(r) = latest.as_mut() else {
        return Err(super::error::internal("no /metrics render is stored"));
    };
    if !gz {
        return Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], r.body.clone()).into_response());
    }
    let zipped = match &r.gzip {
        Some(z) => z.clone(),
        None => {
            let body = r.body.clone();
            let z = tokio::task::spawn_blocking(move || gzip(&body))
                .await
                .map_err(super::error::internal)?
                .map_err(super::error::internal)?;
            r.gzip = Some(z.clone());
            z
        }
    };
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
        .with("crashed_at_s", crashed as f64 / 1e6));
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
