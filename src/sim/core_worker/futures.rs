//! A caller's futures: the returns it holds, its wait in `ray.get` (a normal task lends
//! its CPU back meanwhile), and its going on once the last resolves or is pulled.
//!
//! Owns: the caller's count of unresolved and failed futures and its `RunningInRayGet`
//! state. Must never: step its program (it asks for `RunProgram`), or change another
//! task's state.

use super::task_runs::TaskRuns;
use crate::model::*;
use crate::sim::follow::{Cx, Follow, Follows};
use crate::sim::objects::unref_object;
use crate::workload::Op;
use smallvec::smallvec;

/// Record returned futures on their owner (the `attempt` that submitted them),
/// counting the ones not yet ready. If that attempt died while submitting, its
/// handles die with it.
pub(crate) fn hold_futures(
    m: &mut Model,
    runs: &mut TaskRuns,
    tid: TaskId,
    attempt: u32,
    returns: Vec<ObjectId>,
) -> Follows {
    if !m.tasks.get(&tid).is_some_and(|t| t.attempt == attempt && t.state().is_running()) {
        for r in returns {
            unref_object(m, r);
        }
        return Follows::new();
    }
    let mut unresolved = 0;
    let mut failed = 0;
    for r in &returns {
        let Some(o) = m.objects.get_mut(r) else { continue };
        o.owner_waits = true;
        match o.status {
            ObjectStatus::Ready => {}
            ObjectStatus::Failed => failed += 1,
            ObjectStatus::Pending | ObjectStatus::Lost => unresolved += 1,
        }
    }
    if let Some(r) = runs.get_mut(&tid) {
        r.exec.unresolved += unresolved;
        r.exec.failed_futures += failed;
        r.exec.futures.extend(returns);
    }
    Follows::new()
}

/// `ray.get` with futures outstanding: the worker blocks; a normal task lends its CPU
/// back, and the node's freed CPU goes to others.
pub(in crate::sim) fn block_in_get(cx: &mut Cx, tid: TaskId) -> Follows {
    cx.model.set_task_state(tid, TaskState::RunningInRayGet, cx.clock.now);
    let t = cx.model.tasks.get_mut(&tid).expect("task exists");
    if t.kind == TaskType::NormalTask && t.holds_resources && !t.cpu_released && t.bundle.is_none() {
        let cpu = cx.specs[t.spec as usize].request.get(ResourceId::CPU);
        if cpu.0 > 0 {
            if let Some(n) = t.node.get() {
                t.cpu_released = true;
                cx.local_resources().lend_cpu(n, cpu);
                return smallvec![Follow::ResourcesFreed(n)];
            }
        }
    }
    Follows::new()
}

/// A future of `owner` resolved (or failed); it resumes if it was blocked on the last
/// one: at once, or once its node has a CPU for it again (it lent its own).
pub(crate) fn future_resolved(cx: &mut Cx, owner: TaskId, failed: bool) -> Follows {
    let (Some(t), Some(r)) = (cx.model.tasks.get(&owner), cx.runs.get_mut(&owner)) else { return Follows::new() };
    r.exec.unresolved = r.exec.unresolved.saturating_sub(1);
    if failed {
        r.exec.failed_futures += 1;
    }
    // A getter pulling its objects has had every future resolve already.
    if t.state() != TaskState::RunningInRayGet || r.exec.unresolved > 0 || r.exec.pulling {
        return Follows::new();
    }
    if !matches!(cx.specs[t.spec as usize].program.get(r.pc as usize), Some(Op::Get)) {
        return Follows::new();
    }
    resume_getter(cx, owner)
}

/// A getter's pull is done ([`Event::Pulled`]): it goes on with its `ray.get`, if this
/// attempt still waits for it: at once, or once its node has a CPU for it again.
pub(crate) fn pulled(cx: &mut Cx, tid: TaskId, attempt: u32) -> Follows {
    let (Some(t), Some(r)) = (cx.model.tasks.get(&tid), cx.runs.get(&tid)) else { return Follows::new() };
    if t.attempt != attempt || t.state() != TaskState::RunningInRayGet || !r.exec.pulling {
        return Follows::new();
    }
    resume_getter(cx, tid)
}

/// A getter whose wait in `ray.get` is over goes on: at once, or, if it lent its CPU
/// back, once its node has one for it again.
fn resume_getter(cx: &mut Cx, tid: TaskId) -> Follows {
    let t = &cx.model.tasks[&tid];
    if t.cpu_released {
        return match t.node.get() {
            Some(n) => {
                cx.raylets.wait_to_resume(n, tid);
                smallvec![Follow::ResourcesFreed(n)]
            }
            None => Follows::new(),
        };
    }
    cx.model.set_task_state(tid, TaskState::Running, cx.clock.now);
    smallvec![Follow::RunProgram(tid)]
}
