//! The model's own bounds: how many finished or dead records each table keeps.
//!
//! Owns: [`Limits`], what [`Model::new`](super::Model::new) needs to stay bounded.
//! Must never: import `config` — the engine translates the config's settings into
//! these once, at construction, so the model does not depend on the config's shape.

/// How much history each ring of the model keeps; past it, the oldest record goes
/// (its aggregates stay in the counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Finished tasks kept for the State API.
    pub finished_task_capacity: usize,
    /// Dead actors kept.
    pub dead_actor_capacity: usize,
    /// Finished jobs kept in the job table.
    pub finished_job_capacity: usize,
    /// Event-log lines kept in memory.
    pub event_log_capacity: usize,
    /// Cluster events kept (0: none recorded).
    pub cluster_event_capacity: usize,
}
