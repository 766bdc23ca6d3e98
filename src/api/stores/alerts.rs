//! The alerts Alertmanager's webhook sent (`POST /api/alerts`, handled in `alerts.rs`).
//!
//! Kept bounded in count and in bytes: the newest [`MAX_ALERTS`] alerts within
//! `server.limits.alerts_bytes`, each label and annotation within its own limit (a larger
//! one refuses the whole notification with 413 naming it, so nothing is half-applied), and
//! counts per (alertname, status) for at most [`MAX_COUNT_KEYS`] distinct names, which the
//! metrics module exports as label values (so their size is bounded by the label limit).
//! The payload is Alertmanager's webhook JSON (version 4); unknown members are ignored
//! so that newer Alertmanagers keep working, but the members rayscope reads are
//! checked, and a bad one is a 400 naming it.
//!
//! Must never: know a handler or `App` (the handlers take what they list out of
//! [`AlertStore`] and release its lock before they serialize).

use crate::api::error::ApiError;
use crate::config::ServerLimits;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

pub(crate) const MAX_ALERTS: usize = 1_000;
pub(crate) const MAX_COUNT_KEYS: usize = 1_000;

#[derive(Debug, Deserialize)]
pub(in crate::api) struct Webhook {
    #[serde(default)]
    pub(in crate::api) version: Option<String>,
    #[serde(default, rename = "groupKey")]
    group_key: Option<String>,
    #[serde(default)]
    receiver: Option<String>,
    pub(in crate::api) status: Status,
    pub(in crate::api) alerts: Vec<Alert>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub(in crate::api) enum Status {
    Firing,
    Resolved,
}

impl Status {
    pub(in crate::api) fn as_str(self) -> &'static str {
        match self {
            Status::Firing => "firing",
            Status::Resolved => "resolved",
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub(in crate::api) struct Alert {
    status: Status,
    pub(in crate::api) labels: BTreeMap<String, String>,
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(in crate::api) struct Stored {
    received_at_ms: u64,
    receiver: Option<String>,
    group_key: Option<String>,
    #[serde(flatten)]
    alert: Alert,
}

pub(crate) struct AlertStore {
    inner: Mutex<Inner>,
    limits: ServerLimits,
    /// Bumped by every change, so the state directory writes only what changed.
    generation: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct Inner {
    /// Newest last, each with its size in bytes.
    alerts: VecDeque<(Arc<Stored>, usize)>,
    /// The sum of the kept alerts' sizes.
    bytes: usize,
    counts: BTreeMap<(String, Status), u64>,
    received: u64,
}

impl Stored {
    /// What keeping it costs, near enough: its strings plus a fixed overhead per entry.
    fn size(&self) -> usize {
        const ENTRY: usize = 64;
        let map = |m: &BTreeMap<String, String>| m.iter().map(|(k, v)| k.len() + v.len() + ENTRY).sum::<usize>();
        let opt = |o: &Option<String>| o.as_ref().map_or(0, String::len);
        let a = &self.alert;
        256 + map(&a.labels)
            + map(&a.annotations)
            + [&a.starts_at, &a.ends_at, &a.generator_url, &a.fingerprint, &self.receiver, &self.group_key]
                .into_iter()
                .map(opt)
                .sum::<usize>()
    }
}

impl AlertStore {
    pub fn new(limits: &ServerLimits) -> AlertStore {
        AlertStore { inner: Mutex::new(Inner::default()), limits: limits.clone(), generation: Default::default() }
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The kept alerts, oldest first, as JSON (for the state directory).
    pub fn export(&self) -> Vec<u8> {
        let alerts: Vec<Arc<Stored>> = {
            let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            inner.alerts.iter().map(|(a, _)| a.clone()).collect()
        };
        let alerts: Vec<&Stored> = alerts.iter().map(|a| a.as_ref()).collect();
        serde_json::to_vec(&alerts).unwrap_or_default()
    }

    /// Keep alerts of an earlier run (from the state directory), oldest first, within the
    /// limits; returns how many were kept. Their counts are not restored: the exported
    /// counters start again with the new session, as Ray's do.
    pub fn restore(&self, alerts: Vec<Value>) -> usize {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for stored in alerts.into_iter().filter_map(|v| serde_json::from_value::<Stored>(v).ok()) {
            self.keep(&mut inner, stored);
        }
        inner.alerts.len()
    }

    /// Append one alert, forgetting the oldest past the count or byte limit.
    fn keep(&self, inner: &mut Inner, stored: Stored) {
        let size = stored.size();
        while inner.alerts.len() >= MAX_ALERTS || inner.bytes + size > self.limits.alerts_bytes.0 as usize {
            let Some((_, old)) = inner.alerts.pop_front() else {
                break;
            };
            inner.bytes -= old;
        }
        inner.bytes += size;
        inner.alerts.push_back((Arc::new(stored), size));
        self.generation.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Refuse a notification any of whose strings is over its limit, naming the first.
    pub(in crate::api) fn check(&self, hook: &Webhook) -> Result<(), ApiError> {
        let l = &self.limits;
        for (what, v) in [("receiver", &hook.receiver), ("groupKey", &hook.group_key)] {
            let n = v.as_ref().map_or(0, String::len);
            if n as u64 > l.alert_annotation_bytes.0 {
                return Err(ApiError::too_large(what, n, l.alert_annotation_bytes.0, "alert_annotation_bytes"));
            }
        }
        for (i, a) in hook.alerts.iter().enumerate() {
            for (k, v) in &a.labels {
                if (k.len() + v.len()) as u64 > l.alert_label_bytes.0 {
                    let field = format!("alerts[{i}].labels.{}", clip(k));
                    return Err(ApiError::too_large(
                        &field,
                        k.len() + v.len(),
                        l.alert_label_bytes.0,
                        "alert_label_bytes",
                    ));
                }
            }
            let others = [&a.starts_at, &a.ends_at, &a.generator_url, &a.fingerprint];
            let annotations =
                a.annotations.iter().map(|(k, v)| (format!("annotations.{}", clip(k)), k.len() + v.len()));
            let others = ["startsAt", "endsAt", "generatorURL", "fingerprint"]
                .into_iter()
                .zip(others)
                .map(|(name, v)| (name.to_string(), v.as_ref().map_or(0, String::len)));
            for (field, n) in annotations.chain(others) {
                if n as u64 > l.alert_annotation_bytes.0 {
                    let field = format!("alerts[{i}].{field}");
                    return Err(ApiError::too_large(&field, n, l.alert_annotation_bytes.0, "alert_annotation_bytes"));
                }
            }
        }
        Ok(())
    }

    /// Alerts received, by (alertname, status), for `RenderContext::alerts_received`.
    pub fn counts(&self) -> Vec<(String, String, u64)> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.counts.iter().map(|((name, status), n)| (name.clone(), status.as_str().to_string(), *n)).collect()
    }

    pub(in crate::api) fn add(&self, hook: Webhook) -> usize {
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
            let stored = Stored {
                received_at_ms: now,
                receiver: hook.receiver.clone(),
                group_key: hook.group_key.clone(),
                alert,
            };
            self.keep(&mut inner, stored);
            inner.received += 1;
        }
        n
    }
}

/// One page of the kept alerts, newest first, with the counts by name and status:
/// copied out under the lock, serialized after it is released.
pub(in crate::api) struct Page {
    pub(in crate::api) alerts: Vec<Arc<Stored>>,
    pub(in crate::api) counts: Vec<(String, &'static str, u64)>,
    /// Alerts kept.
    pub(in crate::api) total: usize,
    /// Alerts received since start.
    pub(in crate::api) received: u64,
}

impl AlertStore {
    /// The kept alerts from `offset` (newest first), at most `limit` of them.
    pub(in crate::api) fn page(&self, offset: usize, limit: usize) -> Page {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let alerts: Vec<Arc<Stored>> =
            inner.alerts.iter().rev().skip(offset).take(limit).map(|(a, _)| a.clone()).collect();
        let counts: Vec<(String, &'static str, u64)> =
            inner.counts.iter().map(|((name, status), n)| (name.clone(), status.as_str(), *n)).collect();
        Page { alerts, counts, total: inner.alerts.len(), received: inner.received }
    }
}

/// A key short enough to name in an error.
fn clip(key: &str) -> String {
    match key.char_indices().nth(64) {
        Some((i, _)) => format!("{}…", &key[..i]),
        None => key.to_string(),
    }
}
