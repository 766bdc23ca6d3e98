//! What Flow Insight records of each job, as the snapshot carries it: immutable,
//! shared, cheap to publish.
//!
//! Owns: the record types (submit/begin/end/put records, the waits between them:
//! arguments, `ray.get`, retries; call targets, per-edge
//! aggregates), the append-only chunked storage that lets a snapshot share everything
//! already recorded (only the last, unsealed chunk is copied), the per-name totals
//! behind the `rayscope_flow_*` metrics, and how ids are written (`actor_hex`,
//! `span_hex`) so that every reader names a call alike. Making sense of the records
//! (replaying them into spans, the views) is the readers' (`crate::flow`).
//! Must never: be written by anyone but the engine's recorder
//! (`sim::flow_recorder`), or hold anything that grows without the per-job cap.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Records per sealed chunk: a snapshot copies at most this many of a job's records.
pub const CHUNK: usize = 4096;

/// What a call targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// The job's driver (Ant's `_main`).
    Driver,
    /// A remote function.
    Function,
    /// An actor method (the constructor `__init__` included).
    Method,
}

/// One callee: a function, or one method of one actor instance.
#[derive(Clone, Debug)]
pub struct Target {
    pub kind: TargetKind,
    /// Actor class, or the function's name (`_main` for the driver).
    pub class: String,
    /// Method name (`process`); for a function or the driver, its name again.
    pub method: String,
    /// The actor instance (actor id as a number), for methods.
    pub actor: Option<u64>,
    /// The job it belongs to (an actor's id names its job).
    pub job: u32,
    /// Workload attributes of the actor (the seed tree's depth and bottleneck flag).
    pub level: u32,
    pub flag: bool,
    /// Index of its class-level name (`Class.method`, function, `_main`) in `JobRecord::frames`.
    pub frame: u32,
}

impl Target {
    /// `Class.method`, the function, or `_main`.
    pub fn class_name(&self) -> String {
        match self.kind {
            TargetKind::Method => format!("{}.{}", self.class, self.method),
            _ => self.class.clone(),
        }
    }

    /// `Class:<actor id>.method` for a method, else as [`Target::class_name`].
    pub fn instance_name(&self) -> String {
        match (self.kind, self.actor_id()) {
            (TargetKind::Method, Some(a)) => format!("{}:{a}.{}", self.class, self.method),
            _ => self.class_name(),
        }
    }

    /// Its actor's id as the State API writes it, for a method.
    pub fn actor_id(&self) -> Option<String> {
        self.actor.map(|a| actor_hex(a, self.job))
    }
}

/// An actor id as the State API writes it (`ray list actors`): 12 bytes of actor, then
/// its job's 4.
pub fn actor_hex(a: u64, job: u32) -> String {
    crate::model::actor_id_hex(a, job)
}

/// A span id as the API shows it.
pub fn span_hex(s: u64) -> String {
    format!("{s:016x}")
}

/// One record, in the order the engine made them (virtual time never goes back).
#[derive(Clone, Copy, Debug)]
pub enum Rec {
    /// A call was submitted by the call `parent` (0: none, the driver itself).
    Submit { span: u64, parent: u64, target: u32, t: u64, arg_bytes: u64 },
    /// An attempt started executing on `node` in worker `pid` (a retry starts again).
    Begin { span: u64, t: u64, node: u32, pid: u32 },
    /// The call ended for good (finished, or failed past its retries).
    End { span: u64, t: u64, ok: bool, return_bytes: u64 },
    /// `ray.put` of `bytes` by a running call.
    Put { span: u64, t: u64, bytes: u64 },
    /// The call's argument is the return of the call `on`, not ready when it was
    /// submitted (at `t`): until `on` ends, the call waits for it.
    Dep { span: u64, on: u64, t: u64 },
    /// The running call blocked in `ray.get` (a task lends its CPU back meanwhile).
    Block { span: u64, t: u64 },
    /// It runs again: the objects arrived and, for a task, its CPU is back.
    Unblock { span: u64, t: u64 },
    /// Its attempt failed and it waits to run again (a retry).
    Requeue { span: u64, t: u64 },
}

impl Rec {
    pub fn time(&self) -> u64 {
        match *self {
            Rec::Submit { t, .. }
            | Rec::Begin { t, .. }
            | Rec::End { t, .. }
            | Rec::Put { t, .. }
            | Rec::Dep { t, .. }
            | Rec::Block { t, .. }
            | Rec::Unblock { t, .. }
            | Rec::Requeue { t, .. } => t,
        }
    }
}

/// Append-only storage shared with readers: sealed chunks are shared, never copied.
#[derive(Clone, Debug)]
pub struct Chunked<T> {
    sealed: Vec<Arc<[T]>>,
    tail: Vec<T>,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked { sealed: Vec::new(), tail: Vec::new() }
    }
}

impl<T: Clone> Chunked<T> {
    pub fn push(&mut self, v: T) {
        self.tail.push(v);
        if self.tail.len() >= CHUNK {
            let full = std::mem::take(&mut self.tail);
            self.sealed.push(full.into());
        }
    }

    pub fn len(&self) -> usize {
        self.sealed.len() * CHUNK + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        let (c, o) = (i / CHUNK, i % CHUNK);
        if c < self.sealed.len() {
            self.sealed[c].get(o)
        } else if c == self.sealed.len() {
            self.tail.get(o)
        } else {
            None
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.sealed.iter().flat_map(|c| c.iter()).chain(self.tail.iter())
    }

    /// The index of the first element for which `pred` is false, when the elements
    /// are partitioned by it (all true ones first), as `slice::partition_point`.
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        // The chunk holding the boundary, then the boundary inside it.
        let full = self.sealed.partition_point(|c| c.last().is_some_and(&mut pred));
        match self.sealed.get(full) {
            Some(c) => full * CHUNK + c.partition_point(pred),
            None => full * CHUNK + self.tail.partition_point(pred),
        }
    }

    /// A copy for a reader: the sealed chunks by reference, the tail by value.
    pub fn share(&self) -> Chunked<T> {
        Chunked { sealed: self.sealed.clone(), tail: self.tail.clone() }
    }
}

/// Calls over one caller → callee edge at class level (`Class.method` frames), kept
/// for every call, recorded or past the cap.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EdgeAgg {
    pub calls: u64,
    pub completed: u64,
    /// Submit-to-end time of the completed calls, µs.
    pub total_us: u64,
    /// Argument bytes sent plus return bytes received.
    pub bytes: u64,
}

/// Everything recorded for one job.
#[derive(Clone, Debug)]
pub struct JobRecord {
    pub job: u32,
    pub job_hex: String,
    pub name: String,
    pub start_us: u64,
    pub end_us: Option<u64>,
    /// The driver's span id.
    pub driver: u64,
    /// Calls submitted (the driver included), recorded or not.
    pub calls: u64,
    /// Calls whose records are kept (at most the cap).
    pub recorded_calls: u64,
    pub records: Chunked<Rec>,
    pub targets: Chunked<Target>,
    /// Class-level names (`Class.method`, function, `_main`), by frame index.
    pub frames: Arc<Vec<String>>,
    /// (caller frame, callee frame) → aggregate over every call.
    pub edges: BTreeMap<(u32, u32), EdgeAgg>,
    /// Task ids as the cluster wrote them, by span, where a span is not the id itself
    /// (an observed job's); empty for the model, whose span is its task's number.
    pub task_ids: Arc<BTreeMap<u64, String>>,
    /// Spans whose waits (in `ray.get`, for an argument) were inferred from other
    /// times rather than measured (an observed job without Ray's profile events);
    /// empty for the model, whose waits are all measured.
    pub inferred: Arc<std::collections::BTreeSet<u64>>,
    /// What an observer knows of a real job beyond its records (`None`: the model's).
    pub observed: Option<Arc<super::flow_notes::ObservedNotes>>,
}

impl JobRecord {
    pub fn truncated(&self) -> bool {
        self.recorded_calls < self.calls
    }

    pub fn target(&self, i: u32) -> &Target {
        self.targets.get(i as usize).expect("a record names a recorded target")
    }

    /// A call's task id as Ray's State API writes it.
    pub fn task_id(&self, span: u64, driver: bool) -> String {
        match self.task_ids.get(&span) {
            Some(id) => id.clone(),
            None => crate::model::task_id_hex(span, self.job, driver),
        }
    }

    /// Whether a span's waits were inferred rather than measured.
    pub fn waits_inferred(&self, span: u64) -> bool {
        self.inferred.contains(&span)
    }
}

/// The name key of the driver in [`Recorded::calls`] and [`Recorded::durations`]
/// (other keys are interned names: `Snapshot::names`).
pub const DRIVER_NAME: u32 = u32::MAX;

/// Buckets of `rayscope_flow_call_duration_seconds` (submit to end).
pub const DURATION_BUCKETS: &[f64] = &[0.001, 0.01, 0.1, 1.0, 10.0, 60.0, 300.0, 1800.0, 3600.0, 14400.0];

/// Every job's records, as published in a snapshot.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    /// By job number, oldest first.
    pub jobs: BTreeMap<u32, Arc<JobRecord>>,
    /// The cap per job (`sim.flow_calls_per_job`).
    pub cap: u64,
    /// Calls submitted since the start, every job (forgotten ones too), by (caller
    /// name, callee name) at class and method level: `rayscope_flow_calls_total`.
    pub calls: Arc<BTreeMap<(u32, u32), u64>>,
    /// Submit-to-end time of ended calls by callee name:
    /// `rayscope_flow_call_duration_seconds`.
    pub durations: Arc<BTreeMap<u32, crate::model::Histogram>>,
}

impl Recorded {
    /// A job by its hex id (as the Jobs API shows it).
    pub fn job(&self, hex: &str) -> Option<&Arc<JobRecord>> {
        self.jobs.values().find(|j| j.job_hex.eq_ignore_ascii_case(hex))
    }
}
