//! The figures `rayscope calibrate` reads from one job's task rows (and Ray's worker
//! table): each a statistic between Ray's state stamps, the sum of some of the model's
//! cost fields, taken only where the job holds enough calls that show it cleanly.
//!
//! The worker start's figure is in `figures/starts.rs`.
//!
//! Owns: which calls each figure reads, its thresholds, and how it summarises them.
//! Must never: set a cost (that is `costs_of`'s, from the figures) or read anything but
//! the job's rows and the worker table.

use super::{
    reference_sum, Figure, ACTOR_FIRST_CALL, ACTOR_SUBMIT, FIRST_CALL, LEASE, PUSH_AND_START, SUBMIT, TRANSFER,
};
use crate::observe::rows::ObservedTask;
use crate::observe::store::Store;
use std::collections::BTreeMap;

mod starts;
use starts::{start_figure, worker_table_start};

/// What each figure needs at least before it is taken: a whole-ms stamp resolves a
/// sub-ms cost only on average.
const MIN_CALLS: usize = 10;
const MIN_BURST_CALLS: usize = 20;
/// An argument smaller than this moves in under a stamp's resolution on any network.
const MIN_TRANSFER_BYTES: u64 = 1_000_000;
/// Two submits of one caller this close (ms) are one loop's.
const BURST_GAP_MS: u64 = 2;

/// Task workers whose first call is compared with later calls of its function.
const MIN_FIRST_CALLS: usize = 2;

/// One call's stamps, as the figures read them.
#[derive(Clone, Copy)]
struct Call<'a> {
    task: &'a ObservedTask,
    /// The worker it ran on: (node, pid).
    worker: Option<(&'a str, u32)>,
}

/// Every figure the job `tasks` (its calls' last attempts) shows, in the order the
/// summary lists them.
pub(super) fn read(store: &Store, tasks: &[&ObservedTask]) -> Vec<Figure> {
    let calls = with_workers(tasks);
    let mut figures = Vec::new();
    let lease = lease_figure(&calls);
    if let Some(f) = &lease {
        figures.push(f.clone());
    }
    let push = push_figure(&calls);
    if let Some(f) = &push {
        figures.push(f.clone());
    }
    figures.extend(submit_figure(&calls, "NORMAL_TASK", "submit", SUBMIT));
    figures.extend(submit_figure(&calls, "ACTOR_TASK", "actor call submit", ACTOR_SUBMIT));
    let lease_us = lease.as_ref().map_or_else(|| reference_sum(LEASE), |f| f.value);
    let push_us = push.as_ref().map_or_else(|| reference_sum(PUSH_AND_START), |f| f.value);
    figures.extend(start_figure(&calls, lease_us, push_us).or_else(|| worker_table_start(store, tasks)));
    figures.extend(transfer_figure(&calls, lease_us));
    figures.extend(first_call_figure(&calls));
    figures.extend(actor_first_call_figure(&calls));
    figures
}

/// The mean of `values` without their outliers (above the upper quartile by three
/// interquartile ranges and 2 ms: a call queued behind others). Not a median: whole-ms
/// stamps resolve a sub-ms cost only as the mean of many.
fn robust_mean(mut values: Vec<f64>) -> Option<(f64, usize)> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let q = |p: f64| values[((values.len() - 1) as f64 * p).round() as usize];
    let limit = q(0.75) + 3.0 * (q(0.75) - q(0.25)) + 2_000.0;
    let kept: Vec<f64> = values.into_iter().filter(|v| *v <= limit).collect();
    Some((kept.iter().sum::<f64>() / kept.len() as f64, kept.len()))
}

fn us(from_ms: u64, to_ms: u64) -> Option<f64> {
    to_ms.checked_sub(from_ms).map(|d| d as f64 * 1000.0)
}

/// Each call with its worker. Ray's row of an actor's creation names its worker's pid
/// but no node (Ray 2.60): it takes the node the other calls of that pid ran on, where
/// they ran on one; without it a creation that started a process was never a start.
fn with_workers<'a>(tasks: &[&'a ObservedTask]) -> Vec<Call<'a>> {
    let mut node_of_pid: BTreeMap<u32, Option<&str>> = BTreeMap::new();
    for t in tasks {
        if let (Some(node), Some(pid)) = (t.node_id.as_deref(), t.worker_pid) {
            let seen = node_of_pid.entry(pid).or_insert(Some(node));
            if *seen != Some(node) {
                *seen = None; // two nodes' processes share the pid: no guess
            }
        }
    }
    tasks
        .iter()
        .map(|t| {
            let node = t.node_id.as_deref().or_else(|| node_of_pid.get(&t.worker_pid?).copied().flatten());
            Call { task: t, worker: node.zip(t.worker_pid) }
        })
        .collect()
}

/// For each call, when the call before it on its worker ended (None: its worker's
/// first call of the job).
fn previous_end_on_worker<'a>(calls: &'a [Call<'a>]) -> Vec<(&'a Call<'a>, Option<u64>)> {
    let mut by_worker: BTreeMap<(&str, u32), Vec<&Call>> = BTreeMap::new();
    for c in calls {
        if let Some(w) = c.worker {
            by_worker.entry(w).or_default().push(c);
        }
    }
    let mut out = Vec::new();
    for list in by_worker.values_mut() {
        list.sort_by_key(|c| c.task.started_ms());
        let mut prev_end = None;
        for c in list.iter() {
            out.push((*c, prev_end));
            prev_end = c.task.ended_ms().or(prev_end);
        }
    }
    out
}

/// A lease on a worker already up and idle: PENDING_NODE_ASSIGNMENT to
/// SUBMITTED_TO_WORKER of a normal task whose worker's previous call had ended by then.
fn lease_figure(calls: &[Call]) -> Option<Figure> {
    let values: Vec<f64> = previous_end_on_worker(calls)
        .into_iter()
        .filter(|(c, _)| c.task.kind == "NORMAL_TASK")
        .filter_map(|(c, prev)| {
            let asked = c.task.event_ms("PENDING_NODE_ASSIGNMENT")?;
            let pushed = c.task.event_ms("SUBMITTED_TO_WORKER")?;
            (prev? <= asked).then_some(())?;
            us(asked, pushed)
        })
        .collect();
    figure(
        "lease",
        "PENDING_NODE_ASSIGNMENT to SUBMITTED_TO_WORKER of normal tasks leased to a worker already up and idle",
        LEASE,
        values,
        MIN_CALLS,
    )
}

/// The push to a running worker and its start of the call: SUBMITTED_TO_WORKER to
/// RUNNING of a normal task that is not its worker's first.
fn push_figure(calls: &[Call]) -> Option<Figure> {
    let values: Vec<f64> = previous_end_on_worker(calls)
        .into_iter()
        .filter(|(c, prev)| c.task.kind == "NORMAL_TASK" && prev.is_some())
        .filter_map(|(c, _)| us(c.task.event_ms("SUBMITTED_TO_WORKER")?, c.task.event_ms("RUNNING")?))
        .collect();
    figure(
        "push and start",
        "SUBMITTED_TO_WORKER to RUNNING of normal tasks on a worker's second call or later",
        PUSH_AND_START,
        values,
        MIN_CALLS,
    )
}

fn figure(
    name: &'static str,
    how: &'static str,
    fields: &'static [&'static str],
    values: Vec<f64>,
    min: usize,
) -> Option<Figure> {
    if values.len() < min {
        return None;
    }
    let (value, samples) = robust_mean(values)?;
    Some(Figure { name, how, fields, value, samples })
}

/// A caller's `.remote()` loop: the time per call over each run of at least
/// `MIN_BURST_CALLS` submits of `kind` no more than `BURST_GAP_MS` apart, all runs
/// together.
fn submit_figure(calls: &[Call], kind: &str, name: &'static str, fields: &'static [&'static str]) -> Option<Figure> {
    let mut by_caller: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for c in calls.iter().filter(|c| c.task.kind == kind) {
        if let (Some(parent), Some(at)) = (c.task.parent_task_id.as_deref(), c.task.submitted_ms()) {
            by_caller.entry(parent).or_default().push(at);
        }
    }
    let (mut span_ms, mut gaps, mut bursts) = (0u64, 0usize, 0usize);
    for times in by_caller.values_mut() {
        times.sort_unstable();
        let mut start = 0;
        for i in 1..=times.len() {
            let broken = i == times.len() || times[i] - times[i - 1] > BURST_GAP_MS;
            if broken {
                let n = i - start;
                if n >= MIN_BURST_CALLS {
                    span_ms += times[i - 1] - times[start];
                    gaps += n - 1;
                    bursts += 1;
                }
                start = i;
            }
        }
    }
    (gaps > 0 && span_ms > 0).then(|| Figure {
        name,
        how: "a caller's submits (first state's stamp) in loops of 20 or more, their time over their calls",
        fields,
        value: span_ms as f64 * 1000.0 / gaps as f64,
        samples: bursts,
    })
}

/// What a task worker's first call costs beyond its body (Ray loads the function, and
/// imports what it needs, on a worker's first call of it): each task worker's first
/// call, RUNNING to FINISHED, less the median of that function's calls on workers that
/// had run before. The median over the first calls that took longer than that (one
/// that did not shows no cost to read: a trace without any keeps the reference's).
fn first_call_figure(calls: &[Call]) -> Option<Figure> {
    let held = |c: &Call| us(c.task.event_ms("RUNNING").or(c.task.started_ms())?, c.task.ended_ms()?);
    let mut later: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut firsts = Vec::new();
    for (c, prev) in previous_end_on_worker(calls) {
        if c.task.kind != "NORMAL_TASK" {
            continue;
        }
        let Some(h) = held(c) else { continue };
        match prev {
            None => firsts.push((c.task.func_or_class_name.as_str(), h)),
            Some(_) => later.entry(c.task.func_or_class_name.as_str()).or_default().push(h),
        }
    }
    let typical: BTreeMap<&str, f64> = later
        .into_iter()
        .map(|(f, mut held)| {
            held.sort_by(f64::total_cmp);
            (f, crate::fidelity::median(&held))
        })
        .collect();
    let mut extras: Vec<f64> =
        firsts.into_iter().filter_map(|(f, h)| Some(h - typical.get(f)?).filter(|extra| *extra > 0.0)).collect();
    if extras.len() < MIN_FIRST_CALLS {
        return None;
    }
    extras.sort_by(f64::total_cmp);
    Some(Figure {
        name: "first call",
        how: "each task worker's first call, RUNNING to FINISHED, less the median of its function's later calls: \
              the median",
        fields: FIRST_CALL,
        value: crate::fidelity::median(&extras),
        samples: extras.len(),
    })
}

/// How long after its creation ended an actor's first call began, where that call was
/// submitted before the creation ended (so only the actor held it): the median. A replay
/// holds each recorded creation for its own time, the process's first work within it,
/// so the window the model keeps from a creation's start needs be no longer than this
/// (Ray 2.60: 2-11 ms, where a task worker's first call costs some 200 ms).
fn actor_first_call_figure(calls: &[Call]) -> Option<Figure> {
    let mut firsts: BTreeMap<(&str, u32), &Call> = BTreeMap::new();
    for c in calls.iter().filter(|c| c.task.kind == "ACTOR_TASK") {
        let (Some(w), Some(start)) = (c.worker, c.task.started_ms()) else { continue };
        let first = firsts.entry(w).or_insert(c);
        if first.task.started_ms().is_some_and(|s| start < s) {
            *first = c;
        }
    }
    let mut gaps: Vec<f64> = calls
        .iter()
        .filter(|c| c.task.kind == "ACTOR_CREATION_TASK")
        .filter_map(|creation| {
            let ended = creation.task.ended_ms()?;
            let first = firsts.get(&creation.worker?)?;
            (first.task.creation_time_ms? <= ended).then_some(())?;
            us(ended, first.task.started_ms()?).or(Some(0.0))
        })
        .collect();
    if gaps.len() < MIN_FIRST_CALLS {
        return None;
    }
    gaps.sort_by(f64::total_cmp);
    Some(Figure {
        name: "actor's first call",
        how: "each actor's first call submitted before its creation ended: its start less the creation's end, the \
              median",
        fields: ACTOR_FIRST_CALL,
        value: crate::fidelity::median(&gaps),
        samples: gaps.len(),
    })
}

/// An argument's transfer: a normal task that waited for its arguments
/// (PENDING_ARGS_AVAIL) until a call of the same caller on another node ended with a
/// return of `MIN_TRANSFER_BYTES` or more, then ran on its own node: its
/// PENDING_NODE_ASSIGNMENT to SUBMITTED_TO_WORKER beyond a lease is the pull. The
/// median rate.
fn transfer_figure(calls: &[Call], lease_us: f64) -> Option<Figure> {
    let mut rates = Vec::new();
    for c in calls.iter().filter(|c| c.task.kind == "NORMAL_TASK") {
        let (Some(ready), Some(pushed), Some(node)) = (
            c.task.event_ms("PENDING_NODE_ASSIGNMENT"),
            c.task.event_ms("SUBMITTED_TO_WORKER"),
            c.task.node_id.as_deref(),
        ) else {
            continue;
        };
        if c.task.submitted_ms().is_none_or(|s| s >= ready) {
            continue; // it never waited for an argument
        }
        // The producer the docs' rule names: the same caller's call that ended last by then.
        let producer = calls
            .iter()
            .filter(|p| p.task.parent_task_id == c.task.parent_task_id && p.task.task_id != c.task.task_id)
            .filter(|p| p.task.ended_ms().is_some_and(|e| e <= ready && ready - e <= 2))
            .max_by_key(|p| p.task.ended_ms());
        let Some(p) = producer else { continue };
        let bytes = p.task.return_bytes.unwrap_or(0);
        if bytes < MIN_TRANSFER_BYTES || p.task.node_id.as_deref() == Some(node) {
            continue;
        }
        let pull_us = (pushed as f64 - ready as f64) * 1000.0 - lease_us;
        if pull_us > 0.0 {
            rates.push(bytes as f64 / (pull_us / 1e6));
        }
    }
    if rates.is_empty() {
        return None;
    }
    rates.sort_by(f64::total_cmp);
    let value = crate::fidelity::median(&rates);
    Some(Figure {
        name: "transfer",
        how: "PENDING_NODE_ASSIGNMENT to SUBMITTED_TO_WORKER, beyond a lease, of calls whose argument of 1 MB or \
              more was made on another node: the median rate",
        fields: TRANSFER,
        value,
        samples: rates.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::starts::{alone, busy_on};
    use super::*;
    use crate::observe::rows::ObservedJob;
    use crate::observe::store::Change;

    fn first_call(id: &str, pid: u32, asked: u64, pushed: u64) -> ObservedTask {
        ObservedTask {
            task_id: id.into(),
            job_id: "01000000".into(),
            kind: "NORMAL_TASK".into(),
            state: "FINISHED".into(),
            node_id: Some("n".into()),
            worker_pid: Some(pid),
            events: vec![
                ("PENDING_NODE_ASSIGNMENT".into(), asked),
                ("SUBMITTED_TO_WORKER".into(), pushed),
                ("RUNNING".into(), pushed + 1),
                ("FINISHED".into(), pushed + 150),
            ],
            start_time_ms: Some(pushed + 1),
            end_time_ms: Some(pushed + 150),
            ..Default::default()
        }
    }

    /// A job whose calls all ran on the two workers its node prestarted shows no start
    /// in its task rows; Ray's worker table still has those two workers' launches (0.89
    /// and 1.37 s on a loaded 2-core VM, Ray 2.60), and a third worker on a node the job
    /// never used is not read.
    #[test]
    fn a_job_on_prestarted_workers_reads_its_start_from_the_worker_table() {
        use crate::observe::workers::ObservedWorker;
        let mut store = Store::default();
        store.apply(&Change::Job(ObservedJob { job_id: "01000000".into(), ..Default::default() }));
        for (i, pid) in [(0u32, 1u32), (1, 2)] {
            let mut t = first_call(&format!("{i:x}"), pid, 100, 101);
            t.task_id = format!("{:08x}", i + 1);
            store.apply(&Change::Task(t));
        }
        let costs = super::super::from_store(&store, "01000000", "t");
        assert!(costs.figures.iter().all(|f| f.name != "worker start"), "no start without the table");
        let worker = |id: &str, node: &str, launch: u64, launched: u64| ObservedWorker {
            worker_id: id.into(),
            node_id: node.into(),
            worker_type: "WORKER".into(),
            launch_ms: Some(launch),
            launched_ms: Some(launched),
            ..Default::default()
        };
        for w in [worker("a1", "n", 1_000, 1_890), worker("a2", "n", 1_000, 2_372), worker("a3", "other", 0, 100_000)] {
            store.apply(&Change::Worker(w));
        }
        let costs = super::super::from_store(&store, "01000000", "t");
        let start = costs.figures.iter().find(|f| f.name == "worker start").expect("read from the table");
        assert_eq!((start.value, start.samples), (1_131_000.0, 2), "the pair's median: {start:?}");
        assert!(start.how.contains("worker table"), "{}", start.how);
    }

    /// A start launched while two of the job's tasks ran on its node is read as it would
    /// take alone: the model slows a start beside busy workers itself.
    #[test]
    fn a_start_beside_running_tasks_is_read_as_it_would_take_alone() {
        // Each on a worker from 101 ms to its end at 251 ms, on node "n".
        let tasks: Vec<ObservedTask> = (1..=2).map(|pid| first_call(&format!("t{pid}"), pid, 100, 101)).collect();
        assert_eq!(busy_on(tasks.iter(), "n", 200), 2);
        assert_eq!(busy_on(tasks.iter(), "n", 100), 0, "asked for, not yet on a worker");
        assert_eq!(busy_on(tasks.iter(), "n", 251), 0, "ended");
        assert_eq!(busy_on(tasks.iter(), "other", 200), 0, "another node's");
        let slowdown = crate::config::SchedulerConfig::default().driver_slowdown_per_busy_worker;
        assert!((alone(1_000_000.0, 2) - 1_000_000.0 / (1.0 + 2.0 * slowdown)).abs() < 1e-6);
        assert_eq!(alone(1_000_000.0, 0), 1_000_000.0, "beside none: as read");
    }

    #[test]
    fn a_workers_first_call_costs_what_it_took_beyond_its_functions_later_calls() {
        // Two workers: each first call ran 226 and 260 ms, the later ones 150 ms.
        let mut tasks = Vec::new();
        for (pid, first_ms) in [(1u32, 226u64), (2, 260)] {
            let mut t = first_call(&format!("f{pid}"), pid, 100, 101);
            t.func_or_class_name = "leaf".into();
            t.events[3].1 = 102 + first_ms;
            t.end_time_ms = Some(102 + first_ms);
            tasks.push(t);
            for k in 0..3u64 {
                let mut later = first_call(&format!("l{pid}{k}"), pid, 100, 500 + 200 * k);
                later.func_or_class_name = "leaf".into();
                later.events[3].1 = 501 + 200 * k + 150;
                later.end_time_ms = Some(501 + 200 * k + 150);
                tasks.push(later);
            }
        }
        let calls: Vec<Call> =
            tasks.iter().map(|t| Call { task: t, worker: Some(("n", t.worker_pid.unwrap())) }).collect();
        let f = first_call_figure(&calls).expect("two first calls");
        assert_eq!((f.samples, f.fields), (2, FIRST_CALL), "{f:?}");
        assert!((f.value - 93_000.0).abs() < 1.0, "the median of 76 and 110 ms: {f:?}");
        // One worker's first call alone is not a figure.
        let one: Vec<Call> = calls.iter().filter(|c| c.task.worker_pid == Some(1)).map(|c| Call { ..*c }).collect();
        assert_eq!(first_call_figure(&one), None);
    }

    /// A 6-CPU head on a loaded 2-core VM (Ray 2.60): the driver's first leases reached
    /// its two prestarted workers 20 and 23 ms after asking, and four workers started
    /// for it took 1.8 to 4.0 s. The prestarted ones are no starts: counted, the lower
    /// quartile made a worker start 22 ms.
    #[test]
    fn a_lease_onto_a_prestarted_worker_is_no_worker_start() {
        let tasks = [
            first_call("a", 1, 316, 336),
            first_call("b", 2, 316, 339),
            first_call("c", 3, 316, 2113),
            first_call("d", 4, 316, 2739),
            first_call("e", 5, 318, 3804),
            first_call("f", 6, 319, 4319),
        ];
        let calls: Vec<Call> =
            tasks.iter().map(|t| Call { task: t, worker: Some(("n", t.worker_pid.unwrap())) }).collect();
        let f = start_figure(&calls, 890.0, 800.0).expect("four starts");
        assert_eq!(f.samples, 4, "{f:?}");
        assert!((f.value - (1_797_000.0 - 890.0)).abs() < 1.0, "the lowest of four: {f:?}");
    }

    /// An actor tree on a loaded 2-core VM (Ray 2.60): the second child's creation waited
    /// 3.1 s for a process, and two task workers started for its calls 3.2 s each. Ray's
    /// row of the creation has no node: read by its node alone, the creation was no
    /// start and the job showed two, too few for the figure.
    #[test]
    fn an_actor_creation_without_a_node_is_read_on_its_pids_node() {
        let mut creation = first_call("c", 7, 1_119, 0);
        creation.kind = "ACTOR_CREATION_TASK".into();
        creation.node_id = None;
        creation.events =
            vec![("PENDING_NODE_ASSIGNMENT".into(), 1_119), ("RUNNING".into(), 4_218), ("FINISHED".into(), 4_473)];
        creation.start_time_ms = Some(4_218);
        creation.end_time_ms = Some(4_473);
        let mut method = first_call("m", 7, 4_473, 4_474);
        method.kind = "ACTOR_TASK".into();
        let tasks = [creation, method, first_call("s1", 8, 6_246, 9_488), first_call("s2", 9, 6_516, 9_754)];
        let refs: Vec<&ObservedTask> = tasks.iter().collect();
        let calls = with_workers(&refs);
        assert_eq!(calls[0].worker, Some(("n", 7)), "the creation's node is its pid's");
        let f = start_figure(&calls, 890.0, 800.0).expect("three starts");
        assert_eq!(f.samples, 3, "{f:?}");
    }

    /// The actor tree's recording (Ray 2.60, 2026-12-02): Root's first call began 8 ms
    /// after its creation ended, the two Childs' 2 and 11 ms; a call submitted after the
    /// creation ended shows nothing of the actor and is not read.
    #[test]
    fn an_actors_first_call_is_read_after_its_creation_ended() {
        let actor = |pid: u32, created: u64, ended: u64, submitted: u64, first: u64| {
            let mut creation = first_call(&format!("c{pid}"), pid, created, created);
            creation.kind = "ACTOR_CREATION_TASK".into();
            creation.start_time_ms = Some(created);
            creation.end_time_ms = Some(ended);
            let mut method = first_call(&format!("m{pid}"), pid, submitted, first);
            method.kind = "ACTOR_TASK".into();
            method.creation_time_ms = Some(submitted);
            method.start_time_ms = Some(first);
            let mut later = first_call(&format!("l{pid}"), pid, submitted, first + 500);
            later.kind = "ACTOR_TASK".into();
            later.creation_time_ms = Some(submitted);
            [creation, method, later]
        };
        let tasks: Vec<ObservedTask> = [
            actor(1, 220, 398, 201, 406),
            actor(2, 403, 415, 413, 417),
            actor(3, 1_179, 1_292, 420, 1_303),
            // Submitted 500 ms after its actor was up: not read.
            actor(4, 100, 200, 700, 701),
        ]
        .into_iter()
        .flatten()
        .collect();
        let calls: Vec<Call> =
            tasks.iter().map(|t| Call { task: t, worker: Some(("n", t.worker_pid.unwrap())) }).collect();
        let f = actor_first_call_figure(&calls).expect("three actors");
        assert_eq!((f.samples, f.value), (3, 8_000.0), "{f:?}");
        let one_read: Vec<Call> = calls.iter().filter(|c| matches!(c.worker, Some((_, 1 | 4)))).cloned().collect();
        assert_eq!(actor_first_call_figure(&one_read), None, "two actors, one of them not read");
    }

    #[test]
    fn a_mean_of_whole_ms_stamps_keeps_their_resolution_and_drops_a_queued_call() {
        // 0 and 1 ms stamps of a 0.25 ms cost, and one call queued 50 ms.
        let mut values = vec![0.0, 0.0, 0.0, 1_000.0, 0.0, 0.0, 0.0, 1_000.0];
        values.push(50_000.0);
        let (mean, kept) = robust_mean(values).unwrap();
        assert_eq!((mean, kept), (250.0, 8));
    }
}
