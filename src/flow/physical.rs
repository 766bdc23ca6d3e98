//! The physical view: nodes with the job's actors and workers placed on them, their
//! resources and their utilization.
//!
//! Owns: placing the job's executions on nodes (an actor where its calls ran last,
//! task workers by function), with calls, running calls and busy time as of the
//! instant; node resources come from the snapshot's node views ("now").
//! Must never: read anything but the job's records and the node views it is given.

use super::record::{actor_hex, JobRecord, Spans, TargetKind};
use crate::snapshot::NodeView;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Default)]
struct Busy {
    calls: u64,
    running: u64,
    busy_us: u64,
    pid: u32,
    class: String,
    level: u32,
    flag: bool,
}

pub fn physical(job: &JobRecord, spans: &Spans, nodes: &[Arc<NodeView>]) -> Value {
    // (node, actor) and (node, function) → usage.
    let mut actors: BTreeMap<(u32, u64), Busy> = BTreeMap::new();
    let mut workers: BTreeMap<(u32, String), Busy> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate() {
        let Some(start) = s.start else { continue };
        let t = job.target(s.target);
        let b = match (t.kind, t.actor) {
            (TargetKind::Method, Some(a)) => actors.entry((s.node, a)).or_default(),
            _ => workers.entry((s.node, t.class_name())).or_default(),
        };
        b.calls += 1;
        b.running += s.end.is_none() as u64;
        b.busy_us += spans.end_or_at(i).saturating_sub(start);
        b.pid = s.pid;
        b.class = t.class.clone();
        b.level = t.level;
        b.flag = t.flag;
    }
    let elapsed = spans.at.saturating_sub(job.start_us).max(1) as f64;
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut node_ids: Vec<u32> = nodes.iter().filter(|n| n.died_at_us.is_none()).map(|n| n.idx).collect();
    node_ids.extend(actors.keys().map(|k| k.0).chain(workers.keys().map(|k| k.0)));
    let by_idx: BTreeMap<u32, &Arc<NodeView>> = nodes.iter().map(|n| (n.idx, n)).collect();
    for idx in node_ids {
        if idx == u32::MAX || !seen.insert(idx) {
            continue;
        }
        let view = by_idx.get(&idx).copied();
        let resources: Vec<Value> = view
            .map(|v| v.resources.iter().map(|(n, t, a)| json!({"name": n, "total": t, "available": a})).collect())
            .unwrap_or_default();
        let cpu = view.and_then(|v| v.resources.iter().find(|r| &*r.0 == "CPU")).map(|(_, t, a)| if *t > 0.0 { (t - a) / t } else { 0.0 });
        let acts: Vec<Value> = actors
            .range((idx, 0)..=(idx, u64::MAX))
            .map(|((_, a), b)| {
                json!({"actor_id": actor_hex(*a), "class": b.class, "pid": b.pid, "level": b.level, "bottleneck": b.flag,
                    "calls": b.calls, "running": b.running, "busy_s": b.busy_us as f64 / 1e6,
                    "busy_fraction": (b.busy_us as f64 / elapsed).min(1.0)})
            })
            .collect();
        let works: Vec<Value> = workers
            .range((idx, String::new())..)
            .take_while(|((n, _), _)| *n == idx)
            .map(|((_, f), b)| json!({"function": f, "calls": b.calls, "running": b.running, "busy_s": b.busy_us as f64 / 1e6}))
            .collect();
        out.push(json!({"idx": idx, "node_id": view.map(|v| v.node_id.clone()), "ip": view.map(|v| v.ip.clone()),
            "is_head": view.map(|v| v.is_head), "state": view.map(|v| v.state.as_str()),
            "resources": resources, "cpu_utilization": cpu, "actors": acts, "workers": works}));
    }
    json!({"job_id": job.job_hex, "at_s": spans.at as f64 / 1e6, "truncated": job.truncated(), "nodes": out})
}
