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
    /// model's (Ray does not say whether it computed or slept), but for what its call
    /// is said to compute ([`ReplayCall::computes`]).
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
    /// It was the first call its worker process ran: its held stretches include what
    /// Ray spent loading the function, which the model charges to whichever call is
    /// first on a worker in the replay (`ReplayJob::for_first_call_cost`).
    pub first_on_worker: bool,
    pub steps: Vec<ReplayStep>,
    /// How much of its held time, from the first, is CPU work on its node's cores rather
    /// than held alone (`simulate --cpu`). Made so when its program is built, after any
    /// other change to its stretches.
    pub computes: Computes,
}

/// What a call computes of its held time ([`ReplayCall::computes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Computes {
    /// Nothing: all of it is held.
    #[default]
    Nothing,
    /// Its first this many µs (at most all of it).
    First(u64),
    /// This share of it (0 to 1), from its first µs.
    Share(f64),
}

impl Computes {
    /// The µs computed of `held` µs.
    pub fn of(self, held: u64) -> u64 {
        match self {
            Computes::Nothing => 0,
            Computes::First(us) => us.min(held),
            Computes::Share(share) => ((held as f64 * share.clamp(0.0, 1.0)).round() as u64).min(held),
        }
    }
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
    /// Calls whose end the trace lacks (Ray had not reported it when its job ended,
    /// or the recording stopped before the observer read it).
    pub ends_lost: u32,
}

impl ReplayCall {
    /// Its held time in all, if it only held its worker (no submits, no waits).
    pub fn held_only(&self) -> Option<u64> {
        self.steps.iter().map(|s| if let ReplayStep::Hold(us) = s { Some(*us) } else { None }).sum()
    }

    /// Take up to `us` out of its held stretches, from its first (`from_end`: its last)
    /// on; a stretch left empty is dropped.
    pub fn shorten_holds(&mut self, us: u64, from_end: bool) {
        let mut left = us;
        let mut take = |step: &mut ReplayStep| {
            if let ReplayStep::Hold(held) = step {
                let taken = left.min(*held);
                *held -= taken;
                left -= taken;
            }
        };
        if from_end {
            self.steps.iter_mut().rev().for_each(&mut take);
        } else {
            self.steps.iter_mut().for_each(&mut take);
        }
        self.steps.retain(|s| *s != ReplayStep::Hold(0));
    }
}

impl ReplayJob {
    /// What the replay cannot reproduce of the recorded job's end, said to the user:
    /// the driver's last wait closed at the job's end on calls whose end the trace
    /// lacks, so what the driver did after it (a linger, a shutdown) is not replayed.
    pub fn end_unknown(&self) -> Option<String> {
        let driver_last_waits = self.calls.first().is_some_and(|d| d.steps.last() == Some(&ReplayStep::Get));
        (self.ends_lost > 0 && driver_last_waits).then(|| {
            format!(
                "the trace lacks the end of {} of the job's calls, among them what the driver waited for last: the \
                 replay ends the driver at those calls' end, without what it did after them (a recording stopped \
                 before the observer said \"settled\" for the job? see docs/observe.md)",
                self.ends_lost
            )
        })
    }

    /// The job with `first_call_us` taken out of each function call that was its worker's
    /// first (from its earliest stretches, where Ray loads the function): the model pays
    /// `scheduler.worker_first_call_latency` for each call first on a worker in the
    /// replay, so a recorded first call would pay twice, and pay it where it may no
    /// longer be first.
    pub fn for_first_call_cost(&self, first_call_us: u64) -> ReplayJob {
        let mut job = self.clone();
        let typical = typical_later_holds(&job.calls);
        for call in job.calls.iter_mut().filter(|c| c.first_on_worker && c.kind == ReplayKind::Function) {
            // Its own extra where its function's later calls show what the body took:
            // first calls that paid unlike sums (a loaded machine: 3.5 s and 5.5 s) must
            // not each give up their median, which cuts the shorter one to nothing and
            // then charges it the median in full.
            let cut = match (call.held_only(), typical.get(&call.name)) {
                (Some(held), Some(&body)) => held.saturating_sub(body),
                _ => first_call_us,
            };
            call.shorten_holds(cut, false);
        }
        job
    }
}

/// Per function, the median of what its calls that were not first on their worker
/// held (those that only held it): what its body takes once loaded.
fn typical_later_holds(calls: &[ReplayCall]) -> std::collections::BTreeMap<String, u64> {
    median_holds(calls.iter().filter(|c| !c.first_on_worker && c.kind == ReplayKind::Function), 1)
}

/// Per name, the median of what `calls` held, of those that only held their worker (no
/// submits, no waits), for names with at least `at_least` such calls.
pub(crate) fn median_holds<'a>(
    calls: impl Iterator<Item = &'a ReplayCall>,
    at_least: usize,
) -> std::collections::BTreeMap<String, u64> {
    let mut held: std::collections::BTreeMap<&str, Vec<u64>> = std::collections::BTreeMap::new();
    for c in calls {
        if let Some(h) = c.held_only() {
            held.entry(c.name.as_str()).or_default().push(h);
        }
    }
    held.into_iter()
        .filter(|(_, v)| v.len() >= at_least.max(1))
        .map(|(name, mut v)| {
            v.sort_unstable();
            (name.to_string(), v[v.len() / 2])
        })
        .collect()
}

/// The workload that runs a replay.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReplayConfig {
    pub name: String,
    #[serde(skip)]
    pub job: Arc<ReplayJob>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(kind: ReplayKind, first_on_worker: bool, steps: Vec<ReplayStep>) -> ReplayCall {
        ReplayCall {
            kind,
            name: "f".into(),
            class: "f".into(),
            actor: None,
            resources: Vec::new(),
            deps: Vec::new(),
            return_bytes: 0,
            first_on_worker,
            steps,
            computes: Computes::Nothing,
        }
    }

    #[test]
    fn a_recorded_first_call_gives_up_the_first_call_cost_from_its_earliest_stretches() {
        let job = ReplayJob {
            source: "t".into(),
            calls: vec![
                call(ReplayKind::Driver, false, vec![ReplayStep::Hold(5_000)]),
                call(
                    ReplayKind::Function,
                    true,
                    vec![ReplayStep::Hold(30), ReplayStep::Submit(2), ReplayStep::Hold(200)],
                ),
                call(ReplayKind::Function, false, vec![ReplayStep::Hold(150)]),
                call(ReplayKind::Method, true, vec![ReplayStep::Hold(150)]),
            ],
            actors: 0,
            recorded_makespan_us: 0,
            ends_lost: 0,
        };
        let out = job.for_first_call_cost(100);
        assert_eq!(out.calls[1].steps, vec![ReplayStep::Submit(2), ReplayStep::Hold(130)]);
        // Not a first call, an actor's method, the driver: as recorded.
        for k in [0, 2, 3] {
            assert_eq!(out.calls[k].steps, job.calls[k].steps);
        }
    }

    #[test]
    fn a_driver_whose_last_wait_the_trace_closed_at_the_jobs_end_is_said() {
        let driver = |steps| call(ReplayKind::Driver, false, steps);
        let job = |steps, ends_lost| ReplayJob {
            source: "t".into(),
            calls: vec![driver(steps), call(ReplayKind::Function, false, vec![ReplayStep::Hold(150)])],
            actors: 0,
            recorded_makespan_us: 0,
            ends_lost,
        };
        let waits_last = vec![ReplayStep::Submit(1), ReplayStep::Get];
        let lingers = vec![ReplayStep::Submit(1), ReplayStep::Get, ReplayStep::Hold(2_500_000)];
        assert!(job(waits_last.clone(), 1).end_unknown().unwrap().contains("lacks the end of 1"));
        assert_eq!(job(waits_last, 0).end_unknown(), None, "every end known: the driver did stop there");
        assert_eq!(job(lingers, 1).end_unknown(), None, "the driver's own end is known");
    }

    #[test]
    fn first_calls_that_paid_unlike_sums_each_give_up_their_own() {
        // A loaded machine: two workers' first calls of a 150 ms function took 3.7 s
        // and 5.7 s; the figure (their extras' median) is 4.55 s.
        let f = |first, held| call(ReplayKind::Function, first, vec![ReplayStep::Hold(held)]);
        let job = ReplayJob {
            source: "t".into(),
            calls: vec![
                call(ReplayKind::Driver, false, vec![ReplayStep::Get]),
                f(true, 3_700),
                f(true, 5_700),
                f(false, 150),
                f(false, 160),
                f(false, 140),
            ],
            actors: 0,
            recorded_makespan_us: 0,
            ends_lost: 0,
        };
        let out = job.for_first_call_cost(4_550);
        // Each keeps its body; with the figure charged on each, the two sum as recorded.
        assert_eq!(out.calls[1].steps, vec![ReplayStep::Hold(150)]);
        assert_eq!(out.calls[2].steps, vec![ReplayStep::Hold(150)]);
        assert_eq!(3_700 + 5_700, 2 * (150 + 4_550));
    }
}
