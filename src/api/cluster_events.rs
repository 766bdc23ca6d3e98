//! Ray's cluster events over HTTP, read from the snapshot's [`ClusterEventsView`] (the
//! engine's bounded ring, `sim.cluster_event_capacity`, never the event log's task
//! lines):
//!
//! * `GET /api/v0/cluster_events`: Ray's State API rows, oldest first, as `ray list
//!   cluster-events` reads them (`severity`, `time`, `source_type`, `message`,
//!   `event_id`; `custom_fields` with `detail`), filterable on `severity`,
//!   `source_type` and `event_id` as Ray's are.
//! * `GET /api/cluster_events?limit=&offset=&severity=&source_type=&search=`: the Events
//!   page's, newest first. `search` keeps events whose message, source, severity or
//!   label contains the text (ignoring ASCII case), on the server: the page never
//!   fetches the 10,000 events to search them.
//!
//! Both filter the typed events in place and render JSON only for the page they return.
//!
//! Must never: write anything, or copy the ring.

use super::app::AppState;
use super::error::{json_ok, ApiError};
use super::query::{paging, ListQuery, MAX_PAGE};
use super::rows::{Cell, Resource};
use crate::model::cluster_events::Severity;
use crate::snapshot::{ClusterEvent, ClusterEventsView, VirtualTime};
use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// Ray's event ids are 36 hex characters; rayscope's count the events, so they are
/// stable across snapshots and runs.
fn event_id(e: &ClusterEvent) -> String {
    format!("{:036x}", e.seq)
}

fn cell<'a>(e: &'a ClusterEvent, column: &str) -> Cell<'a> {
    match column {
        "severity" => Cell::Str(Cow::Borrowed(e.severity.as_str())),
        "source_type" => Cell::Str(Cow::Borrowed(e.source.as_str())),
        "event_id" => Cell::Str(Cow::Owned(event_id(e))),
        "message" => Cell::Str(Cow::Borrowed(&e.message)),
        _ => Cell::Null,
    }
}

fn custom_fields(e: &ClusterEvent) -> Value {
    Value::Object(e.fields.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<Map<_, _>>())
}

/// (total, num_filtered, page rows, next offset) of Ray's State API rows under `q`.
pub(crate) fn state_page(
    view: &ClusterEventsView,
    epoch_ms: impl Fn(VirtualTime) -> i64,
    q: &ListQuery,
) -> (usize, usize, Vec<Value>, Option<usize>) {
    let columns = Resource::ClusterEvents.columns();
    let keep = |e: &&ClusterEvent| q.filters.iter().all(|f| f.matches(&cell(e, columns[f.column].name)));
    let num_filtered = if q.filters.is_empty() { view.len() } else { view.iter().filter(keep).count() };
    let limit = q.limit.min(MAX_PAGE);
    let rows: Vec<Value> = view
        .iter()
        .filter(keep)
        .skip(q.offset)
        .take(limit)
        .map(|e| {
            let mut row = json!({
                "severity": e.severity.as_str(),
                "time": utc_time(epoch_ms(e.time_us)),
                "source_type": e.source.as_str(),
                "message": e.message,
                "event_id": event_id(e),
            });
            if q.detail {
                row["custom_fields"] = custom_fields(e);
            }
            row
        })
        .collect();
    let end = q.offset + rows.len();
    let next = (end < num_filtered && !rows.is_empty()).then_some(end);
    (view.len(), num_filtered, rows, next)
}

/// Whether `hay` contains `needle` (already lowercase ASCII), ignoring ASCII case,
/// without allocating.
fn contains_ignore_case(hay: &str, needle: &[u8]) -> bool {
    needle.is_empty() || hay.as_bytes().windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

/// `GET /api/cluster_events`: the Events page's listing, newest first.
pub(crate) async fn list(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    let (limit, offset, extra) = paging(raw.as_deref(), 50, &["severity", "source_type", "search"])?;
    let wanted = |name: &str| extra.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.trim().to_string());
    let severity = wanted("severity").filter(|v| !v.is_empty());
    if let Some(s) = &severity {
        if ![Severity::Info, Severity::Warning, Severity::Error].iter().any(|x| x.as_str().eq_ignore_ascii_case(s)) {
            return Err(ApiError::parameter("severity", format!("severity must be INFO, WARNING or ERROR, got {s:?}")));
        }
    }
    let source = wanted("source_type").filter(|v| !v.is_empty());
    let search = wanted("search").filter(|v| !v.is_empty()).map(|v| v.to_ascii_lowercase());
    let limit = limit.min(MAX_PAGE);
    let snap = app.handle().snapshot();
    let epoch = app.epoch_zero();
    let body = tokio::task::spawn_blocking(move || {
        let view = &snap.cluster_events;
        let keep = |e: &&ClusterEvent| {
            severity.as_deref().is_none_or(|s| e.severity.as_str().eq_ignore_ascii_case(s))
                && source.as_deref().is_none_or(|s| e.source.as_str().eq_ignore_ascii_case(s))
                && search.as_deref().is_none_or(|w| {
                    let w = w.as_bytes();
                    contains_ignore_case(&e.message, w)
                        || contains_ignore_case(e.source.as_str(), w)
                        || contains_ignore_case(e.severity.as_str(), w)
                        || contains_ignore_case(e.label, w)
                })
        };
        let filtered = view.iter().rev().filter(keep).count();
        let events: Vec<Value> = view
            .iter()
            .rev()
            .filter(keep)
            .skip(offset)
            .take(limit)
            .map(|e| {
                let ms = (epoch + e.time_us.as_millis()) as i64;
                json!({
                    "event_id": event_id(e),
                    "seq": e.seq,
                    "severity": e.severity.as_str(),
                    "source_type": e.source.as_str(),
                    "label": e.label,
                    "message": e.message,
                    "time": utc_time(ms),
                    "timestamp_ms": ms,
                    "sim_time_seconds": e.time_us.as_secs_f64(),
                    "custom_fields": custom_fields(e),
                })
            })
            .collect();
        json!({
            "total": view.len(),
            "num_filtered": filtered,
            "recorded": view.total,
            "capacity": view.capacity,
            "events": events,
        })
    })
    .await
    .map_err(super::error::internal)?;
    Ok(json_ok(body))
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of epoch milliseconds, as `ray list cluster-events`
/// shows (Ray writes the server's local time; rayscope's is UTC).
pub(crate) fn utc_time(ms: i64) -> String {
    let (year, month, day, hour, minute, second) = crate::model::utc::civil(ms.div_euclid(1000));
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_times_read_as_utc_dates() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00");
        assert_eq!(utc_time(1_700_000_000_123), "2023-11-14 22:13:20");
        assert_eq!(utc_time(951_782_400_000), "2000-02-29 00:00:00");
    }

    #[test]
    fn search_ignores_case_without_allocating() {
        assert!(contains_ignore_case("Task was killed ... ray-OOM-prevention", b"oom"));
        assert!(contains_ignore_case("Out of Memory", b"out of"));
        assert!(!contains_ignore_case("Adding 1 node(s)", b"oom"));
        assert!(contains_ignore_case("x", b""));
        assert!(!contains_ignore_case("", b"a"));
    }
}
