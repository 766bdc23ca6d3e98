//! Findings: a job's calls held against Ray Core's documented design patterns and
//! anti-patterns (the "Design patterns & anti-patterns" pages of Ray's docs), each
//! named by its kind, with where it happens, the evidence in the records, and what the
//! fix saves: one re-run of the finished job in the what-if model (`whatif`) with the
//! pattern fixed.
//!
//! Owns: the rule that recognises each kind, and the change each fix makes to the
//! model. The rules read only times the records hold: a caller's submits and waits
//! (blocked in `ray.get`), its calls' starts, ends, arguments and returns.
//! Must never: name a pattern the records do not show (a job without it gets no
//! finding), or read anything but the job's records (pure function of records +
//! instant).

use super::spans::{Phase, Spans};
use super::whatif::{self, Change, Fix, Model};
use crate::snapshot::flow::{span_hex, JobRecord, TargetKind};
use crate::snapshot::NodeView;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

mod pending;
use pending::pending;

/// A finding's kind, after the Ray documentation page it follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Anti-pattern: calling `ray.get` in a loop harms parallelism.
    GetInLoop,
    /// Anti-pattern: over-parallelizing with too fine-grained tasks harms speedup.
    TooFineGrained,
    /// Anti-pattern: passing the same large argument by value repeatedly.
    LargeArgByValue,
    /// Anti-pattern: processing results in submission order using `ray.get`.
    GetInSubmissionOrder,
    /// Pattern not used: pipelining an actor's calls to increase throughput.
    BlockedActorCalls,
    /// The job waits for resources (or for shapes no node has) before its calls run.
    PendingOnResources,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::GetInLoop,
        Kind::TooFineGrained,
        Kind::LargeArgByValue,
        Kind::GetInSubmissionOrder,
        Kind::BlockedActorCalls,
        Kind::PendingOnResources,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::GetInLoop => "get_in_loop",
            Kind::TooFineGrained => "too_fine_grained",
            Kind::LargeArgByValue => "large_arg_by_value",
            Kind::GetInSubmissionOrder => "get_in_submission_order",
            Kind::BlockedActorCalls => "blocked_actor_calls",
            Kind::PendingOnResources => "pending_on_resources",
        }
    }

    /// Ray's page on it.
    pub fn doc(self) -> &'static str {
        match self {
            Kind::GetInLoop => "https://docs.ray.io/en/latest/ray-core/patterns/ray-get-loop.html",
            Kind::TooFineGrained => "https://docs.ray.io/en/latest/ray-core/patterns/too-fine-grained-tasks.html",
            Kind::LargeArgByValue => "https://docs.ray.io/en/latest/ray-core/patterns/pass-large-arg-by-value.html",
            Kind::GetInSubmissionOrder => {
                "https://docs.ray.io/en/latest/ray-core/patterns/ray-get-submission-order.html"
            }
            Kind::BlockedActorCalls => "https://docs.ray.io/en/latest/ray-core/patterns/pipelining.html",
            Kind::PendingOnResources => "https://docs.ray.io/en/latest/ray-core/scheduling/resources.html",
        }
    }
}

/// One finding.
#[derive(Clone, Debug)]
pub struct Finding {
    pub kind: Kind,
    pub title: String,
    /// Caller and callee (or the calls) it is about.
    pub place: String,
    pub evidence: String,
    /// The calls it is about (span indexes), the slowest first.
    pub calls: Vec<usize>,
    /// What the fix saves, from a re-run (`None`: the job has not ended).
    pub saves_us: Option<u64>,
    /// How the fix was made in the re-run.
    pub fix: String,
    /// The time it is about (waits, overhead), µs: the order within a kind.
    weight_us: u64,
    change: Change,
}

/// Ray's task rows are in whole ms: a submit this close to an end is "right after" it.
const SLACK_US: u64 = 2_000;
/// A submit this soon after the previous call's end, with no wait recorded, still
/// reads as the loop's next turn.
const LOOP_GAP_US: u64 = 5_000;
/// Findings of one kind kept (the weightiest): each is a re-run of the job.
pub const MAX_PER_KIND: usize = 5;
/// Calls one at a time before a loop is named: a handful of waits is no loop.
const MIN_LOOP_CALLS: usize = 5;
/// Calls of one function before their grain is judged.
const MIN_FINE_CALLS: usize = 20;
/// A call executing longer than this is not fine-grained, whatever it waited to start
/// (a call that waited for CPUs shows a long start latency, not a per-call overhead).
const FINE_EXEC_US: u64 = 10_000;
/// An argument this large is worth putting once (Ray inlines arguments below 100 KiB).
pub const LARGE_ARG_BYTES: u64 = 1 << 20;
/// Calls sending the same large value before it is named.
const MIN_REPEATS: usize = 3;

/// The job's findings, in [`Kind`] order, each with what its fix saves when the job
/// has ended (one re-run each).
pub fn findings(job: &JobRecord, spans: &Spans) -> Vec<Finding> {
    let model = Model::of(job, spans);
    let mut out = Vec::new();
    let children = spans.children();
    loops(job, spans, &children, &mut out);
    fine_grained(job, spans, model.as_ref(), &mut out);
    large_args(job, spans, &children, model.as_ref(), &mut out);
    submission_order(job, spans, &children, &mut out);
    pending(job, spans, model.as_ref(), &mut out);
    // Each finding is a re-run of the whole job: at most a few of each kind, the
    // weightiest (a tree of a thousand actors can loop in every one of them).
    out.sort_by_key(|f| (f.kind, std::cmp::Reverse(f.weight_us)));
    let mut kept: BTreeMap<Kind, usize> = BTreeMap::new();
    out.retain(|f| {
        let n = kept.entry(f.kind).or_default();
        *n += 1;
        *n <= MAX_PER_KIND
    });
    if let Some(m) = model {
        let base = m.makespan(&Fix::new());
        let saved = whatif::par_runs(&out, |f| base.saturating_sub(m.makespan_changed(&f.change)));
        for (f, s) in out.iter_mut().zip(saved) {
            f.saves_us = Some(s);
        }
    }
    out
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

/// A caller's calls to one callee (class-level frame) made one at a time, each
/// submitted once the one before returned while the caller waited for it:
/// `get_in_loop` for functions, `blocked_actor_calls` for actor methods.
fn loops(job: &JobRecord, spans: &Spans, children: &[Vec<usize>], out: &mut Vec<Finding>) {
    for (caller, kids) in children.iter().enumerate() {
        let mut by_frame: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for &c in kids {
            let t = job.target(spans.spans[c].target);
            if t.kind != TargetKind::Driver && t.method != "__init__" {
                by_frame.entry(t.frame).or_default().push(c);
            }
        }
        for calls in by_frame.values() {
            if calls.len() < MIN_LOOP_CALLS {
                continue;
            }
            let mut one_at_a_time = 0usize;
            let mut waited_us = 0u64;
            let mut unrecorded = BTreeMap::new();
            for w in calls.windows(2) {
                let (a, b) = (&spans.spans[w[0]], &spans.spans[w[1]]);
                let Some(a_end) = a.end else { continue };
                // The next one needs this one's return: a chain, not a loop to undo.
                if b.deps.contains(&w[0]) || b.submit + SLACK_US < a_end {
                    continue;
                }
                let took = a_end.saturating_sub(a.submit);
                let caller_span = &spans.spans[caller];
                let blocked = caller_span.overlap(Phase::Blocked, a.submit, a_end, spans.end_or_at(caller));
                // Ray's rows put a few ms between a call's end and the caller's next
                // submit (the return's trip back, whole-ms clocks).
                let right_after = b.submit <= a_end + LOOP_GAP_US.max(took / 10);
                if right_after || blocked.saturating_mul(2) >= took.max(1) {
                    one_at_a_time += 1;
                    waited_us += took;
                    // Read as executing while its call ran: a wait nothing recorded.
                    let executing = caller_span.overlap(Phase::Executing, a.submit, a_end, spans.end_or_at(caller));
                    if executing > 0 {
                        unrecorded.insert(w[0], executing);
                    }
                }
            }
            let pairs = calls.len() - 1;
            if one_at_a_time + 1 < MIN_LOOP_CALLS || one_at_a_time * 5 < pairs * 4 {
                continue;
            }
            let callee = job.target(spans.spans[calls[0]].target);
            let caller_name = job.target(spans.spans[caller].target).class_name();
            let method = callee.kind == TargetKind::Method;
            let actors: std::collections::BTreeSet<u64> =
                calls.iter().filter_map(|&c| job.target(spans.spans[c].target).actor).collect();
            let (kind, title, fix) = if method {
                (
                    Kind::BlockedActorCalls,
                    format!("{caller_name} waits on each {} call before sending the next", callee.class_name()),
                    "the calls sent together (pipelined) and their results got once".to_string(),
                )
            } else {
                (
                    Kind::GetInLoop,
                    format!(
                        "ray.get in a loop: {caller_name} waits on each {} before submitting the next",
                        callee.class_name()
                    ),
                    "every call submitted first, then one ray.get of all their results".to_string(),
                )
            };
            let evidence = format!(
                "{} of {} calls were submitted only after the one before returned, the caller waiting {:.3} s in all{}; \
                 Ray's docs: {}",
                one_at_a_time + 1,
                calls.len(),
                secs(waited_us),
                if method { format!(" on {} actor(s)", actors.len()) } else { String::new() },
                kind.doc()
            );
            out.push(Finding {
                kind,
                title,
                place: format!("{caller_name} → {}", callee.class_name()),
                evidence,
                calls: slowest(spans, calls),
                saves_us: None,
                fix,
                weight_us: waited_us,
                change: Change { together: vec![(caller, calls.clone())], unrecorded, ..Change::default() },
            });
        }
    }
}

/// Calls by index, the longest (submit to end) first, at most a few.
fn slowest(spans: &Spans, calls: &[usize]) -> Vec<usize> {
    let mut v = calls.to_vec();
    v.sort_by_key(|&c| (std::cmp::Reverse(spans.end_or_at(c) - spans.spans[c].submit), c));
    v.truncate(5);
    v
}

/// Executing time of a call, µs.
fn executing(spans: &Spans, i: usize) -> u64 {
    spans.times(i).executing
}

/// The per-call overhead a set of calls showed: the least latency among them that is
/// not zero (a call that found a worker and its resources free), not their median,
/// which holds their waits for free CPUs. Zero: none showed any (whole-ms clocks).
fn overhead_floor(model: &Model, calls: &[usize]) -> u64 {
    calls.iter().map(|&c| model.latency(c)).filter(|&l| l > 0).min().unwrap_or(0)
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Calls of a function whose execution is no longer than twice what each call costs to
/// schedule and start: `too_fine_grained`.
fn fine_grained(job: &JobRecord, spans: &Spans, model: Option<&Model>, out: &mut Vec<Finding>) {
    let Some(model) = model else { return };
    let mut by_target: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate() {
        if job.target(s.target).kind == TargetKind::Function && s.end.is_some() && s.start.is_some() {
            by_target.entry(s.target).or_default().push(i);
        }
    }
    for (target, calls) in by_target {
        if calls.len() < MIN_FINE_CALLS {
            continue;
        }
        let floor = overhead_floor(model, &calls);
        let exec = median(calls.iter().map(|&c| executing(spans, c)).collect());
        if floor == 0 || exec > floor.saturating_mul(2) || exec > FINE_EXEC_US {
            continue;
        }
        let name = job.target(target).class_name();
        out.push(Finding {
            kind: Kind::TooFineGrained,
            title: format!("{name}'s calls are too fine-grained: each costs about as much to start as it runs"),
            place: name.clone(),
            evidence: format!(
                "{} calls executing {:.6} s each (median) against {:.6} s of scheduling and start per call; \
                 Ray's docs: {}",
                calls.len(),
                secs(exec),
                secs(floor),
                Kind::TooFineGrained.doc()
            ),
            calls: slowest(spans, &calls),
            saves_us: None,
            fix: "the calls batched, so that a batch pays the per-call overhead once (re-run with none per call: \
                  what batching saves at most)"
                .into(),
            weight_us: floor.saturating_mul(calls.len() as u64),
            change: Change {
                latency: calls.iter().map(|&c| (c, model.latency(c).saturating_sub(floor))).collect(),
                ..Change::default()
            },
        });
    }
}

/// The same large value sent again and again by one caller to one callee, more than
/// its returns and puts explain: `large_arg_by_value`.
fn large_args(job: &JobRecord, spans: &Spans, children: &[Vec<usize>], model: Option<&Model>, out: &mut Vec<Finding>) {
    // The job's usual start latency for calls without a large argument: what a call
    // sent by reference starts in.
    let usual = model.and_then(|m| {
        let small: Vec<u64> = (0..spans.spans.len())
            .filter(|&i| spans.spans[i].parent.is_some() && spans.spans[i].start.is_some())
            .filter(|&i| spans.spans[i].arg_bytes < LARGE_ARG_BYTES)
            .map(|i| m.latency(i))
            .collect();
        (!small.is_empty()).then(|| median(small))
    });
    for (caller, kids) in children.iter().enumerate() {
        let put = spans.spans[caller].put_bytes;
        // (callee frame, argument bytes) → calls sending that many by value: more than
        // the caller put and the returns of the calls it made before (a reduce takes
        // its maps' returns by reference) explain.
        let mut by: BTreeMap<(u32, u64), Vec<usize>> = BTreeMap::new();
        let mut earlier_returns = 0u64;
        for &c in kids {
            let s = &spans.spans[c];
            let explained = earlier_returns.saturating_add(put);
            if s.arg_bytes >= LARGE_ARG_BYTES && s.arg_bytes.saturating_sub(explained) >= LARGE_ARG_BYTES {
                by.entry((job.target(s.target).frame, s.arg_bytes)).or_default().push(c);
            }
            earlier_returns = earlier_returns.saturating_add(s.return_bytes);
        }
        for ((_, bytes), calls) in by {
            if calls.len() < MIN_REPEATS {
                continue;
            }
            let callee = job.target(spans.spans[calls[0]].target).class_name();
            let caller_name = job.target(spans.spans[caller].target).class_name();
            // Without calls to compare with, the quickest of these started as a call
            // sent by reference would.
            let latency = match model {
                Some(m) => {
                    let u = usual.unwrap_or_else(|| calls.iter().map(|&c| m.latency(c)).min().unwrap_or(0));
                    calls.iter().skip(1).map(|&c| (c, u.min(m.latency(c)))).collect()
                }
                None => Vec::new(),
            };
            out.push(Finding {
                kind: Kind::LargeArgByValue,
                title: format!(
                    "{caller_name} sends the same {} MiB value to {callee} by value, again and again",
                    bytes >> 20
                ),
                place: format!("{caller_name} → {callee}"),
                evidence: format!(
                    "{} calls each took a {} byte argument ({:.1} MiB sent in all) that no return or ray.put of \
                     the caller's explains; ray.put it once and pass the reference. Ray's docs: {}",
                    calls.len(),
                    bytes,
                    (bytes * calls.len() as u64) as f64 / (1u64 << 20) as f64,
                    Kind::LargeArgByValue.doc()
                ),
                calls: slowest(spans, &calls),
                saves_us: None,
                fix: "the value put once: every call but the first starts as the job's calls without a large \
                      argument did"
                    .into(),
                weight_us: bytes.saturating_mul(calls.len() as u64),
                change: Change { latency, ..Change::default() },
            });
        }
    }
}

/// A caller's waits on one call each, in the order it submitted them, while a call it
/// submitted later had returned already: `get_in_submission_order`.
fn submission_order(job: &JobRecord, spans: &Spans, children: &[Vec<usize>], out: &mut Vec<Finding>) {
    for (caller, kids) in children.iter().enumerate() {
        if kids.len() < 3 {
            continue;
        }
        let s = &spans.spans[caller];
        // Each wait in `ray.get`, with the call whose end closed it (the last of its
        // calls submitted by then to end within it): (from, the call). Ray stamps a
        // call's end in whole ms, by its owner, as the result lands: up to a ms or so
        // after the owner's own `ray.get` has returned.
        let mut waits: Vec<(u64, usize)> = Vec::new();
        for (phase, from, to) in s.intervals(spans.end_or_at(caller)) {
            if phase != Phase::Blocked {
                continue;
            }
            let closing = kids
                .iter()
                .copied()
                .filter(|&c| spans.spans[c].submit <= from)
                .filter_map(|c| spans.spans[c].end.filter(|&e| e > from && e <= to + SLACK_US).map(|e| (e, c)))
                .max();
            // A wait for one result leaves others it submitted still running (a
            // `ray.get` of them all leaves none); once one did, the waits after it
            // are for one result each too, the last of them included.
            let others_running = kids
                .iter()
                .any(|&c| spans.spans[c].submit <= from && spans.spans[c].end.is_none_or(|e| e > to + SLACK_US));
            if let (Some((_, c)), true) = (closing, others_running || !waits.is_empty()) {
                waits.push((from, c));
            }
        }
        // In submission order: by submit time. Ray's rows are whole ms, and calls
        // submitted in one ms tie (their order among themselves is not known, nor is it
        // their ids' or their listing's).
        let submit = |i: usize| spans.spans[i].submit;
        if waits.len() < 3 || !waits.windows(2).all(|w| w[0].1 != w[1].1 && submit(w[0].1) <= submit(w[1].1)) {
            continue;
        }
        // A wait for one call while a call submitted no earlier, not waited on yet, had
        // returned: the caller could have worked on that one. At least one must have
        // returned during the wait itself: a `ray.wait` loop returns at the first end,
        // so none ends inside its waits, whereas one that returned before a wait may
        // have been fetched already without waiting.
        let mut idle = 0u64;
        let (mut stalls, mut during) = (0usize, 0usize);
        let mut waited_on = std::collections::BTreeSet::new();
        for &(from, c) in &waits {
            waited_on.insert(c);
            let end = spans.end_or_at(c);
            let ready = kids
                .iter()
                .filter(|&&j| !waited_on.contains(&j) && submit(j) >= submit(c))
                .filter_map(|&j| spans.spans[j].end)
                .filter(|&e| e + SLACK_US < end)
                .min();
            if let Some(first) = ready {
                stalls += 1;
                idle += end - first.max(from);
                during += usize::from(first > from);
            }
        }
        // The order only costs time when the caller works on each result between its
        // waits: with nothing to do, in order or not, it ends with the last.
        let (first, last) = (waits[0].0, spans.end_or_at(waits[waits.len() - 1].1));
        let worked = s.overlap(Phase::Executing, first, last, spans.end_or_at(caller));
        if during == 0 || worked < SLACK_US {
            continue;
        }
        let calls: Vec<usize> = waits.iter().map(|w| w.1).collect();
        let mut by_end = calls.clone();
        by_end.sort_by_key(|&c| (spans.end_or_at(c), c));
        let caller_name = job.target(s.target).class_name();
        let callee = job.target(spans.spans[calls[0]].target).class_name();
        out.push(Finding {
            kind: Kind::GetInSubmissionOrder,
            title: format!("{caller_name} gets results in submission order while later ones are ready"),
            place: format!("{caller_name} → {callee}"),
            evidence: format!(
                "{} of its {} one-result waits were for a call submitted earlier while a later one had returned \
                 already ({:.3} s waited so); process them as they finish with ray.wait. Ray's docs: {}",
                stalls,
                waits.len(),
                secs(idle),
                Kind::GetInSubmissionOrder.doc()
            ),
            calls: slowest(spans, &calls),
            saves_us: None,
            fix: "the results taken in the order they finished (ray.wait)".into(),
            weight_us: idle,
            change: Change { wait_order: vec![(caller, by_end)], ..Change::default() },
        });
    }
}

/// One call, for a reader to find it: its ids, where it ran, its sizes and times.
pub fn call_json(job: &JobRecord, spans: &Spans, i: usize, nodes: &[Arc<NodeView>]) -> Value {
    let s = &spans.spans[i];
    let t = job.target(s.target);
    let placed = s.node != u32::MAX;
    let node_id = placed.then(|| nodes.iter().find(|n| n.idx == s.node).map(|n| n.node_id.to_string())).flatten();
    let times = spans.times(i);
    json!({"task_id": job.task_id(s.span, t.kind == TargetKind::Driver), "span": span_hex(s.span),
        "name": t.class_name(), "actor_id": t.actor_id(),
        "node": placed.then_some(s.node), "node_id": node_id, "worker_pid": (s.pid != 0).then_some(s.pid),
        "arg_bytes": s.arg_bytes, "return_bytes": s.return_bytes, "put_bytes": s.put_bytes,
        "duration_s": secs(spans.end_or_at(i) - s.submit), "executing_s": secs(times.executing),
        "queued_s": secs(times.queued), "blocked_s": secs(times.blocked), "ended": s.end.is_some(), "ok": s.ok})
}

/// The findings as JSON (`/api/flow/findings`).
pub fn findings_json(job: &JobRecord, spans: &Spans, list: &[Finding], nodes: &[Arc<NodeView>]) -> Value {
    let finished = spans.root().is_some_and(|r| spans.spans[r].end.is_some());
    let items: Vec<Value> = list
        .iter()
        .map(|f| {
            json!({"kind": f.kind.as_str(), "title": f.title, "where": f.place, "evidence": f.evidence,
                "saves_s": f.saves_us.map(secs), "fix": f.fix, "doc": f.kind.doc(),
                "calls": f.calls.iter().map(|&i| call_json(job, spans, i, nodes)).collect::<Vec<_>>()})
        })
        .collect();
    let mut v = json!({"job_id": job.job_hex, "at_s": secs(spans.at), "finished": finished,
        "truncated": job.truncated(), "findings": items});
    if !finished {
        v["note"] = json!("the job has not ended: saves_s is computed on a finished job");
    }
    v
}

/// The findings as text (`rayscope flow`'s output and `bottlenecks.txt`).
pub fn text_of(job: &JobRecord, spans: &Spans, list: &[Finding]) -> String {
    if list.is_empty() {
        return "findings (Ray's design patterns and anti-patterns): none\n".into();
    }
    let mut s = "findings (Ray's design patterns and anti-patterns):\n".to_string();
    for f in list {
        let saves = match f.saves_us {
            Some(us) => format!("fixing saves {:.3} s", secs(us)),
            None => "the job has not ended".into(),
        };
        s.push_str(&format!("  [{}] {} ({saves})\n", f.kind.as_str(), f.title));
        s.push_str(&format!("      where: {}\n      evidence: {}\n      fix: {}\n", f.place, f.evidence, f.fix));
        if let Some(&i) = f.calls.first() {
            let c = &spans.spans[i];
            s.push_str(&format!(
                "      slowest call: task {} on node {} worker {}, {:.3} s, args {} B, returns {} B\n",
                job.task_id(c.span, false),
                if c.node == u32::MAX { "-".to_string() } else { c.node.to_string() },
                if c.pid == 0 { "-".to_string() } else { c.pid.to_string() },
                secs(spans.end_or_at(i) - c.submit),
                c.arg_bytes,
                c.return_bytes
            ));
        }
    }
    s
}
