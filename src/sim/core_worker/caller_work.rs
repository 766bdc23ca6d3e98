//! The caller's own work on its node's cores, which a program step pays before it goes
//! on: its submit loop, a driver's first submit, a put or a get's copy, a return's put,
//! a task worker's first call. Each is placed on the cores now and the step resumes
//! when it ends.
//!
//! Owns: placing that work and scheduling the step's `Resume`. Must never: change a
//! task's state, or move a task's program counter except past the step it pays for.

use crate::model::*;
use crate::sim::clock::Event;
use crate::sim::follow::Cx;
use crate::sim::gcs::actors::ActorManager;
use crate::sim::objects::put_cost_on;
use crate::sim::raylet::node_cpu::Priority;

/// The caller just submitted `calls` of `spec`: it stays busy for their submit cost of
/// work on its node's cores (`actor_call_submit_cost` each for actor calls, else
/// `call_submit_cost`), and goes on with its program on `Resume`. Returns true when
/// it must wait.
pub(crate) fn pay_submit_cost(cx: &mut Cx, tid: TaskId, attempt: u32, spec: u32, calls: u32) -> bool {
    work_then_resume(cx, tid, attempt, submit_cost(cx, spec, calls))
}

/// The caller's work for submitting `calls` of `spec`, placed on its node's cores
/// now, for a step that hands its calls over after placing it: when it ends (None for
/// no work). The idle task workers those calls will lease on its node count as busy
/// beside it from its start (`NodeCpus::work_leasing`).
pub(crate) fn place_submit_cost(cx: &mut Cx, tid: TaskId, spec: u32, calls: u32) -> Option<u64> {
    let busy = submit_cost(cx, spec, calls);
    (busy > 0).then(|| place_work_leasing(cx, tid, busy, |cx, node| leasable_on(cx, node, spec, calls)))
}

/// How many of `calls` normal tasks of `spec` the caller's node `n` has the resources
/// to lease now (the local-first raylet grants those there); none for actor calls.
fn leasable_on(cx: &Cx, n: NodeIdx, spec: u32, calls: u32) -> u32 {
    let s = &cx.specs[spec as usize];
    if s.kind != TaskType::NormalTask {
        return 0;
    }
    let available = &cx.model.nodes()[n.index()].available;
    let mut room = calls as i64;
    for &(id, q) in s.request.0.iter().filter(|(_, q)| q.0 > 0) {
        room = room.min(available.get(id).0 / q.0);
    }
    room.max(0) as u32
}

/// What submitting `calls` of `spec` costs its caller: `actor_call_submit_cost` each
/// for actor calls, else `call_submit_cost`.
fn submit_cost(cx: &Cx, spec: u32, calls: u32) -> u64 {
    let s = &cx.cfg.scheduler;
    let each = match cx.specs[spec as usize].kind {
        TaskType::ActorTask => s.actor_call_submit_cost,
        _ => s.call_submit_cost,
    };
    each.as_micros().saturating_mul(calls as u64)
}

/// A driver's or an actor's first task or actor `.remote()`: before it returns, Ray's
/// process sets up its submitting once (`first_submit_cost` of work on its node's
/// cores), then goes on with the same step on `Resume`. An actor's process pays it as
/// a driver does (worker_first_submit.py: 82-89 ms for an actor's first creation,
/// 67-98 ms for its driver's first call); a restarted actor is a new process. A task
/// worker's first `.remote()` there cost 0.4-4 ms, and is not charged. Returns true
/// when it must wait.
pub(crate) fn pay_first_submit(cx: &mut Cx, tid: TaskId, attempt: u32) -> bool {
    let Some(t) = cx.model.tasks.get(&tid) else { return false };
    match (t.kind, t.actor.get()) {
        (TaskType::DriverTask, _) => {
            let run = cx.runs.get_mut(&tid).expect("a running task has a run");
            if std::mem::replace(&mut run.submitted, true) {
                return false;
            }
        }
        (TaskType::ActorTask | TaskType::ActorCreationTask, Some(a)) => {
            if !ActorManager::first_submit(cx.model, a) {
                return false;
            }
        }
        _ => return false,
    }
    work_then_resume(cx, tid, attempt, cx.cfg.scheduler.first_submit_cost.as_micros())
}

/// The task's return is over `object_store.inline_threshold`: before it finishes, its
/// worker puts the return into its node's store (`put_micros` of work), and goes on
/// past its program's end on `Resume`, unless its program's stretches hold the put
/// already (a replayed call). Returns true when it must wait.
pub(crate) fn pay_return_put(cx: &mut Cx, tid: TaskId, attempt: u32, spec: u32) -> bool {
    let s = &cx.specs[spec as usize];
    let size = s.return_size;
    if size <= cx.cfg.object_store.inline_threshold.0 || s.put_in_body {
        return false;
    }
    let Some(node) = cx.model.tasks.get(&tid).and_then(|t| t.node.get()) else { return false };
    cx.runs.get_mut(&tid).expect("a running task has a run").pc += 1;
    let cost = put_cost_on(cx.cfg, cx.model, node, size);
    work_then_resume(cx, tid, attempt, cost)
}

/// A task worker's first call: before its reply the worker works
/// `worker_first_call_latency` on its node's cores (`Run::first_call`, spent here).
/// Returns true when it must wait.
pub(crate) fn pay_first_call(cx: &mut Cx, tid: TaskId, attempt: u32) -> bool {
    let run = cx.runs.get_mut(&tid).expect("a running task has a run");
    if !std::mem::take(&mut run.first_call) {
        return false;
    }
    let cost = cx.cfg.scheduler.worker_first_call_latency.as_micros();
    work_then_resume(cx, tid, attempt, cost)
}

/// The task works `busy` µs on its node's cores, then goes on with its program on
/// `Resume`. Returns true when it must wait (false for no work).
pub(crate) fn work_then_resume(cx: &mut Cx, tid: TaskId, attempt: u32, busy: u64) -> bool {
    let done = (busy > 0).then(|| place_work(cx, tid, busy));
    resume_at(cx, tid, attempt, done)
}

/// The task goes on with its program on `Resume` when its work placed ends (`done`).
/// Returns true when it must wait (false for no work placed).
pub(crate) fn resume_at(cx: &mut Cx, tid: TaskId, attempt: u32, done: Option<u64>) -> bool {
    let Some(done) = done else { return false };
    cx.clock.schedule_at(done, Event::Resume(tid, attempt));
    true
}

/// `busy` µs of the task's work placed on its node's cores now: when it ends. A
/// driver's work runs at normal priority, a worker process's reniced.
pub(crate) fn place_work(cx: &mut Cx, tid: TaskId, busy: u64) -> u64 {
    place_work_leasing(cx, tid, busy, |_, _| 0)
}

/// As [`place_work`], for work that hands `leasing(node)` normal tasks to the
/// task's node as it starts (`NodeCpus::work_leasing`).
fn place_work_leasing(cx: &mut Cx, tid: TaskId, busy: u64, leasing: impl FnOnce(&Cx, NodeIdx) -> u32) -> u64 {
    let now = cx.clock.now;
    let Some(t) = cx.model.tasks.get(&tid) else { return now + busy };
    let Some(node) = t.node.get() else { return now + busy };
    let (priority, leasing) = (Priority::of_process_running(t), leasing(cx, node));
    cx.cpus.work_leasing(node, priority, now, busy, leasing)
}
