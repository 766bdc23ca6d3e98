//! The seed dashboard's metrics aggregator: a cluster-level sample every 5 s of wall
//! time, the last hour (720 samples) kept in a bounded ring per cluster (observe mode
//! keeps one for each observed cluster), served at `/api/metrics` (the latest) and
//! `/api/metrics/history`, of the cluster the request reads.
//!
//! Samples hold cluster totals only; per-node detail lives in `/api/nodes` and
//! `/metrics`. A sample is kept as its numbers ([`Sample`], a few hundred bytes) and
//! written as JSON only when asked for: kept as a `serde_json::Value` (nine maps of
//! String keys) one cost ~6 KB, so the ring grew ~75 KB a minute for its first hour.

use crate::snapshot::Snapshot;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub(crate) struct DashboardHistory {
    /// Each cluster's ring, by name (the model's is ""; observe mode's are the observed
    /// clusters', as many as the registry's cap allows).
    rings: Mutex<BTreeMap<String, VecDeque<Sample>>>,
    capacity: usize,
}

impl DashboardHistory {
    pub fn new(capacity: usize) -> DashboardHistory {
        DashboardHistory { rings: Mutex::new(BTreeMap::new()), capacity: capacity.max(1) }
    }

    pub(crate) fn push(&self, cluster: &str, sample: Sample) {
        let mut rings = self.rings.lock().unwrap_or_else(PoisonError::into_inner);
        let ring = rings.entry(cluster.to_string()).or_insert_with(|| VecDeque::with_capacity(self.capacity.min(4096)));
        if ring.len() >= self.capacity {
            ring.pop_front();
        }
        ring.push_back(sample);
    }

    pub fn latest(&self, cluster: &str) -> Option<Value> {
        let latest = self.rings.lock().unwrap_or_else(PoisonError::into_inner).get(cluster)?.back().cloned();
        latest.map(|s| s.to_json())
    }

    /// `cluster`'s samples with `timestamp` in `[start, end]` (Unix seconds), oldest first.
    pub fn between(&self, cluster: &str, start: f64, end: f64) -> Vec<Value> {
        // Copy the numbers out and write JSON after the lock is released.
        let picked: Vec<Sample> = {
            let rings = self.rings.lock().unwrap_or_else(PoisonError::into_inner);
            let ring = rings.get(cluster).into_iter().flatten();
            ring.filter(|s| s.timestamp >= start && s.timestamp <= end).cloned().collect()
        };
        picked.iter().map(Sample::to_json).collect()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// One sample's numbers, grouped as the seed's collectors were (see [`Sample::to_json`]).
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    timestamp: f64,
    sim_time_seconds: f64,
    alive: u64,
    dead: u64,
    cpu_total: f64,
    cpu_used: f64,
    gpu_total: f64,
    gpu_used: f64,
    /// Non-zero task counts by state name.
    tasks_by_state: Box<[(&'static str, i64)]>,
    submitted_total: u64,
    finished_total: u64,
    failed_total: u64,
    throughput: f64,
    failure_rate: f64,
    submission_rate: f64,
    /// Non-zero actor counts by state name.
    actors_by_state: Box<[(&'static str, i64)]>,
    memory_total: u64,
    memory_used: u64,
    object_store_memory: u64,
    plasma_memory_used: u64,
    spilled_bytes: u64,
    objects_live: u64,
}

impl Sample {
    /// The sample as the seed dashboard's clients read it.
    pub(crate) fn to_json(&self) -> Value {
        let (cpu_total, cpu_used) = (self.cpu_total, self.cpu_used);
        let (memory_total, memory_used) = (self.memory_total, self.memory_used);
        let alive = self.actors_by_state.iter().find(|(k, _)| *k == "ALIVE").map_or(0, |(_, n)| *n);
        json!({
            "timestamp": self.timestamp,
            "sim_time_seconds": self.sim_time_seconds,
            "node_metrics": {
                "alive": self.alive,
                "dead": self.dead,
                "cpu_total": cpu_total,
                "cpu_used": cpu_used,
                "cpu_utilization": if cpu_total > 0.0 { cpu_used / cpu_total } else { 0.0 },
                "gpu_total": self.gpu_total,
                "gpu_used": self.gpu_used,
            },
            "task_metrics": {
                "by_state": as_map(&self.tasks_by_state),
                "submitted_total": self.submitted_total,
                "finished_total": self.finished_total,
                "failed_total": self.failed_total,
                "throughput": self.throughput,
                "failure_rate": self.failure_rate,
                "submission_rate": self.submission_rate,
            },
            "actor_metrics": {
                "total_actors": alive,
                "by_state": as_map(&self.actors_by_state),
            },
            "memory_metrics": {
                "memory_total": memory_total,
                "memory_used": memory_used,
                "memory_percent": if memory_total > 0 { 100.0 * memory_used as f64 / memory_total as f64 } else { 0.0 },
            },
            "object_metrics": {
                "object_store_memory": self.object_store_memory,
                "plasma_memory_used": self.plasma_memory_used,
                "spilled_bytes": self.spilled_bytes,
                "objects_live": self.objects_live,
            },
        })
    }
}

fn as_map(counts: &[(&'static str, i64)]) -> Map<String, Value> {
    counts.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
}

/// Counters from the previous sample, for rates.
pub(crate) struct Previous {
    pub(crate) at: Instant,
    pub(crate) finished: u64,
    pub(crate) failed: u64,
    pub(crate) submitted: u64,
}

fn rate(now: u64, before: Option<u64>, seconds: f64) -> f64 {
    match before {
        Some(b) if seconds > 0.0 => now.saturating_sub(b) as f64 / seconds,
        _ => 0.0,
    }
}

/// One sample of the cluster now.
pub(crate) fn sample(s: &Snapshot, previous: Option<&Previous>, now: Instant) -> Sample {
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let seconds = previous.map(|p| now.duration_since(p.at).as_secs_f64()).unwrap_or(0.0);
    let alive: Vec<_> = s.nodes.iter().filter(|n| n.state == crate::model::NodeState::Alive).collect();
    let resources = resource_use(s);
    let (cpu_total, cpu_used) = resources.get("CPU").copied().unwrap_or((0.0, 0.0));
    let (gpu_total, gpu_used) = resources.get("GPU").copied().unwrap_or((0.0, 0.0));
    let c = &s.counters;
    Sample {
        timestamp: wall,
        sim_time_seconds: s.sim_time_us.as_secs_f64(),
        alive: alive.len() as u64,
        dead: (s.nodes.len() - alive.len()) as u64,
        cpu_total,
        cpu_used,
        gpu_total,
        gpu_used,
        tasks_by_state: task_state_counts(s).into_iter().collect(),
        submitted_total: c.tasks_submitted,
        finished_total: c.tasks_finished,
        failed_total: c.tasks_failed,
        throughput: rate(c.tasks_finished, previous.map(|p| p.finished), seconds),
        failure_rate: rate(c.tasks_failed, previous.map(|p| p.failed), seconds),
        submission_rate: rate(c.tasks_submitted, previous.map(|p| p.submitted), seconds),
        actors_by_state: actor_state_counts(s).into_iter().collect(),
        memory_total: alive.iter().map(|n| n.memory_total.0).sum(),
        memory_used: alive.iter().map(|n| n.memory_used.0).sum(),
        object_store_memory: alive.iter().map(|n| n.store_capacity.0).sum(),
        plasma_memory_used: alive.iter().map(|n| n.store_used.0).sum(),
        spilled_bytes: alive.iter().map(|n| n.store_spilled.0).sum(),
        objects_live: s.objects_live,
    }
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
    as_map(&task_state_counts(s))
}

/// Actors by state, summed over classes and jobs.
pub(crate) fn actor_states(s: &Snapshot) -> Map<String, Value> {
    as_map(&actor_state_counts(s))
}

/// Non-zero task counts by state, in state-name order.
fn task_state_counts(s: &Snapshot) -> Vec<(&'static str, i64)> {
    let mut by: BTreeMap<&'static str, i64> = BTreeMap::new();
    for t in &s.task_counts {
        *by.entry(t.state.as_str()).or_insert(0) += t.count;
    }
    by.into_iter().filter(|(_, n)| *n != 0).collect()
}

/// Non-zero actor counts by state, in state-name order.
fn actor_state_counts(s: &Snapshot) -> Vec<(&'static str, i64)> {
    let mut by: BTreeMap<&'static str, i64> = BTreeMap::new();
    for a in &s.actor_counts {
        *by.entry(a.state.as_str()).or_insert(0) += a.count;
    }
    by.into_iter().filter(|(_, n)| *n != 0).collect()
}

/// A sample taken now, for `/api/metrics` before the first tick has stored one.
pub(crate) fn sample_now(s: &Snapshot) -> Value {
    sample(s, None, Instant::now()).to_json()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::testutil::cluster;

    #[test]
    fn a_kept_sample_is_its_numbers_and_writes_the_seeds_json() {
        let s = cluster();
        let sample = sample(s, None, Instant::now());
        // Kept as a Value it was nine maps of String keys (~6 KB); now a flat record.
        assert!(std::mem::size_of::<Sample>() <= 256, "{} bytes", std::mem::size_of::<Sample>());
        let v = sample.to_json();
        let nodes = &v["node_metrics"];
        assert_eq!(nodes["alive"].as_u64().unwrap() + nodes["dead"].as_u64().unwrap(), s.nodes.len() as u64);
        assert!(nodes["dead"].as_u64().unwrap() > 0, "the test cluster has a dead node");
        assert_eq!(v["task_metrics"]["by_state"], Value::Object(task_states(s)));
        assert!(!task_states(s).is_empty(), "the test cluster runs tasks");
        assert_eq!(v["actor_metrics"]["by_state"], Value::Object(actor_states(s)));
        assert_eq!(v["actor_metrics"]["total_actors"], actor_states(s).get("ALIVE").cloned().unwrap_or(json!(0)));
        assert_eq!(v["object_metrics"]["objects_live"], json!(s.objects_live));
        let history = DashboardHistory::new(2);
        for _ in 0..3 {
            history.push("a", sample.clone());
        }
        let all = |cluster| history.between(cluster, f64::NEG_INFINITY, f64::INFINITY);
        assert_eq!(all("a"), vec![v.clone(), v.clone()], "bounded at 2");
        assert_eq!(history.latest("a"), Some(v));
        assert!(all("b").is_empty() && history.latest("b").is_none(), "each cluster has its own ring");
    }
}
