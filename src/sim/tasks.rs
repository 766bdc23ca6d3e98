//! The task lifecycle, owner and raylet side: submit → dependencies → lease (local
//! raylet first, spillback) → release, and what freed resources and new nodes wake.
//! The run on the worker is `task_run.rs`; failure and retry, `retries.rs`.

use super::clock::Event;
use super::engine::Engine;
use super::follow::{cx, Follow};
use super::node_runtime::LocalResources;
use crate::log_event;
use crate::model::*;
use crate::scheduler::{Decision, Strategy};
use crate::workload::StrategySpec;

impl Engine {
    /// Submit one call on behalf of a running task `parent`; returns the task and its return object.
    pub(crate) fn submit_call(
        &mut self,
        spec_id: u32,
        parent: TaskId,
        args: Box<[ObjectId]>,
        actor: Option<ActorId>,
        bundle: Option<(PgId, u32)>,
    ) -> (TaskId, ObjectId) {
        let (job, owner_node) = {
            let p = &self.model.tasks[&parent];
            (p.job, p.node.unwrap_or(self.node_manager.head()))
        };
        let tid = self.model.alloc_task_id();
        let spec = &self.specs[spec_id as usize];
        let (kind, name, max_retries, return_size) = (spec.kind, spec.name, spec.max_retries, spec.return_size);
        let actor_retries = actor.and_then(|a| self.model.actors.get(&a)).map(|a| a.max_task_retries).unwrap_or(0);
        let ret = super::objects::new_return_object(cx!(self), tid, parent, job, spec_id, return_size, &args);
        let mut unresolved = 0u32;
        let mut failed_arg = false;
        for a in args.iter() {
            if let Some(o) = self.model.objects.get_mut(a) {
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
        let mut task = Task::new(tid, job, name, kind, spec_id, owner_node, self.clock.now).in_state(initial);
        task.parent = Some(parent);
        task.actor = actor;
        task.args = args;
        task.returns = ret;
        task.bundle = bundle;
        task.retries_left = if kind == TaskType::ActorTask { actor_retries } else { max_retries };
        task.exec = Exec { unresolved, ..Default::default() }.into();
        let line = self.model.log.line(self.clock.now, "task").hex(tid.0).text(" SUBMITTED ").text(initial.as_str());
        line.text(" job=").hex_bytes(&job.0.to_le_bytes()).text(" parent=").hex(parent.0).end();
        self.model.insert_task(task);
        self.flow.submitted(&mut self.model, &self.specs, tid, self.clock.now);
        if failed_arg {
            self.follow(Follow::FailTask(tid, ErrorType::TaskExecutionException, false));
        } else if unresolved == 0 {
            self.on_task_ready(tid);
        }
        (tid, ret)
    }

    /// Dependencies are resolved: actor tasks go to their actor (pushed once it is alive),
    /// the rest ask for a lease. Both wait in PENDING_NODE_ASSIGNMENT meanwhile, as in Ray.
    pub(crate) fn on_task_ready(&mut self, tid: TaskId) {
        let Some(t) = self.model.tasks.get_mut(&tid) else { return };
        t.ready_at = self.clock.now;
        let kind = t.kind;
        self.model.set_task_state(tid, TaskState::PendingNodeAssignment, self.clock.now);
        if kind == TaskType::ActorTask {
            self.follow(Follow::EnqueueActorTask(tid));
        } else {
            self.try_schedule(tid);
        }
    }

    /// Ask for a lease: the owner's local raylet first, else a node it spills back to.
    pub(crate) fn try_schedule(&mut self, tid: TaskId) {
        let Some(t) = self.model.tasks.get(&tid) else { return };
        if let Some((pg, bundle)) = t.bundle {
            self.follow(Follow::TryScheduleInBundle(tid, pg, bundle));
            return;
        }
        let spec_id = t.spec;
        let owner_node = t.owner_node;
        let kind = t.kind;
        let spec = &self.specs[spec_id as usize];
        let strategy = match &spec.strategy {
            StrategySpec::Default | StrategySpec::CallerPlacementGroup => Strategy::Default,
            StrategySpec::Spread => Strategy::Spread,
            StrategySpec::NodeAffinity { ip, soft } => match self.node_manager.at(ip) {
                Some(n) => Strategy::NodeAffinity { node: n, soft: *soft },
                // No node ever had that address: treat as dead.
                None => Strategy::NodeAffinity { node: NodeIdx(u32::MAX), soft: *soft },
            },
        };
        let locality =
            if strategy == Strategy::Default && kind == TaskType::NormalTask && self.cfg.scheduler.locality_aware {
                locality_node(&self.model, tid)
            } else {
                None
            };
        let placement =
            self.sched.schedule(&self.model.nodes, &spec.request, strategy, owner_node, locality, &mut self.rng);
        match placement {
            Decision::Node(n) => self.grant_lease(tid, n),
            Decision::Wait { only } => {
                self.queues.wait((spec_id, only), tid);
            }
            Decision::Infeasible => {
                log_event!(self.model.log, self.clock.now, "scheduler", "{:x} INFEASIBLE", tid.0);
                self.queues.wait_infeasible(spec_id, tid);
            }
            Decision::Unschedulable => {
                let err = if kind == TaskType::ActorCreationTask {
                    ErrorType::ActorUnschedulable
                } else {
                    ErrorType::TaskUnschedulable
                };
                self.follow(Follow::FailTask(tid, err, false));
            }
        }
    }

    /// Reserve resources on `node` and send the task there.
    pub(crate) fn grant_lease(&mut self, tid: TaskId, node: NodeIdx) {
        let spec_id = self.model.tasks[&tid].spec;
        LocalResources::of(&mut self.model.nodes, &mut self.sched).reserve(node, &self.specs[spec_id as usize].request);
        self.raylets.lease_granted(node, tid);
        let t = self.model.tasks.get_mut(&tid).expect("task being granted exists");
        t.node = Some(node);
        t.holds_resources = true;
        let spilled = node != t.owner_node;
        let kind = t.kind;
        let attempt = t.attempt;
        let owner = t.owner_node;
        let lease = self.cfg.scheduler.lease_latency.as_micros();
        let mut delay = lease;
        if spilled {
            // The local raylet answers with another raylet's address; the owner asks again there.
            delay += lease;
            self.model.counters.spillbacks += 1;
            self.model.nodes[owner.index()].stats.spillbacks += 1;
        }
        let placement_ms = (self.clock.now + delay - t.ready_at) as f64 / 1000.0;
        let hist = if kind == TaskType::ActorCreationTask { 1 } else { 0 };
        self.model.placement_ms[hist].observe(placement_ms);
        if kind == TaskType::ActorCreationTask {
            delay += self.cfg.scheduler.worker_start_latency.as_micros();
        }
        let line = self.model.log.line(self.clock.now, "scheduler").hex(tid.0).text(" LEASED node=").dec(node.0.into());
        line.text(if spilled { " spillback" } else { "" }).end();
        self.clock.schedule_in(delay, Event::Dispatch(tid, attempt));
    }

    /// Give a lease back (task finished, failed or moved); CPU lent during `ray.get` is not returned twice.
    pub(crate) fn release_lease(&mut self, tid: TaskId) {
        let Some(t) = self.model.tasks.get_mut(&tid) else { return };
        if !t.holds_resources {
            return;
        }
        t.holds_resources = false;
        let Some(node) = t.node else { return };
        let cpu_released = std::mem::take(&mut t.cpu_released);
        self.raylets.lease_returned(node, tid);
        if let Some((pg, b)) = t.bundle {
            let req = self.specs[t.spec as usize].request.clone();
            self.follow(Follow::ReturnToBundle(pg, b, req.clone()));
            return;
        }
        if !self.model.nodes[node.index()].is_alive() {
            return;
        }
        let req = &self.specs[t.spec as usize].request;
        LocalResources::of(&mut self.model.nodes, &mut self.sched).release_lease(node, req, cpu_released);
        self.on_resources_freed(node);
    }

    /// Drop what a task holds: its arguments (when it ends for good) and its futures.
    pub(crate) fn release_task_refs(&mut self, tid: TaskId, args_too: bool) {
        let Some(t) = self.model.tasks.get_mut(&tid) else { return };
        let futures = std::mem::take(&mut t.exec.futures);
        t.exec.unresolved = 0;
        t.exec.failed_futures = 0;
        let args = if args_too { std::mem::take(&mut t.args) } else { Box::new([]) as Box<[ObjectId]> };
        for f in futures {
            if let Some(o) = self.model.objects.get_mut(&f) {
                o.owner_waits = false;
            }
            self.follow(Follow::UnrefObject(f));
        }
        for a in args.iter() {
            self.follow(Follow::UnrefObject(*a));
        }
    }

    /// Resources were freed on `node`: resume blocked getters, place bundles, then waiting tasks.
    pub(crate) fn on_resources_freed(&mut self, node: NodeIdx) {
        if !self.model.nodes[node.index()].is_alive() {
            return;
        }
        // Tasks returning from `ray.get` take their CPU back first.
        while let Some(tid) = self.raylets.next_to_resume(node) {
            let Some(t) = self.model.tasks.get(&tid) else {
                self.raylets.resumed(node);
                continue;
            };
            let cpu = self.specs[t.spec as usize].request.get(ResourceId::CPU);
            if !self.local_resources().reclaim_cpu(node, cpu) {
                break;
            }
            self.raylets.resumed(node);
            let t = self.model.tasks.get_mut(&tid).expect("task exists");
            t.cpu_released = false;
            self.model.set_task_state(tid, TaskState::Running, self.clock.now);
            self.follow(Follow::RunProgram(tid));
        }
        if self.pg_manager.has_pending() {
            self.follow(Follow::RetryPendingPgs);
        }
        if self.queues.waiting_count() == 0 {
            return;
        }
        // Serve the waiting scheduling classes round-robin, one task per class per pass,
        // starting after the class served last: one busy class cannot starve the others.
        loop {
            let classes = self.queues.classes_from_cursor();
            let mut granted = false;
            for key in classes {
                if key.1.is_some_and(|only| only != node) {
                    continue;
                }
                if !self.model.nodes[node.index()].available.fits(&self.specs[key.0 as usize].request) {
                    continue;
                }
                let Some(tid) = self.queues.pop(key) else { continue };
                self.grant_lease(tid, node);
                granted = true;
            }
            if !granted || self.queues.waiting_count() == 0 {
                break;
            }
        }
    }

    /// New capacity: infeasible work may now fit somewhere.
    pub(crate) fn on_node_added(&mut self) {
        if self.queues.infeasible_count() > 0 {
            for tid in self.queues.take_infeasible() {
                self.try_schedule(tid);
            }
        }
        if self.pg_manager.has_pending() {
            self.follow(Follow::RetryPendingPgs);
        }
        if let Some(last) = self.model.nodes.last() {
            let idx = last.idx;
            if self.queues.waiting_count() > 0 {
                self.on_resources_freed(idx);
            }
        }
    }
}

/// The node holding the most bytes of this task's plasma arguments (ties: lowest node).
fn locality_node(m: &Model, tid: TaskId) -> Option<NodeIdx> {
    let t = &m.tasks[&tid];
    if t.args.is_empty() {
        return None;
    }
    // Sorted by node and summed per run: a reducer's thousand arguments sit on about
    // as many nodes, and a linear find per argument was a million steps per reducer.
    let mut located: Vec<(NodeIdx, u64)> = t
        .args
        .iter()
        .filter_map(|a| m.objects.get(a))
        .filter_map(|o| if o.inline { None } else { o.primary.map(|n| (n, o.size)) })
        .collect();
    located.sort_unstable_by_key(|&(n, _)| n);
    located
        .chunk_by(|a, b| a.0 == b.0)
        .map(|run| (run[0].0, run.iter().map(|&(_, bytes)| bytes).sum::<u64>()))
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(n, _)| n)
}
