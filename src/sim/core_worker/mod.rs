//! The core worker: the owner's side of a task (submitting, its futures, failures and
//! retries), the caller's own work on its node's cores, and what each live task's run
//! keeps while it runs.
//!
//! Owns: the owner's bookkeeping of the tasks it submitted and the objects it holds.
//! Must never: place a task (the raylet's and the scheduler's) or decide an actor's
//! or a node's fate (the GCS's); it asks through a `Follow`.

pub(super) mod caller_work;
pub(super) mod futures;
pub(super) mod replay_slots;
pub(super) mod retries;
pub(super) mod task_runs;
pub(super) mod tasks;
