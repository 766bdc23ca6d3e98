//! The seed dashboard's JSON endpoints (`shared/seeds/000`): `/api/cluster`,
//! `/api/nodes`, `/api/tasks` (running tasks), `/api/actors`, `/api/memory`,
//! `/api/metrics` (+ `/history`), and `/api/events` (the GCS event log).
//!
//! Shapes follow the seed (`{"nodes": [...]}`, `{"tasks": [...]}`, ...) with task and
//! actor rows in Ray's State API form, so one row shape serves both APIs.

use super::app::AppState;
use super::error::{json_ok, ApiError};
use super::history::{actor_states, sample_now, task_states};
use super::query::paging;
use super::rows::Resource;
use super::state_api::rows_where;
use crate::model::NodeState;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde_json::{json, Map, Value};

/// `GET /api/cluster`: what the cluster is and how it is doing, in one object.
pub(crate) async fn cluster(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    no_parameters(raw.as_deref())?;
    let s = app.handle.snapshot();
    let alive = s.nodes.iter().filter(|n| n.state == NodeState::Alive).count();
    let mut resources: Map<String, Value> = Map::new();
    for n in s.nodes.iter().filter(|n| n.state == NodeState::Alive) {
        for (name, total, available) in &n.resources {
            let e = resources.entry(name.clone()).or_insert_with(|| json!({"total": 0.0, "available": 0.0}));
            e["total"] = json!(e["total"].as_f64().unwrap_or(0.0) + total);
            e["available"] = json!(e["available"].as_f64().unwrap_or(0.0) + available);
        }
    }
    Ok(json_ok(json!({
        "session_name": s.session_name,
        "ray_version": s.version,
        "seed": s.seed,
        "speed": s.speed,
        "sim_time_seconds": s.sim_time_us as f64 / 1e6,
        "timestamp_ms": app.epoch_ms(s.sim_time_us),
        "lag_seconds": s.lag_seconds,
        "events_processed": s.events_processed,
        "head_node_ip": s.head_node().map(|n| n.ip.as_str()),
        "nodes": {"total": s.nodes.len(), "alive": alive, "dead": s.nodes.len() - alive},
        "resources": resources,
        "jobs": {"running": s.running_jobs, "total": s.jobs.len()},
        "tasks": task_states(&s),
        "actors": actor_states(&s),
        "placement_groups": s.pg_counts,
        "counters": s.counters,
        "scheduler": s.scheduler,
        "autoscaler": s.autoscaler,
        "control_enabled": app.token.is_some(),
    })))
}

/// `GET /api/nodes`: every node the cluster has had, alive or dead.
pub(crate) async fn nodes(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    no_parameters(raw.as_deref())?;
    let s = app.handle.snapshot();
    let nodes: Vec<Value> = s
        .nodes
        .iter()
        .map(|n| {
            let mut v = serde_json::to_value(n).unwrap_or(Value::Null);
            v["node_ip"] = json!(n.ip);
            v["alive"] = json!(n.state == NodeState::Alive);
            v
        })
        .collect();
    Ok(json_ok(json!({"nodes": nodes})))
}

/// `GET /api/tasks?limit=&offset=`: running tasks (the seed's `_get_running_tasks`).
pub(crate) async fn tasks(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    let (limit, offset, _) = paging(raw.as_deref(), 100, &[])?;
    let (n, rows) =
        rows_where(app, Resource::Tasks, limit, offset, |ctx, i| ctx.tables.tasks[i].state.is_running()).await?;
    Ok(json_ok(json!({"total_running": n, "tasks": rows})))
}

/// `GET /api/actors?limit=&offset=`: all actors the engine keeps (alive and recently dead).
pub(crate) async fn actors(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    let (limit, offset, _) = paging(raw.as_deref(), 100, &[])?;
    let (n, rows) = rows_where(app, Resource::Actors, limit, offset, |_, _| true).await?;
    Ok(json_ok(json!({"total": n, "actors": rows})))
}

/// `GET /api/memory`: node memory and object store use, per node and in total.
pub(crate) async fn memory(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    no_parameters(raw.as_deref())?;
    let s = app.handle.snapshot();
    let alive: Vec<_> = s.nodes.iter().filter(|n| n.state == NodeState::Alive).collect();
    let nodes: Vec<Value> = alive
        .iter()
        .map(|n| {
            json!({
                "node_id": n.node_id,
                "node_ip": n.ip,
                "memory_total": n.memory_total,
                "memory_used": n.memory_used,
                "memory_percent": if n.memory_total > 0 { 100.0 * n.memory_used as f64 / n.memory_total as f64 } else { 0.0 },
                "object_store_memory": n.store_capacity,
                "plasma_memory_used": n.store_used,
                "spilled_bytes": n.store_spilled,
                "fallback_bytes": n.store_fallback,
                "num_objects": n.store_num_objects,
                "worker_heap_objects_bytes": n.worker_heap_objects,
            })
        })
        .collect();
    let sum = |f: fn(&crate::sim::snapshot::NodeView) -> u64| alive.iter().map(|n| f(n)).sum::<u64>();
    Ok(json_ok(json!({
        "cluster": {
            "memory_total": sum(|n| n.memory_total),
            "memory_used": sum(|n| n.memory_used),
            "object_store_memory": sum(|n| n.store_capacity),
            "plasma_memory_used": sum(|n| n.store_used),
            "spilled_bytes": sum(|n| n.store_spilled),
            "objects_live": s.counters.objects_live,
        },
        "nodes": nodes,
    })))
}

/// `GET /api/metrics`: the aggregator's latest sample.
pub(crate) async fn metrics(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    no_parameters(raw.as_deref())?;
    Ok(match app.history.latest() {
        Some(v) => json_ok((*v).clone()),
        None => json_ok(sample_now(&app.handle.snapshot())),
    })
}

/// Endpoints without parameters refuse any, as the State API refuses unknown ones: a
/// misspelt `?limt=` should not silently return something else than was asked.
fn no_parameters(raw: Option<&str>) -> Result<(), ApiError> {
    match form_urlencoded::parse(raw.unwrap_or("").as_bytes()).next() {
        None => Ok(()),
        Some((name, _)) => Err(ApiError::parameter(&name, format!("unknown parameter {name:?}; this endpoint takes none"))),
    }
}

/// `GET /api/metrics/history?start=&end=`: samples in a window of Unix seconds, oldest first.
pub(crate) async fn metrics_history(
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let (mut start, mut end) = (f64::NEG_INFINITY, f64::INFINITY);
    for (name, value) in form_urlencoded::parse(raw.as_deref().unwrap_or("").as_bytes()) {
        let parsed = || {
            value.trim().parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| {
                ApiError::parameter(&name, format!("{name} must be a Unix time in seconds, got {value:?}"))
            })
        };
        match name.as_ref() {
            "start" => start = parsed()?,
            "end" => end = parsed()?,
            other => {
                return Err(ApiError::parameter(
                    other,
                    format!("unknown parameter {other:?}; valid parameters: start, end"),
                ))
            }
        }
    }
    let points = app.history.between(start, end);
    Ok(json_ok(json!({
        "interval_seconds": app.history_every.as_secs_f64(),
        "capacity": app.history.capacity(),
        "points": points.iter().map(|p| (**p).clone()).collect::<Vec<_>>(),
    })))
}

/// `GET /api/events?limit=&offset=`: the GCS event log, newest first.
pub(crate) async fn events(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    let (limit, offset, _) = paging(raw.as_deref(), 100, &[])?;
    let s = app.handle.snapshot();
    let events: Vec<Value> = s
        .recent_events
        .iter()
        .skip(offset)
        .take(limit)
        .map(|e| {
            json!({
                "seq": e.seq,
                "sim_time_seconds": e.time_us as f64 / 1e6,
                "timestamp_ms": app.epoch_ms(e.time_us),
                "source": e.source,
                "message": e.message,
            })
        })
        .collect();
    Ok(json_ok(json!({
        "total": s.recent_events.len(),
        "events_recorded": s.event_log_lines,
        "events": events,
    })))
}
