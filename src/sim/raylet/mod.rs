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
