//! The physical view: nodes with the job's actors and workers placed on them, their
//! resources and their utilization.
//!
//! Owns: placing the job's executions on nodes (an actor where its calls ran last,
//! task workers by function), with calls, running calls, busy time (its calls'
//! execution) and blocked time (in `ray.get`) as of the instant, and an actor's busy
//! fraction over its life (its first start to the job's end or the instant, so it does
//! not decay once the job is over); node resources come from the snapshot's node views
//! ("now"). An answer can be cut to the busiest nodes (the job's execution on them),
//! saying how many nodes there were (`nodes_total`) and how many are left out (`more`).
//! Serialized straight from typed rows (a job can place 20,000 actors: a JSON tree
//! built first cost most of the answer's time), and tallied by target index, not by
//! name, so that no string is copied per call.
//! Must never: read anything but the job's records and the node views it is given.

use super::spans::Spans;
use crate::snapshot::flow::{actor_hex, JobRecord, TargetKind};
use crate::snapshot::NodeView;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Default)]
struct Busy {
    calls: u64,
    running: u64,
    busy_us: u64,
    blocked_us: u64,
    /// Its first execution's start.
    since: u64,
    pid: u32,
    /// The target of its last execution (the actor's class and attributes).
    target: u32,
}

#[derive(Serialize)]
pub struct PhysicalView<'a> {
    job_id: &'a str,
    at_s: f64,
    truncated: bool,
    /// Nodes in the view, and how many of them this answer leaves out (the least busy).
    nodes_total: usize,
    more: usize,
    nodes: Vec<NodeRow<'a>>,
}

#[derive(Serialize)]
struct NodeRow<'a> {
    idx: u32,
    node_id: Option<&'a str>,
    ip: Option<&'a str>,
    is_head: Option<bool>,
    state: Option<&'a str>,
    resources: Vec<Resource<'a>>,
    cpu_utilization: Option<f64>,
    actors: Vec<ActorRow<'a>>,
    workers: Vec<WorkerRow<'a>>,
}

#[derive(Serialize)]
struct Resource<'a> {
    name: &'a str,
    total: f64,
    available: f64,
}

#[derive(Serialize)]
struct ActorRow<'a> {
    actor_id: String,
    class: &'a str,
    pid: u32,
    level: u32,
    program_flag: bool,
    calls: u64,
    running: u64,
    busy_s: f64,
    blocked_s: f64,
    busy_fraction: f64,
}

#[derive(Serialize)]
struct WorkerRow<'a> {
    function: &'a str,
    calls: u64,
    running: u64,
    busy_s: f64,
    blocked_s: f64,
}

/// The view as typed rows (serialize with `serde_json::to_vec`).
/// `limit`: at most that many nodes, the busiest first (`None`: every node, by index).
pub fn physical_view<'a>(
    job: &'a JobRecord,
    spans: &Spans,
    nodes: &'a [Arc<NodeView>],
    limit: Option<usize>,
) -> PhysicalView<'a> {
    // (node, actor) and (node, function frame) → usage.
    let mut actors: BTreeMap<(u32, u64), Busy> = BTreeMap::new();
    let mut workers: BTreeMap<(u32, u32), Busy> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate() {
        let Some(start) = s.start else { continue };
        let t = job.target(s.target);
        let b = match (t.kind, t.actor) {
            (TargetKind::Method, Some(a)) => actors.entry((s.node, a)).or_default(),
            _ => workers.entry((s.node, t.frame)).or_default(),
        };
        if b.calls == 0 || start < b.since {
            b.since = start;
        }
        b.calls += 1;
        b.running += s.end.is_none() as u64;
        let times = spans.times(i);
        b.busy_us += times.executing;
        b.blocked_us += times.blocked;
        b.pid = s.pid;
        b.target = s.target;
    }
    // An actor lives until its job ends (or to the instant, while the job runs).
    let life_end = job.end_us.map_or(spans.at, |e| e.min(spans.at));
    let mut out = Vec::new();
    let mut node_ids: Vec<u32> = nodes.iter().filter(|n| n.died_at_us.is_none()).map(|n| n.idx).collect();
    node_ids.extend(actors.keys().map(|k| k.0).chain(workers.keys().map(|k| k.0)));
    node_ids.retain(|&i| i != u32::MAX);
    node_ids.sort_unstable();
    node_ids.dedup();
    let nodes_total = node_ids.len();
    if let Some(limit) = limit {
        // The busiest first (ties by index), cut to the limit.
        let mut busy: BTreeMap<u32, u64> = BTreeMap::new();
        for ((n, _), b) in &actors {
            *busy.entry(*n).or_default() += b.busy_us + b.calls;
        }
        for ((n, _), b) in &workers {
            *busy.entry(*n).or_default() += b.busy_us + b.calls;
        }
        node_ids.sort_by_key(|i| (std::cmp::Reverse(busy.get(i).copied().unwrap_or(0)), *i));
        node_ids.truncate(limit);
    }
    let by_idx: BTreeMap<u32, &Arc<NodeView>> = nodes.iter().map(|n| (n.idx, n)).collect();
    for idx in node_ids {
        let view = by_idx.get(&idx).copied();
        let resources: Vec<Resource> = view
            .map(|v| v.resources.iter().map(|(n, t, a)| Resource { name: n, total: *t, available: *a }).collect())
            .unwrap_or_default();
        let cpu = view.and_then(|v| v.resources.iter().find(|r| &*r.0 == "CPU")).map(|(_, t, a)| {
            if *t > 0.0 {
                (t - a) / t
            } else {
                0.0
            }
        });
        let acts: Vec<ActorRow> = actors
            .range((idx, 0)..=(idx, u64::MAX))
            .map(|((_, a), b)| {
                let t = job.target(b.target);
                ActorRow {
                    actor_id: actor_hex(*a, job.job),
                    class: &t.class,
                    pid: b.pid,
                    level: t.level,
                    program_flag: t.flag,
                    calls: b.calls,
                    running: b.running,
                    busy_s: b.busy_us as f64 / 1e6,
                    blocked_s: b.blocked_us as f64 / 1e6,
                    busy_fraction: (b.busy_us as f64 / life_end.saturating_sub(b.since).max(1) as f64).min(1.0),
                }
            })
            .collect();
        let mut works: Vec<WorkerRow> = workers
            .range((idx, 0)..=(idx, u32::MAX))
            .map(|((_, f), b)| WorkerRow {
                function: job.frames.get(*f as usize).map_or("", String::as_str),
                calls: b.calls,
                running: b.running,
                busy_s: b.busy_us as f64 / 1e6,
                blocked_s: b.blocked_us as f64 / 1e6,
            })
            .collect();
        // By function name, as the view always listed them.
        works.sort_by(|a, b| a.function.cmp(b.function));
        out.push(NodeRow {
            idx,
            node_id: view.map(|v| &*v.node_id),
            ip: view.map(|v| &*v.ip),
            is_head: view.map(|v| v.is_head),
            state: view.map(|v| v.state.as_str()),
            resources,
            cpu_utilization: cpu,
            actors: acts,
            workers: works,
        });
    }
    let more = nodes_total - out.len();
    PhysicalView {
        job_id: &job.job_hex,
        at_s: spans.at as f64 / 1e6,
        truncated: job.truncated(),
        nodes_total,
        more,
        nodes: out,
    }
}

/// The view as JSON text.
pub fn physical_json(job: &JobRecord, spans: &Spans, nodes: &[Arc<NodeView>], limit: Option<usize>) -> Vec<u8> {
    serde_json::to_vec(&physical_view(job, spans, nodes, limit)).unwrap_or_default()
}
