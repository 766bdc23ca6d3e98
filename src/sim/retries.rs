//! Failure and retry: an attempt that fails is retried within its budget (system
//! failures; application errors only with `retry_exceptions`; OOM kills on their own
//! budget with backoff), or fails for good together with readers of its result.

use super::clock::Event;
use super::cluster_queues::ClusterQueues;
use super::engine::Engine;
use super::follow::Follow;
use crate::log_event;
use crate::model::*;

impl Engine {
    /// A task attempt failed. Retries within its budget (system failures; application
    /// errors only with `retry_exceptions`), else it fails for good and so do readers of its result.
    pub(crate) fn fail_task(&mut self, tid: TaskId, err: ErrorType, retry_allowed: bool) {
        let Some(t) = self.model.tasks.get(&tid) else { return };
        if t.state().is_terminal() {
            return;
        }
        let (kind, spec_id, actor, node, job) = (t.kind, t.spec, t.actor, t.node, t.job);
        let was_running = t.state().is_running();
        let spec = &self.specs[spec_id as usize];
        let retry_exceptions = spec.retry_exceptions;
        let heap = spec.heap;
        let budget_ok = t.retries_left != 0 || err == ErrorType::OutOfMemory;
        let actor_alive = actor.and_then(|a| self.model.actors.get(&a)).is_some_and(|a| a.state() != ActorState::Dead);
        let retry = retry_allowed
            && budget_ok
            && match kind {
                TaskType::NormalTask => {
                    err.is_system() || (retry_exceptions && err == ErrorType::TaskExecutionException)
                }
                TaskType::ActorTask => err.is_system() || err == ErrorType::ActorDied,
                _ => false,
            }
            && (kind != TaskType::ActorTask || actor_alive);
        // Undo what this attempt holds.
        if was_running {
            if let Some(n) = node {
                let nd = &mut self.model.nodes[n.index()];
                nd.worker_heap_used.0 = nd.worker_heap_used.0.saturating_sub(heap);
            }
        }
        unqueue_waiting(&mut self.queues, &self.model, tid);
        self.follow(Follow::ReleaseLease(tid));
        if kind == TaskType::DriverTask {
            if let Some(n) = node {
                self.raylets.lease_returned(n, tid);
            }
        }
        if let Some(a) = actor.and_then(|a| self.model.actors.get_mut(&a)) {
            if let Some(pos) = a.running.iter().position(|x| *x == tid) {
                a.running.swap_remove(pos);
            }
            if let Some(pos) = a.queue.iter().position(|x| *x == tid) {
                a.queue.remove(pos);
            }
        }
        self.follow(Follow::ReleaseTaskRefs(tid, !retry));
        if retry {
            let t = self.model.tasks.get_mut(&tid).expect("task exists");
            let mut delay = 0;
            if err == ErrorType::OutOfMemory {
                t.oom_retries += 1;
                let base = self.cfg.memory_monitor.oom_retry_delay.as_micros();
                delay = (base << t.oom_retries.min(6)).min(60_000_000);
            } else if t.retries_left > 0 {
                t.retries_left -= 1;
            }
            let next = TaskState::PendingNodeAssignment;
            log_event!(self.model.log, self.clock.now, "task", "{:x} ATTEMPT_FAILED error={}", tid.0, err.as_str());
            self.model.begin_retry(tid, next, self.clock.now, err);
            let attempt = self.model.tasks[&tid].attempt;
            self.clock.schedule_in(delay, Event::Resubmit(tid, attempt));
        } else {
            let t = self.model.tasks.get_mut(&tid).expect("task exists");
            t.error = Some(err);
            let ret = t.returns;
            self.flow.ended(&self.model, tid, self.clock.now, false, 0);
            self.model.retire_task(tid, TaskState::Failed, self.clock.now, 0);
            self.follow(Follow::ObjectFailed(ret));
            // The actor whose constructor this was dies with it (unless that death is what
            // failed it): system failures restart it within `max_restarts`; an exception
            // in the constructor or an unschedulable actor is final, as in Ray's GCS.
            if let (TaskType::ActorCreationTask, Some(a), false) = (kind, actor, err == ErrorType::ActorDied) {
                let cause = match err {
                    ErrorType::OutOfMemory => "killed by the memory monitor (OOM)".to_string(),
                    ErrorType::NodeDied => "the node running the actor died".to_string(),
                    e => format!("the creation task failed: {}", e.as_str()),
                };
                self.follow(Follow::ActorDied(a, cause.clone().into(), err.is_system()));
            }
            if kind == TaskType::DriverTask {
                self.follow(Follow::EndJob(job, JobStatus::Failed, format!("driver failed: {}", err.as_str()).into()));
            }
        }
        if let Some(a) = actor {
            if kind == TaskType::ActorTask {
                self.follow(Follow::PumpActor(a));
            }
        }
    }

    pub(crate) fn on_resubmit(&mut self, tid: TaskId, attempt: u32) {
        let Some(t) = self.model.tasks.get(&tid) else { return };
        if t.attempt != attempt {
            return;
        }
        if self.rewait_for_lost_args_pending(tid) {
            return;
        }
        if self.model.tasks[&tid].kind == TaskType::ActorTask {
            self.follow(Follow::EnqueueActorTask(tid));
        } else {
            self.follow(Follow::TrySchedule(tid));
        }
    }

    /// Before a retry: wait for any argument that is not available.
    fn rewait_for_lost_args_pending(&mut self, tid: TaskId) -> bool {
        let args = self.model.tasks[&tid].args.clone();
        let mut missing = 0;
        for a in args.iter() {
            match self.model.objects.get_mut(a) {
                Some(o) if matches!(o.status, ObjectStatus::Pending | ObjectStatus::Lost) => {
                    o.waiters.push(tid);
                    missing += 1;
                }
                Some(o) if o.status == ObjectStatus::Failed => {
                    self.fail_task(tid, ErrorType::ObjectLost, false);
                    return true;
                }
                None => {
                    self.fail_task(tid, ErrorType::ObjectLost, false);
                    return true;
                }
                _ => {}
            }
        }
        if missing == 0 {
            return false;
        }
        let t = self.model.tasks.get_mut(&tid).expect("task exists");
        t.exec.unresolved = missing;
        self.model.set_task_state(tid, TaskState::PendingArgsAvail, self.clock.now);
        true
    }
}

/// Take a task out of any wait queue it sits in.
fn unqueue_waiting(queues: &mut ClusterQueues, m: &Model, tid: TaskId) {
    let Some(t) = m.tasks.get(&tid) else { return };
    if t.state() != TaskState::PendingNodeAssignment || t.holds_resources || t.kind == TaskType::ActorTask {
        return;
    }
    let (spec, pg) = (t.spec, t.bundle.map(|(pg, _)| pg));
    queues.unqueue(tid, spec, pg);
}
