//! The owner's side of the task lifecycle, as Ray's core worker keeps it: submitting a
//! call (its return object, its arguments' references), sending a task whose
//! dependencies are ready to its actor or to the scheduler, and dropping what a task
//! holds. Functions of the task and object tables, through the narrow context.
//!
//! Must never: place a task or grant a lease (the cluster task queues do,
//! `cluster_queues.rs`), run one (`task_run.rs`), or fail one (`retries.rs`).

use super::task_runs::{Run, TaskRuns};
use crate::model::*;
use crate::sim::flow_recorder::FlowRecorder;
use crate::sim::follow::{Cx, Follow, Follows};
use crate::sim::objects::{new_return_object, unref_object};
use smallvec::smallvec;

/// Submit one call on behalf of a running task `parent` (whose owner node is `head`
/// when it has none); returns the task, its return object, and what follows (it is
/// scheduled at once when its arguments are ready, or fails when one failed).
pub(crate) fn submit(cx: &mut Cx, flow: &mut FlowRecorder, head: NodeIdx, call: Call) -> (TaskId, ObjectId, Follows) {
    let Call { spec: spec_id, parent, args, actor, bundle } = call;
    let now = cx.now();
    let (job, owner_node) = {
        let p = &cx.model.tasks[&parent];
        (p.job, p.node.get().unwrap_or(head))
    };
    let tid = cx.model.alloc_task_id();
    let spec = &cx.specs[spec_id as usize];
    let (kind, name, max_retries, return_size) = (spec.kind, spec.name, spec.max_retries, spec.return_size);
    let actor_retries = actor.and_then(|a| cx.model.actors().get(&a)).map(|a| a.max_task_retries).unwrap_or(0);
    let ret = new_return_object(cx, tid, parent, job, spec_id, return_size, &args);
    let m = &mut *cx.model;
    let mut unresolved = 0u32;
    let mut failed_arg = false;
    for a in args.iter() {
        if let Some(o) = m.objects.get_mut(a) {
            o.refs += 1;
            match o.status {
                ObjectStatus::Ready => {}
                ObjectStatus::Failed => failed_arg = true,
                ObjectStatus::Pending | ObjectStatus::Lost => {
                    o.waiters.push(tid);
                    unresolved += 1;
                }
            }
        } else {
            failed_arg = true;
        }
    }
    let initial =
        if unresolved > 0 || failed_arg { TaskState::PendingArgsAvail } else { TaskState::PendingNodeAssignment };
    let mut task = Task::new(tid, job, name, kind, spec_id, owner_node, now).in_state(initial);
    task.parent = Some(parent).into();
    task.actor = actor.into();
    task.args = args;
    task.returns = ret;
    task.bundle = bundle.into();
    task.retries_left = if kind == TaskType::ActorTask { actor_retries } else { max_retries };

    let line = m.log.line(now, "task").hex(tid.0).text(" SUBMITTED ").text(initial.as_str());
    line.text(" job=").hex_bytes(&job.0.to_le_bytes()).text(" parent=").hex(parent.0).end();
    cx.runs.insert_task(m, task, Run::waiting_for(unresolved));
    flow.submitted(m, cx.runs, cx.specs, tid, now);
    let follows = if failed_arg {
        smallvec![Follow::FailTask(tid, ErrorType::TaskExecutionException, false)]
    } else if unresolved == 0 {
        task_ready(cx, tid)
    } else {
        Follows::new()
    };
    (tid, ret, follows)
}

/// What a submitter says of one call.
pub(crate) struct Call {
    pub(crate) spec: u32,
    pub(crate) parent: TaskId,
    pub(crate) args: ObjectList,
    pub(crate) actor: Option<ActorId>,
    pub(crate) bundle: Option<(PgId, u32)>,
}

/// Dependencies are resolved: actor tasks go to their actor (pushed once it is alive),
/// the rest ask for a lease. Both wait in PENDING_NODE_ASSIGNMENT meanwhile, as in Ray.
pub(crate) fn task_ready(cx: &mut Cx, tid: TaskId) -> Follows {
    let now = cx.now();
    let Some(t) = cx.model.tasks.get_mut(&tid) else { return Follows::new() };
    t.ready_at = now;
    let kind = t.kind;
    cx.model.set_task_state(tid, TaskState::PendingNodeAssignment, now);
    if kind == TaskType::ActorTask {
        smallvec![Follow::EnqueueActorTask(tid)]
    } else {
        smallvec![Follow::TrySchedule(tid)]
    }
}

/// Drop what a task holds: its arguments (when it ends for good) and its futures. A
/// reference count is the object table's, so dropping one is a call
/// ([`unref_object`]), not a follow-up: it asks nothing of anyone.
pub(crate) fn release_refs(m: &mut Model, runs: &mut TaskRuns, tid: TaskId, args_too: bool) {
    let (Some(t), Some(r)) = (m.tasks.get_mut(&tid), runs.get_mut(&tid)) else { return };
    let futures = std::mem::take(&mut r.exec.futures);
    r.exec.puts.clear();
    r.exec.unresolved = 0;
    r.exec.failed_futures = 0;
    let args = if args_too { std::mem::take(&mut t.args) } else { ObjectList::EMPTY };
    for f in &futures {
        if let Some(o) = m.objects.get_mut(f) {
            o.owner_waits = false;
        }
    }
    for o in futures.iter().chain(args.iter()) {
        unref_object(m, *o);
    }
}
