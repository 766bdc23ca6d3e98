//! Placement groups, as Ray's GCS placement group manager handles them: atomic bundle
//! reservation, tasks and actors placed in bundles, rescheduling after node loss,
//! removal.
//!
//! Owns: [`PlacementGroupManager`], the groups waiting to be placed (Ray's GCS keeps
//! this queue too, retried as resources free up and nodes join), and the groups'
//! lifecycle: creating, placing and retrying, removing, rescheduling after node loss,
//! and leasing a task room in a bundle and giving it back. The group records live in
//! the model's table; tasks waiting for room in a placed bundle wait in the cluster
//! task queues (`cluster_queues.rs`, passed in), as Ray's raylet queues them with the
//! other work for resources. What the task lifecycle must do next (run a resumed
//! creator, schedule a waiter, fail a task, offer freed resources) is returned as
//! follow-ups. Must never: reserve a bundle except through the node runtime, decide
//! placement (the scheduler's `place_bundles` does), or call into another component.

use crate::log_event;
use crate::model::*;
use crate::scheduler::{PgDecision, Scheduler};
use crate::sim::clock::Event;
use crate::sim::follow::{Cx, Follow, Follows};
use crate::sim::raylet::cluster_queues::ClusterQueues;
use smallvec::smallvec;
use std::collections::VecDeque;

/// The key to `Model::pgs_mut`: only this file can make one, so the placement groups
/// change only here (and through the model's transitions).
pub struct Key(());

const KEY: Key = Key(());

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

    /// Demand of pending groups, for the autoscaler.
    pub(crate) fn pending_bundles(&self, m: &Model) -> Vec<ResourceRequest> {
        self.pending
            .iter()
            .filter_map(|id| m.pgs().get(id))
            .flat_map(|pg| pg.bundles.iter().filter(|b| b.node.is_none()).map(|b| b.request.clone()))
            .collect()
    }
}

impl PlacementGroupManager {
    /// `creator` creates a group: it is placed at once if the scheduler finds room, or
    /// waits. Returns its id and what follows a placement.
    pub(crate) fn create(
        &mut self,
        cx: &mut Cx,
        creator: TaskId,
        bundles: Vec<ResourceRequest>,
        strategy: PgStrategy,
    ) -> (PgId, Follows) {
        let id = register(cx.model, creator, bundles, strategy, cx.now());
        match try_place(cx, id) {
            Some(follows) => (id, follows),
            None => {
                self.wait(id);
                (id, Follows::new())
            }
        }
    }

    /// Resources came free or a node joined: every pending group tries again, oldest
    /// first.
    pub(crate) fn retry_pending(&mut self, cx: &mut Cx) -> Follows {
        let ids = self.take_pending();
        self.retry(cx, ids)
    }

    /// Try to place `ids` in order; those that still find no room wait again. Once one
    /// is placed, what follows runs before the rest are tried ([`Follow::RetryPgs`]):
    /// its creator and bundle waiters may take the room the next one would have had.
    pub(crate) fn retry(&mut self, cx: &mut Cx, ids: Vec<PgId>) -> Follows {
        let mut ids = ids.into_iter();
        while let Some(id) = ids.next() {
            match try_place(cx, id) {
                None => self.wait(id),
                Some(follows) if follows.is_empty() => {}
                Some(follows) => return then_rest(follows, ids, Follow::RetryPgs),
            }
        }
        Follows::new()
    }

    /// Remove group `id`: its bundles' reservations are given back on the nodes still
    /// alive, nothing waits on it any more, and those nodes' freed resources are offered
    /// to waiting work.
    pub(crate) fn remove(&mut self, cx: &mut Cx, queues: &mut ClusterQueues, id: PgId) -> Follows {
        let Some(pg) = cx.model.pgs_mut(&KEY).get_mut(&id) else { return Follows::new() };
        if pg.state() == PgState::Removed {
            return Follows::new();
        }
        let bundles = std::mem::take(&mut pg.bundles);
        for b in &bundles {
            if let Some(n) = b.node {
                if cx.model.nodes()[n.index()].is_alive() {
                    cx.local_resources().release(n, &b.request);
                }
            }
        }
        if let Some(pg) = cx.model.pgs_mut(&KEY).get_mut(&id) {
            pg.bundles = bundles
                .into_iter()
                .map(|mut b| {
                    b.available = b.request.clone();
                    b
                })
                .collect();
        }
        self.forget(id);
        // Nothing waits on its bundles any more.
        queues.take_bundle_waiters(id);
        cx.model.set_pg_state(id, PgState::Removed, cx.now());
        cx.model.pgs()[&id].bundles.iter().filter_map(|b| b.node).map(Follow::ResourcesFreed).collect()
    }

    /// A task or actor placed in bundle `b` of `pg`: reserve from the bundle, not the
    /// node. Without room it waits in the cluster queues for the bundle; without a
    /// placed group or such a bundle it fails.
    pub(crate) fn try_schedule_in_bundle(
        cx: &mut Cx,
        queues: &mut ClusterQueues,
        tid: TaskId,
        pg: PgId,
        b: u32,
    ) -> Follows {
        let unschedulable = || smallvec![Follow::FailTask(tid, ErrorType::TaskUnschedulable, false)];
        let spec = cx.model.tasks[&tid].spec;
        let req = cx.specs[spec as usize].request.clone();
        let now = cx.now();
        let Some(group) = cx.model.pgs_mut(&KEY).get_mut(&pg) else { return unschedulable() };
        if group.state() == PgState::Removed {
            return unschedulable();
        }
        let placed = group.state() == PgState::Created;
        let bundle = group.bundles.get_mut(b as usize);
        match bundle {
            Some(bd) if placed && bd.node.is_some() && fits(&bd.available, &req) => {
                take(&mut bd.available, &req);
                let node = bd.node.expect("placed bundle has a node");
                cx.raylets.lease_granted(node, tid, cx.model);
                let t = cx.model.tasks.get_mut(&tid).expect("task exists");
                t.node = Some(node).into();
                t.holds_resources = true;
                let attempt = t.attempt;
                let kind = t.kind;
                let hist = if kind == TaskType::ActorCreationTask { 1 } else { 0 };
                let ms = (now - t.ready_at) as f64 / 1000.0;
                cx.model.placement_ms[hist].observe(ms);
                log_event!(
                    cx.model.log,
                    now,
                    "scheduler",
                    "{:x} LEASED node={} pg={} bundle={}",
                    tid.0,
                    node.0,
                    pg.0,
                    b
                );
                let (dispatch, lease) = (cx.cfg.scheduler.dispatch_cost, cx.cfg.scheduler.lease_latency);
                let granted = cx.cpus.raylet_work(node, now, dispatch.as_micros()) + lease.as_micros();
                let (event, at, _) =
                    crate::sim::raylet::cluster_queues::after_grant(cx, tid, attempt, kind, node, granted, 0);
                cx.clock.schedule_at(at, event);
                Follows::new()
            }
            Some(_) => {
                queues.wait_for_bundle(pg, tid);
                Follows::new()
            }
            None => unschedulable(),
        }
    }

    /// Give `req` back to bundle `b` of `pg` (a task or actor in it ended): the tasks
    /// waiting for room there try again.
    pub(crate) fn return_to_bundle(
        m: &mut Model,
        queues: &mut ClusterQueues,
        pg: PgId,
        b: u32,
        req: &ResourceRequest,
    ) -> Follows {
        if let Some(bd) = m.pgs_mut(&KEY).get_mut(&pg).and_then(|g| g.bundles.get_mut(b as usize)) {
            for &(id, q) in &req.0 {
                match bd.available.0.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, v)) => *v += q,
                    None => bd.available.0.push((id, q)),
                }
            }
            bd.available.0.sort_by_key(|(i, _)| *i);
        }
        Self::drain_bundle_waiters(queues, pg)
    }

    /// The tasks waiting for room in `pg`'s bundles try again, in the order they began
    /// waiting. Each is looked up when its turn comes ([`Follow::WakeBundleWaiter`]):
    /// the one before may have ended it.
    pub(crate) fn drain_bundle_waiters(queues: &mut ClusterQueues, pg: PgId) -> Follows {
        let Some(waiters) = queues.take_bundle_waiters(pg) else { return Follows::new() };
        waiters.into_iter().map(Follow::WakeBundleWaiter).collect()
    }

    /// A task that waited for room in a bundle asks to be scheduled, if it still exists.
    pub(crate) fn wake_bundle_waiter(m: &Model, tid: TaskId) -> Follows {
        if m.tasks.contains_key(&tid) {
            smallvec![Follow::TrySchedule(tid)]
        } else {
            Follows::new()
        }
    }

    /// Bundles on a dead node are lost: each group with one there is RESCHEDULING until
    /// they are placed again.
    pub(crate) fn reschedule_on(&mut self, cx: &mut Cx, node: NodeIdx) -> Follows {
        let ids = with_bundles_on(cx.model, node);
        self.reschedule(cx, node, ids)
    }

    /// Reschedule `ids`, which had bundles on the dead `node`, in order. As in
    /// [`PlacementGroupManager::retry`], what follows one placed runs before the rest
    /// ([`Follow::ReschedulePgs`]).
    pub(crate) fn reschedule(&mut self, cx: &mut Cx, node: NodeIdx, ids: Vec<PgId>) -> Follows {
        let mut ids = ids.into_iter();
        while let Some(id) = ids.next() {
            bundles_lost(cx.model, id, node, cx.now());
            match try_place(cx, id) {
                // A group that lost bundles on an earlier node may already be pending.
                None if !self.is_pending(id) => self.wait(id),
                None => {}
                Some(follows) if follows.is_empty() => {}
                Some(follows) => return then_rest(follows, ids, |rest| Follow::ReschedulePgs(node, rest)),
            }
        }
        Follows::new()
    }
}

/// `follows`, then (if any are left) the continuation that goes on with the rest.
fn then_rest(mut follows: Follows, rest: std::vec::IntoIter<PgId>, go_on: impl FnOnce(Vec<PgId>) -> Follow) -> Follows {
    let rest: Vec<PgId> = rest.collect();
    if !rest.is_empty() {
        follows.push(go_on(rest));
    }
    follows
}

/// Register a new group (PENDING) created by `creator`.
fn register(m: &mut Model, creator: TaskId, bundles: Vec<ResourceRequest>, strategy: PgStrategy, now: u64) -> PgId {
    let id = PgId(m.next_pg);
    m.next_pg += 1;
    let job = m.tasks[&creator].job;
    let bundles = bundles.into_iter().map(|r| Bundle { available: r.clone(), request: r, node: None }).collect();
    m.pgs_mut(&KEY).insert(id, PlacementGroup::pending(id, job, strategy, bundles, creator, now));
    m.counters.pgs_created += 1;
    log_event!(m.log, now, "placement_group", "{} PENDING strategy={}", id.0, strategy.as_str());
    id
}

/// Try to place group `id`; `None` while it must wait, else what follows (nothing when
/// it is gone). A placed group's reservations are made here (Ray's prepare phase); it
/// is CREATED once the commit is done: `placement_group_commit_latency` later, and
/// `placement_group_node_latency` more for each node beyond the first its bundles span
/// (the GCS prepares and commits with each of their raylets).
fn try_place(cx: &mut Cx, id: PgId) -> Option<Follows> {
    let now = cx.now();
    let reserve = match place(cx.model, cx.sched, id, now) {
        Placement::Prepared { reserve } => reserve,
        Placement::Waiting => return None,
        Placement::Gone => return Some(Follows::new()),
    };
    for (n, req) in &reserve {
        cx.local_resources().reserve(*n, req);
    }
    let mut nodes: Vec<NodeIdx> = reserve.iter().map(|(n, _)| *n).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let s = &cx.cfg.scheduler;
    let beyond_first = nodes.len().saturating_sub(1) as u64;
    let latency =
        s.placement_group_commit_latency.as_micros() + beyond_first * s.placement_group_node_latency.as_micros();
    if latency > 0 {
        cx.clock.schedule_in(latency, Event::PgCommitted(id));
        return Some(Follows::new());
    }
    Some(commit(cx, id))
}

/// The commit of a prepared group is done: it is CREATED, its creator resumes and
/// ([`Follow::DrainBundleWaiters`]) its bundle waiters try again. Nothing happens to a
/// group removed, or sent back to pending, meanwhile.
pub(crate) fn commit(cx: &mut Cx, id: PgId) -> Follows {
    let now = cx.now();
    let m = &mut *cx.model;
    let Some(pg) = m.pgs().get(&id) else { return Follows::new() };
    if pg.state() != PgState::Prepared {
        return Follows::new();
    }
    let creator = pg.creator;
    m.placement_ms[2].observe((now - pg.created_at) as f64 / 1000.0);
    m.set_pg_state(id, PgState::Created, now);
    let mut follows = Follows::with_capacity(2);
    // Resume the creator blocked in `ray.get(pg.ready())` (not one blocked in a later
    // `ray.get` while its group is rescheduled).
    if let (Some(t), Some(r)) = (cx.model.tasks.get(&creator), cx.runs.get_mut(&creator)) {
        let at_create = matches!(
            cx.specs[t.spec as usize].program.get(r.pc as usize),
            Some(crate::workload::Op::CreatePlacementGroup { .. })
        );
        if t.state() == TaskState::RunningInRayGet && r.exec.pg == Some(id) && at_create {
            r.pc += 1;
            cx.model.set_task_state(creator, TaskState::Running, now);
            follows.push(Follow::RunProgram(creator));
        }
    }
    follows.push(Follow::DrainBundleWaiters(id));
    follows
}

/// Try to place every unplaced bundle of `id` at once (the scheduler decides). On
/// success the group is PREPARED and the bundles' reservations are returned for the node
/// runtime to make.
fn place(m: &mut Model, sched: &Scheduler, id: PgId, now: u64) -> Placement {
    let Some(pg) = m.pgs().get(&id) else { return Placement::Gone };
    if pg.state() == PgState::Removed {
        return Placement::Gone;
    }
    let unplaced: Vec<usize> = (0..pg.bundles.len()).filter(|i| pg.bundles[*i].node.is_none()).collect();
    let requests: Vec<ResourceRequest> = unplaced.iter().map(|i| pg.bundles[*i].request.clone()).collect();
    match sched.place_bundles(m.nodes(), &requests, pg.strategy) {
        PgDecision::Placed(nodes) => {
            m.set_pg_state(id, PgState::Prepared, now);
            let pg = m.pgs_mut(&KEY).get_mut(&id).expect("pg exists");
            let mut reserve = Vec::with_capacity(unplaced.len());
            for ((&bi, &n), req) in unplaced.iter().zip(&nodes).zip(requests) {
                pg.bundles[bi].node = Some(n);
                pg.bundles[bi].available = req.clone();
                reserve.push((n, req));
            }
            pg.scheduled_at = Some(now);
            Placement::Prepared { reserve }
        }
        PgDecision::Wait => Placement::Waiting,
        PgDecision::Infeasible => {
            log_event!(m.log, now, "placement_group", "{} INFEASIBLE", id.0);
            Placement::Waiting
        }
    }
}

/// What one try to place a group came to.
enum Placement {
    /// Placed (PREPARED): reserve each (node, request), then commit.
    Prepared { reserve: Vec<(NodeIdx, ResourceRequest)> },
    /// Not placeable now (no room, or infeasible): it waits.
    Waiting,
    /// Removed, or never was: nothing to place.
    Gone,
}

/// The groups not removed with a bundle on `node`, in id order.
fn with_bundles_on(m: &Model, node: NodeIdx) -> Vec<PgId> {
    m.pgs()
        .values()
        .filter(|p| p.state() != PgState::Removed && p.bundles.iter().any(|b| b.node == Some(node)))
        .map(|p| p.id)
        .collect()
}

/// `id`'s bundles on the dead `node` are lost: RESCHEDULING until placed again.
fn bundles_lost(m: &mut Model, id: PgId, node: NodeIdx, now: u64) {
    let pg = m.pgs_mut(&KEY).get_mut(&id).expect("pg exists");
    for b in pg.bundles.iter_mut().filter(|b| b.node == Some(node)) {
        b.node = None;
        b.available = b.request.clone();
    }
    m.set_pg_state(id, PgState::Rescheduling, now);
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
