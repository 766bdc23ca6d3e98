//! The actor table.

use super::ids::{ActorId, JobId, NameId, NodeIdx, PgId, TaskId};
use super::states::ActorState;
use super::Model;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Actor {
    pub id: ActorId,
    pub job: JobId,
    pub class: NameId,
    /// Private to the model: only `Model::set_actor_state` writes it. Read [`Actor::state`].
    pub(in crate::model) state: ActorState,
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
    /// Whether its process has submitted a task or created an actor: the first
    /// `.remote()` of a process sets its submitting up (`first_submit_cost`). A restart
    /// is a new process.
    pub submitted: bool,
    pub death_cause: Option<String>,
    pub created_at: u64,
    pub ended_at: Option<u64>,
}

impl Actor {
    /// A newly registered actor (DEPENDENCIES_UNREADY), not yet placed, with one
    /// call at a time and no restarts until told otherwise.
    pub fn registered(id: ActorId, job: JobId, class: NameId, creation_spec: u32, owner: TaskId, now: u64) -> Actor {
        Actor {
            id,
            job,
            class,
            state: ActorState::DependenciesUnready,
            node: None,
            last_node: None,
            creation_spec,
            creation_task: TaskId(0),
            owner,
            num_restarts: 0,
            max_restarts: 0,
            max_task_retries: 0,
            max_concurrency: 1,
            queue: VecDeque::new(),
            running: Vec::new(),
            level: 0,
            flag: false,
            tree_node: None,
            children: Vec::new(),
            holds_resources: false,
            bundle: None,
            pid: 0,
            submitted: false,
            death_cause: None,
            created_at: now,
            ended_at: None,
        }
    }

    /// The actor's state; only the model's transitions change it.
    ///
    /// ```compile_fail
    /// fn bypass(a: &mut rayscope::model::Actor) {
    ///     a.state = rayscope::model::ActorState::Dead;
    /// }
    /// ```
    #[inline]
    pub fn state(&self) -> ActorState {
        self.state
    }

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

/// The actor table, sealed: a field of [`Model`] that only the GCS actor manager changes
/// (beside the model's transitions).
impl Model {
    /// The actors by id. Only the GCS actor manager writes them (`sim::gcs::actors`, with
    /// its key); code elsewhere cannot:
    ///
    /// ```compile_fail
    /// fn bypass(m: &mut rayscope::model::Model) {
    ///     m.actors.clear();
    /// }
    /// ```
    #[inline]
    pub fn actors(&self) -> &FxHashMap<ActorId, Actor> {
        &self.actors
    }

    /// The actors to change: only with the actor manager's key.
    #[inline]
    pub(crate) fn actors_mut(&mut self, _: &crate::sim::gcs::actors::Key) -> &mut FxHashMap<ActorId, Actor> {
        &mut self.actors
    }

    /// A forgotten node's slot names no actor any more (the GCS node manager forgets it).
    pub(crate) fn unplace_actors_on(&mut self, n: NodeIdx) {
        for a in self.actors.values_mut().filter(|a| a.node == Some(n)) {
            a.node = None;
        }
    }
}
