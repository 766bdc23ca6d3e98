//! Ray's raylet's resource-deadlock check, and the GC rounds it sets off.
//!
//! Every `scheduler.debug_dump_period` Ray's raylet looks at its queue: leases waiting
//! for resources while none of its workers shows progress (Ray's
//! `IsAvailableForScheduling`: a worker up and holding a lease that is not an actor's
//! yet and not blocked in `ray.get`). From the second such look in a row it triggers a
//! global GC, and every worker process on the node and its drivers run Python's
//! `gc.collect()` (at most once per `scheduler.local_gc_min_interval`):
//! `scheduler.worker_gc_cpu` of work each, on the node's cores, not stretched by the
//! idle share (`node_cpu.rs`) those same processes take. A node whose last round still
//! works skips the next: the model's cores serve work in order, and rounds that pile up
//! would never drain.
//!
//! A default actor holds a CPU while it is created, so hundreds created at once keep
//! leases waiting for tens of seconds and pay rounds that grow with the actors already
//! up; `num_cpus=0` actors wait for nothing and pay none
//! (scripts/ray-calibration/gc_rounds.py). Ray's look sees a creation as progress from
//! its worker's registration to the creation's end, and skips a round then
//! (creation_window.py: 3-6 rounds for 200 default actors, not one every 10 s). The
//! model's creation ends as its worker comes up, so the look takes the window after the
//! creation's run begins instead (`scheduler.actor_creation_window`): the same share
//! of the looks' chances, and no creation waits for it.
//!
//! A waiting task's lease is taken to wait at its owner's raylet, where Ray's owner
//! asks first. The looks tick on one clock for every node, from time 0, and only while
//! some task waits.
//!
//! Owns: each node's looks in a row and its last GC, and whether a look is due. Must
//! never: place, run or fail a task; a round is CPU work on the node and nothing else.

use crate::model::{NodeIdx, TaskState, TaskType};
use crate::sim::clock::Event;
use crate::sim::follow::Cx;

#[derive(Default)]
pub(crate) struct GcRounds {
    /// A look is scheduled.
    due: bool,
    /// Per node slot: looks in a row that saw leases waiting and no worker progressing.
    warned: Vec<u32>,
    /// Per node slot: when its workers last ran a GC.
    last_gc: Vec<Option<u64>>,
    /// Per node slot: when the work of its last round ends.
    round_ends: Vec<u64>,
}

impl GcRounds {
    /// A task began waiting for resources: the next look is scheduled if none is.
    pub(crate) fn task_waits(&mut self, cx: &mut Cx) {
        let s = &cx.cfg.scheduler;
        let period = s.debug_dump_period.as_micros();
        if self.due || period == 0 || s.worker_gc_cpu.as_micros() == 0 {
            return;
        }
        self.due = true;
        cx.clock.schedule_at((cx.now() / period + 1) * period, Event::GcLook);
    }

    /// The raylets look (`waiting_by_owner`: how many tasks waiting for resources each
    /// node's processes own, by node slot): a node that has looked twice in a row runs a
    /// GC round; the next look is scheduled while any waits.
    pub(crate) fn look(&mut self, cx: &mut Cx, waiting_by_owner: &[u32]) {
        self.due = false;
        let slots = cx.model.nodes().len();
        let pending: Vec<bool> = (0..slots).map(|i| waiting_by_owner.get(i).is_some_and(|&n| n > 0)).collect();
        self.warned.resize(slots, 0);
        self.last_gc.resize(slots, None);
        self.round_ends.resize(slots, 0);
        let progress = progress_by_node(cx, &pending);
        let now = cx.now();
        let min_interval = cx.cfg.scheduler.local_gc_min_interval.as_micros();
        for i in 0..slots {
            let n = NodeIdx(i as u32);
            if !pending[i] || progress[i] || !cx.model.nodes()[i].is_schedulable() {
                self.warned[i] = 0;
                continue;
            }
            self.warned[i] += 1;
            // A node whose last round still works skips this one: the model's cores
            // serve work in order, so rounds piling up would never drain.
            let throttled = self.last_gc[i].is_some_and(|at| now < at + min_interval) || now < self.round_ends[i];
            if self.warned[i] < 2 || throttled {
                continue;
            }
            self.last_gc[i] = Some(now);
            self.round(cx, n);
        }
        if pending.contains(&true) {
            self.task_waits(cx);
        }
    }

    /// Node `n` lost its state (it died): its count starts again.
    pub(crate) fn lost(&mut self, n: NodeIdx) {
        if let Some(w) = self.warned.get_mut(n.index()) {
            *w = 0;
        }
        if let Some(at) = self.last_gc.get_mut(n.index()) {
            *at = None;
        }
        if let Some(end) = self.round_ends.get_mut(n.index()) {
            *end = 0;
        }
    }

    /// Every worker process on `n` and its drivers collect garbage.
    fn round(&mut self, cx: &mut Cx, n: NodeIdx) {
        let drivers = cx.model.jobs().values().filter(|j| j.end_time.is_none() && j.driver_node == n).count();
        let processes = cx.cpus.processes(n) + drivers as u32;
        let (now, cost) = (cx.now(), cx.cfg.scheduler.worker_gc_cpu.as_micros());
        for _ in 0..processes {
            let end = cx.cpus.idle_processes_work(n, now, cost);
            self.round_ends[n.index()] = self.round_ends[n.index()].max(end);
        }
        let line = cx.model.log.line(now, "raylet").text("node=").dec(n.0.into());
        line.text(" local GC processes=").dec(processes.into()).end();
    }
}

/// Which of the `pending` nodes show progress: a normal task's lease held by a worker
/// that is not blocked in `ray.get`, or an actor's creation whose worker is up (Ray marks
/// the worker an actor's once the creation is done), or one that began its run less
/// than `scheduler.actor_creation_window` ago.
fn progress_by_node(cx: &Cx, pending: &[bool]) -> Vec<bool> {
    let mut progress = vec![false; pending.len()];
    if !pending.contains(&true) {
        return progress;
    }
    let (now, window) = (cx.now(), cx.cfg.scheduler.actor_creation_window.as_micros());
    for (i, seen) in progress.iter_mut().enumerate() {
        *seen = pending[i] && cx.cpus.last_actor_up(NodeIdx(i as u32)).is_some_and(|at| now < at + window);
    }
    // Only the tasks leased on a node hold resources there (the invariants hold every
    // such task to one lease list): read those, not every live task.
    for (i, leased) in cx.raylets.leases().enumerate() {
        if !pending.get(i).copied().unwrap_or(false) {
            continue;
        }
        for t in leased.iter().filter_map(|tid| cx.model.tasks.get(tid)).filter(|t| t.holds_resources) {
            progress[i] |= match t.kind {
                TaskType::NormalTask => t.state() != TaskState::RunningInRayGet,
                TaskType::ActorCreationTask => t.state() != TaskState::PendingNodeAssignment,
                _ => false,
            };
        }
    }
    progress
}
