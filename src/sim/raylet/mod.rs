//! Each node's raylet: its local resources, its queues and leases, its workers running
//! tasks, and the machine's cores under them.
//!
//! Owns: what one node knows of its own work (leases held, getters waiting to resume,
//! the cores' schedule) and the cluster task queues that feed it. Must never: change a
//! cluster-wide record's life cycle (the GCS's), or call another component (each asks
//! through a `Follow`).

pub(super) mod cluster_queues;
pub(super) mod gc_rounds;
pub(super) mod node_cpu;
pub(crate) mod node_runtime;
pub(super) mod task_run;

use crate::model::{Model, NodeIdx};

/// The raylet's key to its node's counters (`Model::node_stats_mut`): only this room
/// can make one, so what a raylet counts is counted here or by the two named counts
/// below, which the interpreter and the memory monitor report to.
pub struct StatsKey(());

const STATS_KEY: StatsKey = StatsKey(());

/// A task's body computed `cpu_us` µs of CPU on node `n` (for utilization readings).
#[inline]
pub(crate) fn count_cpu_busy(m: &mut Model, n: NodeIdx, cpu_us: u64) {
    m.node_stats_mut(n, &STATS_KEY).cpu_busy_us += cpu_us;
}

/// The memory monitor killed a worker on node `n`.
pub(crate) fn count_oom_kill(m: &mut Model, n: NodeIdx) {
    m.node_stats_mut(n, &STATS_KEY).oom_kills += 1;
}
