//! A leased task's run on its worker: dispatch, argument fetch (or waiting again for
//! arguments lost with a node), the worker starting the call, each op of its program
//! finishing, and the end of the run with its results sealed.
//!
//! Owns: nothing of its own (a run's state is per task record). Must never: choose a
//! node (`tasks.rs` leases) or decide a retry (`retries.rs`).

use super::clock::Event;
use super::engine::Engine;
use super::follow::{cx, Follow};
use crate::model::*;

impl Engine {
    pub(crate) fn on_dispatch(&mut self, tid: TaskId, attempt: u32) {
        let Some(t) = self.model.tasks.get(&tid) else { return };
        if t.attempt != attempt || t.state() != TaskState::PendingNodeAssignment || !t.holds_resources {
            return;
        }
        let node = t.node.expect("leased task has a node");
        // Arguments lost since submission (node death) send the task back to wait for them.
        if self.rewait_for_lost_args(tid) {
            return;
        }
        let (micros, checks) = super::fetch::fetch_args(cx!(self), &mut self.plasma, &self.actor_manager, tid, node);
        self.follow_all(checks);
        if micros > 0 {
            super::fetch::wait_for_fetch(cx!(self), tid, attempt, micros, TaskState::PendingArgsFetch);
        } else {
            self.start_task(tid, node);
        }
    }

    pub(crate) fn on_args_fetched(&mut self, tid: TaskId, attempt: u32) {
        let Some(t) = self.model.tasks.get(&tid) else { return };
        if t.attempt != attempt {
            return;
        }
        match (t.state(), t.node) {
            (TaskState::PendingArgsFetch, Some(n)) | (TaskState::PendingActorTaskArgsFetch, Some(n)) => {
                self.start_task(tid, n)
            }
            _ => {}
        }
    }

    /// If some argument is no longer available, give up the lease and wait for it again.
    fn rewait_for_lost_args(&mut self, tid: TaskId) -> bool {
        let args = self.model.tasks[&tid].args.clone();
        let mut missing = 0;
        for a in args.iter() {
            if let Some(o) = self.model.objects.get_mut(a) {
                if matches!(o.status, ObjectStatus::Pending | ObjectStatus::Lost) {
                    o.waiters.push(tid);
                    missing += 1;
                }
            }
        }
        if missing == 0 {
            return false;
        }
        self.follow(Follow::ReleaseLease(tid));
        let t = self.model.tasks.get_mut(&tid).expect("task exists");
        t.exec.unresolved = missing;
        t.node = None;
        self.model.set_task_state(tid, TaskState::PendingArgsAvail, self.clock.now);
        true
    }

    /// The task is handed to its worker; its body runs `call_start_cost` later (RUNNING),
    /// the worker's own per-call overhead. A normal task is SUBMITTED_TO_WORKER meanwhile;
    /// an actor call already was when pushed to its actor, and Ray lists no such state
    /// for an actor's creation.
    pub(crate) fn start_task(&mut self, tid: TaskId, node: NodeIdx) {
        if self.model.tasks.get(&tid).is_some_and(|t| t.kind == TaskType::NormalTask) {
            self.model.set_task_state(tid, TaskState::SubmittedToWorker, self.clock.now);
        }
        let t = self.model.tasks.get_mut(&tid).expect("task exists");
        t.node = Some(node);
        let attempt = t.attempt;
        let cost = self.cfg.scheduler.call_start_cost.as_micros();
        if cost > 0 {
            t.begin_due = true;
            self.clock.schedule_in(cost, Event::Begin(tid, attempt));
        } else {
            self.begin_task(tid, node);
        }
    }

    pub(crate) fn on_begin(&mut self, tid: TaskId, attempt: u32) {
        let Some(t) = self.model.tasks.get(&tid) else { return };
        if t.attempt != attempt || !t.begin_due {
            return;
        }
        let node = t.node.expect("a task handed to a worker has a node");
        self.begin_task(tid, node);
    }

    /// The caller's busy time for its last submissions is over: go on with its program.
    pub(crate) fn on_resume(&mut self, tid: TaskId, attempt: u32) {
        if self.model.tasks.get(&tid).is_some_and(|t| t.attempt == attempt && t.state() == TaskState::Running) {
            self.follow(Follow::RunProgram(tid));
        }
    }

    /// A worker starts executing the task's body.
    fn begin_task(&mut self, tid: TaskId, node: NodeIdx) {
        self.model.set_task_state(tid, TaskState::Running, self.clock.now);
        let t = self.model.tasks.get_mut(&tid).expect("task exists");
        t.started_at = Some(self.clock.now);
        t.pc = 0;
        t.begin_due = false;
        t.exec = LazyExec::default();
        let heap = self.specs[t.spec as usize].heap;
        let kind = t.kind;
        let actor = t.actor;
        let n = &mut self.model.nodes[node.index()];
        n.worker_heap_used.0 += heap;
        n.stats.tasks_started += 1;
        if kind == TaskType::ActorCreationTask {
            // Each actor gets a dedicated worker process.
            n.stats.workers_started += 1;
            self.model.counters.workers_started += 1;
            let pid = self.model.alloc_pid();
            if let Some(a) = actor.and_then(|a| self.model.actors.get_mut(&a)) {
                a.node = Some(node);
                a.pid = pid;
            }
        }
        if heap > 0 {
            self.follow(Follow::CheckMemory(node));
        }
        self.flow.started(&self.model, tid, node, self.clock.now);
        if self.model.tasks.get(&tid).is_some_and(|t| t.state() == TaskState::Running) {
            self.follow(Follow::RunProgram(tid));
        }
    }

    pub(crate) fn on_op_done(&mut self, tid: TaskId, attempt: u32) {
        let Some(t) = self.model.tasks.get(&tid) else { return };
        if t.attempt != attempt || t.state() != TaskState::Running {
            return;
        }
        if t.kind != TaskType::DriverTask {
            if let Some((p, application)) = self.faults.failure_probability() {
                if rand::Rng::random::<f64>(&mut self.rng) < p {
                    let err = if application { ErrorType::TaskExecutionException } else { ErrorType::WorkerDied };
                    let actor = t.actor;
                    let kind = t.kind;
                    if !application {
                        let name = self.model.names.get(t.name).to_string();
                        let node = t.node;
                        self.model.counters.count_worker_failure(node.map(|n| n.0), "SystemError", name);
                        if let Some(n) = node {
                            self.model.nodes[n.index()].stats.worker_failures += 1;
                        }
                    }
                    match (kind, actor, application) {
                        // An actor's calls run in its own process: a crash there is the
                        // actor's death (restarted within max_restarts; its calls fail or retry).
                        (TaskType::ActorTask, Some(a), false) => {
                            self.follow(Follow::ActorDied(a, "the actor's worker process died".into(), true))
                        }
                        _ => self.follow(Follow::FailTask(tid, err, true)),
                    }
                    return;
                }
            }
        }
        self.follow(Follow::RunProgram(tid));
    }

    /// The program ran to its end: seal the return value and release everything.
    pub(crate) fn finish_task(&mut self, tid: TaskId) {
        let t = self.model.tasks.get(&tid).expect("finishing task exists");
        let (kind, node, spec_id, ret, actor, job, attempt) =
            (t.kind, t.node, t.spec, t.returns, t.actor, t.job, t.attempt);
        let spec = &self.specs[spec_id as usize];
        let (heap, return_size) = (spec.heap, spec.return_size);
        let keeps_resources =
            kind == TaskType::ActorCreationTask && spec.actor.as_ref().is_some_and(|a| a.holds_resources);
        if let Some(n) = node {
            let nd = &mut self.model.nodes[n.index()];
            nd.worker_heap_used.0 = nd.worker_heap_used.0.saturating_sub(heap);
            nd.stats.tasks_finished += 1;
        }
        if keeps_resources {
            // The actor keeps its resources for its lifetime: the lease becomes the actor's.
            let t = self.model.tasks.get_mut(&tid).expect("task exists");
            t.holds_resources = false;
            if let Some(n) = node {
                self.raylets.lease_returned(n, tid);
            }
        } else if kind == TaskType::DriverTask {
            if let Some(n) = node {
                self.raylets.lease_returned(n, tid);
            }
        } else {
            self.follow(Follow::ReleaseLease(tid));
        }
        self.follow(Follow::ReleaseTaskRefs(tid, true));
        self.flow.ended(&self.model, tid, self.clock.now, true, return_size);
        self.model.retire_task(tid, TaskState::Finished, self.clock.now, return_size);
        if kind == TaskType::ActorTask {
            if let Some(a) = actor.and_then(|a| self.model.actors.get_mut(&a)) {
                if let Some(pos) = a.running.iter().position(|x| *x == tid) {
                    a.running.swap_remove(pos);
                }
            }
        }
        if let Some(o) = self.model.objects.get_mut(&ret) {
            o.producer_attempt = attempt;
        }
        if let Some(n) = node {
            self.follow(Follow::SealObject(ret, n));
        }
        match kind {
            TaskType::ActorCreationTask => {
                if let (Some(a), Some(n)) = (actor, node) {
                    self.follow(Follow::ActorCreated(a, n, keeps_resources));
                }
            }
            TaskType::ActorTask => {
                if let Some(a) = actor {
                    self.follow(Follow::PumpActor(a));
                }
            }
            TaskType::DriverTask => self.follow(Follow::EndJob(job, JobStatus::Succeeded, "driver finished".into())),
            TaskType::NormalTask => {}
        }
    }
}
