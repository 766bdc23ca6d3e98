//! Failure and retry: an attempt that fails is retried within its budget (system
//! failures; application errors only with `retry_exceptions`; OOM kills on their own
//! budget with backoff), or fails for good together with readers of its result.
//! Functions of the task table, as the owner's task manager runs them; they return what
//! other components must do. Must never: grant or place (the cluster task queues do).

use super::tasks::release_refs;
use crate::log_event;
use crate::model::*;
use crate::sim::clock::Event;
use crate::sim::flow_recorder::FlowRecorder;
use crate::sim::follow::{Cx, Follow, Follows};
use crate::sim::gcs::actors::ActorManager;
use crate::sim::raylet::cluster_queues::{release_lease, ClusterQueues};
use crate::sim::raylet::node_runtime;
use crate::workload::CallSpec;
use smallvec::smallvec;

/// A task attempt failed. Retries within its budget (system failures; application
/// errors only with `retry_exceptions`), else it fails for good and so do readers of
/// its result. First what the attempt holds is undone and its lease returned; the rest
/// runs once the freed resources were handed on ([`Follow::FailTaskReleased`]).
pub(crate) fn fail(
    cx: &mut Cx,
    queues: &mut ClusterQueues,
    tid: TaskId,
    err: ErrorType,
    retry_allowed: bool,
) -> Follows {
    let Some(t) = cx.model.tasks.get(&tid) else { return Follows::new() };
    if t.state().is_terminal() {
        return Follows::new();
    }
    let (kind, spec_id, actor, node) = (t.kind, t.spec, t.actor.get(), t.node.get());
    let was_running = t.state().is_running();
    let spec = &cx.specs[spec_id as usize];
    let retry_exceptions = spec.retry_exceptions;
    let heap = spec.heap;
    let budget_ok = t.retries_left != 0 || err == ErrorType::OutOfMemory;
    let actor_alive = actor.and_then(|a| cx.model.actors().get(&a)).is_some_and(|a| a.state() != ActorState::Dead);
    let retry = retry_allowed
        && budget_ok
        && match kind {
            TaskType::NormalTask => err.is_system() || (retry_exceptions && err == ErrorType::TaskExecutionException),
            TaskType::ActorTask => err.is_system() || err == ErrorType::ActorDied,
            _ => false,
        }
        && (kind != TaskType::ActorTask || actor_alive);
    // Undo what this attempt holds.
    if was_running {
        if let Some(n) = node {
            node_runtime::worker_heap_shrank(cx.model, n, heap);
        }
    }
    unqueue_waiting(queues, cx.model, cx.specs, tid);
    let mut follows = release_lease(cx, tid);
    follows.push(Follow::FailTaskReleased(tid, err, retry));
    follows
}

/// The failed attempt's lease is back: it leaves its actor's lists and drops its
/// references (its arguments too when it will not run again); then it is retried or
/// fails for good.
pub(crate) fn fail_released(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId, err: ErrorType, retry: bool) -> Follows {
    let Some(t) = cx.model.tasks.get(&tid) else { return Follows::new() };
    let (kind, actor, node) = (t.kind, t.actor.get(), t.node.get());
    if kind == TaskType::DriverTask {
        if let Some(n) = node {
            cx.raylets.lease_returned(n, tid, cx.model);
        }
    }
    if let Some(a) = actor {
        ActorManager::call_left(cx.model, a, tid, true);
    }
    release_refs(cx.model, cx.runs, tid, !retry);
    fail_settled(cx, flow, tid, err, retry)
}

/// The failed attempt is retried after its delay (OOM kills back off), or it fails for
/// good: its return fails, an actor whose constructor it was dies, a driver ends its job.
fn fail_settled(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId, err: ErrorType, retry: bool) -> Follows {
    let now = cx.now();
    let Some(t) = cx.model.tasks.get_mut(&tid) else { return Follows::new() };
    let (kind, actor, job) = (t.kind, t.actor.get(), t.job);
    let mut follows = Follows::new();
    if retry {
        let mut delay = 0;
        if err == ErrorType::OutOfMemory {
            t.oom_retries = t.oom_retries.saturating_add(1);
            let base = cx.cfg.memory_monitor.oom_retry_delay.as_micros();
            delay = (base << t.oom_retries.min(6)).min(60_000_000);
        } else if t.retries_left > 0 {
            t.retries_left -= 1;
        }
        // The owner's core worker resubmits retries on its internal heartbeat's tick.
        let job_start = cx.model.jobs().get(&job).map_or(0, |j| j.start_time);
        let heartbeat = cx.cfg.scheduler.core_worker_internal_heartbeat.as_micros();
        delay += until_tick(now + delay, job_start, heartbeat);
        let next = TaskState::PendingNodeAssignment;
        log_event!(cx.model.log, now, "task", "{:x} ATTEMPT_FAILED error={}", tid.0, err.as_str());
        flow.requeued(cx.model, cx.runs, tid, now);
        cx.runs.begin_retry(cx.model, tid, next, now, err);
        let attempt = cx.model.tasks[&tid].attempt;
        cx.clock.schedule_in(delay, Event::Resubmit(tid, attempt));
    } else {
        t.error = Some(err);
        let ret = t.returns;
        flow.ended(cx.model, cx.runs, tid, now, false, 0);
        cx.runs.retire_task(cx.model, tid, TaskState::Failed, now, 0);
        follows.push(Follow::ObjectFailed(ret));
        // The actor whose constructor this was dies with it (unless that death is what
        // failed it): system failures restart it within `max_restarts`; an exception
        // in the constructor or an unschedulable actor is final, as in Ray's GCS.
        if let (TaskType::ActorCreationTask, Some(a), false) = (kind, actor, err == ErrorType::ActorDied) {
            let cause = match err {
                ErrorType::OutOfMemory => "killed by the memory monitor (OOM)".into(),
                ErrorType::NodeDied => "the node running the actor died".into(),
                e => format!("the creation task failed: {}", e.as_str()).into(),
            };
            follows.push(Follow::ActorDied(a, cause, err.is_system()));
        }
        if kind == TaskType::DriverTask {
            follows.push(Follow::EndJob(job, JobStatus::Failed, format!("driver failed: {}", err.as_str()).into()));
        }
    }
    if let (Some(a), TaskType::ActorTask) = (actor, kind) {
        follows.push(Follow::PumpActor(a));
    }
    follows
}

/// From `at` to the next tick of a period that started at `origin` (a tick exactly at
/// `at` waits a whole period: the heartbeat that noticed nothing has already run).
fn until_tick(at: u64, origin: u64, period: u64) -> u64 {
    if period == 0 {
        return 0;
    }
    period - at.saturating_sub(origin) % period
}

/// A retry's delay is over: it waits for any argument that is not available, else goes
/// to its actor or asks for a lease again.
pub(crate) fn resubmit(cx: &mut Cx, queues: &mut ClusterQueues, tid: TaskId, attempt: u32) -> Follows {
    let Some(t) = cx.model.tasks.get(&tid) else { return Follows::new() };
    if t.attempt != attempt {
        return Follows::new();
    }
    if let Some(follows) = rewait_for_lost_args(cx, queues, tid) {
        return follows;
    }
    if cx.model.tasks[&tid].kind == TaskType::ActorTask {
        smallvec![Follow::EnqueueActorTask(tid)]
    } else {
        smallvec![Follow::TrySchedule(tid)]
    }
}

/// Before a retry: wait for any argument that is not available (`Some`: the task waits,
/// or failed because an argument is gone for good).
fn rewait_for_lost_args(cx: &mut Cx, queues: &mut ClusterQueues, tid: TaskId) -> Option<Follows> {
    let args = cx.model.tasks[&tid].args.clone();
    let mut missing = 0;
    let (objects, nodes) = cx.model.objects_mut_with_nodes();
    for a in args.iter() {
        match objects.get_mut(a) {
            Some(o) if matches!(o.status, ObjectStatus::Pending | ObjectStatus::Lost) || o.only_on_crashed(nodes) => {
                o.waiters.push(tid);
                missing += 1;
            }
            Some(o) if o.status == ObjectStatus::Failed => {
                return Some(fail(cx, queues, tid, ErrorType::ObjectLost, false))
            }
            None => return Some(fail(cx, queues, tid, ErrorType::ObjectLost, false)),
            _ => {}
        }
    }
    if missing == 0 {
        return None;
    }
    cx.runs.get_mut(&tid).expect("a live task has a run").exec.unresolved = missing;
    cx.model.set_task_state(tid, TaskState::PendingArgsAvail, cx.clock.now);
    Some(Follows::new())
}

/// Take a task out of any wait queue it sits in.
fn unqueue_waiting(queues: &mut ClusterQueues, m: &Model, specs: &[CallSpec], tid: TaskId) {
    let Some(t) = m.tasks.get(&tid) else { return };
    if t.state() != TaskState::PendingNodeAssignment || t.holds_resources || t.kind == TaskType::ActorTask {
        return;
    }
    let (spec, pg) = (t.spec, t.bundle.get().map(|(pg, _)| pg));
    queues.unqueue(m, tid, spec, specs[spec as usize].class, pg);
}
