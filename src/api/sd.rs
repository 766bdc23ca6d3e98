//! `/sd`: Prometheus HTTP service discovery, one target group per alive node.
//!
//! Each group points Prometheus at this server with `__metrics_path__` set to the
//! node's own endpoint and `instance` set to `<node_ip>:<metrics_export_port>`, so the
//! scraped series carry the same target labels as when Prometheus scrapes a real Ray
//! cluster through Ray's `prom_metrics_service_discovery.json`. Use it with
//! `http_sd_configs: [{url: http://<rayscope>/sd}]`.
//!
//! The target address is the one Prometheus used to reach `/sd` (its `Host` header),
//! falling back to the listening address, so it is right behind port mappings too.
//!
//! Observing real Ray, `/sd?targets=ray` names Ray's own metrics endpoints instead:
//! each alive node's `<node_ip>:<metrics_export_port>` (as the dashboard's node summary
//! says), labelled with its cluster's name (`ray_io_cluster`, the label a KubeRay
//! PodMonitor gives) and session, every observed cluster's (or `?cluster=NAME`'s), so
//! Prometheus needs no access to Ray's session directory. A node whose port is not
//! known yet (a cluster observed by push alone) is left out.

use super::app::AppState;
use super::error::ApiError;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// `host:port` as a client reached us, if the `Host` header is a plain authority.
fn reached_at(headers: &HeaderMap) -> Option<String> {
    let host = headers.get(header::HOST)?.to_str().ok()?.trim();
    let ok = !host.is_empty()
        && host.len() <= 255
        && host.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]_".contains(c));
    ok.then(|| host.to_string())
}

/// `GET /sd`'s parameters.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SdQuery {
    /// `rayscope` (the default: this server's per-node endpoints) or `ray`.
    targets: Option<String>,
}

/// `GET /sd`
pub(crate) async fn targets(
    State(app): State<AppState>,
    headers: HeaderMap,
    named: Option<axum::Extension<super::app::NamedCluster>>,
    query: Result<Query<SdQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match query {
        Ok(Query(q)) => q,
        Err(e) => {
            return ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("{e}; /sd takes targets=rayscope|ray (and cluster=NAME)"),
            )
            .into_response()
        }
    };
    match q.targets.as_deref() {
        None | Some("rayscope") => {}
        Some("ray") => return ray_targets(&app, named.is_some()),
        Some(other) => {
            return ApiError::parameter(
                "targets",
                format!(
                    "targets must be rayscope (this server's per-node endpoints) or ray (Ray's own), got {other:?}"
                ),
            )
            .into_response()
        }
    }
    let snap = app.handle().snapshot();
    let target = reached_at(&headers).unwrap_or_else(|| app.local_addr.to_string());
    let port = app.config.server.metrics_export_port;
    let groups: Vec<Value> = snap
        .nodes
        .iter()
        .filter(|n| n.state == crate::model::NodeState::Alive)
        .map(|n| {
            json!({
                "targets": [target],
                "labels": {
                    "__metrics_path__": format!("/metrics/nodes/{}", n.ip),
                    "instance": format!("{}:{port}", n.ip),
                    "ray_node_ip": n.ip,
                    "ray_node_id": n.node_id,
                    "ray_node_type": n.node_type,
                    "ray_is_head_node": if n.is_head { "true" } else { "false" },
                    "ray_session_name": snap.session_name,
                }
            })
        })
        .collect();
    axum::Json(Value::Array(groups)).into_response()
}

/// `GET /sd?targets=ray`: Ray's own metrics endpoints of the observed nodes.
fn ray_targets(app: &AppState, picked: bool) -> Response {
    let Some(clusters) = &app.clusters else {
        let snap = app.handle().snapshot();
        if snap.observed.is_none() {
            return ApiError::parameter(
                "targets",
                "targets=ray names a real Ray cluster's nodes: rayscope is running its model (use /sd)",
            )
            .into_response();
        }
        return axum::Json(Value::Array(groups(&snap))).into_response();
    };
    // `?cluster=NAME` picked one; else every cluster.
    let snaps: Vec<_> = if picked {
        vec![app.handle().snapshot()]
    } else {
        clusters.all().iter().map(|c| c.handle.snapshot()).collect()
    };
    axum::Json(Value::Array(snaps.iter().flat_map(|s| groups(s)).collect())).into_response()
}

fn groups(snap: &crate::snapshot::Snapshot) -> Vec<Value> {
    let Some(view) = snap.observed.as_ref() else { return Vec::new() };
    view.ray_metrics_targets
        .iter()
        .map(|t| {
            json!({
                "targets": [format!("{}:{}", t.node_ip, t.port)],
                "labels": {
                    "ray_io_cluster": view.cluster,
                    "ray_node_ip": t.node_ip,
                    "ray_node_id": t.node_id,
                    "ray_is_head_node": if t.is_head { "true" } else { "false" },
                    "ray_session_name": snap.session_name,
                }
            })
        })
        .collect()
}
