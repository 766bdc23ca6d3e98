//! The node table: one raylet each, with its logical resources and object store.
//!
//! A node's names (id, address, type, GPU model) are shared `Arc<str>`s: the node's
//! views share them, and nodes of one type share their type's, so a dead node that the
//! table keeps (up to Ray's 1,000) costs no copies of them.

use super::ids::NodeIdx;
use super::resources::{Bytes, ResVec};
use super::states::NodeState;
use super::Model;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Node {
    pub idx: NodeIdx,
    /// 56-hex Ray NodeID.
    pub node_id: Arc<str>,
    pub ip: Arc<str>,
    /// Index into the config's node types; `None` for the head node.
    pub node_type: Option<u16>,
    /// Node type name (`ray.head.default` for the head).
    pub type_name: Arc<str>,
    pub is_head: bool,
    pub state: NodeState,
    pub total: ResVec,
    /// Read like a `ResVec`; changed only by the node runtime (see [`Available`]).
    pub available: Available,
    /// Heap memory of the node (the `memory` config), for the memory monitor.
    pub memory_bytes: Bytes,
    pub store: ObjectStore,
    /// Heap bytes used by running workers (counts toward the memory monitor).
    pub worker_heap_used: Bytes,
    /// Extra memory occupied by a memory-pressure fault.
    pub pressure_bytes: Bytes,
    pub gpu_model: Option<Arc<str>>,
    pub gpu_memory: Bytes,
    pub started_at: u64,
    pub died_at: Option<u64>,
    /// Why it died: one of the engine's fixed reasons, so no string per dead node.
    pub death_reason: Option<&'static str>,
    /// When its raylet crashed, while the GCS has not yet noticed (its health checks
    /// are failing): still alive in every table, but no longer given work.
    pub crashed_at: Option<u64>,
    /// Last time (µs) this node had any work; the autoscaler's idle clock.
    pub idle_since: Option<u64>,
    /// Counters kept per node for the exporter.
    pub stats: NodeStats,
}

/// A node's available resources. Reads go through `Deref` to the `ResVec`; there is no
/// `DerefMut`: changing them in place takes the key that only `sim::raylet::node_runtime` can
/// make, and that component updates the scheduler's index in the same call. So the
/// compiler, not a convention, keeps every change of availability on one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Available(ResVec);

impl Available {
    /// Availability of a node being built (everything free, or a scratch copy for a
    /// what-if). A node already in the engine's table is changed only in place.
    pub fn new(v: ResVec) -> Available {
        Available(v)
    }

    /// In-place access for the node runtime: the key proves the caller is the one
    /// component that also keeps the scheduler's index current.
    #[inline]
    pub(crate) fn get_mut(&mut self, _: &crate::sim::raylet::node_runtime::Key) -> &mut ResVec {
        &mut self.0
    }
}

impl std::ops::Deref for Available {
    type Target = ResVec;
    #[inline]
    fn deref(&self) -> &ResVec {
        &self.0
    }
}

impl PartialEq<ResVec> for Available {
    fn eq(&self, o: &ResVec) -> bool {
        self.0 == *o
    }
}

/// One node's plasma store. Bytes are split by where they live, as `ray_object_store_memory`.
#[derive(Clone, Debug, Default)]
pub struct ObjectStore {
    pub capacity: Bytes,
    /// Bytes of objects in shared memory (primary copies and secondary copies).
    pub used: Bytes,
    /// Bytes of objects spilled to local disk.
    pub spilled: Bytes,
    /// Objects currently in memory here.
    pub num_objects: u64,
    /// Bytes over capacity that had to be allocated on disk (fallback allocations).
    pub fallback: Bytes,
    /// Small (inline) objects held in the heaps of workers on this node.
    pub worker_heap: Bytes,
    /// The most bytes of objects the store has held at once: its shared memory was
    /// touched up to there, and those pages stay mapped, so a put into them copies
    /// faster than into fresh ones (`sim::put_micros`).
    pub touched: Bytes,
}

/// Cumulative per-node counters.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct NodeStats {
    pub tasks_started: u64,
    pub tasks_finished: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub bytes_spilled: u64,
    pub bytes_restored: u64,
    pub objects_spilled: u64,
    pub objects_restored: u64,
    pub spillbacks: u64,
    pub oom_kills: u64,
    pub worker_failures: u64,
    pub workers_started: u64,
    /// Busy CPU time of tasks and actors, in µs of CPU (for utilization readings).
    pub cpu_busy_us: u64,
}

impl Node {
    /// Bring this record into cache (`cache_hint`): a node's leases are granted and
    /// returned in between thousands of other nodes' steps. Only the record: its vectors'
    /// buffers would need it read first, a stall that cost what the hint saved.
    #[inline]
    pub(crate) fn prefetch(&self) {
        super::cache_hint::prefetch(self);
    }

    pub fn is_alive(&self) -> bool {
        self.state == NodeState::Alive
    }
    /// Alive and reachable: the scheduler may give it work.
    pub fn is_schedulable(&self) -> bool {
        self.is_alive() && self.crashed_at.is_none()
    }
    /// Node memory in use for the memory monitor: worker heaps + object store + pressure.
    pub fn memory_used(&self) -> Bytes {
        Bytes(self.worker_heap_used.0 + self.store.used.0 + self.pressure_bytes.0)
    }
    /// True when the memory monitor acts on this node: alive, and using more than
    /// `usage_threshold` of its memory (below it a look changes nothing).
    pub fn over_memory_threshold(&self, usage_threshold: f64) -> bool {
        self.is_alive() && (self.memory_used().0 as f64) > usage_threshold * self.memory_bytes.0 as f64
    }
}

/// The node table, sealed: a field of [`Model`] whose parts each have one writer, as
/// each part has one owner in Ray. The GCS node manager owns the table itself (a node
/// joins, crashes, dies, is forgotten); the raylet's node runtime owns what a live node
/// holds (availability, its idle clock, worker heap and memory pressure); the object
/// manager owns its plasma store. Per-node counters are counted by the raylet and the
/// object manager, each with its key (`StatsKey`).
impl Model {
    /// The nodes by index. Only their owners write them, each with its key; code
    /// elsewhere cannot:
    ///
    /// ```compile_fail
    /// fn bypass(m: &mut rayscope::model::Model) {
    ///     m.nodes[0].state = rayscope::model::NodeState::Dead;
    /// }
    /// ```
    #[inline]
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node table to change (join, crash, death): only with the GCS node manager's key.
    #[inline]
    pub(crate) fn nodes_mut(&mut self, _: &crate::sim::gcs::node_manager::Key) -> &mut Vec<Node> {
        &mut self.nodes
    }

    /// The live side of each node (availability, idle clock, worker heap, memory
    /// pressure): only with the node runtime's key. A slice: no node joins or leaves here.
    #[inline]
    pub(crate) fn raylet_nodes_mut(&mut self, _: &crate::sim::raylet::node_runtime::Key) -> &mut [Node] {
        &mut self.nodes
    }

    /// Node `n`'s plasma store to change: only with the object manager's key.
    #[inline]
    pub(crate) fn store_mut(&mut self, n: NodeIdx, _: &crate::sim::objects::Key) -> &mut ObjectStore {
        &mut self.nodes[n.index()].store
    }

    /// The object table to change, beside the nodes to read (whether a copy's node is
    /// reachable), as two borrows.
    #[inline]
    pub fn objects_mut_with_nodes(&mut self) -> (&mut super::IdTable<super::ObjectId, super::Object>, &[Node]) {
        (&mut self.objects, &self.nodes)
    }

    /// Node `n`'s counters, to count what happened there: only with the key of a
    /// component that sees it happen (`StatsKey`). Code elsewhere cannot:
    ///
    /// ```compile_fail
    /// fn bypass(m: &mut rayscope::model::Model) {
    ///     m.nodes()[0].stats.tasks_started += 1;
    /// }
    /// ```
    #[inline]
    pub(crate) fn node_stats_mut(&mut self, n: NodeIdx, _: &impl StatsKey) -> &mut NodeStats {
        &mut self.nodes[n.index()].stats
    }
}

/// The keys that open a node's counters, as Ray's own components count them: the
/// raylet's (`sim::raylet::StatsKey`: tasks started and finished, spillbacks, workers
/// lost, OOM kills, CPU time) and the object manager's (`sim::objects::Key`: bytes sent,
/// received, spilled and restored). Sealed: no other type can be one.
pub(crate) trait StatsKey: sealed::Sealed {}

impl StatsKey for crate::sim::raylet::StatsKey {}
impl StatsKey for crate::sim::objects::Key {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::sim::raylet::StatsKey {}
    impl Sealed for crate::sim::objects::Key {}
}
