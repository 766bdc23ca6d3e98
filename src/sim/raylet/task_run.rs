//! A leased task's run on its worker: dispatch, argument fetch (or waiting again for
//! arguments lost with a node), the worker starting the call, each op of its program
//! finishing, and the end of the run with its results sealed. Functions of the task
//! table over the narrow context, as the worker and its raylet run them.
//!
//! Owns: nothing of its own (a run's state is in the task runs table, `task_runs.rs`).
//! Must never: choose a
//! node (`cluster_queues.rs` leases), decide a retry (`retries.rs`), or call another
//! component (what they must do is returned as follow-ups).

use super::cluster_queues::release_lease;
use super::node_cpu::{Priority, Thread};
use super::node_runtime;
use crate::model::*;
use crate::sim::clock::Event;
use crate::sim::core_worker::tasks::release_refs;
use crate::sim::faults::FaultState;
use crate::sim::flow_recorder::FlowRecorder;
use crate::sim::follow::{Cx, Follow, Follows};
use crate::sim::gcs::actors::ActorManager;
use crate::sim::objects::PlasmaStores;
use smallvec::smallvec;

/// The lease reached the node: the task's arguments are fetched there (or it waits
/// again for ones lost since it was submitted), then it starts.
pub(crate) fn dispatch(
    cx: &mut Cx,
    plasma: &mut PlasmaStores,
    actors: &ActorManager,
    tid: TaskId,
    attempt: u32,
) -> Follows {
    let Some(t) = cx.model.tasks.get(&tid).filter(|t| leased_for(t, attempt)) else { return Follows::new() };
    let node = t.node.get().expect("leased task has a node");
    // Arguments lost since submission (node death) send the task back to wait for them.
    if let Some(follows) = rewait_for_lost_args(cx, tid) {
        return follows;
    }
    plasma.fetch_args(cx, actors, tid, attempt, node, TaskState::PendingArgsFetch)
}

/// Whether `t`'s lease for `attempt` is still granted and it has not gone to its worker:
/// what a `Push` or `Dispatch` scheduled for that attempt acts on (a later attempt, a
/// failure or a lost node makes it stale).
pub(crate) fn leased_for(t: &Task, attempt: u32) -> bool {
    t.attempt == attempt && t.state() == TaskState::PendingNodeAssignment && t.holds_resources
}

/// The arguments arrived: the task starts.
pub(crate) fn args_fetched(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId, attempt: u32) -> Follows {
    let Some(t) = cx.model.tasks.get(&tid) else { return Follows::new() };
    if t.attempt != attempt {
        return Follows::new();
    }
    match (t.state(), t.node.get()) {
        (TaskState::PendingArgsFetch, Some(n)) | (TaskState::PendingActorTaskArgsFetch, Some(n)) => {
            start(cx, flow, tid, n)
        }
        _ => Follows::new(),
    }
}

/// If some argument is no longer available, give up the lease (`Some`), then wait for
/// the arguments again ([`Follow::RewaitArgs`]).
fn rewait_for_lost_args(cx: &mut Cx, tid: TaskId) -> Option<Follows> {
    let args = cx.model.tasks[&tid].args.clone();
    let mut missing = 0;
    for a in args.iter() {
        if let Some(o) = cx.model.objects.get_mut(a) {
            if matches!(o.status, ObjectStatus::Pending | ObjectStatus::Lost) {
                o.waiters.push(tid);
                missing += 1;
            }
        }
    }
    if missing == 0 {
        return None;
    }
    let mut follows = release_lease(cx, tid);
    follows.push(Follow::RewaitArgs(tid, missing));
    Some(follows)
}

/// The task gave its lease back and waits for `missing` arguments (PENDING_ARGS_AVAIL).
pub(crate) fn rewait_args(cx: &mut Cx, tid: TaskId, missing: u32) {
    cx.runs.get_mut(&tid).expect("a live task has a run").exec.unresolved = missing;
    cx.model.tasks.get_mut(&tid).expect("task exists").node = CompactOption::NONE;
    cx.model.set_task_state(tid, TaskState::PendingArgsAvail, cx.clock.now);
}

/// The task is handed to its worker; its body runs once `call_start_cost` of work on
/// the node's cores is done (RUNNING), the worker's own per-call overhead. A normal task is SUBMITTED_TO_WORKER meanwhile;
/// an actor call already was when pushed to its actor, and Ray lists no such state
/// for an actor's creation.
pub(crate) fn start(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId, node: NodeIdx) -> Follows {
    let now = cx.now();
    if cx.model.tasks.get(&tid).is_some_and(|t| t.kind == TaskType::NormalTask) {
        cx.model.set_task_state(tid, TaskState::SubmittedToWorker, now);
    }
    let t = cx.model.tasks.get_mut(&tid).expect("task exists");
    t.node = Some(node).into();
    let (attempt, kind, actor) = (t.attempt, t.kind, t.actor.get());
    let s = &cx.cfg.scheduler;
    let mut cost = s.call_start_cost.as_micros();
    if kind == TaskType::NormalTask {
        cost += s.task_worker_cost.as_micros();
    }
    // A call to an actor that runs calls concurrently starts on its one event loop.
    let concurrent = match (kind, actor) {
        (TaskType::ActorTask, Some(a)) => cx.model.actors().get(&a).filter(|a| a.max_concurrency > 1).map(|a| a.id),
        _ => None,
    };
    if concurrent.is_some() {
        cost += s.async_call_cost.as_micros();
    }
    // A new actor's process answers nothing until its first work's window is over, as
    // a task worker's first call waits (`worker_ready`).
    let answers_from = match (kind, actor) {
        (TaskType::ActorTask, Some(a)) => cx.cpus.actor_answers_from(node, a, now),
        _ => now,
    };
    if cost > 0 || answers_from > now {
        let run = cx.runs.get_mut(&tid).expect("a live task has a run");
        run.begin_due = true;
        // A process that came up for this call is not reniced yet.
        let priority = if std::mem::take(&mut run.unreniced) { Priority::Normal } else { Priority::Worker };
        let due = match concurrent {
            Some(a) => cx.cpus.thread_work(node, Thread::ActorLoop(a), Priority::Worker, now, now, cost),
            None => cx.cpus.work(node, priority, now, cost),
        }
        .max(answers_from);
        cx.clock.schedule_at(due, Event::Begin(tid, attempt));
        return Follows::new();
    }
    begin(cx, flow, tid, node)
}

/// Whether `attempt` of `tid` is the one running now: an event scheduled for an
/// attempt that has since ended (failed, retried, killed) does nothing.
pub(crate) fn running_attempt(m: &Model, tid: TaskId, attempt: u32) -> bool {
    m.tasks.get(&tid).is_some_and(|t| t.attempt == attempt && t.state() == TaskState::Running)
}

/// A call raised: the error reaches its caller once the worker has done
/// `task_error_cost` of work on its node's cores ([`Event::Raised`]).
fn raise(cx: &mut Cx, tid: TaskId, attempt: u32) -> Follows {
    let cost = cx.cfg.scheduler.task_error_cost.as_micros();
    let node = cx.model.tasks.get(&tid).and_then(|t| t.node.get());
    match node {
        Some(n) if cost > 0 => {
            let due = cx.cpus.work(n, Priority::Worker, cx.clock.now, cost);
            cx.clock.schedule_at(due, Event::Raised(tid, attempt));
            Follows::new()
        }
        _ => smallvec![Follow::FailTask(tid, ErrorType::TaskExecutionException, true)],
    }
}

/// The raised error is stored: the call fails (and is retried, when it may be), unless
/// something else ended this attempt meanwhile.
pub(crate) fn on_raised(m: &Model, tid: TaskId, attempt: u32) -> Follows {
    if_still_running(m, tid, attempt, Follow::FailTask(tid, ErrorType::TaskExecutionException, true))
}

/// The worker's per-call overhead is over: the body begins.
pub(crate) fn on_begin(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId, attempt: u32) -> Follows {
    let Some(t) = cx.model.tasks.get(&tid) else { return Follows::new() };
    if t.attempt != attempt || !cx.runs[&tid].begin_due {
        return Follows::new();
    }
    let node = t.node.get().expect("a task handed to a worker has a node");
    begin(cx, flow, tid, node)
}

/// The caller's busy time for its last submissions is over: go on with its program.
pub(crate) fn on_resume(m: &Model, tid: TaskId, attempt: u32) -> Follows {
    if_still_running(m, tid, attempt, Follow::RunProgram(tid))
}

/// `then`, unless something else ended this attempt while it waited for its event.
fn if_still_running(m: &Model, tid: TaskId, attempt: u32, then: Follow) -> Follows {
    if running_attempt(m, tid, attempt) {
        smallvec![then]
    } else {
        Follows::new()
    }
}

/// A worker starts executing the task's body; the memory monitor looks at a node whose
/// workers' heap grew before the body runs ([`Follow::BeginRun`]).
fn begin(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId, node: NodeIdx) -> Follows {
    let now = cx.now();
    let m = &mut *cx.model;
    m.set_task_state(tid, TaskState::Running, now);
    let t = m.tasks.get_mut(&tid).expect("task exists");
    t.started_at = Some(now).into();
    cx.runs.get_mut(&tid).expect("a live task has a run").restart();
    let heap = cx.specs[t.spec as usize].heap;
    let kind = t.kind;
    let actor = t.actor.get();
    node_runtime::worker_heap_grew(m, node, heap);
    m.node_stats_mut(node, &super::STATS_KEY).tasks_started += 1;
    if kind == TaskType::ActorCreationTask {
        // Each actor gets a dedicated worker process (its start was counted when the
        // lease found it one: `cluster_queues::worker_ready`).
        let pid = m.alloc_pid();
        if let Some(a) = actor {
            if ActorManager::process_started(m, a, node, pid) {
                let s = &cx.cfg.scheduler;
                let window = s.actor_first_call_latency.unwrap_or(s.worker_first_call_latency);
                cx.cpus.actor_up(node, a, now, now + window.as_micros());
            }
        }
    }
    if heap > 0 {
        return smallvec![Follow::CheckMemory(node), Follow::BeginRun(tid, node)];
    }
    begin_run(cx, flow, tid, node)
}

/// The body runs, unless the memory monitor killed it as it began.
pub(crate) fn begin_run(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId, node: NodeIdx) -> Follows {
    flow.started(cx.model, cx.runs, tid, node, cx.clock.now);
    if cx.model.tasks.get(&tid).is_some_and(|t| t.state() == TaskState::Running) {
        smallvec![Follow::RunProgram(tid)]
    } else {
        Follows::new()
    }
}

/// An op (compute, sleep) finished: the program goes on, unless an injected failure
/// strikes the worker now.
pub(crate) fn op_done(cx: &mut Cx, faults: &FaultState, tid: TaskId, attempt: u32) -> Follows {
    let Some(t) = cx.model.tasks.get(&tid) else { return Follows::new() };
    if t.attempt != attempt || t.state() != TaskState::Running {
        return Follows::new();
    }
    if t.kind != TaskType::DriverTask {
        if let Some((p, application)) = faults.failure_probability() {
            if rand::Rng::random::<f64>(cx.rng) < p {
                let err = if application { ErrorType::TaskExecutionException } else { ErrorType::WorkerDied };
                let (actor, kind) = (t.actor.get(), t.kind);
                if !application {
                    let name = cx.model.names.get(t.name).to_string();
                    let node = t.node.get();
                    cx.model.counters.count_worker_failure(node.map(|n| n.0), "SystemError", name);
                    if let Some(n) = node {
                        cx.model.node_stats_mut(n, &super::STATS_KEY).worker_failures += 1;
                    }
                }
                return match (kind, actor, application) {
                    // An actor's calls run in its own process: a crash there is the
                    // actor's death (restarted within max_restarts; its calls fail or retry).
                    (TaskType::ActorTask, Some(a), false) => {
                        smallvec![Follow::ActorDied(a, "the actor's worker process died".into(), true)]
                    }
                    // The call raised: its worker formats and stores the error first.
                    (_, _, true) => raise(cx, tid, attempt),
                    _ => smallvec![Follow::FailTask(tid, err, true)],
                };
            }
        }
    }
    smallvec![Follow::RunProgram(tid)]
}

/// The program ran to its end: the worker's heap and lease go back, then
/// ([`Follow::FinishReleased`]) its references, then its result is sealed.
pub(crate) fn finish(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId) -> Follows {
    let t = cx.model.tasks.get(&tid).expect("finishing task exists");
    let (kind, node) = (t.kind, t.node.get());
    let spec = &cx.specs[t.spec as usize];
    let heap = spec.heap;
    if let Some(n) = node {
        node_runtime::worker_heap_shrank(cx.model, n, heap);
        cx.model.node_stats_mut(n, &super::STATS_KEY).tasks_finished += 1;
    }
    if keeps_resources(cx, tid) {
        // The actor keeps its resources for its lifetime: the lease becomes the actor's.
        cx.model.tasks.get_mut(&tid).expect("task exists").holds_resources = false;
        if let Some(n) = node {
            cx.raylets.lease_returned(n, tid, cx.model);
        }
    } else if kind == TaskType::DriverTask {
        if let Some(n) = node {
            cx.raylets.lease_returned(n, tid, cx.model);
        }
    } else if kind == TaskType::NormalTask {
        // Its owner may push the worker its next task on the same lease.
        return smallvec![Follow::ReuseOrReleaseLease(tid), Follow::FinishReleased(tid)];
    } else {
        let mut follows = release_lease(cx, tid);
        follows.push(Follow::FinishReleased(tid));
        return follows;
    }
    finish_released(cx, flow, tid)
}

/// An actor's creation task whose actor holds its resources for life.
fn keeps_resources(cx: &Cx, tid: TaskId) -> bool {
    let t = &cx.model.tasks[&tid];
    t.kind == TaskType::ActorCreationTask && cx.specs[t.spec as usize].actor.as_ref().is_some_and(|a| a.holds_resources)
}

/// The finished task drops its references, then retires.
pub(crate) fn finish_released(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId) -> Follows {
    release_refs(cx.model, cx.runs, tid, true);
    finish_settled(cx, flow, tid)
}

/// The finished task retires and its result is sealed on its node; an actor is created,
/// takes its next call, or a driver's job succeeds.
fn finish_settled(cx: &mut Cx, flow: &mut FlowRecorder, tid: TaskId) -> Follows {
    let now = cx.now();
    let keeps = keeps_resources(cx, tid);
    let m = &mut *cx.model;
    let t = &m.tasks[&tid];
    let (kind, node, ret, actor, job, attempt) = (t.kind, t.node.get(), t.returns, t.actor.get(), t.job, t.attempt);
    let return_size = cx.specs[t.spec as usize].return_size;
    flow.ended(m, cx.runs, tid, now, true, return_size);
    cx.runs.retire_task(m, tid, TaskState::Finished, now, return_size);
    if let Some(a) = actor.filter(|_| kind == TaskType::ActorTask) {
        ActorManager::call_left(m, a, tid, false);
    }
    if let Some(o) = m.objects.get_mut(&ret) {
        o.producer_attempt = attempt;
    }
    let mut follows = Follows::new();
    if let Some(n) = node {
        follows.push(Follow::SealObject(ret, n));
    }
    match kind {
        TaskType::ActorCreationTask => {
            if let (Some(a), Some(n)) = (actor, node) {
                follows.push(Follow::ActorCreated(a, n, keeps));
            }
        }
        TaskType::ActorTask => {
            if let Some(a) = actor {
                follows.push(Follow::PumpActor(a));
            }
        }
        TaskType::DriverTask => follows.push(Follow::EndJob(job, JobStatus::Succeeded, "driver finished".into())),
        TaskType::NormalTask => {}
    }
    follows
}
