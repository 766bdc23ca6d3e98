//! Bottlenecks: actors and methods ranked by their self time on the job's critical path.
//!
//! Owns: the critical path. It is walked backwards from the driver's end. Inside a
//! call, the path steps into the child call that ended last before the current instant
//! (what the call waited on); once no child remains, it reaches the call's start. A
//! call that started after it was submitted waited either for the previous execution
//! on its actor (one call at a time: the path steps into that execution, the actor's
//! queue being the cause) or, if none, for scheduling, and then the path returns to its
//! caller at the submit. Every instant of the driver's wall time lands on exactly one
//! call; that is its self time on the path.
//! Must never: read anything but the job's records (pure function of records + instant).

use super::spans::Spans;
use crate::snapshot::flow::{actor_hex, JobRecord, TargetKind};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One ranked entry: a target (function, or one actor's method).
#[derive(Clone, Debug)]
pub struct Entry {
    pub target: u32,
    pub self_us: u64,
    pub calls: u64,
    /// Caller target → calls it submitted to this one.
    pub callers: BTreeMap<u32, u64>,
}

/// Self time on the critical path per span (µs), and the path's length.
pub fn critical_self(spans: &Spans, job: &JobRecord) -> (Vec<u64>, u64) {
    let n = spans.spans.len();
    let mut self_us = vec![0u64; n];
    let Some(root) = spans.root() else { return (self_us, 0) };
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
    let total = spans.end_or_at(root) - spans.spans[root].submit;
    let (mut cur, mut t) = (root, spans.end_or_at(root));
    // Each step moves strictly back in time or into a child ending no later: bounded.
    let mut steps = 0usize;
    loop {
        steps += 1;
        if steps > 4 * n + 16 {
            break;
        }
        let s = &spans.spans[cur];
        let start = s.start.unwrap_or(t).min(t);
        // The child ending last at or before t, after this call started (submitted before t,
        // so coming back to a caller at a child's submit never picks that child again).
        let ch = &children[cur];
        let k = ch.partition_point(|&c| spans.end_or_at(c) <= t);
        let waited = (0..k).rev().map(|j| ch[j]).find(|&c| spans.end_or_at(c) > start && spans.spans[c].submit < t);
        if let Some(c) = waited {
            let end = spans.end_or_at(c);
            self_us[cur] += t - end;
            cur = c;
            t = end;
            continue;
        }
        self_us[cur] += t - start;
        if cur == root {
            break;
        }
        // Queued behind the previous execution on its actor?
        let prev = job.target(s.target).actor.and_then(|a| {
            let v = &on_actor[&a];
            let k = v.partition_point(|&(e, _)| e <= start);
            // The execution ending last by its start (never itself; one step back at most).
            (0..k).rev().map(|j| v[j]).take(2).find(|&(_, i)| i != cur).filter(|&(e, _)| e > s.submit)
        });
        match prev {
            Some((end, p)) => {
                self_us[cur] += start - end;
                cur = p;
                t = end;
            }
            None => {
                self_us[cur] += start.saturating_sub(s.submit);
                t = s.submit;
                match s.parent {
                    Some(p) => cur = p,
                    None => break,
                }
            }
        }
    }
    (self_us, total)
}

/// Entries ranked by self time on the path (ties: more calls, then name); the driver
/// is left out (its own time is `driver_self_us`).
pub fn rank(job: &JobRecord, spans: &Spans) -> (Vec<Entry>, u64, u64) {
    let (self_us, total) = critical_self(spans, job);
    let mut by: BTreeMap<u32, Entry> = BTreeMap::new();
    let mut driver_self = 0;
    for (i, s) in spans.spans.iter().enumerate() {
        if job.target(s.target).kind == TargetKind::Driver {
            driver_self += self_us[i];
            continue;
        }
        let e = by.entry(s.target).or_insert_with(|| Entry {
            target: s.target,
            self_us: 0,
            calls: 0,
            callers: BTreeMap::new(),
        });
        e.self_us += self_us[i];
        e.calls += 1;
        if let Some(p) = s.parent {
            *e.callers.entry(spans.spans[p].target).or_default() += 1;
        }
    }
    let mut v: Vec<Entry> = by.into_values().filter(|e| e.self_us > 0).collect();
    v.sort_by(|a, b| {
        b.self_us
            .cmp(&a.self_us)
            .then(b.calls.cmp(&a.calls))
            .then_with(|| job.target(a.target).instance_name().cmp(&job.target(b.target).instance_name()))
    });
    (v, total, driver_self)
}

pub fn bottlenecks(job: &JobRecord, spans: &Spans) -> Value {
    let (entries, total, driver_self) = rank(job, spans);
    let secs = |us: u64| us as f64 / 1e6;
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
                    json!({"name": ct.class_name(), "actor_id": ct.actor.map(actor_hex), "waiting_calls": n})
                })
                .collect();
            json!({"rank": r + 1, "name": t.class_name(), "class": t.class, "method": t.method,
                "actor_id": t.actor.map(actor_hex), "level": t.level, "bottleneck": t.flag,
                "self_s": secs(e.self_us), "share": if total > 0 { e.self_us as f64 / total as f64 } else { 0.0 },
                "calls": e.calls, "callers": callers})
        })
        .collect();
    json!({"job_id": job.job_hex, "at_s": secs(spans.at), "truncated": job.truncated(),
        "critical_path_s": secs(total), "driver_self_s": secs(driver_self), "entries": list})
}

/// The ranked list as text (the CLI's `bottlenecks.txt` and its output).
pub fn text(job: &JobRecord, spans: &Spans) -> String {
    let (entries, total, _) = rank(job, spans);
    let mut s = format!("critical path of job {}: {:.3} s (virtual)\n", job.job_hex, total as f64 / 1e6);
    s.push_str("rank  self_s        share   calls  actor             level  flag   name\n");
    for (r, e) in entries.iter().enumerate() {
        let t = job.target(e.target);
        s.push_str(&format!(
            "{:>4}  {:>12.3}  {:>5.1}%  {:>6}  {:<16}  {:>5}  {:<5}  {}\n",
            r + 1,
            e.self_us as f64 / 1e6,
            if total > 0 { 100.0 * e.self_us as f64 / total as f64 } else { 0.0 },
            e.calls,
            t.actor.map(actor_hex).unwrap_or_else(|| "-".into()),
            t.level,
            t.flag,
            t.class_name()
        ));
    }
    s
}
