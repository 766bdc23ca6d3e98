//! Placement groups, as Ray's GCS placement group manager handles them: atomic bundle
//! reservation, tasks and actors placed in bundles, rescheduling after node loss,
//! removal.
//!
//! Owns: [`PlacementGroupManager`], the groups waiting to be placed (Ray's GCS keeps
//! this queue too, retried as resources free up and nodes join). The group records
//! live in the model's table; tasks waiting for room in a placed bundle wait in the
//! cluster task queues (`cluster_queues.rs`), as Ray's raylet queues them with the
//! other work for resources. Must never: reserve a bundle except through the node
//! runtime, or decide placement (the scheduler's `place_bundles` does).

use super::engine::Engine;
use super::follow::Follow;
use crate::log_event;
use crate::model::*;
use crate::scheduler::{PgDecision, Scheduler};
use std::collections::VecDeque;

/// Placement groups not yet (or no longer fully) placed, in the order they started
/// waiting. Invariant (checked by `check_invariants`): a group is listed at most once,
/// only while PENDING or RESCHEDULING.
#[derive(Default)]
pub(crate) struct PlacementGroupManager {
    pending: VecDeque<PgId>,
}

impl PlacementGroupManager {
    /// A group waits to be placed.
    pub(crate) fn wait(&mut self, pg: PgId) {
        self.pending.push_back(pg);
    }

    pub(crate) fn is_pending(&self, pg: PgId) -> bool {
        self.pending.contains(&pg)
    }

    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The groups waiting, oldest first.
    pub(crate) fn pending(&self) -> impl Iterator<Item = &PgId> {
        self.pending.iter()
    }

    /// Take every pending group, oldest first, to try placing them again.
    pub(crate) fn take_pending(&mut self) -> Vec<PgId> {
        self.pending.drain(..).collect()
    }

    /// A group was removed: it no longer waits.
    pub(crate) fn forget(&mut self, pg: PgId) {
        self.pending.retain(|p| *p != pg);
    }

    /// Register a new group (PENDING) created by `creator`.
    pub(crate) fn create(
        m: &mut Model,
        creator: TaskId,
        bundles: Vec<ResourceRequest>,
        strategy: PgStrategy,
        now: u64,
    ) -> PgId {
        let id = PgId(m.next_pg);
        m.next_pg += 1;
        let job = m.tasks[&creator].job;
        let bundles = bundles.into_iter().map(|r| Bundle { available: r.clone(), request: r, node: None }).collect();
        m.pgs.insert(id, PlacementGroup::pending(id, job, strategy, bundles, creator, now));
        m.counters.pgs_created += 1;
        log_event!(m.log, now, "placement_group", "{} PENDING strategy={}", id.0, strategy.as_str());
        id
    }

    /// Try to place every unplaced bundle of `id` at once (the scheduler decides). On
    /// success the group is CREATED and the bundles' reservations are returned for the
    /// node runtime to make.
    pub(crate) fn try_place(m: &mut Model, sched: &Scheduler, id: PgId, now: u64) -> Placement {
        let Some(pg) = m.pgs.get(&id) else { return Placement::Gone };
        if pg.state() == PgState::Removed {
            return Placement::Gone;
        }
        let unplaced: Vec<usize> = (0..pg.bundles.len()).filter(|i| pg.bundles[*i].node.is_none()).collect();
        let requests: Vec<ResourceRequest> = unplaced.iter().map(|i| pg.bundles[*i].request.clone()).collect();
        match sched.place_bundles(&m.nodes, &requests, pg.strategy) {
            PgDecision::Placed(nodes) => {
                m.set_pg_state(id, PgState::Prepared, now);
                let pg = m.pgs.get_mut(&id).expect("pg exists");
                let mut reserve = Vec::with_capacity(unplaced.len());
                for ((&bi, &n), req) in unplaced.iter().zip(&nodes).zip(requests) {
                    pg.bundles[bi].node = Some(n);
                    pg.bundles[bi].available = req.clone();
                    reserve.push((n, req));
                }
                let ms = (now - pg.created_at) as f64 / 1000.0;
                pg.scheduled_at = Some(now);
                let creator = pg.creator;
                m.placement_ms[2].observe(ms);
                m.set_pg_state(id, PgState::Created, now);
                Placement::Created { reserve, creator }
            }
            PgDecision::Wait => Placement::Waiting,
            PgDecision::Infeasible => {
                log_event!(m.log, now, "placement_group", "{} INFEASIBLE", id.0);
                Placement::Waiting
            }
        }
    }

    /// Demand of pending groups, for the autoscaler.
    pub(crate) fn pending_bundles(&self, m: &Model) -> Vec<ResourceRequest> {
        self.pending
            .iter()
            .filter_map(|id| m.pgs.get(id))
            .flat_map(|pg| pg.bundles.iter().filter(|b| b.node.is_none()).map(|b| b.request.clone()))
            .collect()
    }

    /// Give `req` back to bundle `b` of `pg` (a task or actor in it ended).
    pub(crate) fn return_to_bundle(m: &mut Model, pg: PgId, b: u32, req: &ResourceRequest) {
        if let Some(bd) = m.pgs.get_mut(&pg).and_then(|g| g.bundles.get_mut(b as usize)) {
            for &(id, q) in &req.0 {
                match bd.available.0.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, v)) => *v += q,
                    None => bd.available.0.push((id, q)),
                }
            }
            bd.available.0.sort_by_key(|(i, _)| *i);
        }
    }

    /// The groups not removed with a bundle on `node`, in id order.
    pub(crate) fn with_bundles_on(m: &Model, node: NodeIdx) -> Vec<PgId> {
        m.pgs
            .values()
            .filter(|p| p.state() != PgState::Removed && p.bundles.iter().any(|b| b.node == Some(node)))
            .map(|p| p.id)
            .collect()
    }

    /// `id`'s bundles on the dead `node` are lost: RESCHEDULING until placed again.
    pub(crate) fn bundles_lost(m: &mut Model, id: PgId, node: NodeIdx, now: u64) {
        let pg = m.pgs.get_mut(&id).expect("pg exists");
        for b in pg.bundles.iter_mut().filter(|b| b.node == Some(node)) {
            b.node = None;
            b.available = b.request.clone();
        }
        m.set_pg_state(id, PgState::Rescheduling, now);
    }
}

/// What one try to place a group came to.
pub(crate) enum Placement {
    /// Placed: reserve each (node, request), then resume `creator` if it waits on it.
    Created { reserve: Vec<(NodeIdx, ResourceRequest)>, creator: TaskId },
    /// Not placeable now (no room, or infeasible): it waits.
    Waiting,
    /// Removed, or never was: nothing to place.
    Gone,
}

impl Engine {
    pub(crate) fn create_placement_group(
        &mut self,
        creator: TaskId,
        bundles: Vec<ResourceRequest>,
        strategy: PgStrategy,
    ) -> PgId {
        let id = PlacementGroupManager::create(&mut self.model, creator, bundles, strategy, self.clock.now);
        if !self.try_place_pg(id) {
            self.pg_manager.wait(id);
        }
        id
    }

    /// Try to place group `id`; true when there is nothing left to wait for. A placed
    /// group's reservations are made, then its creator resumes, then bundle waiters.
    fn try_place_pg(&mut self, id: PgId) -> bool {
        let (reserve, creator) =
            match PlacementGroupManager::try_place(&mut self.model, &self.sched, id, self.clock.now) {
                Placement::Created { reserve, creator } => (reserve, creator),
                Placement::Waiting => return false,
                Placement::Gone => return true,
            };
        for (n, req) in &reserve {
            self.local_resources().reserve(*n, req);
        }
        // Resume the creator blocked in `ray.get(pg.ready())` (not one blocked in a
        // later `ray.get` while its group is rescheduled).
        if let Some(t) = self.model.tasks.get_mut(&creator) {
            let at_create = matches!(
                self.specs[t.spec as usize].program.get(t.pc as usize),
                Some(crate::workload::Op::CreatePlacementGroup { .. })
            );
            if t.state() == TaskState::RunningInRayGet && t.exec.pg == Some(id) && at_create {
                t.pc += 1;
                self.model.set_task_state(creator, TaskState::Running, self.clock.now);
                self.follow(Follow::RunProgram(creator));
            }
        }
        self.drain_bundle_waiters(id);
        true
    }

    pub(crate) fn retry_pending_pgs(&mut self) {
        for id in self.pg_manager.take_pending() {
            if !self.try_place_pg(id) {
                self.pg_manager.wait(id);
            }
        }
    }

    pub(crate) fn remove_placement_group(&mut self, id: PgId) {
        let Some(pg) = self.model.pgs.get_mut(&id) else { return };
        if pg.state() == PgState::Removed {
            return;
        }
        let bundles = std::mem::take(&mut pg.bundles);
        for b in &bundles {
            if let Some(n) = b.node {
                if self.model.nodes[n.index()].is_alive() {
                    self.local_resources().release(n, &b.request);
                }
            }
        }
        if let Some(pg) = self.model.pgs.get_mut(&id) {
            pg.bundles = bundles
                .into_iter()
                .map(|mut b| {
                    b.available = b.request.clone();
                    b
                })
                .collect();
        }
        self.pg_manager.forget(id);
        // Nothing waits on its bundles any more.
        self.queues.take_bundle_waiters(id);
        self.model.set_pg_state(id, PgState::Removed, self.clock.now);
        let nodes: Vec<NodeIdx> = self.model.pgs[&id].bundles.iter().filter_map(|b| b.node).collect();
        for n in nodes {
            self.follow(Follow::ResourcesFreed(n));
        }
    }

    /// A task or actor placed in bundle `b` of `pg`: reserve from the bundle, not the node.
    pub(crate) fn try_schedule_in_bundle(&mut self, tid: TaskId, pg: PgId, b: u32) {
        let spec = self.model.tasks[&tid].spec;
        let req = self.specs[spec as usize].request.clone();
        let Some(group) = self.model.pgs.get_mut(&pg) else {
            self.follow(Follow::FailTask(tid, ErrorType::TaskUnschedulable, false));
            return;
        };
        if group.state() == PgState::Removed {
            self.follow(Follow::FailTask(tid, ErrorType::TaskUnschedulable, false));
            return;
        }
        let placed = group.state() == PgState::Created;
        let bundle = group.bundles.get_mut(b as usize);
        match bundle {
            Some(bd) if placed && bd.node.is_some() && fits(&bd.available, &req) => {
                take(&mut bd.available, &req);
                let node = bd.node.expect("placed bundle has a node");
                self.raylets.lease_granted(node, tid);
                let t = self.model.tasks.get_mut(&tid).expect("task exists");
                t.node = Some(node);
                t.holds_resources = true;
                let attempt = t.attempt;
                let kind = t.kind;
                let hist = if kind == TaskType::ActorCreationTask { 1 } else { 0 };
                let ms = (self.clock.now - t.ready_at) as f64 / 1000.0;
                self.model.placement_ms[hist].observe(ms);
                log_event!(
                    self.model.log,
                    self.clock.now,
                    "scheduler",
                    "{:x} LEASED node={} pg={} bundle={}",
                    tid.0,
                    node.0,
                    pg.0,
                    b
                );
                let delay = self.cfg.scheduler.lease_latency.as_micros()
                    + if kind == TaskType::ActorCreationTask {
                        self.cfg.scheduler.worker_start_latency.as_micros()
                    } else {
                        0
                    };
                self.clock.schedule_in(delay, super::clock::Event::Dispatch(tid, attempt));
            }
            Some(_) => self.queues.wait_for_bundle(pg, tid),
            None => self.follow(Follow::FailTask(tid, ErrorType::TaskUnschedulable, false)),
        }
    }

    pub(crate) fn return_to_bundle(&mut self, pg: PgId, b: u32, req: &ResourceRequest) {
        PlacementGroupManager::return_to_bundle(&mut self.model, pg, b, req);
        self.drain_bundle_waiters(pg);
    }

    fn drain_bundle_waiters(&mut self, pg: PgId) {
        let Some(q) = self.queues.take_bundle_waiters(pg) else { return };
        for tid in q {
            if self.model.tasks.contains_key(&tid) {
                self.follow(Follow::TrySchedule(tid));
            }
        }
    }

    /// Bundles on a dead node are lost: the group is RESCHEDULING until they are placed again.
    pub(crate) fn reschedule_pgs_on(&mut self, node: NodeIdx) {
        for id in PlacementGroupManager::with_bundles_on(&self.model, node) {
            PlacementGroupManager::bundles_lost(&mut self.model, id, node, self.clock.now);
            // A group that lost bundles on an earlier node may already be pending.
            if !self.try_place_pg(id) && !self.pg_manager.is_pending(id) {
                self.pg_manager.wait(id);
            }
        }
    }
}

fn fits(avail: &ResourceRequest, req: &ResourceRequest) -> bool {
    req.0.iter().all(|&(id, q)| avail.get(id) >= q)
}

fn take(avail: &mut ResourceRequest, req: &ResourceRequest) {
    for &(id, q) in &req.0 {
        if let Some((_, v)) = avail.0.iter_mut().find(|(i, _)| *i == id) {
            *v -= q;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_groups_are_retried_oldest_first_and_forgotten_when_removed() {
        let mut m = PlacementGroupManager::default();
        assert!(!m.has_pending());
        for g in [3, 1, 2] {
            m.wait(PgId(g));
        }
        m.forget(PgId(1));
        assert!(m.is_pending(PgId(3)) && !m.is_pending(PgId(1)));
        assert_eq!(m.take_pending(), [PgId(3), PgId(2)]);
        assert!(!m.has_pending() && m.pending().next().is_none());
    }
}
