//! Actor counts as readers see them: the numbers behind `ray_actors` and the
//! per-node actor executor series.
//!
//! Owns: [`ActorCount`] and [`ActorExecutorCount`]. Must never: import the engine or
//! mutate anything.

use crate::model::ActorState;
use serde::Serialize;

/// Actors per (class, job, state).
#[derive(Clone, Debug, Serialize)]
pub struct ActorCount {
    pub class: String,
    pub job: String,
    pub state: ActorState,
    pub count: i64,
}

/// Alive actors per node, busy (running calls) or idle.
#[derive(Clone, Debug, Serialize)]
pub struct ActorExecutorCount {
    pub node: u32,
    pub class: String,
    pub job: String,
    pub running: bool,
    pub count: i64,
}
