//! One node as readers see it.
//!
//! Owns: [`NodeView`], the immutable per-node view (resources, memory, object store,
//! counts of what runs there). Must never: import the engine or mutate anything — a
//! view is built once by `sim` and then only read; a dead node's view is shared by
//! every later snapshot.

use crate::model::{NodeState, NodeStats};
use serde::Serialize;

/// One node as readers see it.
#[derive(Clone, Debug, Serialize)]
pub struct NodeView {
    pub idx: u32,
    pub node_id: String,
    pub ip: String,
    pub node_type: String,
    pub is_head: bool,
    pub state: NodeState,
    /// (resource name, total, available), in resource-id order, only kinds the node has.
    pub resources: Vec<(String, f64, f64)>,
    pub memory_total: u64,
    /// Heap of running workers + object store + memory pressure.
    pub memory_used: u64,
    pub store_capacity: u64,
    pub store_used: u64,
    pub store_spilled: u64,
    pub store_fallback: u64,
    pub store_num_objects: u64,
    pub worker_heap_objects: u64,
    pub gpu_model: Option<String>,
    pub gpu_memory: u64,
    pub running_tasks: u64,
    pub leased_tasks: u64,
    pub actors: u64,
    pub started_at_us: u64,
    pub died_at_us: Option<u64>,
    pub death_reason: Option<String>,
    pub stats: NodeStats,
}
