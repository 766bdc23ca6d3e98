//! One node as readers see it.
//!
//! Owns: [`NodeView`], the immutable per-node view (resources, memory, object store,
//! counts of what runs there). Must never: import the engine or mutate anything — a
//! view is built once by `sim` and then only read; a dead node's view is shared by
//! every later snapshot.
//!
//! Its names are the model's shared strings (`Arc<str>`) and a dead node's resource
//! list is shared by the dead nodes of its shape, so a view of one of the 1,000 cached
//! dead nodes costs little more than its numbers.

use crate::model::{Bytes, NodeState, NodeStats, VirtualTime};
use serde::Serialize;
use std::sync::Arc;

/// A node's logical resources: (resource name, total, available), in resource-id
/// order, only kinds the node has.
pub type NodeResources = Arc<[(Arc<str>, f64, f64)]>;

/// One node as readers see it.
#[derive(Clone, Debug, Serialize)]
pub struct NodeView {
    pub idx: u32,
    pub node_id: Arc<str>,
    pub ip: Arc<str>,
    pub node_type: Arc<str>,
    pub is_head: bool,
    pub state: NodeState,
    pub resources: NodeResources,
    pub memory_total: Bytes,
    /// Heap of running workers + object store + memory pressure.
    pub memory_used: Bytes,
    pub store_capacity: Bytes,
    pub store_used: Bytes,
    pub store_spilled: Bytes,
    pub store_fallback: Bytes,
    pub store_num_objects: u64,
    pub worker_heap_objects: u64,
    pub gpu_model: Option<Arc<str>>,
    pub gpu_memory: Bytes,
    pub running_tasks: u64,
    pub leased_tasks: u64,
    pub actors: u64,
    pub started_at_us: VirtualTime,
    pub died_at_us: Option<VirtualTime>,
    /// When its raylet stopped answering, while the GCS still counts it alive (its
    /// health checks are failing). A producer that cannot know this leaves it `None`.
    pub crashed_at_us: Option<VirtualTime>,
    pub death_reason: Option<&'static str>,
    pub stats: NodeStats,
}

impl NodeView {
    /// Alive and its raylet answering: it serves its own metrics. A crashed node the
    /// GCS has not yet marked dead is alive but serves nothing.
    pub fn answers(&self) -> bool {
        self.state == NodeState::Alive && self.crashed_at_us.is_none()
    }
}
