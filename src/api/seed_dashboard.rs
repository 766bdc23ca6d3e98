//! The seed dashboard's JSON endpoints (`shared/seeds/000`): `/api/cluster`,
//! `/api/nodes`, `/api/tasks` (running tasks), `/api/actors`, `/api/memory`,
//! `/api/metrics` (+ `/history`), and `/api/events` (the GCS event log).
//!
//! Shapes follow the seed (`{"nodes": [...]}`, `{"tasks": [...]}`, ...) with task and
//! actor rows in Ray's State API form, so one row shape serves both APIs.

use super::app::AppState;
use super::error::{json_ok, ApiError};
use super::query::paging;
use super::rows::Resource;
use super::state_api::rows_where;
use super::stores::dashboard_history::{actor_states, sample_now, task_states};
use crate::model::{Bytes, NodeState};
use crate::snapshot::{NodeView, Snapshot};
use axum::extract::{RawQuery, State};
use axum::response::Response;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// `GET /api/cluster`: what the cluster is and how it is doing, in one object.
pub(crate) async fn cluster(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    no_parameters(raw.as_deref())?;
    let s = app.handle().snapshot();
    let alive = s.nodes.iter().filter(|n| n.state == NodeState::Alive).count();
    let mut resources: Map<String, Value> = Map::new();
    for n in s.nodes.iter().filter(|n| n.state == NodeState::Alive) {
        for (name, total, available) in n.resources.iter() {
            let e = resources.entry(name.to_string()).or_insert_with(|| json!({"total": 0.0, "available": 0.0}));
            e["total"] = json!(e["total"].as_f64().unwrap_or(0.0) + total);
            e["available"] = json!(e["available"].as_f64().unwrap_or(0.0) + available);
        }
    }
    // Bounded by the config's node types and Ray's five job statuses.
    let mut by_type: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for n in s.nodes.iter() {
        let e = by_type.entry(&*n.node_type).or_default();
        if n.state == NodeState::Alive {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
    let by_type: Map<String, Value> =
        by_type.into_iter().map(|(t, (alive, dead))| (t.to_string(), json!({"alive": alive, "dead": dead}))).collect();
    // Plasma as the raylets report it (`ray_object_store_memory`): the logical
    // `object_store_memory` resource stays unused unless tasks ask for it.
    let store = s.nodes.iter().filter(|n| n.state == NodeState::Alive).fold([0u64; 5], |a, n| {
        let add = [n.store_used.0, n.store_capacity.0, n.store_spilled.0, n.store_fallback.0, n.store_num_objects];
        std::array::from_fn(|i| a[i] + add[i])
    });
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for j in s.jobs.iter() {
        *by_status.entry(j.status.as_str()).or_default() += 1;
    }
    let clusters = app.clusters.as_ref().map(|c| c.names());
    Ok(json_ok(json!({
        "session_name": s.session_name,
        // A real cluster read by `rayscope observe`, or the model's run.
        "mode": if s.observed.is_some() { "observed" } else { "simulated" },
        // Observe mode: this cluster's name, and every cluster's (the pages' picker).
        "cluster": s.observed.as_ref().map(|o| o.cluster.clone()),
        "clusters": clusters,
        "ray_version": s.version,
        "seed": s.seed,
        "speed": s.speed,
        "sim_time_seconds": s.sim_time_us.as_secs_f64(),
        "timestamp_ms": app.epoch_ms(s.sim_time_us),
        "lag_seconds": s.lag_seconds,
        "events_processed": s.events_processed,
        "head_node_ip": s.head_node().map(|n| &*n.ip),
        "nodes": {"total": s.nodes.len(), "alive": alive, "dead": s.nodes.len() - alive, "by_type": by_type},
        "resources": resources,
        "object_store": {"used_bytes": store[0], "capacity_bytes": store[1], "spilled_bytes": store[2],
                         "fallback_bytes": store[3], "num_objects": store[4]},
        "jobs": {"running": s.running_jobs, "total": s.jobs.len(), "by_status": by_status},
        "tasks": task_states(&s),
        "actors": actor_states(&s),
        "placement_groups": s.pg_counts,
        "counters": counters(&s),
        "scheduler": s.scheduler,
        "autoscaler": s.autoscaler,
        "control_enabled": app.token.is_some(),
    })))
}

/// The cumulative counters as `/api/cluster` shows them: the model's counters that
/// clients know, the live object count among them, and the OOM kills and worker
/// failures as `[type, name, count]` triples.
fn counters(s: &Snapshot) -> Value {
    let c = &s.counters;
    let triples = |m: &BTreeMap<(&'static str, String), u64>| -> Vec<Value> {
        m.iter().map(|((kind, name), count)| json!([kind, name, count])).collect()
    };
    json!({
        "tasks_submitted": c.tasks_submitted,
        "tasks_finished": c.tasks_finished,
        "tasks_failed": c.tasks_failed,
        "tasks_retried": c.tasks_retried,
        "actors_created": c.actors_created,
        "actors_restarted": c.actors_restarted,
        "actors_died": c.actors_died,
        "spillbacks": c.spillbacks,
        "spilled_bytes": c.spilled_bytes,
        "spilled_objects": c.spilled_objects,
        "restored_bytes": c.restored_bytes,
        "restored_objects": c.restored_objects,
        "transferred_bytes": c.transferred_bytes,
        "objects_created": c.objects_created,
        "objects_freed": c.objects_freed,
        "objects_live": s.objects_live,
        "objects_reconstructed": c.objects_reconstructed,
        "node_failures": c.node_failures,
        "jobs_finished": c.jobs_finished,
        "jobs_dropped": c.jobs_dropped,
        "pgs_created": c.pgs_created,
        "pgs_removed": c.pgs_removed,
        "workers_started": c.workers_started,
        "oom_kills": triples(&c.oom_kills),
        "worker_failures": triples(&c.worker_failures),
    })
}

/// `GET /api/nodes?limit=&offset=&state=`: the nodes the cluster has had, alive or
/// dead, in node order. Without `limit` every node (the seed's shape); the built-in
/// nodes page asks for a page at a time, which matters at 2,000 nodes.
pub(crate) async fn nodes(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    let has_limit = form_urlencoded::parse(raw.as_deref().unwrap_or("").as_bytes()).any(|(k, _)| k == "limit");
    let (limit, offset, extra) = paging(raw.as_deref(), usize::MAX, &["state"])?;
    let want = match extra.last().map(|(_, v)| v.to_ascii_uppercase()) {
        None => None,
        Some(v) if v == "ALIVE" => Some(NodeState::Alive),
        Some(v) if v == "DEAD" => Some(NodeState::Dead),
        Some(v) => return Err(ApiError::parameter("state", format!("state must be ALIVE or DEAD, got {v:?}"))),
    };
    let limit = if has_limit { limit.min(super::query::MAX_PAGE) } else { limit };
    let s = app.handle().snapshot();
    let matching = || s.nodes.iter().filter(|n| want.is_none_or(|w| n.state == w));
    let total = matching().count();
    let nodes: Vec<Value> = matching()
        .skip(offset)
        .take(limit)
        .map(|n| {
            let mut v = serde_json::to_value(n).unwrap_or(Value::Null);
            v["node_ip"] = json!(n.ip);
            v["alive"] = json!(n.state == NodeState::Alive);
            v
        })
        .collect();
    Ok(json_ok(json!({"total": total, "nodes": nodes})))
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
    let s = app.handle().snapshot();
    let alive: Vec<_> = s.nodes.iter().filter(|n| n.state == NodeState::Alive).collect();
    let nodes: Vec<Value> = alive
        .iter()
        .map(|n| {
            json!({
                "node_id": n.node_id,
                "node_ip": n.ip,
                "memory_total": n.memory_total,
                "memory_used": n.memory_used,
                "memory_percent": if n.memory_total.0 > 0 { 100.0 * n.memory_used.as_f64() / n.memory_total.as_f64() } else { 0.0 },
                "object_store_memory": n.store_capacity,
                "plasma_memory_used": n.store_used,
                "spilled_bytes": n.store_spilled,
                "fallback_bytes": n.store_fallback,
                "num_objects": n.store_num_objects,
                "worker_heap_objects_bytes": n.worker_heap_objects,
            })
        })
        .collect();
    let sum = |f: fn(&NodeView) -> Bytes| alive.iter().map(|n| f(n)).sum::<Bytes>();
    Ok(json_ok(json!({
        "cluster": {
            "memory_total": sum(|n| n.memory_total),
            "memory_used": sum(|n| n.memory_used),
            "object_store_memory": sum(|n| n.store_capacity),
            "plasma_memory_used": sum(|n| n.store_used),
            "spilled_bytes": sum(|n| n.store_spilled),
            "objects_live": s.objects_live,
        },
        "nodes": nodes,
    })))
}

/// `GET /api/metrics`: the aggregator's latest sample of the cluster the request reads.
pub(crate) async fn metrics(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    no_parameters(raw.as_deref())?;
    Ok(match app.history.latest(&app.picked().name) {
        Some(v) => json_ok(v),
        None => json_ok(sample_now(&app.handle().snapshot())),
    })
}

/// Endpoints without parameters refuse any, as the State API refuses unknown ones: a
/// misspelt `?limt=` should not silently return something else than was asked.
fn no_parameters(raw: Option<&str>) -> Result<(), ApiError> {
    match form_urlencoded::parse(raw.unwrap_or("").as_bytes()).next() {
        None => Ok(()),
        Some((name, _)) => {
            Err(ApiError::parameter(&name, format!("unknown parameter {name:?}; this endpoint takes none")))
        }
    }
}

/// `GET /api/metrics/history?start=&end=`: samples in a window of Unix seconds, oldest
/// first, of the cluster the request reads (observe mode: each cluster has its own).
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
    let points = app.history.between(&app.picked().name, start, end);
    Ok(json_ok(json!({
        "interval_seconds": app.history_every.as_secs_f64(),
        "capacity": app.history.capacity(),
        "points": points,
    })))
}

/// `GET /api/events?limit=&offset=&source=&search=`: the GCS event log, newest first.
/// `source` keeps one source (`node`, `task`, ...); `search` keeps messages containing
/// the text; both ignore case, and `total` counts what they keep.
pub(crate) async fn events(State(app): State<AppState>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    let (limit, offset, extra) = paging(raw.as_deref(), 100, &["source", "search"])?;
    let wanted = |name: &str| extra.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.to_lowercase());
    let (source, search) = (wanted("source").filter(|v| !v.is_empty()), wanted("search").filter(|v| !v.is_empty()));
    let s = app.handle().snapshot();
    let keep = |e: &&crate::model::event_log::LoggedEvent| {
        source.as_deref().is_none_or(|w| e.source.eq_ignore_ascii_case(w))
            && search.as_deref().is_none_or(|w| e.message.to_lowercase().contains(w))
    };
    let total = if source.is_none() && search.is_none() {
        s.recent_events.len()
    } else {
        s.recent_events.iter().filter(keep).count()
    };
    let events: Vec<Value> = s
        .recent_events
        .iter()
        .filter(keep)
        .skip(offset)
        .take(limit)
        .map(|e| {
            json!({
                "seq": e.seq,
                "sim_time_seconds": e.time_us.as_secs_f64(),
                "timestamp_ms": app.epoch_ms(e.time_us),
                "source": e.source,
                "message": e.message,
            })
        })
        .collect();
    Ok(json_ok(json!({
        "total": total,
        "events_recorded": s.event_log_lines,
        "events": events,
    })))
}
