//! The critical path, and actors and methods ranked by their execution on it: what the
//! bottlenecks view, the what-ifs and the findings all read.
//!
//! Owns: the critical path. It is walked backwards from the driver's end. Inside a
//! call, the path steps into the child call that ended last before the current instant
//! (what the call waited on in `ray.get`); once no child remains, it reaches the call's
//! first start. A call that started after it was submitted waited for what ended last
//! before it could run: an argument's producer (the path steps into that call), or the
//! previous execution on its actor (one call at a time: into that one); with neither,
//! it waited for a worker, and the path returns to its caller at the submit. Every
//! instant of the driver's wall time lands on exactly one call, in one of that call's
//! phases (queued, executing, blocked): that is its time on the path. Waiting is given
//! to what was waited for, so a call's executing time on the path is what making it
//! faster could save.
//! Must never: read anything but the job's records (pure function of records + instant).

use super::spans::{Phase, PhaseTimes, Spans};
use crate::snapshot::flow::{JobRecord, TargetKind};
use std::collections::BTreeMap;

/// One ranked entry: a target (function, or one actor's method).
#[derive(Clone, Debug)]
pub struct Entry {
    pub target: u32,
    /// Its executing time on the critical path, µs: what the ranking sorts by.
    pub self_us: u64,
    /// Its time on the path by phase (executing is `self_us`).
    pub on_path: PhaseTimes,
    pub calls: u64,
    /// Caller target → calls it submitted to this one.
    pub callers: BTreeMap<u32, u64>,
    /// Its call holding the most time on the path (span index).
    pub slowest: usize,
    /// That call's time on the path, µs.
    pub(super) slowest_us: u64,
    /// Calls of it on the path whose waits were inferred (not measured).
    pub inferred_calls: u64,
}

/// Time on the critical path per span (µs, all phases), and the path's length.
pub fn critical_self(spans: &Spans, job: &JobRecord) -> (Vec<u64>, u64) {
    let (on_path, total) = critical_path(spans, job);
    (on_path.iter().map(PhaseTimes::wall).collect(), total)
}

/// Time on the critical path per span, by phase, and the path's length.
pub fn critical_path(spans: &Spans, job: &JobRecord) -> (Vec<PhaseTimes>, u64) {
    let n = spans.spans.len();
    let mut on_path = vec![PhaseTimes::default(); n];
    let Some(root) = spans.root() else { return (on_path, 0) };
    // The instants in [a, b) of span i, by the phase it was in then.
    let charge = |on_path: &mut Vec<PhaseTimes>, i: usize, a: u64, b: u64| {
        if b <= a {
            return;
        }
        let s = &spans.spans[i];
        let end = spans.end_or_at(i);
        let mut left = b - a;
        for phase in [Phase::Queued, Phase::Executing, Phase::Blocked] {
            let us = s.overlap(phase, a, b, end).min(left);
            on_path[i].add(phase, us);
            left -= us;
        }
        // Before its submit or past its end (never, for a consistent record): its own.
        on_path[i].add(Phase::Executing, left);
    };
    // Children by end, and each actor's executions by end, for "ended last before t".
    let mut children = spans.children();
    for c in &mut children {
        c.sort_by_key(|&i| (spans.end_or_at(i), i));
    }
    let mut on_actor: BTreeMap<u64, Vec<(u64, usize)>> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate() {
        if let (Some(a), Some(_)) = (job.target(s.target).actor, s.start) {
            on_actor.entry(a).or_default().push((spans.end_or_at(i), i));
        }
    }
    for v in on_actor.values_mut() {
        v.sort();
    }
    // A call's first start: its earlier attempts' time is its own (their children too).
    let first_start = |i: usize| {
        let s = &spans.spans[i];
        s.phases.iter().find(|p| p.1 == Phase::Executing).map(|p| p.0).or(s.start)
    };
    let total = spans.end_or_at(root) - spans.spans[root].submit;
    let (mut cur, mut t) = (root, spans.end_or_at(root));
    // Each step moves strictly back in time or into a call ending no later: bounded.
    let mut steps = 0usize;
    loop {
        steps += 1;
        if steps > 4 * n + 16 {
            break;
        }
        let s = &spans.spans[cur];
        let start = first_start(cur).unwrap_or(t).min(t);
        // The child ending last at or before t, after this call started (submitted before t,
        // so coming back to a caller at a child's submit never picks that child again).
        let ch = &children[cur];
        let k = ch.partition_point(|&c| spans.end_or_at(c) <= t);
        let waited = (0..k).rev().map(|j| ch[j]).find(|&c| spans.end_or_at(c) > start && spans.spans[c].submit < t);
        if let Some(c) = waited {
            let end = spans.end_or_at(c);
            charge(&mut on_path, cur, end, t);
            cur = c;
            t = end;
            continue;
        }
        charge(&mut on_path, cur, start, t);
        if cur == root {
            break;
        }
        // What it waited for before it could run: the argument whose producer ended
        // last, or the previous execution on its actor, whichever ended later.
        let dep = s
            .deps
            .iter()
            .map(|&d| (spans.end_or_at(d), d))
            .filter(|&(e, d)| d != cur && e > s.submit && e <= start && spans.spans[d].end.is_some())
            .max();
        // An actor with no started call kept (Ray lost their RUNNING) has no executions.
        let prev = job.target(s.target).actor.and_then(|a| {
            let v = on_actor.get(&a)?;
            let k = v.partition_point(|&(e, _)| e <= start);
            // The execution ending last by its start (never itself; one step back at most).
            (0..k).rev().map(|j| v[j]).take(2).find(|&(_, i)| i != cur).filter(|&(e, _)| e > s.submit)
        });
        match dep.max(prev) {
            Some((end, p)) => {
                charge(&mut on_path, cur, end, start);
                cur = p;
                t = end;
            }
            None => {
                charge(&mut on_path, cur, s.submit, start);
                t = s.submit;
                match s.parent {
                    Some(p) => cur = p,
                    None => break,
                }
            }
        }
    }
    (on_path, total)
}

/// Entries ranked by executing time on the path (ties: more calls, then name); the
/// driver is left out (its own time on the path is the returned `PhaseTimes`). Returns
/// the entries, the path's length and the driver's time on it.
pub fn rank(job: &JobRecord, spans: &Spans) -> Ranked {
    let (on_path, total) = critical_path(spans, job);
    let mut by: BTreeMap<u32, Entry> = BTreeMap::new();
    let mut driver = PhaseTimes::default();
    for (i, s) in spans.spans.iter().enumerate() {
        let p = on_path[i];
        if job.target(s.target).kind == TargetKind::Driver {
            driver.queued += p.queued;
            driver.executing += p.executing;
            driver.blocked += p.blocked;
            continue;
        }
        let e = by.entry(s.target).or_insert_with(|| Entry {
            target: s.target,
            self_us: 0,
            on_path: PhaseTimes::default(),
            calls: 0,
            callers: BTreeMap::new(),
            slowest: i,
            slowest_us: 0,
            inferred_calls: 0,
        });
        if p.wall() > e.slowest_us {
            e.slowest = i;
            e.slowest_us = p.wall();
        }
        if p.wall() > 0 && job.waits_inferred(s.span) {
            e.inferred_calls += 1;
        }
        e.self_us += p.executing;
        e.on_path.queued += p.queued;
        e.on_path.executing += p.executing;
        e.on_path.blocked += p.blocked;
        e.calls += 1;
        if let Some(p) = s.parent {
            *e.callers.entry(spans.spans[p].target).or_default() += 1;
        }
    }
    let mut v: Vec<Entry> = by.into_values().filter(|e| e.on_path.wall() > 0).collect();
    v.sort_by(|a, b| {
        b.self_us
            .cmp(&a.self_us)
            .then(b.on_path.wall().cmp(&a.on_path.wall()))
            .then(b.calls.cmp(&a.calls))
            .then_with(|| job.target(a.target).instance_name().cmp(&job.target(b.target).instance_name()))
    });
    (v, total, driver)
}

/// The ranked entries, the critical path's length (µs) and the driver's time on it.
pub type Ranked = (Vec<Entry>, u64, PhaseTimes);
