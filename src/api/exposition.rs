//! `/metrics` and `/metrics/nodes/<ip>`: the metrics module's exposition of the latest
//! snapshot, encoded on the blocking pool (it is CPU work proportional to the cluster).
//!
//! A node's endpoint behaves as a Ray node's metrics agent would: unknown IPs are 404,
//! and once the node is dead its endpoint is down (503), which is what makes
//! Prometheus's `up` go to 0 for it. Host readings (this machine as the head node) are
//! taken only when `cluster.host_node` is set; the monitor caches them for a second.

use super::app::AppState;
use super::error::ApiError;
use super::CONTENT_TYPE;
use crate::model::NodeState;
use crate::sim::snapshot::NodeView;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// The host reading (blocking /proc reads, cached for a second), timed as the `host` collector.
fn read_host(host: Option<crate::host::HostMonitor>, ctx: &mut crate::metrics::RenderContext) -> Option<std::sync::Arc<crate::host::HostReading>> {
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
pub(crate) async fn all(State(app): State<AppState>) -> Result<Response, ApiError> {
    let snap = app.handle.snapshot();
    let mut ctx = app.render_context(&snap);
    let host = app.host.clone();
    let body = tokio::task::spawn_blocking(move || {
        let reading = read_host(host, &mut ctx);
        crate::metrics::render_all(&snap, reading.as_ref(), &ctx)
    })
    .await
    .map_err(super::error::internal)?;
    Ok(exposition(body))
}

/// `GET /metrics/nodes/{ip}`: one node's endpoint, as Ray's per-node agent serves it.
pub(crate) async fn node(State(app): State<AppState>, Path(ip): Path<String>) -> Result<Response, ApiError> {
    let snap = app.handle.snapshot();
    // A restored node is a new node at the same IP: prefer the alive one.
    let mut at_ip = snap.nodes.iter().filter(|n| n.ip == ip);
    let Some(first) = at_ip.next() else {
        return Err(ApiError::not_found(format!("no node has IP {ip}; /sd lists the alive nodes' endpoints")));
    };
    let dead = |n: &NodeView| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("node {ip} is dead; its metrics endpoint is down, as a dead Ray node's is"),
        )
        .with("node_ip", ip.clone())
        .with("node_id", n.node_id.clone())
        .with("state", n.state.as_str())
        .with("death_reason", n.death_reason.clone())
    };
    let alive = std::iter::once(first).chain(at_ip).any(|n| n.state == NodeState::Alive);
    if !alive {
        return Err(dead(first));
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
