//! Flow Insight's records of an observed job, made from Ray's task rows: the same
//! records the model's recorder writes, so every Flow Insight view reads a real job as
//! it reads a simulated one.
//!
//! Owns: turning one job's task attempts into records. The call graph comes from each
//! task's `parent_task_id` (a call made by the driver names the driver's task); a call
//! is submitted when its first state began, starts at `start_time_ms` on its node and
//! worker, is requeued when an attempt failed and another followed, and ends at its
//! last attempt's `end_time_ms`. Ray's rows carry no arguments and no `ray.get`: the
//! argument waits (`Dep`) and the waits in `ray.get` (blocked phases) are the ones
//! `inferred` reads from the rows' times.
//! Must never: place a record out of time order, or let a child's record come before
//! its parent's submit (the replay would lose the edge); Ray's clocks are per node and
//! in ms, so a child's times are raised to its parent's where they read earlier.

use super::inferred::{argument_waits, get_waits, Pending};
use super::measured::measured_waits;
use super::outcome::{self, Caller};
use super::rows::{is_put_id, ObservedTask};
use super::store::{Store, TaskEntry};
use crate::model::Histogram;
use crate::snapshot::flow::{Chunked, EdgeAgg, JobRecord, Rec, Target, TargetKind, DURATION_BUCKETS};
use crate::snapshot::flow_notes::{EndedWithJob, ObservedNotes, Waits};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

/// The longest recorded job a replay or `rayscope flow` takes: past it, a time in the
/// trace is surely wrong (a clock, or a hostile push), and the replay would run for
/// hours over empty time.
pub const MAX_JOB_SPAN_US: u64 = 7 * 86_400 * 1_000_000;

/// A recorded job too long to replay: its id and its span (s).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error(
    "job {job}: its records span {span_s:.0} s, past the limit of {limit_s} s (7 days) for a recorded job; \
     a time in the trace is wrong (a node's clock, or a bad pushed event)",
    limit_s = MAX_JOB_SPAN_US / 1_000_000
)]
pub struct SpanError {
    pub job: String,
    pub span_s: f64,
}

/// `Err` naming the job, its span and the limit when the job's records span more than
/// [`MAX_JOB_SPAN_US`].
pub fn check_span(record: &JobRecord) -> Result<(), SpanError> {
    let last = record.records.iter().map(|r| r.time()).max().unwrap_or(record.start_us);
    let span = last.max(record.end_us.unwrap_or(0)).saturating_sub(record.start_us);
    if span > MAX_JOB_SPAN_US {
        return Err(SpanError { job: record.job_hex.clone(), span_s: span as f64 / 1e6 });
    }
    Ok(())
}

/// The driver's span when Ray listed no driver task for the job.
fn synthetic_driver(job: u32) -> u64 {
    u64::MAX - u64::from(job)
}

/// What a job's records add to the cluster-wide flow totals, by name (`None`: the
/// driver), so a job's share can be kept and merged without rebuilding it.
#[derive(Default)]
pub struct Totals {
    pub calls: BTreeMap<(Option<String>, String), u64>,
    pub durations: BTreeMap<String, Histogram>,
}

/// The callee of a task: (kind, class, method, actor).
fn callee(store: &Store, last: &ObservedTask) -> (TargetKind, String, String, Option<u64>) {
    let name = if last.name.is_empty() { last.func_or_class_name.as_str() } else { last.name.as_str() };
    let actor = last.actor_id.as_deref().and_then(|a| store.actor_number(a));
    match (last.kind.as_str(), actor) {
        // An actor Ray sent no record of (Ray 2.49 pushes no actor events) still makes
        // its calls methods, of no known instance.
        ("ACTOR_TASK" | "ACTOR_CREATION_TASK", actor) => {
            let class =
                actor.and_then(|a| store.actors.get(&a)).map(|r| r.class_name.clone()).filter(|c| !c.is_empty());
            let class = class.unwrap_or_else(|| name.split('.').next().unwrap_or(name).to_string());
            let method = name.strip_prefix(&format!("{class}.")).unwrap_or(name).to_string();
            (TargetKind::Method, class, method, actor)
        }
        _ => (TargetKind::Function, name.to_string(), name.to_string(), None),
    }
}

/// A call's name as its frame and a replay's `--cpu` write it: `Class.method`, or the
/// function's.
pub(crate) fn call_name(store: &Store, task: &ObservedTask) -> String {
    let (kind, class, method, _) = callee(store, task);
    frame_name(kind, &class, &method)
}

fn frame_name(kind: TargetKind, class: &str, method: &str) -> String {
    match kind {
        TargetKind::Method => format!("{class}.{method}"),
        _ => class.to_string(),
    }
}

/// Build the records of `job` from the store.
pub fn job_record(store: &Store, job: u32, totals: &mut Totals) -> Option<JobRecord> {
    // Flow Insight's records hold bare µs, as the simulation's recorder writes them in
    // its hot path: the store's virtual times are unwrapped here, once.
    let us = |unix_ms: u64| store.time(unix_ms).as_micros();
    let info = store.jobs.get(&job);
    let tasks: Vec<&TaskEntry> = store.job_tasks(job).collect();
    if info.is_none() && tasks.is_empty() {
        return None;
    }
    let driver_task = tasks.iter().find(|t| t.last().is_driver()).copied();
    let driver = driver_task.map(|t| t.id).unwrap_or_else(|| synthetic_driver(job));
    // A call known only from the worker that ran it (its definition was lost with its
    // caller's worker) has no name and no caller: `loss` tells it, the graph leaves it.
    let calls: Vec<&TaskEntry> =
        tasks.iter().filter(|t| !t.last().is_driver() && !super::loss::undefined(t)).copied().collect();
    let first_submit = calls.iter().filter_map(|t| t.attempts[0].submitted_ms()).min();
    let start_ms = [info.and_then(|j| j.start_time), driver_task.and_then(|d| d.last().started_ms()), first_submit]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(0);
    let start = us(start_ms);
    // Ray 2.49 pushes no job events: there the driver's own task tells the job's end.
    let ended = info.map_or_else(
        || driver_task.is_some_and(|d| d.last().is_terminal()),
        |j| super::store::is_terminal_job(&j.status),
    );
    let end_ms = if ended {
        info.and_then(|j| j.end_time).or_else(|| driver_task.and_then(|d| d.last().ended_ms()))
    } else {
        driver_task.and_then(|d| d.last().ended_ms())
    };

    let mut targets: Chunked<Target> = Chunked::default();
    let mut frames: Vec<String> = vec!["_main".into()];
    let mut frame_index: FxHashMap<String, u32> = FxHashMap::default();
    frame_index.insert("_main".into(), 0);
    let mut target_index: FxHashMap<(String, Option<u64>), u32> = FxHashMap::default();
    targets.push(Target {
        kind: TargetKind::Driver,
        class: "_main".into(),
        method: "_main".into(),
        actor: None,
        job,
        level: 0,
        flag: false,
        frame: 0,
    });
    // Each call's span, its parent's, its depth and its frame, in submit order.
    let by_id: FxHashMap<u64, &TaskEntry> = calls.iter().map(|t| (t.id, *t)).collect();
    let mut order: Vec<&TaskEntry> = calls.clone();
    // Ray's times are whole ms: at the same ms an actor's constructor goes before the
    // calls on it (Ray cannot have sent them first: the handle comes from the creation).
    order.sort_by_key(|t| {
        let creation = t.last().kind == "ACTOR_CREATION_TASK";
        (t.attempts[0].submitted_ms().unwrap_or(start_ms), !creation, t.id)
    });
    let starts = serial_starts(&order);
    let mut pending: Vec<Pending> = Vec::with_capacity(order.len() * 3 + 2);
    pending.push((start, 0, 0, Rec::Submit { span: driver, parent: 0, target: 0, t: start, arg_bytes: 0 }));
    let driver_node = info
        .and_then(|j| store.driver_slot(j))
        .or_else(|| driver_task.and_then(|d| d.last().node_id.as_deref()).and_then(|n| store.node_slot(n)))
        .unwrap_or(0);
    let driver_pid = driver_task.and_then(|d| d.last().worker_pid).unwrap_or(0);
    pending.push((start, 1, 0, Rec::Begin { span: driver, t: start, node: driver_node, pid: driver_pid }));
    // (submit µs, first start µs, depth, frame) per span, for the children's clamps.
    let mut placed: FxHashMap<u64, (u64, u64, u32, u32)> = FxHashMap::default();
    placed.insert(driver, (start, start, 0, 0));
    let mut edges: BTreeMap<(u32, u32), EdgeAgg> = BTreeMap::new();
    let mut dropped_parents = 0u64;
    // Calls whose outcome Ray did not report (`outcome`): the callers that went on
    // past their calls, and each placed call's end.
    let mut notes = ObservedNotes { settled: store.settled(job), ..Default::default() };
    let job_end_us = end_ms.filter(|_| ended).map(us);
    let mut went_on: FxHashSet<u64> = FxHashSet::default();
    if info.is_some_and(|j| j.status == "SUCCEEDED") {
        went_on.insert(driver);
    }
    let mut ends: FxHashMap<u64, u64> = FxHashMap::default();
    // (caller span, argument object) → (its calls that took it, bytes, first submit µs,
    // caller depth).
    let mut shared_args: BTreeMap<(u64, &str), (u32, u64, u64, u32)> = BTreeMap::new();
    // Each placed call's (caller span, depth, submit µs), for the argument waits.
    let mut parents: FxHashMap<u64, (u64, u32, u64)> = FxHashMap::default();
    // Parents first: a child may have been seen before its parent, but was submitted
    // after it started; resolve parents on demand.
    let mut stack: Vec<&TaskEntry> = Vec::new();
    for &root in &order {
        if placed.contains_key(&root.id) {
            continue;
        }
        stack.push(root);
        while let Some(&t) = stack.last() {
            let parent_id = t.last().parent_task_id.as_deref().and_then(|p| store.task_number(p));
            let parent = match parent_id {
                Some(p) if p == driver => driver,
                Some(p) if by_id.contains_key(&p) && !placed.contains_key(&p) && !stack.iter().any(|s| s.id == p) => {
                    stack.push(by_id[&p]);
                    continue;
                }
                Some(p) if placed.contains_key(&p) => p,
                _ => {
                    if parent_id.is_some() {
                        dropped_parents += 1;
                    }
                    driver
                }
            };
            stack.pop();
            let (p_submit, p_start, p_depth, p_frame) = placed[&parent];
            let (kind, class, method, actor) = callee(store, t.last());
            let frame_name = frame_name(kind, &class, &method);
            let frame = *frame_index.entry(frame_name.clone()).or_insert_with(|| {
                frames.push(frame_name.clone());
                (frames.len() - 1) as u32
            });
            let target = *target_index.entry((frame_name.clone(), actor)).or_insert_with(|| {
                targets.push(Target { kind, class, method, actor, job, level: 0, flag: false, frame });
                (targets.len() - 1) as u32
            });
            let first = &t.attempts[0];
            let submit = us(first.submitted_ms().unwrap_or(start_ms)).max(p_submit).max(p_start);
            let depth = p_depth + 1;
            // Its store arguments, each once across its attempts; each noted for its
            // caller, to tell a reference passed to several calls from values sent anew.
            let mut arg_bytes = 0u64;
            let mut taken: Vec<&str> = Vec::new();
            for o in t.attempts.iter().flat_map(|a| a.args.iter()) {
                if !taken.contains(&o.object_id.as_str()) {
                    taken.push(&o.object_id);
                    arg_bytes = arg_bytes.saturating_add(o.bytes);
                    let shared =
                        shared_args.entry((parent, o.object_id.as_str())).or_insert((0, o.bytes, submit, p_depth));
                    shared.0 += 1;
                    shared.2 = shared.2.min(submit);
                }
            }
            pending.push((submit, 0, depth, Rec::Submit { span: t.id, parent, target, t: submit, arg_bytes }));
            let mut first_start = u64::MAX;
            let n = t.attempts.len();
            let mut last_t = submit;
            for (k, a) in t.attempts.iter().enumerate() {
                if let Some(ms) = starts.get(&(t.id, a.attempt_number)).copied().or_else(|| a.started_ms()) {
                    let at = us(ms).max(last_t);
                    first_start = first_start.min(at);
                    let node = a.node_id.as_deref().and_then(|n| store.node_slot(n)).unwrap_or(u32::MAX);
                    pending.push((
                        at,
                        1,
                        depth,
                        Rec::Begin { span: t.id, t: at, node, pid: a.worker_pid.unwrap_or(0) },
                    ));
                    last_t = at;
                }
                if k + 1 < n {
                    if let Some(ms) = a.ended_ms().or(a.end_time_ms) {
                        let at = us(ms).max(last_t);
                        pending.push((at, 3, depth, Rec::Requeue { span: t.id, t: at }));
                        last_t = at;
                    }
                }
            }
            let last = t.last();
            let agg = edges.entry((p_frame, frame)).or_default();
            agg.calls += 1;
            let caller_name = (parent != driver).then(|| frames[p_frame as usize].clone());
            *totals.calls.entry((caller_name, frame_name.clone())).or_insert(0) += 1;
            let caller = if went_on.contains(&parent) { Caller::WentOn } else { Caller::DidNot };
            if outcome::ended_with_job(ended, last, caller) {
                // By its caller's end at the latest: the caller went on past it.
                let by = ends.get(&parent).copied().or(job_end_us);
                let at = last.ended_ms().map(us).into_iter().chain(by).min();
                if let Some(at) = at.map(|at| at.max(last_t)) {
                    pending.push((at, 6, depth, Rec::End { span: t.id, t: at, ok: true, return_bytes: 0 }));
                    ends.insert(t.id, at);
                }
                notes.ended_with_job.insert(
                    t.id,
                    EndedWithJob { ray_state: last.state.clone(), ray_error_type: last.error_type.clone() },
                );
                went_on.insert(t.id);
            } else if let Some(ms) = last.ended_ms() {
                let at = us(ms).max(last_t);
                pending.push((
                    at,
                    6,
                    depth,
                    Rec::End {
                        span: t.id,
                        t: at,
                        ok: last.state == "FINISHED",
                        return_bytes: last.return_bytes.unwrap_or(0),
                    },
                ));
                ends.insert(t.id, at);
                if last.state == "FINISHED" {
                    went_on.insert(t.id);
                }
                agg.completed += 1;
                agg.bytes += last.return_bytes.unwrap_or(0);
                agg.total_us += at - submit;
                totals
                    .durations
                    .entry(frame_name.clone())
                    .or_insert_with(|| Histogram::new(DURATION_BUCKETS))
                    .observe((at - submit) as f64 / 1e6);
            }
            placed.insert(t.id, (submit, first_start.min(last_t), depth, frame));
            parents.insert(t.id, (parent, depth, submit));
        }
    }
    // A put several of one caller's calls took is a reference the caller put once and
    // passed. One taken by a single call may be a value Ray put for that call alone,
    // and a call's return is no put of the caller's: nothing is said of them.
    for ((caller, object), (calls, bytes, at, depth)) in shared_args {
        if calls >= 2 && is_put_id(object) {
            pending.push((at, 0, depth, Rec::Put { span: caller, t: at, bytes }));
        }
    }
    // Every wait below is inferred from the rows' times: its span is marked so.
    let mut inferred = std::collections::BTreeSet::new();
    for dep in argument_waits(&order, &parents) {
        if let Rec::Dep { span, .. } = dep.3 {
            inferred.insert(span);
        }
        pending.push(dep);
    }
    let end = end_ms.map(|ms| us(ms).max(pending.iter().map(|p| p.0).max().unwrap_or(start)));
    if let Some(e) = end {
        pending.push((
            e,
            6,
            0,
            Rec::End { span: driver, t: e, ok: info.is_none_or(|j| j.status != "FAILED"), return_bytes: 0 },
        ));
    }
    // A caller Ray profiled has its waits measured (`profile`); the others', inferred.
    let horizon = pending.iter().map(|p| p.0).max().unwrap_or(start);
    let to_job_us = |unix_us: u64| us(unix_us / 1_000) + unix_us % 1_000;
    let mut measured: Vec<Pending> = Vec::new();
    let mut profiled: FxHashSet<u64> = FxHashSet::default();
    if let Some(d) = driver_task.filter(|d| d.last().ray_profiling) {
        profiled.insert(driver);
        measured.extend(measured_waits(d.last(), driver, 0, (start, end.unwrap_or(horizon)), to_job_us));
    }
    for t in order.iter().filter(|t| t.last().ray_profiling) {
        let Some(&(_, first_start, depth, _)) = placed.get(&t.id) else { continue };
        profiled.insert(t.id);
        let until = ends.get(&t.id).copied().unwrap_or(horizon);
        measured.extend(measured_waits(t.last(), t.id, depth, (first_start, until), to_job_us));
    }
    let callers: FxHashSet<u64> = parents.values().map(|p| p.0).collect();
    let measured_callers = callers.iter().filter(|c| profiled.contains(c)).count();
    notes.waits = match measured_callers {
        0 => Waits::Inferred,
        n if n == callers.len() => Waits::Measured,
        _ => Waits::Mixed,
    };
    for wait in get_waits(&pending) {
        let (Rec::Block { span, .. } | Rec::Unblock { span, .. }) = wait.3 else { continue };
        if !profiled.contains(&span) {
            inferred.insert(span);
            pending.push(wait);
        }
    }
    pending.extend(measured);
    // Same instant: submits (parents first), starts, argument waits, blocks and
    // requeues, resumes, then ends (children first).
    pending.sort_by_key(|p| (p.0, p.1, if p.1 == 6 { u32::MAX - p.2 } else { p.2 }));
    let mut records = Chunked::default();
    for p in pending {
        records.push(p.3);
    }
    if dropped_parents > 0 {
        tracing::debug!(job, dropped_parents, "observed calls whose caller was not kept hang off the driver");
    }
    if ended {
        let unreported = notes.ended_with_job.keys().copied().collect();
        notes.lost = super::loss::detect(store, job, end_ms, &unreported);
    }
    let dropped = store.dropped_by_job.get(&job).copied().unwrap_or(0);
    let recorded = order.len() as u64 + 1;
    Some(JobRecord {
        job,
        job_hex: crate::model::JobId(job).hex(),
        name: info.map(|j| j.entrypoint.clone()).filter(|e| !e.is_empty()).unwrap_or_else(|| format!("job {job}")),
        start_us: start,
        end_us: end,
        driver,
        calls: recorded + dropped,
        recorded_calls: recorded,
        records,
        targets,
        frames: std::sync::Arc::new(frames),
        edges,
        task_ids: std::sync::Arc::new(
            tasks.iter().map(|t| (t.id, t.last().task_id.clone())).filter(|(_, id)| !id.is_empty()).collect(),
        ),
        inferred: std::sync::Arc::new(inferred),
        observed: Some(std::sync::Arc::new(notes)),
    })
}

/// Overlap between an actor's consecutive calls that is the clocks' doing, not the
/// actor's: the executor writes a call's start, the submitter its end, each in whole ms.
const CLOCK_SLACK_MS: u64 = 2;

/// Starts of actor calls raised to the end of the call before them on the same actor,
/// where they read up to [`CLOCK_SLACK_MS`] earlier: an actor that runs one call at a
/// time must read so (the what-ifs and the critical path rely on it).
fn serial_starts(order: &[&TaskEntry]) -> FxHashMap<(u64, u32), u64> {
    let mut by_actor: FxHashMap<&str, Vec<(u64, u64, u64, u32)>> = FxHashMap::default();
    for t in order {
        for a in &t.attempts {
            let (Some(actor), Some(start), Some(end)) = (a.actor_id.as_deref(), a.started_ms(), a.ended_ms()) else {
                continue;
            };
            by_actor.entry(actor).or_default().push((start, end, t.id, a.attempt_number));
        }
    }
    let mut out = FxHashMap::default();
    for calls in by_actor.values_mut() {
        calls.sort_unstable();
        for w in calls.windows(2) {
            let (prev_end, (start, _, id, attempt)) = (w[0].1, w[1]);
            if prev_end > start && prev_end - start <= CLOCK_SLACK_MS {
                out.insert((id, attempt), prev_end);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
