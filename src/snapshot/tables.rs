//! The State API's row tables: tasks, actors, objects and placement groups.
//!
//! Owns: the row types and [`Tables`], their immutable collection. Must never: import
//! the engine or mutate anything. `sim` rebuilds a whole new `Tables` only while
//! someone reads them; readers index into it in place.

use crate::model::{
    ActorState, Bytes, ErrorType, ObjectStatus, PgState, PgStrategy, TaskHistory, TaskState, TaskType, VirtualTime,
};
use serde::Serialize;

/// A compact row of the task table (State API).
#[derive(Clone, Debug, Serialize)]
pub struct TaskRow {
    pub id: u64,
    pub job: u32,
    pub name: u32,
    pub kind: TaskType,
    pub state: TaskState,
    pub attempt: u32,
    pub parent: Option<u64>,
    pub actor: Option<u64>,
    pub node: Option<u32>,
    pub submitted_at_us: VirtualTime,
    pub started_at_us: Option<VirtualTime>,
    pub ended_at_us: Option<VirtualTime>,
    pub error: Option<ErrorType>,
    pub arg_bytes: Bytes,
    pub return_bytes: Bytes,
    /// Call-spec index: `Tables::spec_requests[spec]` is its resource request.
    pub spec: u32,
    pub placement_group: Option<u32>,
    pub history: TaskHistory,
}

#[derive(Clone, Debug, Serialize)]
pub struct ActorRow {
    pub id: u64,
    pub job: u32,
    pub class: u32,
    pub state: ActorState,
    /// Where it runs, or for a dead actor where it last ran.
    pub node: Option<u32>,
    pub pid: u32,
    /// Call-spec index of its constructor (`Tables::spec_requests`).
    pub creation_spec: u32,
    pub placement_group: Option<u32>,
    pub num_restarts: u32,
    pub max_restarts: i32,
    pub death_cause: Option<String>,
    pub level: u32,
    pub flag: bool,
    pub children: Vec<u64>,
    pub owner_task: u64,
    pub queued: u32,
    pub running: u32,
    pub created_at_us: VirtualTime,
    pub ended_at_us: Option<VirtualTime>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ObjectRow {
    pub id: u64,
    pub job: u32,
    pub owner_task: u64,
    pub size: Bytes,
    pub status: ObjectStatus,
    pub inline: bool,
    pub node: Option<u32>,
    pub spilled: bool,
    pub copies: u32,
    pub refs: u32,
    pub created_at_us: VirtualTime,
    /// The producing task's attempt, and its state (FINISHED once sealed; `NIL` for
    /// `ray.put` objects still being written).
    pub attempt: u32,
    pub task_status: TaskState,
    /// The owner's worker process and the node it runs on (Ray's `pid` and `ip`).
    pub owner_pid: u32,
    pub owner_node: u32,
}

/// A bundle: its resources as (name, amount), and the node it is placed on.
pub type BundleRow = (Vec<(String, f64)>, Option<u32>);

#[derive(Clone, Debug, Serialize)]
pub struct PgRow {
    pub id: u32,
    pub job: u32,
    pub name: String,
    pub strategy: PgStrategy,
    pub state: PgState,
    pub bundles: Vec<BundleRow>,
    pub created_at_us: VirtualTime,
}

/// Row tables for the State API (rebuilt on demand).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tables {
    pub built_at_us: VirtualTime,
    /// Live tasks first (by id), then finished ones (oldest first).
    pub tasks: Vec<TaskRow>,
    pub actors: Vec<ActorRow>,
    pub objects: Vec<ObjectRow>,
    pub placement_groups: Vec<PgRow>,
    /// Each call spec's resource request as (name, amount), by spec index.
    pub spec_requests: Vec<Vec<(String, f64)>>,
}
