//! Task counts as readers see them: the numbers behind `ray_tasks` and the executor
//! series.
//!
//! Owns: [`TaskCount`] and [`RunningCount`]. Must never: import the engine or mutate
//! anything; the counts are copies of the model's incremental aggregates.

use crate::model::TaskState;
use serde::Serialize;

/// Tasks per (name, job, retry, state) — the owner's view summed over the cluster.
#[derive(Clone, Debug, Serialize)]
pub struct TaskCount {
    pub name: String,
    pub job: String,
    pub is_retry: bool,
    pub state: TaskState,
    pub count: i64,
}

/// Running tasks per executing node.
#[derive(Clone, Debug, Serialize)]
pub struct RunningCount {
    pub node: u32,
    pub name: String,
    pub job: String,
    pub is_retry: bool,
    pub state: TaskState,
    pub count: i64,
}
