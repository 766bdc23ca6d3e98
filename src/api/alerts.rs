//! The Alertmanager webhook's endpoints: `POST /api/alerts` receives notifications
//! (closing the loop Prometheus → Alertmanager → rayscope), `GET /api/alerts` lists
//! them. What is kept, and its bounds, is the store's (`stores/alerts.rs`).
//!
//! Must never: hold the store's lock while a response body is built (a listing copies
//! `Arc`s out, then serializes).

use super::app::AppState;
use super::auth::AlertAuthorized;
use super::error::{json_ok, parse_json, ApiError, Body};
use super::stores::alerts::{Page, Stored, Webhook};
use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde_json::json;

/// `POST /api/alerts`: an Alertmanager webhook notification.
pub(crate) async fn receive(
    _: AlertAuthorized,
    State(app): State<AppState>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let hook: Webhook = parse_json(&body, None)?;
    if let Some(v) = &hook.version {
        if v != "4" {
            tracing::debug!(version = %v, "Alertmanager webhook version other than 4; reading it as 4");
        }
    }
    for (i, a) in hook.alerts.iter().enumerate() {
        if !a.labels.contains_key("alertname") {
            return Err(ApiError::field(&format!("alerts[{i}].labels"), "every alert needs an `alertname` label"));
        }
    }
    app.alerts.check(&hook)?;
    let status = hook.status;
    let n = app.alerts.add(hook);
    tracing::info!(alerts = n, status = status.as_str(), "Alertmanager notification received");
    Ok(json_ok(json!({"received": n})))
}

/// `GET /api/alerts?limit=&offset=`: newest first, with the counts by name and status.
pub(crate) async fn list(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    let (limit, offset, _) = super::query::paging(raw.as_deref(), 100, &[])?;
    let Page { alerts, counts, total, received } = app.alerts.page(offset, limit);
    let counts: Vec<_> =
        counts.into_iter().map(|(name, status, n)| json!({"alertname": name, "status": status, "count": n})).collect();
    let alerts: Vec<&Stored> = alerts.iter().map(|a| a.as_ref()).collect();
    Ok(json_ok(json!({
        "total": total,
        "received_total": received,
        "alerts": alerts,
        "counts": counts,
    })))
}
