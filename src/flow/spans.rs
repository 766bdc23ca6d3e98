//! A job's records replayed up to an instant: one [`Span`] per call, with its
//! parent, what it did with its time (queued, executing, blocked in `ray.get`), the
//! calls whose returns it waited for, its last attempt and its bytes. Every view
//! starts here.
//!
//! Owns: the replay ([`Spans::replay`]), a pure function of the snapshot's records
//! and an instant. The replayed spans are shared (`Arc`), so that one replay serves
//! every view, and every later instant with no new record ([`Spans::at`]).
//! Must never: change the records, or spans once replayed.

use crate::snapshot::flow::{JobRecord, Rec};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::Arc;

/// The replay's tables while they are built.
struct Replay {
    spans: Vec<Span>,
    index: FxHashMap<u64, usize>,
}

/// What a call is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Submitted and not running: waiting for its arguments, a worker, its actor's
    /// previous call, or to be retried.
    Queued,
    /// Its body runs.
    Executing,
    /// Blocked in `ray.get` on the calls it made (a task lends its CPU back).
    Blocked,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Queued => "queued",
            Phase::Executing => "executing",
            Phase::Blocked => "blocked",
        }
    }
}

/// Time by phase, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseTimes {
    pub queued: u64,
    pub executing: u64,
    pub blocked: u64,
}

impl PhaseTimes {
    pub fn add(&mut self, phase: Phase, us: u64) {
        match phase {
            Phase::Queued => self.queued += us,
            Phase::Executing => self.executing += us,
            Phase::Blocked => self.blocked += us,
        }
    }

    pub fn wall(&self) -> u64 {
        self.queued + self.executing + self.blocked
    }
}

/// One call as replayed up to an instant.
#[derive(Clone, Debug)]
pub struct Span {
    pub span: u64,
    /// Index of the calling span in [`Spans::spans`] (`None`: the driver).
    pub parent: Option<usize>,
    pub target: u32,
    pub submit: u64,
    /// Start of its last attempt, if it started by the instant.
    pub start: Option<u64>,
    /// When it ended, if it ended by the instant.
    pub end: Option<u64>,
    pub ok: bool,
    /// Node index and worker pid of its last attempt (`u32::MAX`: not placed yet).
    pub node: u32,
    pub pid: u32,
    pub arg_bytes: u64,
    pub return_bytes: u64,
    pub put_bytes: u64,
    /// Where each phase began, in order, from (submit, queued); the call's end (or the
    /// instant) closes the last.
    pub phases: SmallVec<[(u64, Phase); 3]>,
    /// The calls (by index) whose returns it took as arguments, not ready when it was
    /// submitted: what it waited for before it could run.
    pub deps: SmallVec<[usize; 1]>,
}

impl Span {
    pub fn in_flight(&self) -> bool {
        self.end.is_none()
    }

    /// The phase it is in at its end (or the instant).
    pub fn phase(&self) -> Phase {
        self.phases.last().map(|p| p.1).unwrap_or(Phase::Queued)
    }

    /// Each phase's interval (phase, from, to), in order, closed at `end` (the span's
    /// end or the instant: [`Spans::end_or_at`]). Empty intervals are left out.
    pub fn intervals(&self, end: u64) -> impl Iterator<Item = (Phase, u64, u64)> + '_ {
        self.phases.iter().enumerate().filter_map(move |(k, &(from, phase))| {
            let to = self.phases.get(k + 1).map(|p| p.0).unwrap_or(end).min(end);
            (to > from).then_some((phase, from, to))
        })
    }

    /// Time by phase up to `end`.
    pub fn times(&self, end: u64) -> PhaseTimes {
        let mut t = PhaseTimes::default();
        for (phase, from, to) in self.intervals(end) {
            t.add(phase, to - from);
        }
        t
    }

    /// Time in `phase` within `[a, b)`, up to `end`.
    pub fn overlap(&self, phase: Phase, a: u64, b: u64, end: u64) -> u64 {
        self.intervals(end)
            .filter(|(p, _, _)| *p == phase)
            .map(|(_, from, to)| to.min(b).saturating_sub(from.max(a)))
            .sum()
    }

    fn enter(&mut self, t: u64, phase: Phase) {
        if self.phase() != phase {
            self.phases.push((t, phase));
        }
    }
}

/// A job's spans as of `at`.
#[derive(Clone, Debug)]
pub struct Spans {
    pub spans: Arc<Vec<Span>>,
    pub index: Arc<FxHashMap<u64, usize>>,
    /// Records replayed (a prefix of the job's: those made at or before `at`).
    pub records: usize,
    pub at: u64,
}

impl Spans {
    /// Replay `job`'s records made at or before `at` (µs) into spans, in submit order.
    pub fn replay(job: &JobRecord, at: u64) -> Spans {
        // Sized once: a job at the recording cap has 100,000 spans, and growing the
        // table and the index step by step cost a third of the replay.
        let calls = job.recorded_calls as usize;
        let mut out = Replay {
            spans: Vec::with_capacity(calls),
            index: FxHashMap::with_capacity_and_hasher(calls, Default::default()),
        };
        let mut records = 0;
        for r in job.records.iter() {
            if r.time() > at {
                break;
            }
            records += 1;
            match *r {
                Rec::Submit { span, parent, target, t, arg_bytes } => {
                    let parent = out.index.get(&parent).copied();
                    out.index.insert(span, out.spans.len());
                    out.spans.push(Span {
                        span,
                        parent,
                        target,
                        submit: t,
                        start: None,
                        end: None,
                        ok: true,
                        node: u32::MAX,
                        pid: 0,
                        arg_bytes,
                        return_bytes: 0,
                        put_bytes: 0,
                        phases: smallvec::smallvec![(t, Phase::Queued)],
                        deps: SmallVec::new(),
                    });
                }
                Rec::Begin { span, t, node, pid } => {
                    if let Some(&i) = out.index.get(&span) {
                        let s = &mut out.spans[i];
                        s.start = Some(t);
                        s.node = node;
                        s.pid = pid;
                        s.enter(t, Phase::Executing);
                    }
                }
                Rec::Dep { span, on, .. } => {
                    if let (Some(&i), Some(&d)) = (out.index.get(&span), out.index.get(&on)) {
                        out.spans[i].deps.push(d);
                    }
                }
                Rec::Block { span, t } => {
                    if let Some(&i) = out.index.get(&span) {
                        out.spans[i].enter(t, Phase::Blocked);
                    }
                }
                Rec::Unblock { span, t } => {
                    if let Some(&i) = out.index.get(&span) {
                        out.spans[i].enter(t, Phase::Executing);
                    }
                }
                Rec::Requeue { span, t } => {
                    if let Some(&i) = out.index.get(&span) {
                        out.spans[i].enter(t, Phase::Queued);
                    }
                }
                Rec::End { span, t, ok, return_bytes } => {
                    if let Some(&i) = out.index.get(&span) {
                        let s = &mut out.spans[i];
                        s.end = Some(t);
                        s.ok = ok;
                        s.return_bytes = return_bytes;
                    }
                }
                Rec::Put { span, bytes, .. } => {
                    if let Some(&i) = out.index.get(&span) {
                        out.spans[i].put_bytes += bytes;
                    }
                }
            }
        }
        Spans { spans: Arc::new(out.spans), index: Arc::new(out.index), records, at }
    }

    /// The records a replay up to `at` takes: a prefix of the job's, as records are
    /// made in time order. Two instants with the same count have the same spans.
    pub fn records_until(job: &JobRecord, at: u64) -> usize {
        match job.records.get(job.records.len().wrapping_sub(1)) {
            Some(last) if last.time() <= at => job.records.len(),
            _ => job.records.partition_point(|r| r.time() <= at),
        }
    }

    /// The same spans seen at another instant with the same records
    /// ([`Spans::records_until`]): only calls still running read the instant.
    pub fn at(&self, at: u64) -> Spans {
        Spans { at, ..self.clone() }
    }

    /// Whether a call is still running or queued at the end of the records: then a
    /// view's numbers depend on the instant, not only on the records.
    pub fn any_open(&self) -> bool {
        self.spans.iter().any(|s| s.end.is_none())
    }

    /// Each span's children, by index, in submit order.
    pub fn children(&self) -> Vec<Vec<usize>> {
        let mut c = vec![Vec::new(); self.spans.len()];
        for (i, s) in self.spans.iter().enumerate() {
            if let Some(p) = s.parent {
                c[p].push(i);
            }
        }
        c
    }

    /// Index of the driver span (the first one recorded).
    pub fn root(&self) -> Option<usize> {
        self.spans.iter().position(|s| s.parent.is_none())
    }

    /// End of a span as seen at the instant (still running: the instant).
    pub fn end_or_at(&self, i: usize) -> u64 {
        self.spans[i].end.unwrap_or(self.at).max(self.spans[i].submit)
    }

    /// A span's time by phase, to its end or the instant.
    pub fn times(&self, i: usize) -> PhaseTimes {
        self.spans[i].times(self.end_or_at(i))
    }
}
