//! The Alertmanager webhook: `POST /api/alerts` receives notifications (closing the
//! loop Prometheus → Alertmanager → rayscope), `GET /api/alerts` lists them.
//!
//! Kept bounded: the newest [`MAX_ALERTS`] alerts, and counts per (alertname, status)
//! for at most [`MAX_COUNT_KEYS`] distinct names, which the metrics module exports.
//! The payload is Alertmanager's webhook JSON (version 4); unknown members are ignored
//! so that newer Alertmanagers keep working, but the members rayscope reads are
//! checked, and a bad one is a 400 naming it.

use super::app::AppState;
use super::auth::AlertAuthorized;
use super::error::{json_ok, parse_json, ApiError, Body};
use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, PoisonError};

pub(crate) const MAX_ALERTS: usize = 1_000;
pub(crate) const MAX_COUNT_KEYS: usize = 1_000;

#[derive(Debug, Deserialize)]
struct Webhook {
    #[serde(default)]
    version: Option<String>,
    #[serde(default, rename = "groupKey")]
    group_key: Option<String>,
    #[serde(default)]
    receiver: Option<String>,
    status: Status,
    alerts: Vec<Alert>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
enum Status {
    Firing,
    Resolved,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Firing => "firing",
            Status::Resolved => "resolved",
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
struct Alert {
    status: Status,
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default, rename = "startsAt")]
    starts_at: Option<String>,
    #[serde(default, rename = "endsAt")]
    ends_at: Option<String>,
    #[serde(default, rename = "generatorURL")]
    generator_url: Option<String>,
    #[serde(default)]
    fingerprint: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
struct Stored {
    received_at_ms: u64,
    receiver: Option<String>,
    group_key: Option<String>,
    #[serde(flatten)]
    alert: Alert,
}

#[derive(Default)]
pub(crate) struct AlertStore {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Newest last.
    alerts: VecDeque<Stored>,
    counts: BTreeMap<(String, Status), u64>,
    received: u64,
}

impl AlertStore {
    /// Alerts received, by (alertname, status), for `RenderContext::alerts_received`.
    pub fn counts(&self) -> Vec<(String, String, u64)> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.counts.iter().map(|((name, status), n)| (name.clone(), status.as_str().to_string(), *n)).collect()
    }

    fn add(&self, hook: Webhook) -> usize {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let n = hook.alerts.len();
        for alert in hook.alerts {
            let name = alert.labels.get("alertname").cloned().unwrap_or_default();
            let key = (name, alert.status);
            if inner.counts.contains_key(&key) || inner.counts.len() < MAX_COUNT_KEYS {
                *inner.counts.entry(key).or_insert(0) += 1;
            }
            if inner.alerts.len() >= MAX_ALERTS {
                inner.alerts.pop_front();
            }
            inner.alerts.push_back(Stored {
                received_at_ms: now,
                receiver: hook.receiver.clone(),
                group_key: hook.group_key.clone(),
                alert,
            });
            inner.received += 1;
        }
        n
    }
}

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
    let status = hook.status;
    let n = app.alerts.add(hook);
    tracing::info!(alerts = n, status = status.as_str(), "Alertmanager notification received");
    Ok(json_ok(json!({"received": n})))
}

/// `GET /api/alerts?limit=&offset=`: newest first, with the counts by name and status.
pub(crate) async fn list(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    let (limit, offset, _) = super::query::paging(raw.as_deref(), 100, &[])?;
    let inner = app.alerts.inner.lock().unwrap_or_else(PoisonError::into_inner);
    let alerts: Vec<&Stored> = inner.alerts.iter().rev().skip(offset).take(limit).collect();
    let counts: Vec<_> = inner
        .counts
        .iter()
        .map(|((name, status), n)| json!({"alertname": name, "status": status.as_str(), "count": n}))
        .collect();
    Ok(json_ok(json!({
        "total": inner.alerts.len(),
        "received_total": inner.received,
        "alerts": alerts,
        "counts": counts,
    })))
}
