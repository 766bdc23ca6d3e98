//! What an observer says of a real job's records that the records cannot: which calls
//! Ray left without an outcome because their job ended, which calls Ray lost, and
//! whether the job's waits were measured by Ray or inferred.
//!
//! Owns: [`ObservedNotes`], carried by an observed job's
//! [`JobRecord`](super::flow::JobRecord) (the model's jobs carry none).
//! Must never: import the observer or a reader; it is plain data.

use serde::Serialize;
use std::collections::BTreeMap;

/// A call whose outcome Ray did not report: its job ended (its workers were killed
/// with the driver) while its caller went on past waiting for it. Ray's own last word
/// on it is kept beside it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EndedWithJob {
    /// Ray's state for it: FAILED (marked so when its worker was killed), or the
    /// state its last report left it in (RUNNING, PENDING_NODE_ASSIGNMENT, ...).
    pub ray_state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_error_type: Option<String>,
}

/// Calls of one function Ray lost, and where, with the evidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LostCalls {
    /// `Class.method` or the function, as the graph names it (`None`: not known).
    pub name: Option<String>,
    /// How many (`None`: not known, only that some may be).
    pub calls: Option<u64>,
    /// The caller that made them, where that is what is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The node the caller ran on, if known.
    pub node: Option<String>,
    /// How the loss shows.
    pub evidence: String,
}

/// How the job's waits in `ray.get`/`ray.wait`/`ray.put` are known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Waits {
    /// Read from the times of the task rows (no profile events).
    #[default]
    Inferred,
    /// Ray's own profile spans, for every caller that made calls.
    Measured,
    /// Profile spans for some callers, inferred for the rest.
    Mixed,
}

/// What an observer adds to a real job's records.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ObservedNotes {
    /// By span.
    pub ended_with_job: BTreeMap<u64, EndedWithJob>,
    pub lost: Vec<LostCalls>,
    pub waits: Waits,
    /// Whether the job ended and its tasks were read after the end until Ray's listing
    /// stopped changing, so the records hold Ray's last reports (`None`: the observer
    /// does not read tasks, a push-only one, or a replayed trace).
    pub settled: Option<bool>,
}
