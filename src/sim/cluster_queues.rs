//! The cluster task queues: work the scheduler could not place yet, as Ray's cluster
//! task manager keeps it.
//!
//! Owns: the queues of tasks waiting for resources, one per scheduling class, served
//! round-robin from the class served last; the infeasible queue (no alive node could
//! ever hold the request; retried when a node joins); tasks waiting for room in their
//! placement-group bundle. Each count is kept with its queue. Placement groups waiting
//! to be placed are the placement group manager's (`placement_groups.rs`). Must never: decide where a task goes or grant a lease (the engine does, with
//! the scheduler), or change a node's resources (the node runtime does).

use crate::model::{NodeIdx, PgId, TaskId};
use std::collections::{BTreeMap, VecDeque};

/// Ray's scheduling class: tasks that ask for the same thing, queued together. Here the
/// call spec (one request shape and strategy) and, for hard node affinity, the one node
/// the task may run on.
pub(crate) type SchedulingClass = (u32, Option<NodeIdx>);

#[derive(Default)]
pub(crate) struct ClusterQueues {
    /// Tasks waiting for resources, by scheduling class.
    by_class: BTreeMap<SchedulingClass, VecDeque<TaskId>>,
    waiting_count: usize,
    /// The scheduling class served last (round-robin over classes).
    cursor: Option<SchedulingClass>,
    /// Tasks no alive node can hold, by spec.
    infeasible: BTreeMap<u32, VecDeque<TaskId>>,
    infeasible_count: usize,
    /// Tasks waiting for room in their placement-group bundle.
    bundle_waiters: BTreeMap<PgId, VecDeque<TaskId>>,
}

impl ClusterQueues {
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
    pub(crate) fn wait(&mut self, class: SchedulingClass, tid: TaskId) {
        self.by_class.entry(class).or_default().push_back(tid);
        self.waiting_count += 1;
    }

    /// Queue a task no alive node could ever hold.
    pub(crate) fn wait_infeasible(&mut self, spec: u32, tid: TaskId) {
        self.infeasible.entry(spec).or_default().push_back(tid);
        self.infeasible_count += 1;
    }

    /// Every class with waiting tasks, starting after the one served last.
    pub(crate) fn classes_from_cursor(&self) -> Vec<SchedulingClass> {
        match self.cursor {
            Some(c) => self
                .by_class
                .range((std::ops::Bound::Excluded(c), std::ops::Bound::Unbounded))
                .chain(self.by_class.range(..=c))
                .map(|(k, _)| *k)
                .collect(),
            None => self.by_class.keys().copied().collect(),
        }
    }

    /// Take the oldest task of `class` to serve it now; the class becomes the one served last.
    pub(crate) fn pop(&mut self, class: SchedulingClass) -> Option<TaskId> {
        let q = self.by_class.get_mut(&class)?;
        let tid = q.pop_front()?;
        self.waiting_count -= 1;
        if q.is_empty() {
            self.by_class.remove(&class);
        }
        self.cursor = Some(class);
        Some(tid)
    }

    /// Remove every class `stranded` says no longer fits the cluster (a node died);
    /// returns their tasks, class by class in class order, to be scheduled again.
    pub(crate) fn take_classes(&mut self, mut stranded: impl FnMut(&SchedulingClass) -> bool) -> Vec<VecDeque<TaskId>> {
        let keys: Vec<SchedulingClass> = self.by_class.keys().filter(|k| stranded(k)).copied().collect();
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(q) = self.by_class.remove(&key) {
                self.waiting_count -= q.len();
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

    /// Take a task of `spec` out of the queue it waits in (resources, infeasible, or the
    /// bundle of `pg`). A queue left empty stays until it is next served.
    pub(crate) fn unqueue(&mut self, tid: TaskId, spec: u32, pg: Option<PgId>) {
        for (key, q) in self.by_class.range_mut((spec, None)..) {
            if key.0 != spec {
                break;
            }
            if let Some(pos) = q.iter().position(|x| *x == tid) {
                q.remove(pos);
                self.waiting_count -= 1;
                return;
            }
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

    /// Whether each count matches its queues (for the invariant checks).
    pub(crate) fn check_counts(&self) -> Result<(), String> {
        let waiting: usize = self.by_class.values().map(|q| q.len()).sum();
        if waiting != self.waiting_count {
            return Err(format!("waiting_count {} but {} queued", self.waiting_count, waiting));
        }
        let infeasible: usize = self.infeasible.values().map(|q| q.len()).sum();
        if infeasible != self.infeasible_count {
            return Err(format!("infeasible_count {} but {} queued", self.infeasible_count, infeasible));
        }
        Ok(())
    }
}
