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

use super::app::AppState;
use axum::extract::State;
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

/// `GET /sd`
pub(crate) async fn targets(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let snap = app.handle.snapshot();
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
