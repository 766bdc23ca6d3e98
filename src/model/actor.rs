//! The actor table.

use super::ids::{ActorId, JobId, NameId, NodeIdx, PgId, TaskId};
use super::states::ActorState;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Actor {
    pub id: ActorId,
    pub job: JobId,
    pub class: NameId,
    pub state: ActorState,
    pub node: Option<NodeIdx>,
    /// Where it last lived: Ray keeps a dead actor's `node_id`.
    pub last_node: Option<NodeIdx>,
    /// Call-spec index of the creation task (rerun on restart).
    pub creation_spec: u32,
    pub creation_task: TaskId,
    pub owner: TaskId,
    pub num_restarts: u32,
    pub max_restarts: i32,
    pub max_task_retries: i32,
    pub max_concurrency: u32,
    /// Actor tasks queued (waiting for ordering or concurrency), FIFO.
    pub queue: VecDeque<TaskId>,
    /// Actor tasks currently executing (≤ max_concurrency).
    pub running: Vec<TaskId>,
    /// Workload parameters: tree depth for flow-insight workers.
    pub level: u32,
    /// Workload flag: the flow-insight bottleneck flag.
    pub flag: bool,
    /// Its place in an explicit workload tree (flow-insight `tree:`), if any.
    pub tree_node: Option<u32>,
    /// Handles this actor created (its children), in creation order.
    pub children: Vec<ActorId>,
    /// Whether it holds its resources while alive (explicit resources), or only used them to be placed.
    pub holds_resources: bool,
    /// The placement-group bundle it is placed in (and reserves from), kept across
    /// restarts: the creation task that carried it is gone once the actor is alive.
    pub bundle: Option<(PgId, u32)>,
    pub pid: u32,
    pub death_cause: Option<String>,
    pub created_at: u64,
    pub ended_at: Option<u64>,
}

impl Actor {
    pub fn has_free_slot(&self) -> bool {
        self.state == ActorState::Alive && (self.running.len() as u32) < self.max_concurrency
    }
}

/// Ray's `ActorDiedErrorContext.reason` for one of the model's death causes.
pub fn death_reason(cause: &str) -> &'static str {
    if cause.contains("ray.kill") {
        "RAY_KILL"
    } else if cause.contains("node") {
        "NODE_DIED"
    } else if cause.contains("owner") || cause.contains("job finished") {
        "OWNER_DIED"
    } else {
        "WORKER_DIED"
    }
}
