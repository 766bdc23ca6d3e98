//! What fixing a call would save: the job's recorded calls replayed as a model, with
//! one method's execution changed, and the makespan it then takes.
//!
//! Owns: the replay model and the impact ranking. Each call is the sequence it ran:
//! executing stretches, the calls it submitted between them, its waits in `ray.get`
//! (for the calls that ended during the wait), and any requeue gap. A call starts when
//! it was submitted, its argument producers ended, and (on an actor that ran one call at
//! a time) the call before it on that actor ended, plus the latency it showed then (a
//! worker's start, scheduling). A wait in `ray.get` ends when the calls it waited for
//! ended, plus the resume latency it showed. Replayed unchanged it gives back the
//! recorded makespan; replayed with a method's executing stretches made as long as its
//! siblings' (other instances of the same class and method; zero where it has none: an
//! artificial delay), it gives the makespan that fix would leave.
//! Ranking (`whatif/impact.rs`): the top calls on the critical path and the slow outliers among siblings are
//! each re-run alone; where single fixes save little but two outliers together save
//! more, "fix both" is offered too, as parallel twins only save together.
//! Must never: read anything but the job's records (pure function of records + instant).

use super::critical_path;
use super::spans::{Phase, Spans};
use crate::snapshot::flow::{JobRecord, TargetKind};
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

mod impact;
pub(crate) use impact::par_runs;
pub use impact::{
    impact_json, impact_json_of, instant_with, rank, rank_with, text_of, why_less, Impact, Instant, INSTANT_ENTRIES,
};

/// One step of a call's own timeline.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    /// Its body executes this long.
    Exec(u64),
    /// It submits this call (by index).
    Submit(usize),
    /// It waits in `ray.get` for these calls, then this long more to resume.
    Wait(Vec<usize>, u64),
    /// A fixed gap (requeued for a retry, or a wait nothing recorded explains).
    Gap(u64),
}

/// The replay's picture of a job: each call's steps and what gates its start.
#[derive(Clone)]
pub struct Model {
    steps: Vec<Vec<Step>>,
    /// Calls that must end before it starts: argument producers, the call before it on
    /// a one-at-a-time actor.
    after: Vec<Vec<usize>>,
    /// The latency it showed between being able to start and starting.
    latency: Vec<u64>,
    root: usize,
    root_start: u64,
    /// Per call: its target, and whether it ran.
    target: Vec<u32>,
    ran: Vec<bool>,
    /// Calls gated on each call (starts waiting for it, waits in `ray.get` for it): the
    /// same for every re-run, so made once.
    gated: Vec<Vec<usize>>,
}

/// Execution changes to try: target → the most each of its executing stretches takes.
pub type Fix = BTreeMap<u32, u64>;

impl Model {
    /// The model of a finished job (`None` while it runs, or with nothing recorded).
    pub fn of(job: &JobRecord, spans: &Spans) -> Option<Model> {
        let root = spans.root()?;
        spans.spans[root].end?;
        let n = spans.spans.len();
        let children = spans.children();
        let mut steps = vec![Vec::new(); n];
        let mut after = vec![Vec::new(); n];
        let mut latency = vec![0u64; n];
        let mut ran = vec![false; n];
        // Calls on each actor, in the order they started; whether it ran one at a time.
        let mut on_actor: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, s) in spans.spans.iter().enumerate() {
            if let (Some(a), Some(_)) = (job.target(s.target).actor, s.start) {
                on_actor.entry(a).or_default().push(i);
            }
        }
        for calls in on_actor.values_mut() {
            calls.sort_by_key(|&i| (first_start(spans, i), i));
            let serial = calls.windows(2).all(|w| spans.end_or_at(w[0]) <= first_start(spans, w[1]).unwrap_or(0));
            if serial {
                for w in calls.windows(2) {
                    after[w[1]].push(w[0]);
                }
            }
        }
        for (i, s) in spans.spans.iter().enumerate() {
            let Some(start) = first_start(spans, i) else {
                // Ended without running (failed before it started): it ends as long
                // after its submit as it did, so that whoever waits for it goes on.
                if let Some(end) = s.end {
                    ran[i] = true;
                    latency[i] = end.saturating_sub(s.submit);
                }
                continue;
            };
            ran[i] = true;
            after[i].extend(s.deps.iter().copied().filter(|&d| spans.spans[d].end.is_some()));
            let gate = after[i].iter().map(|&d| spans.end_or_at(d)).chain([s.submit]).max().unwrap_or(s.submit);
            latency[i] = if i == root { 0 } else { start.saturating_sub(gate) };
            steps[i] = timeline(spans, i, start, &children[i]);
        }
        let mut gated = vec![Vec::new(); n];
        for (i, after) in after.iter().enumerate() {
            for &d in after {
                gated[d].push(i);
            }
        }
        for (i, steps) in steps.iter().enumerate() {
            for s in steps {
                if let Step::Wait(calls, _) = s {
                    for &c in calls {
                        gated[c].push(i);
                    }
                }
            }
        }
        Some(Model {
            gated,
            steps,
            after,
            latency,
            root,
            root_start: spans.spans[root].submit,
            target: spans.spans.iter().map(|s| s.target).collect(),
            ran,
        })
    }

    /// The makespan (µs) with `fix` applied: each executing stretch of a fixed target's
    /// calls takes the fix's length instead.
    pub fn makespan(&self, fix: &Fix) -> u64 {
        Replay::new(self, fix).run()
    }

    /// The latency call `i` showed between being able to start and starting, µs.
    pub fn latency(&self, i: usize) -> u64 {
        self.latency.get(i).copied().unwrap_or(0)
    }

    /// The makespan (µs) with a [`Change`] to the job: a copy of the model is changed
    /// and re-run, so that the model itself stays the recorded job's.
    pub fn makespan_changed(&self, change: &Change) -> u64 {
        if change.latency.is_empty() && change.together.is_empty() && change.wait_order.is_empty() {
            return self.makespan(&change.exec);
        }
        let mut m = self.clone();
        for &(i, l) in &change.latency {
            if let Some(x) = m.latency.get_mut(i) {
                *x = (*x).min(l);
            }
        }
        for (caller, calls) in &change.together {
            m.submit_together(*caller, calls, &change.unrecorded);
        }
        for (caller, order) in &change.wait_order {
            m.reorder_waits(*caller, order);
        }
        m.makespan(&change.exec)
    }

    /// `caller` submits `calls` together where it submitted the first of them, and waits
    /// for them all where it waited for the last of them alone: its calls pipelined
    /// instead of waited on one at a time. Waits on other calls stay where they were.
    /// `unrecorded`: per call, how much of the caller's executing after its submit was
    /// in truth a wait for it that nothing recorded (whole-ms rows): that much of it
    /// becomes part of the one wait too.
    fn submit_together(&mut self, caller: usize, calls: &[usize], unrecorded: &BTreeMap<usize, u64>) {
        let Some(old) = self.steps.get(caller) else { return };
        let set: std::collections::BTreeSet<usize> = calls.iter().copied().collect();
        let mut steps = Vec::with_capacity(old.len());
        let mut submitted = false;
        let (mut waited, mut resume, mut at) = (Vec::new(), 0, None);
        // The call submitted last, and how much of the caller's executing is its wait.
        let mut owed: Option<(usize, u64)> = None;
        for step in old {
            match step {
                Step::Submit(c) if set.contains(c) => {
                    if !submitted {
                        submitted = true;
                        steps.extend(old.iter().filter_map(|s| match s {
                            Step::Submit(c) if set.contains(c) => Some(Step::Submit(*c)),
                            _ => None,
                        }));
                    }
                    owed = unrecorded.get(c).map(|&us| (*c, us));
                }
                Step::Wait(w, r) if !w.is_empty() && w.iter().all(|c| set.contains(c)) => {
                    waited.extend(w.iter().copied());
                    resume = *r;
                    at = Some(steps.len());
                    steps.push(Step::Gap(0));
                }
                Step::Exec(d) if owed.is_some_and(|(_, us)| us > 0) => {
                    let (c, us) = owed.expect("checked above");
                    let w = us.min(*d);
                    owed = Some((c, us - w));
                    if !waited.contains(&c) {
                        waited.push(c);
                    }
                    at = Some(steps.len());
                    steps.push(Step::Gap(0));
                    if *d > w {
                        steps.push(Step::Exec(*d - w));
                    }
                }
                s => steps.push(s.clone()),
            }
        }
        if let Some(at) = at {
            for &c in &waited {
                if !self.gated[c].contains(&caller) {
                    self.gated[c].push(caller);
                }
            }
            steps[at] = Step::Wait(waited, resume);
        }
        self.steps[caller] = steps;
    }

    /// `caller`'s waits on one call each take the calls in `order` instead (as
    /// `ray.wait` hands back whichever is ready first), and it waits for them all
    /// before it ends (it had every result by its end).
    fn reorder_waits(&mut self, caller: usize, order: &[usize]) {
        let Some(steps) = self.steps.get_mut(caller) else { return };
        let mut next = order.iter();
        for s in steps.iter_mut() {
            if let Step::Wait(w, _) = s {
                if w.len() == 1 {
                    match next.next() {
                        Some(&c) => w[0] = c,
                        None => break,
                    }
                }
            }
        }
        steps.push(Step::Wait(order.to_vec(), 0));
        for &c in order {
            if !self.gated[c].contains(&caller) {
                self.gated[c].push(caller);
            }
        }
    }
}

/// One re-run's change to a job, for a finding's what-if (`findings`).
#[derive(Clone, Debug, Default)]
pub struct Change {
    /// Executing stretches of these targets take no longer than this.
    pub exec: Fix,
    /// Calls whose start latency becomes no longer than this, µs.
    pub latency: Vec<(usize, u64)>,
    /// (caller, calls): the calls submitted together and waited for once.
    pub together: Vec<(usize, Vec<usize>)>,
    /// Per call of `together`: how much of its caller's executing after its submit
    /// was a wait for it that nothing recorded, µs.
    pub unrecorded: BTreeMap<usize, u64>,
    /// (caller, calls): its one-call waits take the calls in this order.
    pub wait_order: Vec<(usize, Vec<usize>)>,
}

/// A call's first start (its earliest executing stretch).
pub(crate) fn first_start(spans: &Spans, i: usize) -> Option<u64> {
    let s = &spans.spans[i];
    s.phases.iter().find(|p| p.1 == Phase::Executing).map(|p| p.0).or(s.start)
}

/// A call's own steps, from its first start to its end.
pub(crate) fn timeline(spans: &Spans, i: usize, start: u64, children: &[usize]) -> Vec<Step> {
    let s = &spans.spans[i];
    let end = spans.end_or_at(i);
    let mut subs: Vec<(u64, usize)> = children.iter().map(|&c| (spans.spans[c].submit, c)).collect();
    subs.sort();
    let mut next_sub = subs.partition_point(|&(t, _)| t < start);
    // Submits before its first start (none, for a consistent record) go first.
    let mut steps: Vec<Step> = subs[..next_sub].iter().map(|&(_, c)| Step::Submit(c)).collect();
    for (phase, from, to) in s.intervals(end).filter(|(_, _, to)| *to > start) {
        let from = from.max(start);
        if phase != Phase::Executing {
            // Calls submitted by the instant it blocked or was requeued come first: a
            // caller that submits and blocks in the same instant (`ray.get(f.remote())`)
            // has an executing stretch of zero between them, which no interval holds,
            // and its wait would otherwise come before the call it waits for.
            while next_sub < subs.len() && subs[next_sub].0 <= from {
                steps.push(Step::Submit(subs[next_sub].1));
                next_sub += 1;
            }
        }
        match phase {
            Phase::Executing => {
                let mut at = from;
                while next_sub < subs.len() && subs[next_sub].0 < to {
                    let (t, c) = subs[next_sub];
                    steps.push(Step::Exec(t.saturating_sub(at)));
                    steps.push(Step::Submit(c));
                    at = t.max(at);
                    next_sub += 1;
                }
                steps.push(Step::Exec(to - at));
            }
            Phase::Blocked => {
                // What it waited for: its calls submitted before the wait that ended in it.
                let waited: Vec<usize> = children
                    .iter()
                    .copied()
                    .filter(|&c| spans.spans[c].submit <= from)
                    .filter(|&c| spans.spans[c].end.is_some_and(|e| e > from && e <= to))
                    .collect();
                match waited.iter().map(|&c| spans.end_or_at(c)).max() {
                    Some(last) => steps.push(Step::Wait(waited, to - last)),
                    None => steps.push(Step::Gap(to - from)),
                }
            }
            Phase::Queued => steps.push(Step::Gap(to - from)),
        }
    }
    steps.extend(subs[next_sub..].iter().map(|&(_, c)| Step::Submit(c)));
    steps
}

/// One replay: a discrete-event run of the model's calls.
struct Replay<'a> {
    m: &'a Model,
    fix: &'a Fix,
    /// Per call: its next step, whether it was submitted, when it ended.
    pc: Vec<usize>,
    submitted: Vec<Option<u64>>,
    ended: Vec<Option<u64>>,
    started: Vec<bool>,
    /// Calls stopped at a wait in `ray.get` for calls not ended yet.
    waiting: Vec<bool>,
    /// Per call at a wait: how many of the calls it waits for have been seen ended,
    /// and the latest of their ends.
    waited: Vec<(usize, u64)>,
    /// (time, call) to go on with; a min-heap.
    queue: BinaryHeap<Reverse<(u64, usize)>>,
}

impl<'a> Replay<'a> {
    fn new(m: &'a Model, fix: &'a Fix) -> Replay<'a> {
        let n = m.steps.len();
        Replay {
            m,
            fix,
            pc: vec![0; n],
            submitted: vec![None; n],
            ended: vec![None; n],
            started: vec![false; n],
            waiting: vec![false; n],
            waited: vec![(0, 0); n],
            queue: BinaryHeap::new(),
        }
    }

    fn run(mut self) -> u64 {
        let root = self.m.root;
        self.submitted[root] = Some(self.m.root_start);
        self.try_start(root);
        while let Some(Reverse((t, i))) = self.queue.pop() {
            self.go_on(i, t);
        }
        self.ended[root].unwrap_or(u64::MAX).saturating_sub(self.m.root_start)
    }

    /// Start a call if it was submitted and every call it waits for ended.
    fn try_start(&mut self, i: usize) {
        if self.started[i] || !self.m.ran[i] {
            return;
        }
        let Some(sub) = self.submitted[i] else { return };
        let mut gate = sub;
        for &d in &self.m.after[i] {
            match self.ended[d] {
                Some(e) => gate = gate.max(e),
                None => return,
            }
        }
        self.started[i] = true;
        self.queue.push(Reverse((gate + self.m.latency[i], i)));
    }

    /// Run a call's steps from time `t` until it must wait or ends.
    fn go_on(&mut self, i: usize, t: u64) {
        while let Some(step) = self.m.steps[i].get(self.pc[i]) {
            match step {
                Step::Exec(d) => {
                    self.pc[i] += 1;
                    // A fix makes a stretch no longer than the fixed length.
                    let d = self.fix.get(&self.m.target[i]).map_or(*d, |&f| f.min(*d));
                    if d > 0 {
                        self.queue.push(Reverse((t + d, i)));
                        return;
                    }
                }
                Step::Submit(c) => {
                    self.pc[i] += 1;
                    self.submitted[*c] = Some(t);
                    self.try_start(*c);
                }
                Step::Wait(calls, resume) => {
                    // Calls before the cursor have ended (their latest end is kept): a
                    // driver waiting on 20,000 calls is woken by each, and must not
                    // look at the ended ones again each time.
                    let (mut pos, mut last) = self.waited[i];
                    while let Some(&c) = calls.get(pos) {
                        match self.ended[c] {
                            Some(e) => last = last.max(e),
                            None => {
                                // Woken again when it ends.
                                self.waited[i] = (pos, last);
                                self.waiting[i] = true;
                                return;
                            }
                        }
                        pos += 1;
                    }
                    let last = last.max(t);
                    self.waited[i] = (0, 0);
                    self.waiting[i] = false;
                    self.pc[i] += 1;
                    if last + resume > t {
                        self.queue.push(Reverse((last + resume, i)));
                        return;
                    }
                }
                Step::Gap(d) => {
                    self.pc[i] += 1;
                    if *d > 0 {
                        self.queue.push(Reverse((t + d, i)));
                        return;
                    }
                }
            }
        }
        if self.ended[i].is_none() {
            self.ended[i] = Some(t);
            // A call ends once (the check above), so each gated call is looked at once.
            for &k in &self.m.gated[i] {
                if self.waiting[k] {
                    // Stopped in `ray.get`: look again now (once: until it looks, it
                    // has no other event, and a second would move it on twice).
                    self.waiting[k] = false;
                    self.queue.push(Reverse((t, k)));
                } else if !self.started[k] {
                    self.try_start(k);
                }
            }
        }
    }
}
