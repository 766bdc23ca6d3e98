//! Where each live task, actor and placement group must be, given its state.
//!
//! A task at rest (between events) is in exactly one place that will move it on:
//!
//! | state | place |
//! |---|---|
//! | PENDING_ARGS_AVAIL | a waiter of each argument it still misses (`exec.unresolved` of them; one only on crashed nodes counts) |
//! | PENDING_NODE_ASSIGNMENT, no lease | one wait, infeasible or bundle queue, the queue of its actor not alive yet, or a `Resubmit` for its attempt |
//! | PENDING_NODE_ASSIGNMENT, leased | in `leased[node]`, with a `Dispatch` for its attempt (a normal task: or its `Push`; an actor's creation: or a `Begin`) |
//! | PENDING_ARGS_FETCH | leased, with an `ArgsFetched` for its attempt (an actor's creation: or a `Begin`) |
//! | SUBMITTED_TO_WORKER | a normal task, leased, with a `Begin` for its attempt |
//! | PENDING_ACTOR_TASK_ORDERING_OR_CONCURRENCY | its actor's queue, or a `Resubmit` for its attempt, or its actor's running set with a `Begin` |
//! | PENDING_ACTOR_TASK_ARGS_FETCH | its actor's running set, with an `ArgsFetched` or a `Begin` |
//! | RUNNING | an `OpDone`, a `Resume` or a `Raised` for its attempt (actor tasks: also in the actor's running set) |
//! | RUNNING_IN_RAY_GET | blocked on unresolved futures at a `Get`, or on its placement group, or queued to take its CPU back |
//!
//! A task with a `Begin` due has `begin_due` set, and only then. NIL is passed
//! through within one event and never seen at rest.

use super::{count, Check, Scheduled, Violations};
use crate::model::*;
use crate::sim::clock::Event;
use crate::workload::Op;
use rustc_hash::FxHashMap;

fn bump<K: std::hash::Hash + Eq>(m: &mut FxHashMap<K, u32>, k: K) {
    *m.entry(k).or_insert(0) += 1;
}

impl Check<'_> {
    fn scheduled(&self) -> Scheduled {
        let mut s = Scheduled::default();
        for e in self.e.clock.pending() {
            match e {
                // A normal task's push is its dispatch to be: one or the other is due.
                Event::Dispatch(t, a) | Event::Push(t, a) => bump(&mut s.dispatch, (*t, *a)),
                Event::ArgsFetched(t, a) => bump(&mut s.args_fetched, (*t, *a)),
                Event::OpDone(t, a) | Event::Resume(t, a) | Event::Raised(t, a) => bump(&mut s.op_done, (*t, *a)),
                Event::Begin(t, a) => bump(&mut s.begin, (*t, *a)),
                Event::Resubmit(t, a) => bump(&mut s.resubmit, (*t, *a)),
                Event::Pulled(t, a) => bump(&mut s.pulled, (*t, *a)),
                _ => {}
            }
        }
        s
    }

    pub(super) fn task_places(&self, v: &mut Violations) {
        let m = &self.e.model;
        let s = self.scheduled();
        let mut queued: FxHashMap<TaskId, u32> = FxHashMap::default();
        let waiting_task = |v: &mut Violations, tid: &TaskId, spec: u32, what: &str| match m.tasks.get(tid) {
            Some(t) => ensure!(
                v,
                t.state() == TaskState::PendingNodeAssignment && !t.holds_resources && t.spec == spec,
                "task {:x} in the {what} queue of spec {spec} is {} (spec {}, holds {})",
                tid.0,
                t.state(),
                t.spec,
                t.holds_resources
            ),
            None => v.push(format!("the {what} queue holds task {:x}, which is not live", tid.0)),
        };
        // A wait queue holds work some alive node could hold once resources free up; the
        // infeasible queue work that none could (it is retried when a node joins).
        for ((spec, only), q) in self.e.queues.classes() {
            let req = &self.e.specs[*spec as usize].request;
            match only {
                Some(n) => ensure!(v, m.nodes()[n.index()].is_alive(), "tasks wait for dead node {}", n.0),
                None => ensure!(
                    v,
                    q.is_empty() || self.e.sched.is_feasible(req),
                    "{} tasks of spec {spec} wait though no alive node could ever hold them",
                    q.len()
                ),
            }
            for tid in q {
                bump(&mut queued, *tid);
                waiting_task(v, tid, *spec, "wait");
            }
        }
        for (spec, q) in self.e.queues.infeasible() {
            let req = &self.e.specs[*spec as usize].request;
            ensure!(
                v,
                q.is_empty() || !self.e.sched.is_feasible(req),
                "{} tasks of spec {spec} are infeasible though a node could hold them",
                q.len()
            );
            for tid in q {
                bump(&mut queued, *tid);
                waiting_task(v, tid, *spec, "infeasible");
            }
        }
        for (pg, q) in self.e.queues.bundle_waiters() {
            for tid in q {
                bump(&mut queued, *tid);
                match m.tasks.get(tid) {
                    Some(t) => ensure!(
                        v,
                        t.state() == TaskState::PendingNodeAssignment
                            && !t.holds_resources
                            && t.bundle.get().map(|b| b.0) == Some(*pg),
                        "task {:x} waiting for group {} is {} in bundle {:?}",
                        tid.0,
                        pg.0,
                        t.state(),
                        t.bundle
                    ),
                    None => v.push(format!("group {} bundle queue holds task {:x}, which is not live", pg.0, tid.0)),
                }
            }
        }
        let mut on_actor: FxHashMap<TaskId, u32> = FxHashMap::default();
        for a in m.actors().values() {
            for tid in &a.queue {
                bump(&mut queued, *tid);
                // Pushed to an alive actor; or waiting for it to be alive to be pushed.
                let ok = m.tasks.get(tid).is_some_and(|t| {
                    t.actor.get() == Some(a.id)
                        && (t.state() == TaskState::PendingActorTaskOrderingOrConcurrency
                            || (t.state() == TaskState::PendingNodeAssignment && a.state() != ActorState::Alive))
                });
                ensure!(v, ok, "actor {:x} queue holds task {:x} that is not a pending call to it", a.id.0, tid.0);
            }
            for tid in &a.running {
                bump(&mut on_actor, *tid);
                let ok = m.tasks.get(tid).is_some_and(|t| t.actor.get() == Some(a.id) && t.kind == TaskType::ActorTask);
                ensure!(v, ok, "actor {:x} runs task {:x}, which is not a live call to it", a.id.0, tid.0);
            }
        }
        let mut resuming: FxHashMap<TaskId, u32> = FxHashMap::default();
        for (i, q) in self.e.raylets.resuming().enumerate() {
            for tid in q {
                bump(&mut resuming, *tid);
                let ok = m.tasks.get(tid).zip(self.e.runs.get(tid)).is_some_and(|(t, r)| {
                    t.state() == TaskState::RunningInRayGet
                        && t.cpu_released
                        && t.node.get() == Some(NodeIdx(i as u32))
                        && r.exec.unresolved == 0
                });
                ensure!(
                    v,
                    ok,
                    "resuming[{i}] holds task {:x}, which is not a getter ready to take its CPU back",
                    tid.0
                );
            }
        }

        for t in m.tasks.values() {
            let id = t.id.0;
            // A task without a run is reported by `task_runs`.
            let Some(r) = self.e.runs.get(&t.id) else { continue };
            let key = (t.id, t.attempt);
            let (dispatch, fetched, op_done, resubmit) = (
                count(&s.dispatch, &key),
                count(&s.args_fetched, &key),
                count(&s.op_done, &key),
                count(&s.resubmit, &key),
            );
            let begin = count(&s.begin, &key);
            ensure!(
                v,
                begin == r.begin_due as u32,
                "task {:x} ({}) has {begin} Begin events, begin_due {}",
                t.id.0,
                t.state(),
                r.begin_due
            );
            let (q, res, act) = (count(&queued, &t.id), count(&resuming, &t.id), count(&on_actor, &t.id));
            let state = t.state();
            match state {
                TaskState::PendingArgsAvail => {
                    let waited = t
                        .args
                        .iter()
                        .filter(|a| {
                            m.objects.get(a).is_some_and(|o| {
                                (matches!(o.status, ObjectStatus::Pending | ObjectStatus::Lost)
                                    || o.only_on_crashed(m.nodes()))
                                    && o.waiters.contains(&t.id)
                            })
                        })
                        .count() as u32;
                    ensure!(
                        v,
                        r.exec.unresolved > 0 && r.exec.unresolved == waited,
                        "task {id:x} waits for {} arguments but is a waiter of {waited} unready ones",
                        r.exec.unresolved
                    );
                    ensure!(
                        v,
                        q + dispatch + fetched + op_done + resubmit + begin == 0 && !t.holds_resources,
                        "task {id:x} {state} is also queued, leased or scheduled"
                    );
                }
                TaskState::PendingNodeAssignment if t.holds_resources => {
                    let creation = t.kind == TaskType::ActorCreationTask;
                    ensure!(
                        v,
                        dispatch + begin == 1 && (begin == 0 || creation) && q + resubmit == 0,
                        "leased task {id:x}: {dispatch} dispatches, {begin} begins, {q} queues, {resubmit} resubmits"
                    );
                }
                TaskState::PendingNodeAssignment => {
                    ensure!(
                        v,
                        q + resubmit == 1 && dispatch + begin == 0,
                        "task {id:x} {state}: in {q} queues with {resubmit} resubmits (attempt {})",
                        t.attempt
                    );
                }
                TaskState::PendingArgsFetch => {
                    let creation = t.kind == TaskType::ActorCreationTask;
                    ensure!(
                        v,
                        t.holds_resources && fetched + begin == 1 && (begin == 0 || creation) && q == 0,
                        "task {id:x} fetching args: holds {}, {fetched} fetch events, {begin} begins",
                        t.holds_resources
                    );
                }
                TaskState::SubmittedToWorker => {
                    ensure!(
                        v,
                        t.kind == TaskType::NormalTask && t.holds_resources && begin == 1 && q == 0,
                        "task {id:x} {state}: holds {}, {begin} begins, {q} queues",
                        t.holds_resources
                    );
                }
                TaskState::PendingActorTaskOrderingOrConcurrency => {
                    ensure!(v, q + resubmit + begin == 1 && act == begin, "actor call {id:x} {state}: in {q} queues with {resubmit} resubmits, {begin} begins, on actor {act}");
                }
                TaskState::PendingActorTaskArgsFetch => {
                    ensure!(
                        v,
                        act == 1 && fetched + begin == 1,
                        "actor call {id:x} fetching args: on actor {act}, {fetched} fetch events, {begin} begins"
                    );
                }
                TaskState::Running => {
                    ensure!(
                        v,
                        op_done == 1 && q + res == 0,
                        "running task {id:x}: {op_done} op events, {q} queues, {res} resuming"
                    );
                }
                TaskState::RunningInRayGet => {
                    let op = self.e.specs[t.spec as usize].program.get(r.pc as usize);
                    let on_get = matches!(op, Some(Op::Get)) && r.exec.unresolved > 0;
                    let on_pg = matches!(op, Some(Op::CreatePlacementGroup { .. }))
                        && r.exec.pg.and_then(|p| m.pgs().get(&p)).is_some_and(|p| p.state() != PgState::Created);
                    let pulled = count(&s.pulled, &key);
                    let pulling =
                        matches!(op, Some(Op::Get)) && r.exec.pulling && r.exec.unresolved == 0 && pulled == 1;
                    ensure!(
                        v,
                        on_get as u32 + on_pg as u32 + pulling as u32 + res == 1 && op_done + q == 0,
                        "task {id:x} in ray.get: blocked on futures {on_get}, on its group {on_pg}, pulling {pulling}, resuming {res}, {op_done} op events"
                    );
                }
                other => v.push(format!("task {id:x} is at rest in transient state {other}")),
            }
            let pulled = count(&s.pulled, &key);
            ensure!(
                v,
                pulled == 0 || (pulled == 1 && state == TaskState::RunningInRayGet && r.exec.pulling),
                "task {id:x} ({state}, pulling {}) has {pulled} Pulled events",
                r.exec.pulling
            );
            let on_worker =
                matches!(state, TaskState::Running | TaskState::RunningInRayGet | TaskState::PendingActorTaskArgsFetch)
                    || r.begin_due;
            if t.kind == TaskType::ActorTask {
                ensure!(
                    v,
                    act == on_worker as u32,
                    "actor call {id:x} ({state}) is in its actor's running set {act} times"
                );
            }
            if state.is_running() {
                let pending = r
                    .exec
                    .futures
                    .iter()
                    .filter(|f| {
                        m.objects.get(f).is_some_and(|o| matches!(o.status, ObjectStatus::Pending | ObjectStatus::Lost))
                    })
                    .count() as u32;
                ensure!(
                    v,
                    r.exec.unresolved == pending,
                    "task {id:x} counts {} unresolved futures, {pending} are pending",
                    r.exec.unresolved
                );
            } else if state != TaskState::PendingArgsAvail {
                ensure!(v, r.exec.futures.is_empty() && r.exec.unresolved == 0, "task {id:x} {state} holds futures");
            }
            if t.holds_resources {
                ensure!(
                    v,
                    t.node.get().is_some_and(|n| m.nodes()[n.index()].is_alive()),
                    "task {id:x} holds resources on dead node {:?}",
                    t.node
                );
            }
        }
    }

    pub(super) fn actors(&self, v: &mut Violations) {
        let m = &self.e.model;
        let mut placed: FxHashMap<ActorId, u32> = FxHashMap::default();
        for (i, list) in self.e.actor_manager.by_node().enumerate() {
            for aid in list {
                bump(&mut placed, *aid);
                let ok = m
                    .actors()
                    .get(aid)
                    .is_some_and(|a| a.state() == ActorState::Alive && a.node == Some(NodeIdx(i as u32)));
                ensure!(v, ok, "node {i} lists actor {:x}, which is not alive there", aid.0);
            }
        }
        for a in m.actors().values() {
            let id = a.id.0;
            let on = count(&placed, &a.id);
            let creating = m
                .tasks
                .get(&a.creation_task)
                .is_some_and(|t| t.kind == TaskType::ActorCreationTask && t.actor.get() == Some(a.id));
            match a.state() {
                ActorState::Alive => {
                    ensure!(
                        v,
                        on == 1 && !creating,
                        "alive actor {id:x}: placed {on} times, creation task live {creating}"
                    );
                    ensure!(
                        v,
                        a.queue.is_empty() || a.running.len() as u32 >= a.max_concurrency,
                        "alive actor {id:x} has free slots and queued calls"
                    );
                }
                ActorState::PendingCreation | ActorState::Restarting => {
                    ensure!(
                        v,
                        creating && on == 0,
                        "actor {id:x} {} without a live creation task (placed {on})",
                        a.state()
                    );
                }
                ActorState::Dead => {
                    ensure!(
                        v,
                        a.queue.is_empty() && a.running.is_empty() && on == 0,
                        "dead actor {id:x} still has calls or a place"
                    );
                }
                ActorState::DependenciesUnready => v.push(format!("actor {id:x} at rest in DEPENDENCIES_UNREADY")),
            }
            ensure!(
                v,
                a.running.len() as u32 <= a.max_concurrency,
                "actor {id:x} runs {} calls, max {}",
                a.running.len(),
                a.max_concurrency
            );
            ensure!(
                v,
                a.running.is_empty() || a.state() == ActorState::Alive,
                "actor {id:x} runs calls while {}",
                a.state()
            );
        }
    }

    pub(super) fn pgs(&self, v: &mut Violations) {
        let m = &self.e.model;
        let mut pending: FxHashMap<PgId, u32> = FxHashMap::default();
        for id in self.e.pg_manager.pending() {
            bump(&mut pending, *id);
        }
        for pg in m.pgs().values() {
            let p = count(&pending, &pg.id);
            let unplaced = pg.bundles.iter().any(|b| b.node.is_none());
            match pg.state() {
                PgState::Removed => {
                    ensure!(
                        v,
                        p == 0 && !self.e.queues.bundle_waiters().any(|(g, _)| *g == pg.id),
                        "removed group {} is still pending or waited on",
                        pg.id.0
                    );
                }
                PgState::Pending | PgState::Rescheduling => {
                    ensure!(
                        v,
                        unplaced && p == 1,
                        "group {} {}: unplaced {unplaced}, in the pending list {p} times",
                        pg.id.0,
                        pg.state()
                    );
                }
                PgState::Created => {
                    ensure!(v, !unplaced && p == 0, "created group {} has unplaced bundles or is pending", pg.id.0)
                }
                // Placed, its commit due (`placement_group_commit_latency`).
                PgState::Prepared => {
                    ensure!(v, !unplaced && p == 0, "prepared group {} has unplaced bundles or is pending", pg.id.0)
                }
            }
        }
        for id in pending.keys() {
            ensure!(v, m.pgs().contains_key(id), "pending list names unknown group {}", id.0);
        }
    }

    pub(super) fn jobs(&self, v: &mut Violations) {
        let m = &self.e.model;
        let live = m.jobs().values().filter(|j| !j.status().is_terminal()).count();
        ensure!(v, live == self.e.jobs.live(), "live jobs {} but {live} jobs are not terminal", self.e.jobs.live());
        let ended = |job: JobId| m.jobs().get(&job).is_none_or(|j| j.status().is_terminal());
        for j in m.jobs().values().filter(|j| !j.status().is_terminal()) {
            let ok = m.tasks.get(&j.driver).is_some_and(|t| t.kind == TaskType::DriverTask);
            ensure!(v, ok, "running job {} has no live driver", j.id.hex());
        }
        for t in m.tasks.values() {
            ensure!(v, !ended(t.job), "task {:x} ({}) lives on after its job {} ended", t.id.0, t.state(), t.job.hex());
        }
        for a in m.actors().values().filter(|a| a.state() != ActorState::Dead) {
            ensure!(v, !ended(a.job), "actor {:x} ({}) outlives its job {}", a.id.0, a.state(), a.job.hex());
        }
        for pg in m.pgs().values().filter(|p| p.state() != PgState::Removed) {
            ensure!(v, !ended(pg.job), "group {} outlives its job {}", pg.id.0, pg.job.hex());
        }
    }
}
