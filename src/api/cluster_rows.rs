//! The State API resources Ray derives rather than stores row by row:
//! `/api/v0/workers`, `/api/v0/runtime_envs`, and the object summary
//! `/api/v0/objects/summarize` (`ray summary objects`). Cluster events are the engine's
//! own records (`cluster_events.rs`).
//!
//! * Workers are the cluster's worker processes: one driver per job (on its driver
//!   node), one per actor (its own pid; dead actors' workers are listed dead, as Ray's
//!   GCS keeps them), and one per normal task that holds a lease and runs. Drivers and
//!   task workers have synthetic pids (`model::driver_pid`, `model::worker_pid`).
//! * Runtime envs are the distinct non-empty `runtime_env`s jobs were submitted with,
//!   per driver node, as Ray's runtime-env agents report them.
//!
//! These lists are small (bounded by the live actors and tasks and the job ring), so each
//! request builds its rows whole and filters them as JSON.
//!
//! Must never: write anything, or list a row that the snapshot does not back.

use super::query::{ListQuery, MAX_PAGE};
use super::rows::{worker_hex, Cell, Ctx, Resource};
use crate::model::{driver_pid, worker_pid, ActorState, TaskType, VirtualTime};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Every row of `r` (one of the derived resources) with all its columns.
pub(crate) fn all_rows(ctx: &Ctx<'_>, r: Resource) -> Vec<Value> {
    match r {
        Resource::Workers => workers(ctx),
        Resource::RuntimeEnvs => runtime_envs(ctx),
        _ => Vec::new(),
    }
}

fn node_fields(ctx: &Ctx<'_>, node: Option<u32>) -> (Value, Value) {
    match node.and_then(|n| ctx.snap.node(n)) {
        Some(n) => (json!(n.node_id), json!(n.ip)),
        None => (json!(""), json!("")),
    }
}

#[allow(clippy::too_many_arguments)]
fn worker(
    ctx: &Ctx<'_>,
    pid: u32,
    kind: &str,
    node: Option<u32>,
    alive: bool,
    exit: Option<(&str, String)>,
    start: VirtualTime,
    end: Option<VirtualTime>,
) -> Value {
    let (node_id, ip) = node_fields(ctx, node);
    let end_ms = end.map_or(0, |t| ctx.ms(t));
    let start = ctx.ms(start);
    json!({
        "worker_id": worker_hex(pid),
        "is_alive": alive,
        "worker_type": kind,
        "exit_type": exit.as_ref().map(|(t, _)| *t),
        "node_id": node_id,
        "ip": ip,
        "pid": pid,
        "exit_detail": exit.map(|(_, d)| d),
        "worker_launch_time_ms": start,
        "worker_launched_time_ms": start,
        "start_time_ms": start,
        "end_time_ms": end_ms,
        "debugger_port": null,
        "num_paused_threads": null,
    })
}

fn workers(ctx: &Ctx<'_>) -> Vec<Value> {
    let mut rows = Vec::new();
    for j in &ctx.snap.jobs {
        let job = u32::from_le_bytes(u32::from_str_radix(&j.id, 16).map(|v| v.to_be_bytes()).unwrap_or_default());
        let ended = j.status.is_terminal();
        let exit = ended.then(|| ("INTENDED_USER_EXIT", format!("the driver exited: job {}", j.status.as_str())));
        rows.push(worker(
            ctx,
            driver_pid(job),
            "DRIVER",
            Some(j.driver_node),
            !ended,
            exit,
            j.start_time_us,
            j.end_time_us,
        ));
    }
    for a in &ctx.tables.actors {
        let dead = a.state == ActorState::Dead;
        let exit = dead.then(|| {
            let cause = a.death_cause.clone().unwrap_or_default();
            let kind = if cause.contains("ray.kill") || cause.contains("job finished") || cause.contains("owner") {
                "INTENDED_USER_EXIT"
            } else {
                "SYSTEM_ERROR"
            };
            (kind, cause)
        });
        rows.push(worker(
            ctx,
            a.pid,
            "WORKER",
            a.node,
            !dead && a.node.is_some(),
            exit,
            a.created_at_us,
            a.ended_at_us,
        ));
    }
    for t in &ctx.tables.tasks {
        if t.kind == TaskType::NormalTask && t.state.is_running() {
            rows.push(worker(
                ctx,
                worker_pid(t.id),
                "WORKER",
                t.node,
                true,
                None,
                t.started_at_us.unwrap_or(t.submitted_at_us),
                None,
            ));
        }
    }
    rows
}

fn runtime_envs(ctx: &Ctx<'_>) -> Vec<Value> {
    // (runtime_env JSON, driver node) -> (env, node, created at, live references)
    let mut envs: BTreeMap<(String, u32), (Value, u32, u64, u64)> = BTreeMap::new();
    for j in &ctx.snap.jobs {
        let (_, env) = (ctx.job_extra)(j);
        if env.as_object().is_none_or(Map::is_empty) {
            continue;
        }
        let e = envs.entry((env.to_string(), j.driver_node)).or_insert((
            env,
            j.driver_node,
            j.start_time_us.as_micros(),
            0,
        ));
        e.2 = e.2.min(j.start_time_us.as_micros());
        e.3 += u64::from(!j.status.is_terminal());
    }
    envs.into_values()
        .map(|(env, node, _, refs)| {
            let (node_id, _) = node_fields(ctx, Some(node));
            // creation_time_ms is how long setting the env up took: nothing is installed.
            json!({"runtime_env": env, "success": true, "creation_time_ms": 0, "node_id": node_id, "ref_cnt": refs, "error": null})
        })
        .collect()
}

fn cell_of(v: &Value) -> Cell<'_> {
    match v {
        Value::String(s) => Cell::Str(Cow::Borrowed(s)),
        Value::Bool(b) => Cell::Bool(*b),
        Value::Number(n) => n.as_i64().map_or(Cell::Null, Cell::Int),
        Value::Null => Cell::Null,
        other => Cell::Json(other.clone()),
    }
}

/// (total, num_filtered, page rows, next offset) of `rows` under `q`.
pub(crate) fn page(r: Resource, rows: Vec<Value>, q: &ListQuery) -> (usize, usize, Vec<Value>, Option<usize>) {
    let total = rows.len();
    let columns = r.columns();
    let kept: Vec<Value> = rows
        .into_iter()
        .filter(|row| q.filters.iter().all(|f| f.matches(&cell_of(&row[columns[f.column].name]))))
        .collect();
    let num_filtered = kept.len();
    let limit = q.limit.min(MAX_PAGE);
    let page: Vec<Value> = kept
        .into_iter()
        .skip(q.offset)
        .take(limit)
        .map(|row| match row {
            Value::Object(mut m) if !q.detail => {
                m.retain(|k, _| columns.iter().any(|c| c.name == k && !c.detail));
                Value::Object(m)
            }
            other => other,
        })
        .collect();
    let end = q.offset + page.len();
    let next = (end < num_filtered && !page.is_empty()).then_some(end);
    (total, num_filtered, page, next)
}

/// One call site's (objects, MB, task states, attempt numbers, reference types).
type KeySummary = (u64, f64, BTreeMap<String, u64>, BTreeMap<String, u64>, BTreeMap<String, u64>);

/// Ray's `ObjectSummaries` (grouped by call site, which is `disabled` unless Ray
/// records call sites) over the objects that pass `q`'s filters.
pub(crate) fn summarize_objects(ctx: &Ctx<'_>, q: &ListQuery) -> (usize, usize, Value) {
    let r = Resource::Objects;
    let mut summary: BTreeMap<String, KeySummary> = BTreeMap::new();
    let mut workers: BTreeMap<String, (std::collections::BTreeSet<i64>, std::collections::BTreeSet<String>)> =
        BTreeMap::new();
    let (mut total_objects, mut total_mb, mut filtered) = (0u64, 0f64, 0usize);
    for i in 0..ctx.len(r) {
        if !q.filters.iter().all(|f| f.matches(&ctx.cell(r, i, f.column))) {
            continue;
        }
        filtered += 1;
        let row = ctx.row(r, i, false);
        let key = row["call_site"].as_str().unwrap_or("disabled").to_string();
        let e = summary.entry(key.clone()).or_default();
        let size = row["object_size"].as_i64().unwrap_or(-1);
        let mb = if size >= 0 { size as f64 / (1024.0 * 1024.0) } else { 0.0 };
        e.0 += 1;
        e.1 += mb;
        *e.2.entry(row["task_status"].as_str().unwrap_or("NIL").to_string()).or_default() += 1;
        *e.3.entry(row["attempt_number"].to_string()).or_default() += 1;
        *e.4.entry(row["reference_type"].as_str().unwrap_or("").to_string()).or_default() += 1;
        let w = workers.entry(key).or_default();
        w.0.insert(row["pid"].as_i64().unwrap_or(0));
        w.1.insert(row["ip"].as_str().unwrap_or("").to_string());
        total_objects += 1;
        total_mb += mb;
    }
    let summary: Map<String, Value> = summary
        .into_iter()
        .map(|(key, (n, mb, states, attempts, refs))| {
            let (pids, ips) = &workers[&key];
            let v = json!({
                "total_objects": n,
                "total_size_mb": mb,
                "total_num_workers": pids.len(),
                "total_num_nodes": ips.len(),
                "task_state_counts": states,
                "task_attempt_number_counts": attempts,
                "ref_type_counts": refs,
            });
            (key, v)
        })
        .collect();
    let cluster = json!({
        "summary": summary,
        "total_objects": total_objects,
        "total_size_mb": total_mb,
        "callsite_enabled": false,
        "summary_by": "callsite",
    });
    (ctx.len(r), filtered, json!({"node_id_to_summary": {"cluster": cluster}}))
}
