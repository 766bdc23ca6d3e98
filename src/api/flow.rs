//! Flow Insight's JSON API (`/api/flow/...`, see `docs/flow-api.md`); Ant's endpoints
//! are `ant.rs`, on the same helpers.
//!
//! Owns: parsing their query parameters (unknown ones are a 400 naming them, as the
//! rest of the API; the timeline's window `from`/`to` and `limit`, which defaults to
//! [`timeline::DEFAULT_LIMIT`] executions so that an answer stays small at any job
//! size), finding the job (404 when it has no records), running the view on the
//! blocking pool from the snapshot's shared records (one replay of them serves every
//! answer: `flow_cache`), and saying in headers when the
//! timeline was cut (`X-Rayscope-Truncated`, `X-Rayscope-Total-Executions`).
//! Must never: compute a view on an async worker or the engine thread, or copy the
//! records (views read the snapshot's `Arc`s in place).

use super::app::AppState;
use super::error::{internal, json_ok, ApiError};
use crate::flow::{self, flame, graph::Level, lanes, timeline, View};
use crate::snapshot::Snapshot;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;

/// `GET /api/flow/jobs`.
pub(crate) async fn jobs(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    params(raw.as_deref(), &[], ("executions", timeline::MAX_LIMIT))?;
    let snap = app.handle().snapshot();
    let list: Vec<Value> = snap
        .flow
        .jobs
        .values()
        .map(|j| {
            let status = snap.jobs.iter().find(|v| v.id == j.job_hex).map(|v| v.status.as_str().to_string());
            json!({"job_id": j.job_hex, "name": j.name, "status": status, "start_time_s": j.start_us as f64 / 1e6,
                "end_time_s": j.end_us.map(|e| e as f64 / 1e6), "calls": j.calls, "recorded_calls": j.recorded_calls,
                "truncated": j.truncated(), "prepared": app.flow_cache.prepared(j),
                "observed": crate::flow::observed::observed_json(j)})
        })
        .collect();
    Ok(json_ok(json!({"jobs": list})))
}

/// `GET /api/flow/{view}`: graph, physical, stack, flamegraph.folded, flamegraph.svg
/// (`mode`: execution, the default, or wall), timeline.json (windowed: `from`, `to`,
/// `limit`), gantt (the timeline's overview: `from`, `to`, `buckets`, `by`),
/// bottlenecks, impact, findings.
pub(crate) async fn view(
    State(app): State<AppState>,
    Path(name): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let allowed: &[&str] = match name.as_str() {
        "graph" => &["job", "at", "level"],
        "timeline.json" => &["job", "at", "from", "to", "limit"],
        "gantt" => &["job", "at", "from", "to", "buckets", "by"],
        "physical" => &["job", "at", "limit"],
        "flamegraph.folded" | "flamegraph.svg" => &["job", "at", "mode"],
        _ => &["job", "at"],
    };
    let view = match name.as_str() {
        // The level is chosen with the job when none is asked for (below).
        "graph" => View::Graph(Level::Class),
        "physical" => View::Physical(Some(PHYSICAL_LIMIT)),
        "stack" => View::Stack,
        "flamegraph.folded" => View::Folded(flame::Mode::Execution),
        "flamegraph.svg" => View::Svg(flame::Mode::Execution),
        "timeline.json" => View::Timeline(timeline::Window::DEFAULT),
        "gantt" => View::Lanes(lanes::Ask::default()),
        "bottlenecks" => View::Bottlenecks,
        "impact" => View::Impact,
        "findings" => View::Findings,
        _ => {
            return Err(ApiError::not_found(format!(
                "no flow view {name:?}: the views are graph, physical, stack, flamegraph.folded, flamegraph.svg, timeline.json, gantt, bottlenecks, impact, findings"
            )))
        }
    };
    let limits = match name.as_str() {
        "physical" => ("nodes", PHYSICAL_MAX_LIMIT),
        _ => ("executions", timeline::MAX_LIMIT),
    };
    let p = params(raw.as_deref(), allowed, limits)?;
    let view = match (view, p.level.as_deref()) {
        (View::Graph(_), Some(l)) => View::Graph(
            Level::parse(l)
                .ok_or_else(|| ApiError::parameter("level", format!("level must be class or instance, got {l:?}")))?,
        ),
        (View::Timeline(_), _) => View::Timeline(window(&p)?),
        (View::Lanes(_), _) => View::Lanes(lanes_ask(&p)?),
        (View::Physical(_), _) => View::Physical(Some(p.limit.unwrap_or(PHYSICAL_LIMIT))),
        (v, _) => v,
    };
    let view = match (view, p.mode.as_deref().map(|m| (m, flame::Mode::parse(m)))) {
        (_, Some((m, None))) => {
            return Err(ApiError::parameter("mode", format!("mode must be execution or wall, got {m:?}")))
        }
        (View::Folded(_), Some((_, Some(mode)))) => View::Folded(mode),
        (View::Svg(_), Some((_, Some(mode)))) => View::Svg(mode),
        (v, _) => v,
    };
    let job = p.job.ok_or_else(|| ApiError::parameter("job", "job is required (a job id, e.g. job=01000000)"))?;
    let snap = app.handle().snapshot();
    let (at, latest) = instant(&snap, p.at_us);
    let record = find(&snap, &job)?;
    let view = match (view, p.level.is_none()) {
        (View::Graph(_), true) => View::Graph(Level::default_for(&record)),
        (v, _) => v,
    };
    let calls = match view {
        View::Timeline(w) => record.recorded_calls.min(w.limit.unwrap_or(usize::MAX) as u64),
        _ => record.recorded_calls,
    };
    let _reserved = app.budget.reserve(estimate(calls), &format!("flow view {name}"))?;
    let cache = app.clone();
    let rendered = tokio::task::spawn_blocking(move || {
        let (spans, derived) = cache.flow_cache.get(&record, at);
        flow::render(&record, &spans, &derived, latest, view, &snap.nodes)
    })
    .await
    .map_err(internal)?
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let mut response = ([(header::CONTENT_TYPE, rendered.content_type)], rendered.body).into_response();
    if let Some((returned, total)) = rendered.cut {
        let h = response.headers_mut();
        h.insert("x-rayscope-truncated", HeaderValue::from_static(if returned < total { "true" } else { "false" }));
        h.insert("x-rayscope-total-executions", HeaderValue::from(total as u64));
        h.insert("x-rayscope-returned-executions", HeaderValue::from(returned as u64));
    }
    Ok(response)
}

/// Peak memory of a view over `calls` recorded calls, near enough: a timeline of
/// 100,000 executions peaked at about 40 MB, the views' intermediate rows and the body
/// together; other views cost less per call.
pub(super) fn estimate(calls: u64) -> u64 {
    64 * 1024 + calls.saturating_mul(400)
}

/// A 400 when `from` is after `to`.
fn ordered(p: &Params) -> Result<(), ApiError> {
    match (p.from_us, p.to_us) {
        (Some(f), Some(t)) if f > t => Err(ApiError::parameter(
            "from",
            format!("from ({} s) is after to ({} s): the window would be empty", f as f64 / 1e6, t as f64 / 1e6),
        )),
        _ => Ok(()),
    }
}

/// The Gantt overview's window, buckets and lanes from `from`, `to`, `buckets`, `by`.
fn lanes_ask(p: &Params) -> Result<lanes::Ask, ApiError> {
    ordered(p)?;
    let by = match p.by.as_deref() {
        None => lanes::By::Function,
        Some(b) => lanes::By::parse(b)
            .ok_or_else(|| ApiError::parameter("by", format!("by must be function or node, got {b:?}")))?,
    };
    Ok(lanes::Ask { from_us: p.from_us, to_us: p.to_us, buckets: p.buckets.unwrap_or(lanes::DEFAULT_BUCKETS), by })
}

/// The timeline's window from `from`, `to` and `limit`.
fn window(p: &Params) -> Result<timeline::Window, ApiError> {
    ordered(p)?;
    Ok(timeline::Window { from_us: p.from_us, to_us: p.to_us, limit: Some(p.limit.unwrap_or(timeline::DEFAULT_LIMIT)) })
}

#[derive(Default)]
struct Params {
    job: Option<String>,
    at_us: Option<u64>,
    level: Option<String>,
    mode: Option<String>,
    from_us: Option<u64>,
    to_us: Option<u64>,
    limit: Option<usize>,
    buckets: Option<usize>,
    by: Option<String>,
}

/// Seconds of virtual time (a number >= 0) as µs, or a 400 naming the parameter.
fn seconds(name: &str, v: &str) -> Result<u64, ApiError> {
    let s: f64 = v.trim().parse().ok().filter(|s: &f64| s.is_finite() && *s >= 0.0).ok_or_else(|| {
        ApiError::parameter(name, format!("{name} must be seconds of virtual time (a number >= 0), got {v:?}"))
    })?;
    Ok((s * 1e6).round().min(u64::MAX as f64) as u64)
}

/// Nodes a physical answer holds unless the request says otherwise (the busiest): the
/// page shows them, and at `examples/scale.yaml`'s 2,000 nodes the whole view is MBs.
pub const PHYSICAL_LIMIT: usize = 50;
/// The most nodes a physical answer may be asked for.
pub const PHYSICAL_MAX_LIMIT: usize = 10_000;

/// `limits`: what `limit` counts, and its largest value, for this view.
fn params(raw: Option<&str>, allowed: &[&str], limits: (&str, usize)) -> Result<Params, ApiError> {
    let mut p = Params::default();
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        let k = k.as_ref();
        if !allowed.contains(&k) {
            let valid = if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") };
            return Err(ApiError::parameter(k, format!("unknown parameter {k:?} (valid: {valid})")));
        }
        match k {
            "job" => p.job = Some(v.to_string()),
            "level" => p.level = Some(v.to_string()),
            "mode" => p.mode = Some(v.to_string()),
            "by" => p.by = Some(v.to_string()),
            "buckets" => {
                let max = lanes::MAX_BUCKETS;
                p.buckets = Some(v.trim().parse().ok().filter(|n| (1..=max).contains(n)).ok_or_else(|| {
                    ApiError::parameter(k, format!("buckets must be a whole number from 1 to {max}, got {v:?}"))
                })?);
            }
            "at" => p.at_us = Some(seconds(k, &v)?),
            "from" => p.from_us = Some(seconds(k, &v)?),
            "to" => p.to_us = Some(seconds(k, &v)?),
            "limit" => {
                let (unit, max) = limits;
                p.limit = Some(v.trim().parse().ok().filter(|n| (1..=max).contains(n)).ok_or_else(|| {
                    ApiError::parameter(k, format!("limit must be a whole number of {unit} from 1 to {max}, got {v:?}"))
                })?);
            }
            _ => {}
        }
    }
    Ok(p)
}

/// The instant to show: `at`, or now; never past now. Also whether it is now.
pub(super) fn instant(snap: &Snapshot, at_us: Option<u64>) -> (u64, bool) {
    match at_us {
        Some(a) if a < snap.sim_time_us.as_micros() => (a, false),
        _ => (snap.sim_time_us.as_micros(), true),
    }
}

fn find(snap: &Arc<Snapshot>, job: &str) -> Result<Arc<crate::snapshot::flow::JobRecord>, ApiError> {
    snap.flow.job(job).cloned().ok_or_else(|| {
        let known: Vec<&str> = snap.flow.jobs.values().map(|j| j.job_hex.as_str()).collect();
        ApiError::not_found(format!("job {job:?} has no flow records (jobs with records: {})", known.join(", ")))
            .with("parameter", "job")
    })
}
