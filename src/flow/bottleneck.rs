//! Bottlenecks: actors and methods ranked by their execution on the job's critical
//! path (`critical_path.rs`), with the waiting on the path shown beside it, what each
//! made instant saves (one what-if re-run each, `whatif.rs`) and its slowest call.
//! Must never: read anything but the job's records (pure function of records + instant).

use super::critical_path::{rank, Entry, Ranked};
use super::spans::{Phase, Spans};
use super::whatif::{self, Instant};
use crate::snapshot::flow::{JobRecord, TargetKind};
use crate::snapshot::NodeView;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

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
