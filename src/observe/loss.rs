//! What Ray lost of an ended job, told from what it kept: how many calls, of what,
//! where, and how the loss shows. Ray loses a job's last task events when the driver
//! exits: its workers report about once a second (`RAY_task_events_report_interval_ms`)
//! and are killed with the driver, so calls made in the last second may be missing
//! entirely, and others left without an end (scripts/ray-observe/FINDINGS.md).
//!
//! Owns: the detectors, each reading only the job's kept task rows and times:
//! * calls left unfinished whose caller did not go on past them (a caller that went
//!   on makes them "ended with the job", `outcome`): their end was lost;
//! * calls whose caller Ray never listed: the caller's record was lost;
//! * a caller that ran on, up to the job's end, far longer than its recorded calls
//!   explain: at the pace it made them, about that many more calls were lost;
//! * calls that returned with no report from the worker that ran them (FINISHED, or
//!   ended with the job, without RUNNING or execution phases): the calls they made
//!   went with that worker's buffer, about as many as the function's reported calls
//!   made (a nested call's own calls);
//! * calls known only from the worker that ran them: their definitions were lost.
//!
//! Must never: report a loss in a job still running, or count a call twice.

use super::store::{Store, TaskEntry};
use crate::snapshot::flow_notes::LostCalls;
use std::collections::{BTreeMap, BTreeSet};

/// Ray's default `RAY_task_events_report_interval_ms`: events younger than this at the
/// job's end may not have been sent.
pub const REPORT_INTERVAL_MS: u64 = 1_000;

/// A caller must have made at least this many recorded calls for its pace to be read.
const MIN_CALLS_FOR_PACE: usize = 4;

/// The stretch a caller ran past its recorded calls must exceed this many of its gaps
/// between calls, and this many ms, to be read as lost calls.
const UNEXPLAINED_GAPS: u64 = 4;
const UNEXPLAINED_MIN_MS: u64 = 300;

fn name(t: &TaskEntry) -> String {
    let last = t.last();
    if last.name.is_empty() {
        last.func_or_class_name.clone()
    } else {
        last.name.clone()
    }
}

fn short_node(node: Option<&str>) -> Option<String> {
    node.map(|n| n.chars().take(12).collect())
}

/// The losses of `job`, ended at `job_end_ms`. `unreported`: the spans whose outcome
/// is already told as "ended with the job".
pub fn detect(store: &Store, job: u32, job_end_ms: Option<u64>, unreported: &BTreeSet<u64>) -> Vec<LostCalls> {
    let Some(job_end) = job_end_ms else { return Vec::new() };
    let tasks: Vec<&TaskEntry> = store.job_tasks(job).filter(|t| !t.last().is_driver()).collect();
    let mut out = Vec::new();
    // Unfinished, their caller not gone on: (name, node) -> count.
    let mut unfinished: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
    // Listed calls whose caller was not listed: missing caller -> (its children's names, node).
    let mut orphans: BTreeMap<String, (BTreeSet<String>, Option<String>)> = BTreeMap::new();
    for t in &tasks {
        let last = t.last();
        if !last.is_terminal() && !unreported.contains(&t.id) && !undefined(t) {
            *unfinished.entry((name(t), short_node(last.node_id.as_deref()))).or_insert(0) += 1;
        }
        if let Some(p) = last.parent_task_id.as_deref() {
            let is_driver = p.len() == 48 && p.starts_with(&"f".repeat(40));
            let listed = store.task_number(p).is_some_and(|n| store.tasks.get(&n).is_some_and(|e| e.job == job));
            if !is_driver && !listed {
                let o = orphans.entry(p.to_string()).or_default();
                o.0.insert(name(t));
                o.1 = o.1.take().or_else(|| short_node(last.node_id.as_deref()));
            }
        }
    }
    for ((name, node), calls) in unfinished {
        out.push(LostCalls {
            name: Some(name),
            calls: Some(calls),
            caller: None,
            node,
            evidence: "left unfinished in Ray's listing after the job ended, their caller not known to have gone \
                       on: Ray lost their end"
                .into(),
        });
    }
    for (_, (children, node)) in orphans {
        out.push(LostCalls {
            name: None,
            calls: Some(1),
            caller: None,
            node,
            evidence: format!(
                "a caller Ray never listed made listed calls ({}): Ray lost the caller's record",
                children.into_iter().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    out.extend(paced_losses(store, &tasks, job_end));
    out.extend(unreported_runs(store, &tasks, unreported));
    let mut undefined_calls: BTreeMap<Option<String>, u64> = BTreeMap::new();
    for t in tasks.iter().filter(|t| undefined(t)) {
        *undefined_calls.entry(undefined_name(store, t)).or_insert(0) += 1;
    }
    for (name, calls) in undefined_calls {
        out.push(LostCalls {
            name,
            calls: Some(calls),
            caller: None,
            node: None,
            evidence: "reported only by the worker that ran them: their definitions (method, caller) were lost \
                       with their caller's worker"
                .into(),
        });
    }
    out
}

/// A call Ray told only from the worker that ran it: its definition (name, caller),
/// sent by its caller's worker, was lost.
pub fn undefined(t: &TaskEntry) -> bool {
    let last = t.last();
    last.name.is_empty() && last.func_or_class_name.is_empty() && last.kind.is_empty()
}

/// What an undefined call was, from its id: an actor task's id holds its actor's
/// (`task_id[16..]`), whose class its constructor's row names; a task's holds `f`s.
fn undefined_name(store: &Store, t: &TaskEntry) -> Option<String> {
    let id = &t.last().task_id;
    let actor = id.get(16..).filter(|a| a.len() == 32 && !a[..24].bytes().all(|b| b == b'f'))?;
    let class = store
        .actor_number(actor)
        .and_then(|n| store.actors.get(&n))
        .map(|a| a.class_name.clone())
        .filter(|c| !c.is_empty())
        .or_else(|| {
            let creation = store.task_number(&format!("ffffffffffffffff{actor}"))?;
            let name = name(store.tasks.get(&creation)?);
            name.strip_suffix(".__init__").map(str::to_string)
        })?;
    Some(format!("{class}.?"))
}

/// Calls whose worker's own report never came, or not its last (it was killed with
/// the job before its next flush): Ray has their end from their caller, or left them
/// without one while their caller went on past them (`unreported`: they returned),
/// but not that they ran, or not what they did after their worker's previous report,
/// and so not the calls they made meanwhile. Read from a missing RUNNING, or, where
/// the job's rows carry execution phases, from a call that has none or whose phases
/// stop before its execution's end (`task:execute`); and from a call that ended with
/// the job, whose worker's report of its end was cut.
///
/// Where other calls of the same function were reported whole, what they made tells
/// how many calls went unreported: each cut call made about the median of theirs, less
/// what Ray listed of its own. Where they made none, nothing is said (the function is
/// seen to make no calls); where none was reported and some call was not reported at
/// all, only that some may be.
fn unreported_runs(store: &Store, tasks: &[&TaskEntry], unreported: &BTreeSet<u64>) -> Vec<LostCalls> {
    let phases_listed = tasks.iter().any(|t| t.last().profiled);
    let ran = |t: &TaskEntry| t.last().state == "FINISHED" || unreported.contains(&t.id);
    // Ray has a report from its worker: its start, and where phases are listed, some.
    let reported = |t: &TaskEntry| t.last().started_ms().is_some() && (!phases_listed || t.last().profiled);
    // Reported up to its end (its phases to the end of its execution, and its outcome):
    // what it made is all Ray was told of.
    let whole = |t: &TaskEntry| ran(t) && reported(t) && !t.last().execution_cut && !unreported.contains(&t.id);
    // The listed calls each listed call made, by callee.
    let mut made: BTreeMap<u64, BTreeMap<String, u64>> = BTreeMap::new();
    for t in tasks {
        if let Some(p) = t.last().parent_task_id.as_deref().and_then(|p| store.task_number(p)) {
            *made.entry(p).or_default().entry(name(t)).or_insert(0) += 1;
        }
    }
    let mut by: BTreeMap<(String, Option<String>), Vec<&TaskEntry>> = BTreeMap::new();
    for t in tasks.iter().filter(|t| ran(t) && !whole(t) && t.last().kind != "ACTOR_CREATION_TASK") {
        by.entry((name(t), short_node(t.last().node_id.as_deref()))).or_default().push(t);
    }
    let mut out = Vec::new();
    for ((caller, node), calls) in by {
        let n = calls.len();
        // Calls of which Ray has no report from their worker at all, against those it
        // has one from but not the last.
        let silent = calls.iter().filter(|t| !reported(t)).count();
        let cut_how = if silent == n {
            format!("Ray kept no report from the worker that ran {n} call(s) of {caller}")
        } else {
            format!(
                "Ray kept no report of the end of {n} call(s) of {caller} from the worker that ran them (they ended \
                 with the job, or their phases stop before their execution's end)"
            )
        };
        let whole_calls: Vec<u64> = tasks.iter().filter(|t| name(t) == caller && whole(t)).map(|t| t.id).collect();
        let callees: BTreeSet<&String> =
            whole_calls.iter().filter_map(|w| made.get(w)).flat_map(|m| m.keys()).collect();
        let mut told = false;
        for callee in callees {
            let mut each: Vec<u64> =
                whole_calls.iter().map(|w| made.get(w).and_then(|m| m.get(callee)).copied().unwrap_or(0)).collect();
            each.sort_unstable();
            let median = each[each.len() / 2];
            let listed = |c: &&TaskEntry| made.get(&c.id).and_then(|m| m.get(callee)).copied().unwrap_or(0);
            let lost: u64 = calls.iter().map(|c| median.saturating_sub(listed(c))).sum();
            if lost == 0 {
                continue;
            }
            told = true;
            out.push(LostCalls {
                name: Some(callee.clone()),
                calls: Some(lost),
                caller: Some(caller.clone()),
                node: node.clone(),
                evidence: format!(
                    "{cut_how}: it was killed with the job before sending it; {caller}'s {} reported call(s) made \
                     {median} call(s) of {callee} each, so about {lost} of {callee} were made and not reported",
                    whole_calls.len()
                ),
            });
        }
        if !told && whole_calls.is_empty() && silent > 0 {
            out.push(LostCalls {
                name: None,
                calls: None,
                caller: Some(caller.clone()),
                node,
                evidence: format!(
                    "Ray kept no report from the worker that ran {silent} call(s) of {caller}: it was killed with the \
                     job before sending it, so any calls they made are unknown"
                ),
            });
        }
    }
    out
}

/// Callers that ran on past their recorded calls, into the job's last report interval,
/// far longer than their pace explains.
fn paced_losses(store: &Store, tasks: &[&TaskEntry], job_end: u64) -> Vec<LostCalls> {
    let mut children: BTreeMap<u64, Vec<&TaskEntry>> = BTreeMap::new();
    for t in tasks {
        if let Some(p) = t.last().parent_task_id.as_deref().and_then(|p| store.task_number(p)) {
            children.entry(p).or_default().push(t);
        }
    }
    let mut out = Vec::new();
    for (caller, kids) in children {
        // The driver sends its own reports as it disconnects: a linger is not a loss.
        let Some(c) = store.tasks.get(&caller).filter(|c| !c.last().is_driver()) else { continue };
        let Some(c_end) = c.last().ended_ms().or_else(|| c.last().is_terminal().then_some(job_end)) else { continue };
        if kids.len() < MIN_CALLS_FOR_PACE || job_end > c_end + REPORT_INTERVAL_MS + UNEXPLAINED_MIN_MS {
            // Its end was reported well before the job's: its reports were not cut.
            continue;
        }
        if kids.iter().any(|k| k.last().state != "FINISHED") {
            // A call whose end Ray did not report may have run until the caller's end.
            continue;
        }
        let mut submits: Vec<u64> = kids.iter().filter_map(|k| k.attempts[0].submitted_ms()).collect();
        submits.sort_unstable();
        let mut gaps: Vec<u64> = submits.windows(2).map(|w| w[1] - w[0]).collect();
        gaps.sort_unstable();
        let pace = gaps[gaps.len() / 2].max(1);
        // What its recorded calls explain: until the last of them was submitted or ended.
        let explained = kids
            .iter()
            .map(|k| k.last().ended_ms().unwrap_or(0).max(k.attempts[0].submitted_ms().unwrap_or(0)))
            .max()
            .unwrap_or(0);
        let unexplained = c_end.saturating_sub(explained);
        if unexplained <= UNEXPLAINED_MIN_MS.max(UNEXPLAINED_GAPS * pace) {
            continue;
        }
        let last_callee = kids.iter().max_by_key(|k| k.attempts[0].submitted_ms()).map(|k| name(k));
        out.push(LostCalls {
            name: last_callee,
            calls: Some(unexplained / pace),
            caller: Some(name(c)),
            node: short_node(c.last().node_id.as_deref()),
            evidence: format!(
                "{} ran {:.2} s past its last recorded call, up to the job's end, having made one every {:.3} s: \
                 about that many calls were made and not reported",
                name(c),
                unexplained as f64 / 1e3,
                pace as f64 / 1e3
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::rows::{ObservedJob, ObservedTask};
    use crate::observe::store::{Change, StoreLimits};

    const JOB: &str = "01000000";
    const DRIVER: &str = "ffffffffffffffffffffffffffffffffffffffff01000000";

    fn call(id: &str, parent: &str, name: &str, state: &str, submit: u64, end: Option<u64>) -> Change {
        Change::Task(ObservedTask {
            task_id: id.into(),
            job_id: JOB.into(),
            name: name.into(),
            kind: "NORMAL_TASK".into(),
            state: state.into(),
            parent_task_id: Some(parent.into()),
            node_id: Some("abcdef0123456789".into()),
            events: vec![("PENDING_ARGS_AVAIL".into(), submit)],
            start_time_ms: Some(submit + 1),
            end_time_ms: end,
            ..Default::default()
        })
    }

    /// A worker that calls `put` every 100 ms for its first second (all reported), then
    /// runs on until `worker_end`.
    fn store(worker_end: u64, put_ends_at_worker_end: bool) -> Store {
        let mut s = Store::new(StoreLimits::default());
        s.apply(&Change::Job(ObservedJob { job_id: JOB.into(), status: "SUCCEEDED".into(), ..Default::default() }));
        s.apply(&call("w1", DRIVER, "worker", "FINISHED", 1_000, Some(worker_end)));
        for i in 0..10u64 {
            let end = if put_ends_at_worker_end && i == 9 { worker_end - 1 } else { 1_000 + i * 100 + 5 };
            s.apply(&call(&format!("p{i}"), "w1", "Queue.put", "FINISHED", 1_000 + i * 100, Some(end)));
        }
        s
    }

    #[test]
    fn a_caller_that_ran_on_to_the_jobs_end_past_its_paced_calls_lost_about_that_many() {
        let s = store(3_000, false);
        let lost = detect(&s, 1, Some(3_200), &BTreeSet::new());
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(lost[0].name.as_deref(), Some("Queue.put"));
        // 3.0 s - 1.905 s at one call per 100 ms.
        assert_eq!(lost[0].calls, Some(10));
        assert_eq!(lost[0].node.as_deref(), Some("abcdef012345"));
    }

    #[test]
    fn no_loss_where_the_callers_time_is_explained_or_its_reports_were_not_cut() {
        // Its last call ran until just before it returned (`ray.get` at the end).
        assert_eq!(detect(&store(3_000, true), 1, Some(3_200), &BTreeSet::new()), []);
        // It ended long before the job did: its reports were sent.
        assert_eq!(detect(&store(3_000, false), 1, Some(9_000), &BTreeSet::new()), []);
        // The job has not ended.
        assert_eq!(detect(&store(3_000, false), 1, None, &BTreeSet::new()), []);
        // The driver lingered 2.5 s after its calls (as the test programs do).
        let mut s = store(1_950, true);
        s.apply(&Change::Task(ObservedTask {
            task_id: DRIVER.into(),
            job_id: JOB.into(),
            kind: "DRIVER_TASK".into(),
            state: "FINISHED".into(),
            start_time_ms: Some(900),
            end_time_ms: Some(4_500),
            ..Default::default()
        }));
        for i in 0..5u64 {
            s.apply(&call(&format!("d{i}"), DRIVER, "f", "FINISHED", 1_000 + i * 50, Some(1_100 + i * 50)));
        }
        assert_eq!(detect(&s, 1, Some(4_500), &BTreeSet::new()), []);
    }

    #[test]
    fn an_unfinished_call_and_an_unlisted_caller_are_losses() {
        let mut s = store(1_950, true);
        s.apply(&call("u1", "w1", "Queue.put", "RUNNING", 1_960, None));
        s.apply(&call("o1", "a_caller_never_listed", "leaf", "FINISHED", 1_100, Some(1_200)));
        let lost = detect(&s, 1, Some(9_000), &BTreeSet::new());
        assert_eq!(lost.len(), 2, "{lost:?}");
        assert_eq!((lost[0].name.as_deref(), lost[0].calls), (Some("Queue.put"), Some(1)));
        assert!(lost[1].evidence.contains("never listed") && lost[1].evidence.contains("leaf"), "{lost:?}");
        let told: BTreeSet<u64> = [s.task_number("u1").unwrap()].into();
        assert_eq!(detect(&s, 1, Some(9_000), &told).len(), 1, "an ended-with-job call is not a loss too");
    }

    #[test]
    fn a_call_whose_worker_never_reported_leaves_its_own_calls_unknown() {
        // Ray 2.49, a driver that exits at once: the producer's owner (the driver) said
        // it finished, its worker never said it ran, and its 11 calls are not listed.
        let mut s = Store::new(StoreLimits::default());
        s.apply(&Change::Job(ObservedJob { job_id: JOB.into(), status: "SUCCEEDED".into(), ..Default::default() }));
        let mut producer = match call("pr", DRIVER, "producer", "FINISHED", 1_000, Some(1_700)) {
            Change::Task(t) => t,
            _ => unreachable!(),
        };
        producer.start_time_ms = None;
        s.apply(&Change::Task(producer));
        let lost = detect(&s, 1, Some(1_800), &BTreeSet::new());
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!((lost[0].caller.as_deref(), lost[0].calls), (Some("producer"), None));
        // Its worker's report came: nothing is said.
        let s = store(1_950, true);
        assert_eq!(detect(&s, 1, Some(9_000), &BTreeSet::new()), []);
    }

    #[test]
    fn an_inner_call_that_ended_with_the_job_unreported_lost_the_calls_its_siblings_made() {
        // suite.py's `nested` on Ray 2.60, by pull: `outer` made 3 `inner` calls and went
        // on; 2 were reported whole with their 2 `leaf` calls each; the third, stuck at
        // PENDING_NODE_ASSIGNMENT, had returned, but its worker (and its 2 leaf calls'
        // definitions) was killed with the job before it reported.
        let mut s = Store::new(StoreLimits::default());
        s.apply(&Change::Job(ObservedJob { job_id: JOB.into(), status: "SUCCEEDED".into(), ..Default::default() }));
        s.apply(&call("o1", DRIVER, "outer", "FINISHED", 1_000, Some(1_900)));
        for i in 0..2 {
            s.apply(&call(&format!("i{i}"), "o1", "inner", "FINISHED", 1_010, Some(1_500)));
            for k in 0..2 {
                s.apply(&call(&format!("l{i}{k}"), &format!("i{i}"), "leaf", "FINISHED", 1_100, Some(1_200)));
            }
        }
        let mut stuck = match call("i2", "o1", "inner", "PENDING_NODE_ASSIGNMENT", 1_010, None) {
            Change::Task(t) => t,
            _ => unreachable!(),
        };
        (stuck.start_time_ms, stuck.node_id) = (None, None);
        s.apply(&Change::Task(stuck));
        let told: BTreeSet<u64> = [s.task_number("i2").unwrap()].into();
        let lost = detect(&s, 1, Some(2_000), &told);
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(
            (lost[0].name.as_deref(), lost[0].calls, lost[0].caller.as_deref()),
            (Some("leaf"), Some(2), Some("inner")),
            "{lost:?}"
        );
        // Where the function's reported calls made none, its unreported call made none
        // that anything tells of: nothing is said.
        let mut s = Store::new(StoreLimits::default());
        s.apply(&Change::Job(ObservedJob { job_id: JOB.into(), status: "SUCCEEDED".into(), ..Default::default() }));
        s.apply(&call("f0", DRIVER, "f", "FINISHED", 1_000, Some(1_100)));
        s.apply(&call("f1", DRIVER, "f", "PENDING_NODE_ASSIGNMENT", 1_000, None));
        let told: BTreeSet<u64> = [s.task_number("f1").unwrap()].into();
        assert_eq!(detect(&s, 1, Some(2_000), &told), []);
    }

    #[test]
    fn an_inner_call_that_ran_and_ended_with_the_job_lost_what_it_made_since_its_workers_last_report() {
        // suite.py's `nested` on Ray 2.60 under load: the third `inner` reported RUNNING,
        // then returned to `outer`; its worker was killed with the job before its next
        // flush, so the GCS marked it FAILED (killed with the job) and its `leaf` calls'
        // definitions, in that worker's buffer, never came: none (or one) listed.
        for listed in [0u64, 1] {
            let mut s = Store::new(StoreLimits::default());
            s.apply(&Change::Job(ObservedJob { job_id: JOB.into(), status: "SUCCEEDED".into(), ..Default::default() }));
            s.apply(&call("o1", DRIVER, "outer", "FINISHED", 1_000, Some(1_900)));
            for i in 0..3 {
                let (state, end) = if i == 2 { ("FAILED", Some(2_100)) } else { ("FINISHED", Some(1_500)) };
                s.apply(&call(&format!("i{i}"), "o1", "inner", state, 1_010, end));
                let leaves = if i == 2 { listed } else { 2 };
                for k in 0..leaves {
                    s.apply(&call(&format!("l{i}{k}"), &format!("i{i}"), "leaf", "FINISHED", 1_100, Some(1_200)));
                }
            }
            let told: BTreeSet<u64> = [s.task_number("i2").unwrap()].into();
            let lost = detect(&s, 1, Some(2_000), &told);
            assert_eq!(lost.len(), 1, "{lost:?}");
            assert_eq!(
                (lost[0].name.as_deref(), lost[0].calls, lost[0].caller.as_deref()),
                (Some("leaf"), Some(2 - listed), Some("inner")),
                "{lost:?}"
            );
            assert!(lost[0].evidence.contains("ended with the job"), "{lost:?}");
            // Failed for a reason of its own (not the job's end): it did not return, so
            // nothing tells what it would have made.
            assert_eq!(detect(&s, 1, Some(2_000), &BTreeSet::new()), [], "listed {listed}");
        }
        // The only call of its function, it ran and ended with the job: nothing tells
        // what it made, and its worker did report, so nothing is said.
        let mut s = Store::new(StoreLimits::default());
        s.apply(&Change::Job(ObservedJob { job_id: JOB.into(), status: "SUCCEEDED".into(), ..Default::default() }));
        s.apply(&call("o1", DRIVER, "outer", "FINISHED", 1_000, Some(1_900)));
        s.apply(&call("i0", "o1", "inner", "FAILED", 1_010, Some(2_100)));
        let told: BTreeSet<u64> = [s.task_number("i0").unwrap()].into();
        assert_eq!(detect(&s, 1, Some(2_000), &told), []);
    }

    #[test]
    fn a_returned_call_whose_phases_stop_before_its_execution_ended_lost_the_calls_made_after() {
        // suite.py's `nested` on Ray 2.49 by pull: an `inner` FINISHED (its owner said
        // so) with `task:deserialize_arguments` alone, one of its two `leaf` calls listed;
        // its siblings' phases run to `task:execute`.
        let with_phases = |c: Change, cut: bool| match c {
            Change::Task(t) => Change::Task(ObservedTask { profiled: true, execution_cut: cut, ..t }),
            _ => unreachable!(),
        };
        let mut s = Store::new(StoreLimits::default());
        s.apply(&Change::Job(ObservedJob { job_id: JOB.into(), status: "SUCCEEDED".into(), ..Default::default() }));
        s.apply(&with_phases(call("o1", DRIVER, "outer", "FINISHED", 1_000, Some(1_900)), false));
        for i in 0..3 {
            s.apply(&with_phases(call(&format!("i{i}"), "o1", "inner", "FINISHED", 1_010, Some(1_500)), i == 2));
            for k in 0..(if i == 2 { 1 } else { 2 }) {
                let leaf = call(&format!("l{i}{k}"), &format!("i{i}"), "leaf", "FINISHED", 1_100, Some(1_200));
                s.apply(&with_phases(leaf, false));
            }
        }
        let lost = detect(&s, 1, Some(2_000), &BTreeSet::new());
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(
            (lost[0].name.as_deref(), lost[0].calls, lost[0].caller.as_deref()),
            (Some("leaf"), Some(1), Some("inner")),
            "{lost:?}"
        );
        // A later read has its execution's end: whole.
        s.apply(&with_phases(call("i2", "o1", "inner", "FINISHED", 1_010, Some(1_500)), false));
        assert_eq!(detect(&s, 1, Some(2_000), &BTreeSet::new()), []);
    }

    #[test]
    fn a_call_known_only_from_its_worker_is_lost_and_named_by_its_actors_class() {
        // Ray 2.49's push: the queue actor said it ran 2 calls; their definitions, sent
        // by the producer's worker, never came.
        let mut s = store(1_950, true);
        let actor = "0123456789abcdef0123456701000000";
        s.apply(&call(&format!("ffffffffffffffff{actor}"), DRIVER, "Queue.__init__", "FINISHED", 900, Some(950)));
        for k in 0..2 {
            s.apply(&Change::Task(ObservedTask {
                task_id: format!("{k:016x}{actor}"),
                job_id: JOB.into(),
                state: "RUNNING".into(),
                events: vec![("RUNNING".into(), 1_500)],
                ..Default::default()
            }));
        }
        let lost = detect(&s, 1, Some(9_000), &BTreeSet::new());
        assert_eq!(lost.len(), 1, "told once: {lost:?}");
        assert!(lost[0].evidence.contains("definitions"), "{lost:?}");
        assert_eq!((lost[0].name.as_deref(), lost[0].calls), (Some("Queue.?"), Some(2)));
    }
}
