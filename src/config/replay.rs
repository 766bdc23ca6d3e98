//! A recorded job to run in the model (`rayscope simulate --replay DIR --job ID`): each
//! of its calls as data, made from a trace by `flow::replay` and built into call specs by
//! `workload`. Not a YAML workload kind: a replay comes from a trace, never from a file
//! a person writes.
//!
//! Owns: the types. Must never: read a trace or a snapshot (that is `flow::replay`'s).

use std::sync::Arc;

/// What a call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayKind {
    /// The job's driver (call 0).
    Driver,
    /// A remote function.
    Function,
    /// An actor's constructor: creates the actor in `actor`'s slot.
    ActorCreation,
    /// A method on the actor in `actor`'s slot.
    Method,
}

/// One step of a call's body, in the order it ran.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplayStep {
    /// The body ran (or slept) this long, µs: held as recorded, using no CPU of the
    /// model's (Ray does not say whether it computed or slept).
    Hold(u64),
    /// It submitted this call (index into [`ReplayJob::calls`]).
    Submit(u32),
    /// It waited in `ray.get` for every call it submitted so far.
    Get,
}

/// One recorded call.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayCall {
    pub kind: ReplayKind,
    /// `Class.method`, the function's name, or `Class.__init__`.
    pub name: String,
    /// The actor class, for a constructor.
    pub class: String,
    /// The actor slot it creates or runs on.
    pub actor: Option<u32>,
    /// Its resource request as recorded; empty for an actor constructor means Ray's
    /// default (1 CPU to be placed, none held).
    pub resources: Vec<(String, f64)>,
    /// Calls whose returns it took as arguments (indexes; each submitted before it).
    pub deps: Vec<u32>,
    /// Bytes of its returns, as recorded (0 where the recording never saw them).
    pub return_bytes: u64,
    pub steps: Vec<ReplayStep>,
}

/// A recorded job, call 0 its driver.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayJob {
    /// Where it came from (`<trace dir> job <id>`), for reports.
    pub source: String,
    pub calls: Vec<ReplayCall>,
    /// Actor slots used.
    pub actors: u32,
    /// The makespan it had when recorded (driver start to end), µs.
    pub recorded_makespan_us: u64,
}

/// The workload that runs a replay.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReplayConfig {
    pub name: String,
    #[serde(skip)]
    pub job: Arc<ReplayJob>,
}
