//! Bottlenecks: actors and methods ranked by their execution on the job's critical
//! path, with the waiting on the path shown beside it.
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
use super::whatif::{self, Instant};
use crate::snapshot::flow::{JobRecord, TargetKind};
use crate::snapshot::NodeView;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

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
    slowest_us: u64,
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
        let prev = job.target(s.target).actor.and_then(|a| {
            let v = &on_actor[&a];
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

pub fn bottlenecks(job: &JobRecord, spans: &Spans) -> Value {
    let ranked = rank(job, spans);
    let instant = whatif::instant_with(job, spans, &ranked);
    bottlenecks_of(job, spans, &ranked, instant.as_ref(), &[])
}

/// What an entry made instant saves, and why that is far less than it holds, as JSON.
fn saves(
    job: &JobRecord,
    spans: &Spans,
    e: &Entry,
    instant: Option<&Instant>,
    busiest: &[(u64, u32)],
) -> (Value, Value) {
    let Some(i) = instant else { return (Value::Null, Value::Null) };
    match i.saved(e.target) {
        Some(s) => (json!(s as f64 / 1e6), json!(why(job, spans, e, s, i.base_us, busiest))),
        None => (Value::Null, Value::Null),
    }
}

/// Why an entry made instant saves far less than the `held` it holds (`None`: it
/// does not). Either its slowest call ended while its caller was executing, not
/// waiting in `ray.get` (a wait neither recorded nor inferred: the path steps into
/// the call, the re-run holds the caller's time fixed), or another path runs beside it.
fn why(job: &JobRecord, spans: &Spans, e: &Entry, saved: u64, base: u64, busiest: &[(u64, u32)]) -> Option<String> {
    let next = beside(job, e, busiest);
    let generic = whatif::why_less(e.self_us, saved, base, next.as_ref().map(|(n, us)| (n.as_str(), *us)))?;
    let c = &spans.spans[e.slowest];
    if let (Some(p), Some(end)) = (c.parent, c.end) {
        let caller_end = spans.end_or_at(p);
        let waiting = spans.spans[p].overlap(Phase::Blocked, end.saturating_sub(1), end, caller_end) > 0;
        if end < caller_end && !waiting {
            return Some(format!(
                "made instant, it saves {:.3} s of the {:.3} s it holds: its caller {} was executing, not waiting in \
                 ray.get, when it ended (a wait Ray did not record and the times did not show), so the re-run cannot \
                 start what the caller did next any earlier",
                saved as f64 / 1e6,
                e.self_us as f64 / 1e6,
                job.target(spans.spans[p].target).class_name()
            ));
        }
    }
    Some(generic)
}

/// Each function's or actor method's executing time over the whole job, the most
/// first (the driver left out): where the next-longest path likely runs.
fn busiest(job: &JobRecord, spans: &Spans) -> Vec<(u64, u32)> {
    let mut by: BTreeMap<u32, u64> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate() {
        if job.target(s.target).kind != TargetKind::Driver {
            *by.entry(s.target).or_default() += spans.times(i).executing;
        }
    }
    let mut v: Vec<(u64, u32)> = by.into_iter().map(|(t, us)| (us, t)).collect();
    v.sort_by(|a, b| b.cmp(a));
    v.truncate(whatif::INSTANT_ENTRIES + 1);
    v
}

/// The busiest target other than the entry's, by name (with its actor), and its time.
fn beside(job: &JobRecord, e: &Entry, busiest: &[(u64, u32)]) -> Option<(String, u64)> {
    let &(us, t) = busiest.iter().find(|(_, t)| *t != e.target)?;
    let tg = job.target(t);
    Some((tg.actor_id().map_or_else(|| tg.class_name(), |a| format!("{} on actor {a}", tg.class_name())), us))
}

/// [`bottlenecks`] of a ranking already made, with what making each of the top
/// entries instant saves (`None`: the job has not ended).
pub fn bottlenecks_of(
    job: &JobRecord,
    spans: &Spans,
    ranked: &Ranked,
    instant: Option<&Instant>,
    nodes: &[Arc<NodeView>],
) -> Value {
    let (entries, total, driver) = (&ranked.0, ranked.1, ranked.2);
    let secs = |us: u64| us as f64 / 1e6;
    let busy = busiest(job, spans);
    let list: Vec<Value> = entries
        .iter()
        .enumerate()
        .map(|(r, e)| {
            let t = job.target(e.target);
            let callers: Vec<Value> = e
                .callers
                .iter()
                .map(|(c, n)| {
                    let ct = job.target(*c);
                    json!({"name": ct.class_name(), "actor_id": ct.actor_id(), "waiting_calls": n})
                })
                .collect();
            let (saves_s, why) = saves(job, spans, e, instant, &busy);
            json!({"rank": r + 1, "name": t.class_name(), "class": t.class, "method": t.method,
                "actor_id": t.actor_id(), "level": t.level, "program_flag": t.flag,
                "self_s": secs(e.self_us), "share": if total > 0 { e.self_us as f64 / total as f64 } else { 0.0 },
                "queued_on_path_s": secs(e.on_path.queued), "blocked_on_path_s": secs(e.on_path.blocked),
                "calls": e.calls, "callers": callers, "saves_s": saves_s, "saves_why": why,
                "inferred": e.inferred_calls > 0, "inferred_calls": e.inferred_calls,
                "slowest_call": super::findings::call_json(job, spans, e.slowest, nodes)})
        })
        .collect();
    let driver_inferred = spans.root().is_some_and(|r| job.waits_inferred(spans.spans[r].span));
    json!({"job_id": job.job_hex, "at_s": secs(spans.at), "truncated": job.truncated(),
        "critical_path_s": secs(total), "driver_self_s": secs(driver.executing),
        "driver_blocked_s": secs(driver.blocked), "driver_waits_inferred": driver_inferred,
        "saves_basis": "each of the top entries re-run made instant (its executing stretches at zero)",
        "entries": list})
}

/// The ranked list as text (the CLI's `bottlenecks.txt` and its output).
pub fn text(job: &JobRecord, spans: &Spans) -> String {
    let ranked = rank(job, spans);
    let instant = whatif::instant_with(job, spans, &ranked);
    text_of(job, spans, &ranked, instant.as_ref())
}

/// [`text`] of a ranking already made, with what making each of the top entries
/// instant saves.
pub fn text_of(job: &JobRecord, spans: &Spans, ranked: &Ranked, instant: Option<&Instant>) -> String {
    let (entries, total, driver) = (&ranked.0, ranked.1, ranked.2);
    let pct = |us: u64| if total > 0 { 100.0 * us as f64 / total as f64 } else { 0.0 };
    // An observed job's ids are Ray's own: its times are the cluster's, not the model's.
    let clock = if job.task_ids.is_empty() { "virtual" } else { "observed" };
    let mut s = format!("critical path of job {}: {:.3} s ({clock})\n", job.job_hex, total as f64 / 1e6);
    s.push_str(&format!(
        "driver's own time on it: {:.3} s executing ({:.1}%)\n",
        driver.executing as f64 / 1e6,
        pct(driver.executing)
    ));
    if spans.root().is_some_and(|r| job.waits_inferred(spans.spans[r].span)) {
        s.push_str("the driver's waits in ray.get are inferred from the calls' times, not measured\n");
    }
    s.push_str(
        "rank  exec_s        share   queued_s     calls  saves_s(instant)  actor             level  flag   name\n",
    );
    let mut notes = String::new();
    let busy = busiest(job, spans);
    for (r, e) in entries.iter().enumerate() {
        let t = job.target(e.target);
        let saved = instant.and_then(|i| i.saved(e.target));
        s.push_str(&format!(
            "{:>4}  {:>12.3}  {:>5.1}%  {:>10.3}  {:>6}  {:>16}  {:<16}  {:>5}  {:<5}  {}{}\n",
            r + 1,
            e.self_us as f64 / 1e6,
            pct(e.self_us),
            e.on_path.queued as f64 / 1e6,
            e.calls,
            saved.map_or("-".to_string(), |v| format!("{:.3}", v as f64 / 1e6)),
            t.actor_id().unwrap_or_else(|| "-".into()),
            t.level,
            t.flag,
            t.class_name(),
            if e.inferred_calls > 0 { " (waits inferred)" } else { "" }
        ));
        if r < whatif::INSTANT_ENTRIES {
            let c = &spans.spans[e.slowest];
            notes.push_str(&format!(
                "  #{} slowest call: task {} on node {} worker {}, {:.3} s, args {} B, returns {} B\n",
                r + 1,
                job.task_id(c.span, false),
                if c.node == u32::MAX { "-".to_string() } else { c.node.to_string() },
                if c.pid == 0 { "-".to_string() } else { c.pid.to_string() },
                (spans.end_or_at(e.slowest) - c.submit) as f64 / 1e6,
                c.arg_bytes,
                c.return_bytes
            ));
            if let (Some(v), Some(i)) = (saved, instant) {
                if let Some(why) = why(job, spans, e, v, i.base_us, &busy) {
                    notes.push_str(&format!("     {why}\n"));
                }
            }
        }
    }
    s.push_str(&notes);
    s
}
