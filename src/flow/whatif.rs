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
//! Ranking: the top calls on the critical path and the slow outliers among siblings are
//! each re-run alone; where single fixes save little but two outliers together save
//! more, "fix both" is offered too, as parallel twins only save together.
//! Must never: read anything but the job's records (pure function of records + instant).

use super::critical_path;
use super::spans::{Phase, Spans};
use crate::snapshot::flow::{JobRecord, TargetKind};
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

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

/// One what-if: the targets fixed together, what each stretch then takes, and the
/// makespan it leaves.
#[derive(Clone, Debug)]
pub struct Impact {
    pub targets: Vec<u32>,
    pub fixed_stretch_us: Vec<u64>,
    pub makespan_us: u64,
    pub saved_us: u64,
}

/// Each target's median executing stretch (targets that never executed: none).
fn stretches(m: &Model) -> BTreeMap<u32, u64> {
    let mut lens: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (i, steps) in m.steps.iter().enumerate() {
        for s in steps {
            if let Step::Exec(d) = s {
                if *d > 0 {
                    lens.entry(m.target[i]).or_default().push(*d);
                }
            }
        }
    }
    lens.into_iter().map(|(t, v)| (t, median(v))).collect()
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Each target's median stretch, and per class-level frame the sorted medians of its
/// targets: a target's siblings' median without scanning every target per target.
struct Stretches {
    own: BTreeMap<u32, u64>,
    by_frame: BTreeMap<u32, Vec<u64>>,
}

impl Stretches {
    fn of(job: &JobRecord, m: &Model) -> Stretches {
        let own = stretches(m);
        let mut by_frame: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for (&t, &d) in &own {
            by_frame.entry(job.target(t).frame).or_default().push(d);
        }
        for v in by_frame.values_mut() {
            v.sort_unstable();
        }
        Stretches { own, by_frame }
    }

    fn own(&self, target: u32) -> u64 {
        self.own.get(&target).copied().unwrap_or(0)
    }

    /// The length a target's executing stretches take when fixed: its siblings' (other
    /// instances of the same class and method), as the median of their medians, so
    /// that a few slow siblings do not set the bar; zero without siblings.
    fn sibling(&self, job: &JobRecord, target: u32) -> u64 {
        let Some(all) = self.by_frame.get(&job.target(target).frame) else { return 0 };
        // The frame's medians without this target's own (if it executed at all).
        let (n, skip) = match self.own.get(&target) {
            Some(d) => (all.len() - 1, Some(all.partition_point(|x| x < d))),
            None => (all.len(), None),
        };
        if n == 0 {
            return 0;
        }
        let k = n / 2;
        match skip {
            Some(p) if p <= k => all[k + 1],
            _ => all[k],
        }
    }
}

/// How many single fixes are tried: the top of the critical path, then slow outliers.
pub const CANDIDATES: usize = 8;

/// `f` over `items` on up to as many threads as the machine has cores, in order: each
/// what-if is a whole re-run of the job, independent of the others.
fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len()).max(1);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let per = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let f = &f;
        let parts: Vec<_> =
            items.chunks(per).map(|chunk| scope.spawn(move || chunk.iter().map(f).collect::<Vec<R>>())).collect();
        parts.into_iter().flat_map(|h| h.join().expect("a what-if re-run panicked")).collect()
    })
}

/// The what-ifs worth reporting, most saved first: each candidate alone, and "fix
/// both" for the two outliers that save most together when that beats either alone.
/// Also returns the recorded makespan the replay reproduced (µs).
pub fn rank(job: &JobRecord, spans: &Spans) -> Option<(Vec<Impact>, u64)> {
    rank_with(job, spans, &critical_path::rank(job, spans))
}

/// [`rank`], given the job's critical-path ranking (`critical_path::rank`).
pub fn rank_with(job: &JobRecord, spans: &Spans, path: &critical_path::Ranked) -> Option<(Vec<Impact>, u64)> {
    let m = Model::of(job, spans)?;
    let base = m.makespan(&Fix::new());
    let st = Stretches::of(job, &m);
    let entries = &path.0;
    // Candidates: the top of the path by execution, then any method whose stretches run
    // well past its siblings' (an outlier off the path now may be on it once the path's
    // top is fixed: its twin).
    let mut candidates: Vec<u32> = entries.iter().take(CANDIDATES / 2).map(|e| e.target).collect();
    let mut outliers: Vec<(u64, u32)> = (0..job.targets.len() as u32)
        .filter(|&t| job.target(t).kind != TargetKind::Driver)
        .filter_map(|t| {
            let (mine, sib) = (st.own(t), st.sibling(job, t));
            (mine > 0 && mine >= sib.saturating_mul(2)).then(|| (mine - sib, t))
        })
        .collect();
    outliers.sort_by(|a, b| b.cmp(a));
    for (_, t) in &outliers {
        if candidates.len() >= CANDIDATES {
            break;
        }
        if !candidates.contains(t) {
            candidates.push(*t);
        }
    }
    let impact = |targets: &[u32]| {
        let fix: Fix = targets.iter().map(|&t| (t, st.sibling(job, t))).collect();
        let makespan = m.makespan(&fix);
        Impact {
            targets: targets.to_vec(),
            fixed_stretch_us: targets.iter().map(|t| fix[t]).collect(),
            makespan_us: makespan,
            saved_us: base.saturating_sub(makespan),
        }
    };
    let mut out: Vec<Impact> = par_map(&candidates, |&t| impact(&[t]));
    // Twins: among the outliers, the pair that saves most together, when that is well
    // more than the best single fix.
    let best_single = out.iter().map(|i| i.saved_us).max().unwrap_or(0);
    let top: Vec<u32> = outliers.iter().take(4).map(|(_, t)| *t).collect();
    let pairs: Vec<[u32; 2]> =
        top.iter().enumerate().flat_map(|(k, &a)| top[k + 1..].iter().map(move |&b| [a, b])).collect();
    let mut best_pair: Option<Impact> = None;
    for p in par_map(&pairs, |pair| impact(pair)) {
        if best_pair.as_ref().is_none_or(|q| p.saved_us > q.saved_us) {
            best_pair = Some(p);
        }
    }
    // A fix that saves less than 0.1 % of the job is no finding, unless it is half of
    // a pair offered: then what each alone saves is the point.
    let pair = best_pair.filter(|p| p.saved_us > best_single.saturating_mul(3) / 2 + 1_000_000);
    out.retain(|i| i.saved_us > 0 && i.saved_us.saturating_mul(1000) >= base);
    if let Some(p) = pair {
        for &t in &p.targets {
            if !out.iter().any(|i| i.targets == [t]) {
                out.push(impact(&[t]));
            }
        }
        out.push(p);
    }
    out.sort_by(|a, b| b.saved_us.cmp(&a.saved_us).then(a.targets.len().cmp(&b.targets.len())));
    Some((out, base))
}

/// Critical-path entries re-run made instant, at most this many (the top of the path):
/// each is a whole re-run of the job.
pub const INSTANT_ENTRIES: usize = 8;

/// What making each of the path's top entries instant saves: one re-run per entry
/// with its executing stretches at zero.
#[derive(Clone, Debug, Default)]
pub struct Instant {
    /// The recorded job re-run unchanged, µs.
    pub base_us: u64,
    /// Per target re-run: the makespan it left, µs.
    pub makespan_us: BTreeMap<u32, u64>,
}

impl Instant {
    /// What making `target` instant saved, µs (`None`: not re-run).
    pub fn saved(&self, target: u32) -> Option<u64> {
        self.makespan_us.get(&target).map(|m| self.base_us.saturating_sub(*m))
    }
}

/// [`Instant`] for the top of `path` (`None`: the job has not ended).
pub fn instant_with(job: &JobRecord, spans: &Spans, path: &critical_path::Ranked) -> Option<Instant> {
    let m = Model::of(job, spans)?;
    let base_us = m.makespan(&Fix::new());
    let targets: Vec<u32> = path.0.iter().take(INSTANT_ENTRIES).map(|e| e.target).collect();
    let runs = par_map(&targets, |&t| (t, m.makespan(&Fix::from([(t, 0)]))));
    Some(Instant { base_us, makespan_us: runs.into_iter().collect() })
}

/// Why making an entry that holds `held_us` of the path instant saves only `saved_us`
/// (`None`: it saves at least half of it, or it holds too little to matter).
/// `beside`: the longest-executing other function or actor method, named as the
/// likely next-longest path.
pub fn why_less(held_us: u64, saved_us: u64, base_us: u64, beside: Option<(&str, u64)>) -> Option<String> {
    if held_us == 0 || saved_us.saturating_mul(2) >= held_us || held_us.saturating_mul(100) < base_us {
        return None;
    }
    let left = base_us.saturating_sub(saved_us) as f64 / 1e6;
    let next = match beside {
        Some((name, us)) => format!(": {name} executed {:.3} s of its own", us as f64 / 1e6),
        None => String::new(),
    };
    Some(format!(
        "made instant, it saves {:.3} s of the {:.3} s it holds: the job still takes {left:.3} s, as the next-longest path \
         (calls that did not wait for it{next}) runs beside it and becomes the critical path",
        saved_us as f64 / 1e6,
        held_us as f64 / 1e6
    ))
}

/// Run `f` over `items` in parallel (for the findings' re-runs).
pub(crate) fn par_runs<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    par_map(items, f)
}

/// The ranking as JSON (`/api/flow/impact`).
pub fn impact_json(job: &JobRecord, spans: &Spans) -> Value {
    impact_json_of(job, spans, rank(job, spans).as_ref())
}

/// [`impact_json`] of a ranking already made (`None`: the job has not ended).
pub fn impact_json_of(job: &JobRecord, spans: &Spans, ranked: Option<&(Vec<Impact>, u64)>) -> Value {
    let secs = |us: u64| us as f64 / 1e6;
    let Some((list, base)) = ranked.map(|(l, b)| (l, *b)) else {
        return json!({"job_id": job.job_hex, "at_s": secs(spans.at), "finished": false, "entries": [],
            "note": "the job has not ended: what a fix saves is computed on a finished job"});
    };
    let recorded = spans.root().map_or(0, |r| spans.end_or_at(r) - spans.spans[r].submit);
    let entries: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(r, i)| {
            let fixes: Vec<Value> = i
                .targets
                .iter()
                .zip(&i.fixed_stretch_us)
                .map(|(&t, &stretch)| {
                    let tg = job.target(t);
                    json!({"name": tg.class_name(), "actor_id": tg.actor_id(), "level": tg.level,
                        "program_flag": tg.flag, "stretch_s": secs(stretch)})
                })
                .collect();
            json!({"rank": r + 1, "fix": fixes, "together": i.targets.len() > 1,
                "makespan_s": secs(i.makespan_us), "saved_s": secs(i.saved_us),
                "saved_share": if base > 0 { i.saved_us as f64 / base as f64 } else { 0.0 }})
        })
        .collect();
    json!({"job_id": job.job_hex, "at_s": secs(spans.at), "finished": true, "truncated": job.truncated(),
        "makespan_s": secs(base), "recorded_makespan_s": secs(recorded), "entries": entries})
}

/// The ranking as text, after the critical path's (the CLI's `bottlenecks.txt`), of a
/// ranking already made (`None`: the job has not ended).
pub fn text_of(job: &JobRecord, ranked: Option<&(Vec<Impact>, u64)>) -> String {
    let Some((list, base)) = ranked.map(|(l, b)| (l, *b)) else {
        return "what fixing saves: the job has not ended\n".into();
    };
    let mut s = format!(
        "what fixing saves, each fix made as fast as its siblings (the job re-run in the model, {:.3} s as recorded):\n",
        base as f64 / 1e6
    );
    if list.is_empty() {
        s.push_str("  no single fix saves 0.1 % or more\n");
    }
    s.push_str("rank  saved_s       share   makespan_s    fix\n");
    for (r, i) in list.iter().enumerate() {
        let fixes: Vec<String> = i
            .targets
            .iter()
            .zip(&i.fixed_stretch_us)
            .map(|(&t, &stretch)| {
                let tg = job.target(t);
                format!(
                    "{} {} (stretches to {:.3} s{})",
                    tg.class_name(),
                    tg.actor_id().unwrap_or_else(|| "-".into()),
                    stretch as f64 / 1e6,
                    if tg.flag { ", flagged" } else { "" }
                )
            })
            .collect();
        s.push_str(&format!(
            "{:>4}  {:>12.3}  {:>5.1}%  {:>12.3}  {}{}\n",
            r + 1,
            i.saved_us as f64 / 1e6,
            if base > 0 { 100.0 * i.saved_us as f64 / base as f64 } else { 0.0 },
            i.makespan_us as f64 / 1e6,
            if i.targets.len() > 1 { "both: " } else { "" },
            fixes.join(" + ")
        ));
    }
    s
}
