//! Task records: live tasks in the task table, finished ones in a bounded ring.
//!
//! Owns: what Ray's GCS and State API know of a task (identity, state, placement,
//! lifecycle times). Must never: hold what only the simulation needs while a task runs
//! (its program counter, interpreter state, Flow Insight tag: `sim::core_worker::task_runs`), so
//! the model's readers never see the engine's bookkeeping.

use super::compact_option::CompactOption;
use super::ids::{ActorId, JobId, NameId, NodeIdx, ObjectId, PgId, TaskId};
use super::object_list::ObjectList;
use super::states::{ErrorType, TaskState, TaskType};

/// A live task (pending or running). Retries keep the id and bump `attempt`.
#[derive(Clone, Debug)]
pub struct Task {
    pub id: TaskId,
    pub job: JobId,
    pub name: NameId,
    pub kind: TaskType,
    /// Private to the model: only its state transitions (`Model::set_task_state`,
    /// `fail_attempt`, `finish_task`) write it, so per-state counts, history and the
    /// event log cannot drift from it. Read it with [`Task::state`].
    pub(in crate::model) state: TaskState,
    pub attempt: u32,
    /// The task whose code submitted this one (the caller span); `None` for drivers.
    pub parent: CompactOption<TaskId>,
    /// The node of the submitting worker: where the lease request goes first.
    pub owner_node: NodeIdx,
    /// Index into the engine's call-spec registry.
    pub spec: u32,
    /// Target actor (actor tasks) or the actor being created.
    pub actor: CompactOption<ActorId>,
    pub node: CompactOption<NodeIdx>,
    pub args: ObjectList,
    pub returns: ObjectId,
    /// Placement group bundle this task runs in, if any.
    pub bundle: CompactOption<(PgId, u32)>,
    pub submitted_at: u64,
    /// When its dependencies were resolved (start of placement time).
    pub ready_at: u64,
    pub started_at: CompactOption<u64>,
    /// Whether resources are currently reserved on `node`.
    pub holds_resources: bool,
    /// Whether its CPU was lent back to the node while blocked in `ray.get`.
    pub cpu_released: bool,
    pub retries_left: i32,
    /// OOM kills so far, for the back-off (which stops growing at 6): saturates.
    pub oom_retries: u8,
    pub error: Option<ErrorType>,
    /// Bytes of arguments fetched from other nodes (for spans and the flow views).
    pub arg_bytes: u64,
    /// When this attempt entered each of Ray's lifecycle states (the State API's `events`).
    pub history: TaskHistory,
    /// Its row in `Model::task_counts` (set when it is inserted and when it is retried).
    pub counts_row: super::Row,
}

impl Task {
    /// The task's state. Only the model's transitions change it: code outside `model`
    /// cannot write it.
    ///
    /// ```compile_fail
    /// // A bypass of the transitions does not compile outside the model:
    /// fn bypass(t: &mut rayscope::model::Task) {
    ///     t.state = rayscope::model::TaskState::Finished;
    /// }
    /// ```
    #[inline]
    pub fn state(&self) -> TaskState {
        self.state
    }

    /// A new task that enters the table in `state` (see `Model::insert_task`), not
    /// the default PENDING_NODE_ASSIGNMENT: only before it is in the table.
    pub fn in_state(mut self, state: TaskState) -> Task {
        self.state = state;
        self
    }

    /// A first attempt pending node assignment, submitted now, holding nothing; callers
    /// set what differs (state, parent, actor, arguments, return object, ...).
    pub fn new(id: TaskId, job: JobId, name: NameId, kind: TaskType, spec: u32, owner_node: NodeIdx, now: u64) -> Task {
        Task {
            id,
            job,
            name,
            kind,
            state: TaskState::PendingNodeAssignment,
            attempt: 0,
            parent: CompactOption::NONE,
            owner_node,
            spec,
            actor: CompactOption::NONE,
            node: CompactOption::NONE,
            args: ObjectList::EMPTY,
            returns: ObjectId(0),
            bundle: CompactOption::NONE,
            submitted_at: now,
            ready_at: now,
            started_at: CompactOption::NONE,
            holds_resources: false,
            cpu_released: false,
            retries_left: 0,
            oom_retries: 0,
            error: None,
            arg_bytes: 0,
            history: TaskHistory::submitted(now),
            counts_row: super::Row::UNSET,
        }
    }

    /// This task as a span record, ending at `ended_at` (for the finished ring and tables).
    pub fn record(&self, ended_at: u64, return_bytes: u64) -> TaskRecord {
        TaskRecord {
            id: self.id,
            job: self.job,
            name: self.name,
            kind: self.kind,
            state: self.state,
            attempt: self.attempt,
            parent: self.parent.get(),
            actor: self.actor.get(),
            node: self.node.get(),
            submitted_at: self.submitted_at,
            started_at: self.started_at.get(),
            ended_at,
            error: self.error,
            arg_bytes: self.arg_bytes,
            return_bytes,
            spec: self.spec,
            bundle: self.bundle.get().map(|(pg, _)| pg),
            history: self.history,
        }
    }

    pub fn is_retry(&self) -> bool {
        self.attempt > 0
    }
}

/// What remains of a finished task: a span for the flow views and the state API.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TaskRecord {
    pub id: TaskId,
    pub job: JobId,
    pub name: NameId,
    pub kind: TaskType,
    pub state: TaskState,
    pub attempt: u32,
    pub parent: Option<TaskId>,
    pub actor: Option<ActorId>,
    pub node: Option<NodeIdx>,
    pub submitted_at: u64,
    pub started_at: Option<u64>,
    pub ended_at: u64,
    pub error: Option<ErrorType>,
    pub arg_bytes: u64,
    pub return_bytes: u64,
    /// Call-spec index (its resource request is the State API's `required_resources`).
    pub spec: u32,
    /// The placement group it ran in, if any.
    pub bundle: Option<PgId>,
    pub history: TaskHistory,
}

/// When one attempt of a task entered each lifecycle state Ray's State API shows in a
/// task's `events` (Ray keeps one timestamp per state, `state_ts_ns`; a state entered
/// again overwrites its time, as there).
///
/// Compact on purpose, since every live task and every finished record carries one:
/// eight virtual-time milliseconds, 32 bytes, no allocation. One slot per state, in the
/// order Ray 2.60 lists them (scripts/ray-calibration/runs/task-states.json): a normal
/// task PENDING_ARGS_AVAIL → PENDING_NODE_ASSIGNMENT → SUBMITTED_TO_WORKER → RUNNING; an
/// actor call is pushed to its actor (SUBMITTED_TO_WORKER) before it waits in the
/// actor's queue (PENDING_ACTOR_TASK_ORDERING_OR_CONCURRENCY); an actor's creation goes
/// from PENDING_NODE_ASSIGNMENT straight to RUNNING. Times beyond u32 milliseconds
/// (49 days of virtual time) saturate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TaskHistory([u32; 8]);

const UNSET: u32 = u32::MAX;

impl TaskHistory {
    /// A new attempt, submitted (PENDING_ARGS_AVAIL) at `now_us`.
    pub fn submitted(now_us: u64) -> TaskHistory {
        let mut h = TaskHistory([UNSET; 8]);
        h.0[0] = Self::ms(now_us);
        h
    }

    fn ms(us: u64) -> u32 {
        (us / 1000).min(u64::from(UNSET - 1)) as u32
    }

    /// The states with a slot, in Ray's order; the last slot is the terminal state.
    const ORDER: [TaskState; 7] = [
        TaskState::PendingArgsAvail,
        TaskState::PendingNodeAssignment,
        TaskState::PendingArgsFetch,
        TaskState::SubmittedToWorker,
        TaskState::PendingActorTaskOrderingOrConcurrency,
        TaskState::PendingActorTaskArgsFetch,
        TaskState::Running,
    ];

    fn slot(state: TaskState) -> Option<usize> {
        match state {
            TaskState::Finished | TaskState::Failed => Some(Self::ORDER.len()),
            s => Self::ORDER.iter().position(|o| *o == s),
        }
    }

    /// Note that the attempt entered `state` at `now_us` (states Ray does not list are ignored).
    pub fn record(&mut self, state: TaskState, now_us: u64) {
        if let Some(i) = Self::slot(state) {
            self.0[i] = Self::ms(now_us);
        }
    }

    /// (state, virtual-time ms) for each state entered, in Ray's order; `terminal`
    /// names the last one.
    pub fn events(&self, terminal: TaskState) -> impl Iterator<Item = (TaskState, u64)> + '_ {
        self.0.iter().enumerate().filter(|(_, t)| **t != UNSET).map(move |(i, t)| {
            let state = Self::ORDER.get(i).copied().unwrap_or(terminal);
            (state, u64::from(*t))
        })
    }
}
