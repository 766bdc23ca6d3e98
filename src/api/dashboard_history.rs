//! The seed dashboard's metrics aggregator: a cluster-level sample every 5 s of wall
//! time, the last hour (720 samples) kept in a bounded ring, served at
//! `/api/metrics` (the latest) and `/api/metrics/history`.
//!
//! Samples hold cluster totals only; per-node detail lives in `/api/nodes` and
//! `/metrics`. That keeps an hour of history a few hundred kilobytes whatever the
//! cluster size, where the seed's per-node cache grew with every node.

use super::app::AppState;
use crate::snapshot::Snapshot;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub(crate) struct DashboardHistory {
    ring: Mutex<VecDeque<Arc<Value>>>,
    capacity: usize,
}

impl DashboardHistory {
    pub fn new(capacity: usize) -> DashboardHistory {
        DashboardHistory { ring: Mutex::new(VecDeque::with_capacity(capacity.min(4096))), capacity: capacity.max(1) }
    }

    fn push(&self, sample: Value) {
        let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        if ring.len() >= self.capacity {
            ring.pop_front();
        }
        ring.push_back(Arc::new(sample));
    }

    pub fn latest(&self) -> Option<Arc<Value>> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner).back().cloned()
    }

    /// Samples with `timestamp` in `[start, end]` (Unix seconds), oldest first.
    pub fn between(&self, start: f64, end: f64) -> Vec<Arc<Value>> {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        ring.iter().filter(|s| s["timestamp"].as_f64().is_some_and(|t| t >= start && t <= end)).cloned().collect()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// Counters from the previous sample, for rates.
struct Previous {
    at: Instant,
    finished: u64,
    failed: u64,
    submitted: u64,
}

/// Sample until the server stops.
pub(crate) async fn run(app: AppState) {
    let mut tick = tokio::time::interval(app.history_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut previous: Option<Previous> = None;
    let mut stopping = app.stopping.clone();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = super::app::stopped(&mut stopping) => return,
        }
        let snap = app.handle.snapshot();
        let now = Instant::now();
        let sample = sample(&snap, previous.as_ref(), now);
        previous = Some(Previous {
            at: now,
            finished: snap.counters.tasks_finished,
            failed: snap.counters.tasks_failed,
            submitted: snap.counters.tasks_submitted,
        });
        app.history.push(sample);
    }
}

fn rate(now: u64, before: Option<u64>, seconds: f64) -> f64 {
    match before {
        Some(b) if seconds > 0.0 => now.saturating_sub(b) as f64 / seconds,
        _ => 0.0,
    }
}

/// One sample, grouped as the seed's collectors were.
fn sample(s: &Snapshot, previous: Option<&Previous>, now: Instant) -> Value {
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let seconds = previous.map(|p| now.duration_since(p.at).as_secs_f64()).unwrap_or(0.0);
    let alive: Vec<_> = s.nodes.iter().filter(|n| n.state == crate::model::NodeState::Alive).collect();
    let resources = resource_use(s);
    let (cpu_total, cpu_used) = resources.get("CPU").copied().unwrap_or((0.0, 0.0));
    let (gpu_total, gpu_used) = resources.get("GPU").copied().unwrap_or((0.0, 0.0));
    let memory_total: u64 = alive.iter().map(|n| n.memory_total).sum();
    let memory_used: u64 = alive.iter().map(|n| n.memory_used).sum();
    let store_total: u64 = alive.iter().map(|n| n.store_capacity).sum();
    let store_used: u64 = alive.iter().map(|n| n.store_used).sum();
    let store_spilled: u64 = alive.iter().map(|n| n.store_spilled).sum();
    let c = &s.counters;
    json!({
        "timestamp": wall,
        "sim_time_seconds": s.sim_time_us as f64 / 1e6,
        "node_metrics": {
            "alive": alive.len(),
            "dead": s.nodes.len() - alive.len(),
            "cpu_total": cpu_total,
            "cpu_used": cpu_used,
            "cpu_utilization": if cpu_total > 0.0 { cpu_used / cpu_total } else { 0.0 },
            "gpu_total": gpu_total,
            "gpu_used": gpu_used,
        },
        "task_metrics": {
            "by_state": task_states(s),
            "submitted_total": c.tasks_submitted,
            "finished_total": c.tasks_finished,
            "failed_total": c.tasks_failed,
            "throughput": rate(c.tasks_finished, previous.map(|p| p.finished), seconds),
            "failure_rate": rate(c.tasks_failed, previous.map(|p| p.failed), seconds),
            "submission_rate": rate(c.tasks_submitted, previous.map(|p| p.submitted), seconds),
        },
        "actor_metrics": {
            "total_actors": actor_states(s).get("ALIVE").and_then(Value::as_i64).unwrap_or(0),
            "by_state": actor_states(s),
        },
        "memory_metrics": {
            "memory_total": memory_total,
            "memory_used": memory_used,
            "memory_percent": if memory_total > 0 { 100.0 * memory_used as f64 / memory_total as f64 } else { 0.0 },
        },
        "object_metrics": {
            "object_store_memory": store_total,
            "plasma_memory_used": store_used,
            "spilled_bytes": store_spilled,
            "objects_live": s.objects_live,
        },
    })
}

/// (total, used) of each logical resource over alive nodes.
pub(crate) fn resource_use(s: &Snapshot) -> BTreeMap<&str, (f64, f64)> {
    let mut resources: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for n in s.nodes.iter().filter(|n| n.state == crate::model::NodeState::Alive) {
        for (name, total, available) in n.resources.iter() {
            let e = resources.entry(&**name).or_insert((0.0, 0.0));
            e.0 += total;
            e.1 += total - available;
        }
    }
    resources
}

/// Current tasks by state, summed over names and jobs.
pub(crate) fn task_states(s: &Snapshot) -> Map<String, Value> {
    let mut by: BTreeMap<&str, i64> = BTreeMap::new();
    for t in &s.task_counts {
        *by.entry(t.state.as_str()).or_insert(0) += t.count;
    }
    by.into_iter().filter(|(_, n)| *n != 0).map(|(k, v)| (k.to_string(), json!(v))).collect()
}

/// Actors by state, summed over classes and jobs.
pub(crate) fn actor_states(s: &Snapshot) -> Map<String, Value> {
    let mut by: BTreeMap<&str, i64> = BTreeMap::new();
    for a in &s.actor_counts {
        *by.entry(a.state.as_str()).or_insert(0) += a.count;
    }
    by.into_iter().filter(|(_, n)| *n != 0).map(|(k, v)| (k.to_string(), json!(v))).collect()
}

/// A sample taken now, for `/api/metrics` before the first tick has stored one.
pub(crate) fn sample_now(s: &Snapshot) -> Value {
    sample(s, None, Instant::now())
}
