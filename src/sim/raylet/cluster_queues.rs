//! The cluster task queues: work the scheduler could not place yet, as Ray's cluster
//! task manager keeps it.
//!
//! Owns: the queues of tasks waiting for resources, one per scheduling class, served
//! round-robin from the class served last; the infeasible queue (no alive node could
//! ever hold the request; retried when a node joins); tasks waiting for room in their
//! placement-group bundle. Each count is kept with its queue. Placement groups waiting
//! to be placed are the placement group manager's (`placement_groups.rs`). Also here, as
//! in Ray's cluster and local task managers: asking the scheduler where a task goes, and
//! what freed resources and new nodes wake; a lease's own steps, from the grant to its
//! return, are in `cluster_queues/leases.rs`. Must never: change a node's resources
//! except through the node runtime, or run, fail or retry a task (it returns follow-ups
//! for that).

use super::gc_rounds::GcRounds;
use crate::log_event;
use crate::model::*;
use crate::scheduler::{Decision, Strategy};
use crate::sim::follow::{Cx, Follow, Follows};
use crate::sim::gcs::node_manager::GcsNodeManager;
use crate::workload::StrategySpec;
use smallvec::smallvec;
use std::collections::{BTreeMap, VecDeque};

mod leases;
pub(crate) use leases::{after_grant, grant_lease, push, release_lease};

/// Ray's scheduling class: tasks that ask for the same thing, queued together. Here the
/// call spec's class (`CallSpec::class`: one request shape and strategy, and in a replay
/// one function) and, for hard node affinity, the one node the task may run on.
pub(crate) type SchedulingClass = (u32, Option<NodeIdx>);

#[derive(Default)]
pub(crate) struct ClusterQueues {
    /// Tasks waiting for resources, by scheduling class.
    by_class: BTreeMap<SchedulingClass, VecDeque<TaskId>>,
    waiting_count: usize,
    /// Of those, how many each node's processes own, by node slot: the raylets' look
    /// needs only which nodes own any, and reading a million waiting tasks for that
    /// would take longer than all else a look does.
    waiting_by_owner: Vec<u32>,
    /// The scheduling class served last (round-robin over classes).
    cursor: Option<SchedulingClass>,
    /// Tasks no alive node can hold, by spec.
    infeasible: BTreeMap<u32, VecDeque<TaskId>>,
    infeasible_count: usize,
    /// Tasks waiting for room in their placement-group bundle.
    bundle_waiters: BTreeMap<PgId, VecDeque<TaskId>>,
    /// The raylets' look at these queues every debug-dump period, and the GC rounds it
    /// sets off.
    pub(crate) gc: GcRounds,
    /// A caller submitting a run of calls: its task, and how many it submits behind the
    /// one being scheduled now (the backlog Ray's owner reports with a lease request).
    submitting: Option<(TaskId, u32)>,
}

impl ClusterQueues {
    /// A caller is submitting a call, with this many more of its kind right after it
    /// (None: no run of calls under way).
    pub(crate) fn submitting(&mut self, run: Option<(TaskId, u32)>) {
        self.submitting = run;
    }

    /// Tasks waiting for resources, in every class.
    pub(crate) fn waiting_count(&self) -> usize {
        self.waiting_count
    }

    pub(crate) fn infeasible_count(&self) -> usize {
        self.infeasible_count
    }

    /// The scheduling classes with their queues, in class order.
    pub(crate) fn classes(&self) -> impl Iterator<Item = (&SchedulingClass, &VecDeque<TaskId>)> {
        self.by_class.iter()
    }

    /// The infeasible queues, by spec.
    pub(crate) fn infeasible(&self) -> impl Iterator<Item = (&u32, &VecDeque<TaskId>)> {
        self.infeasible.iter()
    }

    /// Tasks waiting for room in a bundle, by group.
    pub(crate) fn bundle_waiters(&self) -> impl Iterator<Item = (&PgId, &VecDeque<TaskId>)> {
        self.bundle_waiters.iter()
    }

    /// Queue a task that some alive node could hold once resources free up.
    pub(crate) fn wait(&mut self, class: SchedulingClass, tid: TaskId, owner: NodeIdx) {
        self.by_class.entry(class).or_default().push_back(tid);
        self.waiting_count += 1;
        let i = owner.index();
        if i >= self.waiting_by_owner.len() {
            self.waiting_by_owner.resize(i + 1, 0);
        }
        self.waiting_by_owner[i] += 1;
    }

    /// A task that waited for resources, owned by `tid`'s owner in `m`, left its queue.
    fn left_waiting(&mut self, m: &Model, tid: TaskId) {
        self.waiting_count -= 1;
        if let Some(count) = m.tasks.get(&tid).and_then(|t| self.waiting_by_owner.get_mut(t.owner_node.index())) {
            *count -= 1;
        }
    }

    /// The raylets look at the waiting tasks ([`GcRounds::look`]).
    pub(crate) fn gc_look(&mut self, cx: &mut Cx) {
        self.gc.look(cx, &self.waiting_by_owner);
    }

    /// Queue a task no alive node could ever hold.
    pub(crate) fn wait_infeasible(&mut self, spec: u32, tid: TaskId) {
        self.infeasible.entry(spec).or_default().push_back(tid);
        self.infeasible_count += 1;
    }

    /// Every class with waiting tasks, starting after the one served last.
    pub(crate) fn classes_from_cursor(&self) -> smallvec::SmallVec<[SchedulingClass; 8]> {
        let mut keys: smallvec::SmallVec<[SchedulingClass; 8]> = self.by_class.keys().copied().collect();
        let after = self.cursor.map_or(0, |c| keys.partition_point(|k| *k <= c));
        keys.rotate_left(after);
        keys
    }

    /// Take the oldest task of `class` (a task of `m`) to serve it now; the class becomes
    /// the one served last.
    pub(crate) fn pop(&mut self, m: &Model, class: SchedulingClass) -> Option<TaskId> {
        let q = self.by_class.get_mut(&class)?;
        let tid = q.pop_front()?;
        if let Some(next) = q.front() {
            m.tasks.prefetch(next);
        }
        if q.is_empty() {
            self.by_class.remove(&class);
        }
        self.left_waiting(m, tid);
        self.cursor = Some(class);
        Some(tid)
    }

    /// Remove every class `stranded` says no longer fits the cluster (a node died);
    /// returns their tasks, class by class in class order, to be scheduled again.
    pub(crate) fn take_classes(
        &mut self,
        m: &Model,
        mut stranded: impl FnMut(&SchedulingClass) -> bool,
    ) -> Vec<VecDeque<TaskId>> {
        let keys: Vec<SchedulingClass> = self.by_class.keys().filter(|k| stranded(k)).copied().collect();
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(q) = self.by_class.remove(&key) {
                for &tid in &q {
                    self.left_waiting(m, tid);
                }
                out.push(q);
            }
        }
        out
    }

    /// Take every infeasible task (a node joined: they may fit now), in spec order.
    pub(crate) fn take_infeasible(&mut self) -> Vec<TaskId> {
        self.infeasible_count = 0;
        std::mem::take(&mut self.infeasible).into_values().flatten().collect()
    }

    /// Take a task of `m` of `spec`, queued in `class`, out of the queue it waits in
    /// (resources, infeasible, or the bundle of `pg`). A queue left empty stays until it
    /// is next served.
    pub(crate) fn unqueue(&mut self, m: &Model, tid: TaskId, spec: u32, class: u32, pg: Option<PgId>) {
        let mut found = false;
        for (key, q) in self.by_class.range_mut((class, None)..) {
            if key.0 != class {
                break;
            }
            if let Some(pos) = q.iter().position(|x| *x == tid) {
                q.remove(pos);
                found = true;
                break;
            }
        }
        if found {
            self.left_waiting(m, tid);
            return;
        }
        if let Some(q) = self.infeasible.get_mut(&spec) {
            if let Some(pos) = q.iter().position(|x| *x == tid) {
                q.remove(pos);
                self.infeasible_count -= 1;
                return;
            }
        }
        if let Some(q) = pg.and_then(|pg| self.bundle_waiters.get_mut(&pg)) {
            if let Some(pos) = q.iter().position(|x| *x == tid) {
                q.remove(pos);
            }
        }
    }

    /// Queue a task until its bundle has room.
    pub(crate) fn wait_for_bundle(&mut self, pg: PgId, tid: TaskId) {
        self.bundle_waiters.entry(pg).or_default().push_back(tid);
    }

    /// Take the tasks waiting on a group's bundles (room was made, the group was placed
    /// or removed).
    pub(crate) fn take_bundle_waiters(&mut self, pg: PgId) -> Option<VecDeque<TaskId>> {
        self.bundle_waiters.remove(&pg)
    }

    /// Whether each count matches its queues, of tasks of `m` (for the invariant checks).
    /// A `String`: a broken invariant's diagnostic, not an error a caller handles.
    pub(crate) fn check_counts(&self, m: &Model) -> Result<(), String> {
        let waiting: usize = self.by_class.values().map(|q| q.len()).sum();
        if waiting != self.waiting_count {
            return Err(format!("waiting_count {} but {} queued", self.waiting_count, waiting));
        }
        let mut by_owner = vec![0u32; self.waiting_by_owner.len()];
        for t in self.by_class.values().flatten().filter_map(|tid| m.tasks.get(tid)) {
            if let Some(count) = by_owner.get_mut(t.owner_node.index()) {
                *count += 1;
            }
        }
        if let Some(i) = (0..by_owner.len()).find(|&i| by_owner[i] != self.waiting_by_owner[i]) {
            return Err(format!(
                "waiting_by_owner[{i}] {} but {} queued tasks owned there",
                self.waiting_by_owner[i], by_owner[i]
            ));
        }
        let infeasible: usize = self.infeasible.values().map(|q| q.len()).sum();
        if infeasible != self.infeasible_count {
            return Err(format!("infeasible_count {} but {} queued", self.infeasible_count, infeasible));
        }
        Ok(())
    }
}

impl ClusterQueues {
    /// Ask for a lease: the owner's local raylet first, else a node it spills back to;
    /// a task that fits nowhere now waits in its scheduling class (or as infeasible).
    pub(crate) fn try_schedule(&mut self, cx: &mut Cx, nodes: &GcsNodeManager, tid: TaskId) -> Follows {
        let Some(t) = cx.model.tasks.get(&tid) else { return Follows::new() };
        if let Some((pg, bundle)) = t.bundle.get() {
            return smallvec![Follow::TryScheduleInBundle(tid, pg, bundle)];
        }
        let (spec_id, owner_node, kind) = (t.spec, t.owner_node, t.kind);
        let spec = &cx.specs[spec_id as usize];
        let strategy = match &spec.strategy {
            StrategySpec::Default | StrategySpec::CallerPlacementGroup => Strategy::Default,
            StrategySpec::Spread => Strategy::Spread,
            StrategySpec::NodeAffinity { ip, soft } => match nodes.at(ip) {
                Some(n) => Strategy::NodeAffinity { node: n, soft: *soft },
                // No node ever had that address: treat as dead.
                None => Strategy::NodeAffinity { node: NodeIdx(u32::MAX), soft: *soft },
            },
        };
        let locality =
            if strategy == Strategy::Default && kind == TaskType::NormalTask && cx.cfg.scheduler.locality_aware {
                locality_node(cx.model, tid)
            } else {
                None
            };
        // The backlog behind it: its class waiting, and its caller's calls still to come
        // in the run it is submitting.
        let parent = t.parent.get();
        let behind = self.submitting.filter(|(caller, _)| Some(*caller) == parent).map_or(0, |(_, n)| n);
        let class = spec.class;
        let waiting = self.by_class.get(&(class, None)).map_or(0, |q| q.len() as u32);
        match cx.sched.schedule(cx.model.nodes(), &spec.request, strategy, owner_node, locality, cx.rng) {
            Decision::Node(n) => grant_lease(cx, tid, n, false, behind + waiting),
            Decision::Wait { only } => {
                self.wait((class, only), tid, owner_node);
                self.gc.task_waits(cx);
            }
            Decision::Infeasible => {
                log_event!(cx.model.log, cx.now(), "scheduler", "{:x} INFEASIBLE", tid.0);
                self.wait_infeasible(spec_id, tid);
            }
            Decision::Unschedulable => {
                let err = if kind == TaskType::ActorCreationTask {
                    ErrorType::ActorUnschedulable
                } else {
                    ErrorType::TaskUnschedulable
                };
                return smallvec![Follow::FailTask(tid, err, false)];
            }
        }
        Follows::new()
    }

    /// Resources were freed on `node`: resume blocked getters ([`Follow::ResumeGetters`]),
    /// then place pending groups, then serve the waiting classes.
    pub(crate) fn resources_freed(cx: &mut Cx, node: NodeIdx) -> Follows {
        if !cx.model.nodes()[node.index()].is_schedulable() {
            return Follows::new();
        }
        smallvec![Follow::ResumeGetters(node)]
    }

    /// The next task returning from `ray.get` on `node` takes its CPU back and runs on;
    /// the rest resume after it ran. With none left (or no CPU for the next one), pending
    /// groups are placed and the waiting classes served ([`Follow::ServeWaiting`], or at
    /// once when no group is pending: nothing runs between). `pgs_pending`: whether the
    /// placement group manager has groups pending (it cannot change while this runs).
    pub(crate) fn resume_next(&mut self, cx: &mut Cx, pgs_pending: bool, node: NodeIdx) -> Follows {
        while let Some(tid) = cx.raylets.next_to_resume(node) {
            let Some(t) = cx.model.tasks.get(&tid) else {
                cx.raylets.resumed(node);
                continue;
            };
            let cpu = cx.specs[t.spec as usize].request.get(ResourceId::CPU);
            if !cx.local_resources().reclaim_cpu(node, cpu) {
                break;
            }
            cx.raylets.resumed(node);
            cx.model.tasks.get_mut(&tid).expect("task exists").cpu_released = false;
            cx.model.set_task_state(tid, TaskState::Running, cx.clock.now);
            return smallvec![Follow::RunProgram(tid), Follow::ResumeGetters(node)];
        }
        if pgs_pending {
            return smallvec![Follow::RetryPendingPgs, Follow::ServeWaiting(node)];
        }
        self.serve_waiting(cx, node);
        Follows::new()
    }

    /// Serve the waiting scheduling classes round-robin, one task per class per pass,
    /// starting after the class served last: one busy class cannot starve the others.
    pub(crate) fn serve_waiting(&mut self, cx: &mut Cx, node: NodeIdx) {
        // A crashed raylet grants nothing, though what it held is freed.
        if self.waiting_count() == 0 || !cx.model.nodes()[node.index()].is_schedulable() {
            return;
        }
        loop {
            let classes = self.classes_from_cursor();
            let mut granted = false;
            for key in classes {
                if key.1.is_some_and(|only| only != node) {
                    continue;
                }
                if !cx.model.nodes()[node.index()].available.fits(&cx.specs[key.0 as usize].request) {
                    continue;
                }
                let Some(tid) = self.pop(cx.model, key) else { continue };
                // Ray's raylet prestarts for a request's backlog when the request
                // arrives, with the CPUs free then (none, or it would not have waited),
                // not when it is granted from the queue later.
                grant_lease(cx, tid, node, true, 0);
                granted = true;
            }
            if !granted || self.waiting_count() == 0 {
                break;
            }
        }
    }

    /// New capacity: infeasible work may now fit somewhere, and groups may be placed;
    /// then ([`Follow::WakeNewestNode`]) the newest node serves the waiting classes.
    pub(crate) fn node_added(&mut self) -> Follows {
        let mut follows: Follows = Follows::new();
        if self.infeasible_count() > 0 {
            follows.extend(self.take_infeasible().into_iter().map(Follow::TrySchedule));
        }
        follows.push(Follow::RetryPendingPgsIfAny);
        follows.push(Follow::WakeNewestNode);
        follows
    }

    /// The newest node serves the waiting classes, if any wait.
    pub(crate) fn wake_newest_node(&self, m: &Model) -> Follows {
        match m.nodes().last() {
            Some(last) if self.waiting_count() > 0 => smallvec![Follow::ResourcesFreed(last.idx)],
            _ => Follows::new(),
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
        .filter_map(|o| if o.inline { None } else { o.primary.get().map(|n| (n, o.size)) })
        .collect();
    located.sort_unstable_by_key(|&(n, _)| n);
    located
        .chunk_by(|a, b| a.0 == b.0)
        .map(|run| (run[0].0, run.iter().map(|&(_, bytes)| bytes).sum::<u64>()))
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(n, _)| n)
}
