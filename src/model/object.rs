//! The object table (what Ray keeps at each object's owner).

use super::compact_option::CompactOption;
use super::few::Few;
use super::ids::{JobId, NodeIdx, TaskId};
use super::object_list::ObjectList;

#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub enum ObjectStatus {
    /// The producing task has not finished.
    Pending,
    Ready,
    /// The producer failed for good; readers get its error.
    Failed,
    /// Every copy was lost with a node; being reconstructed or unrecoverable.
    Lost,
}

/// An object as its owner knows it. Found by its id in `Model::objects`, which does not
/// repeat it here: at `examples/scale.yaml`'s peak a million of them are live.
#[derive(Clone, Debug)]
pub struct Object {
    pub job: JobId,
    pub owner: TaskId,
    /// The task whose return this is (lineage), `None` for `ray.put`.
    pub producer: CompactOption<TaskId>,
    pub size: u64,
    pub status: ObjectStatus,
    /// Small objects live in the owner's heap (inline), not in plasma.
    pub inline: bool,
    /// Primary copy location (plasma objects).
    pub primary: CompactOption<NodeIdx>,
    /// Whether the primary copy is spilled to the primary node's disk.
    pub spilled: bool,
    /// Secondary in-memory copies made by transfers: a few at most (a map output's
    /// copy at its reducer), the first held inline, as `waiters`' is.
    pub copies: Few<NodeIdx>,
    /// References: the owner's handle plus each pending consumer.
    pub refs: u32,
    /// Whether the owner holds this object among its futures (and counts it while unresolved).
    pub owner_waits: bool,
    /// Tasks waiting for this object as an argument: almost always none or one (a
    /// map output's one reducer), held inline so a million of them allocate nothing.
    pub waiters: Few<TaskId>,
    pub created_at: u64,
    /// Lineage: the producer's spec and arguments, to re-execute it if every copy is lost.
    pub spec: u32,
    pub lineage_args: ObjectList,
    pub reconstructions: u32,
    /// The attempt number of the producer run that sealed it; a re-execution is the next
    /// attempt, so events still scheduled for earlier attempts never match it.
    pub producer_attempt: u32,
}

impl Object {
    /// Whether this node has the bytes in memory.
    pub fn in_memory_at(&self, node: NodeIdx) -> bool {
        (self.primary.get() == Some(node) && !self.spilled) || self.copies.contains(&node)
    }

    /// Ready, but every copy is on nodes whose raylets crashed: a pull from them hangs,
    /// and the object is lost (then rebuilt or failed) once the GCS marks them dead. A
    /// retry reading it waits for that, as Ray's does.
    pub fn only_on_crashed(&self, nodes: &[super::Node]) -> bool {
        let crashed = |n: &NodeIdx| nodes.get(n.index()).is_some_and(|n| n.crashed_at.is_some());
        self.status == ObjectStatus::Ready
            && !self.inline
            && self.primary.get().is_some_and(|p| crashed(&p))
            && self.copies.iter().all(crashed)
    }
}
