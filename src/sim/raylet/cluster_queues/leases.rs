//! Leases: a raylet granting one to a task, the owner pushing the task to the leased
//! worker, the owner keeping a finished task's lease for its next task of the same
//! scheduling key, and the lease going back.
//!
//! Owns: the steps of a lease's life and their timing (the raylet's, the owner's and
//! the worker's CPU work on the node's cores). Must never: queue or pick the task a
//! lease serves (the queues in `cluster_queues.rs` do), or change a node's resources
//! except through the node runtime.

use super::ClusterQueues;
use super::SchedulingClass;
use crate::model::*;
use crate::sim::clock::Event;
use crate::sim::follow::{Cx, Follow, Follows};
use crate::sim::raylet::node_cpu::{PoolAsk, Priority, StartCost, Thread};
use crate::sim::raylet::node_runtime::LocalResources;
use smallvec::smallvec;

impl ClusterQueues {
    /// A normal task finished on its lease. Ray's owner keeps the worker for its next
    /// queued task of the same scheduling key (same call, same arguments) while the lease
    /// is younger than `worker_lease_timeout`: the lease passes to the oldest task waiting
    /// in the class when that task has the same owner, with no raylet asked and no CPU
    /// freed. Otherwise the lease goes back ([`release_lease`]).
    pub(crate) fn reuse_or_release_lease(&mut self, cx: &mut Cx, done: TaskId) -> Follows {
        let worker_free = worker_cleans_up(cx, done);
        let Some(kept) = self.kept_lease(cx, done) else { return release_lease(cx, done) };
        let (node, next) = (kept.node, kept.next);
        self.pop(cx.model, kept.class);
        cx.raylets.lease_returned(node, done, cx.model);
        cx.raylets.lease_granted(node, next, cx.model);
        for (id, holds) in [(done, false), (next, true)] {
            if let Some(t) = cx.model.tasks.get_mut(&id) {
                t.node = Some(node).into();
                t.holds_resources = holds;
            }
        }
        if let Some(run) = cx.runs.get_mut(&next) {
            run.lease_expires_at = kept.expires_at;
        }
        let now = cx.now();
        cx.model.log.line(now, "scheduler").hex(next.0).text(" LEASED node=").dec(node.0.into()).text(" reused").end();
        // The next task runs once it is pushed and the worker is done with the last one.
        let pushed = owner_pushes(cx, next, now).max(worker_free);
        cx.clock.schedule_at(pushed, Event::Dispatch(next, kept.next_attempt));
        Follows::new()
    }

    /// The lease `done` finished on, if the oldest waiting task of its class may take it.
    fn kept_lease(&self, cx: &Cx, done: TaskId) -> Option<KeptLease> {
        let t = cx.model.tasks.get(&done)?;
        if t.kind != TaskType::NormalTask || !t.holds_resources || t.cpu_released || t.bundle.is_some() {
            return None;
        }
        let node = t.node.get()?;
        let expires_at = cx.runs.get(&done)?.lease_expires_at;
        if cx.now() >= expires_at || !cx.model.nodes()[node.index()].is_schedulable() {
            return None;
        }
        let same_key = |next: &Task| {
            next.kind == TaskType::NormalTask && next.bundle.is_none() && next.parent == t.parent && next.args == t.args
        };
        let class = cx.specs[t.spec as usize].class;
        [(class, None), (class, Some(node))].into_iter().find_map(|class| {
            let next = cx.model.tasks.get(self.by_class.get(&class)?.front()?).filter(|n| same_key(n))?;
            Some(KeptLease { class, node, expires_at, next: next.id, next_attempt: next.attempt })
        })
    }
}

/// A finished task's lease its owner keeps for the oldest waiting task of `class`.
struct KeptLease {
    class: SchedulingClass,
    node: NodeIdx,
    expires_at: u64,
    next: TaskId,
    next_attempt: u32,
}

/// Reserve resources on `node` and send the task there (the raylet grants the lease).
/// `freed` says the grant serves resources just freed there: a task whose owner sits on
/// another node learns of them at the node's next resource report, the CPUs held idle
/// meanwhile (Ray's raylets see each other's resources that late). `backlog`: tasks of
/// the same kind waiting behind it, which the raylet prestarts workers for; 0 for a
/// request granted from the queue, since Ray's raylet prestarts when a request arrives.
pub(crate) fn grant_lease(cx: &mut Cx, tid: TaskId, node: NodeIdx, freed: bool, backlog: u32) {
    let now = cx.now();
    let spec_id = cx.model.tasks[&tid].spec;
    let specs = cx.specs;
    cx.local_resources().reserve(node, &specs[spec_id as usize].request);
    cx.raylets.lease_granted(node, tid, cx.model);
    let report_period = cx.cfg.scheduler.resource_report_period.as_micros();
    let m = &mut *cx.model;
    let node_started = m.nodes()[node.index()].started_at;
    let t = m.tasks.get_mut(&tid).expect("task being granted exists");
    t.node = Some(node).into();
    t.holds_resources = true;
    let spilled = node != t.owner_node;
    let (kind, attempt, owner, ready_at) = (t.kind, t.attempt, t.owner_node, t.ready_at);
    let lease = cx.cfg.scheduler.lease_latency.as_micros();
    let mut delay = lease;
    if spilled {
        // The local raylet answers with another raylet's address; the owner asks again there.
        delay += lease;
        if freed {
            delay += next_report(now, node_started, report_period) - now;
        }
        m.counters.spillbacks += 1;
        m.node_stats_mut(owner, &crate::sim::raylet::STATS_KEY).spillbacks += 1;
    }
    // The granting raylet's own work, on its one thread and its node's cores.
    delay += cx.cpus.raylet_work(node, now, cx.cfg.scheduler.dispatch_cost.as_micros()) - now;
    let placement_ms = (now + delay - ready_at) as f64 / 1000.0;
    let hist = if kind == TaskType::ActorCreationTask { 1 } else { 0 };
    m.placement_ms[hist].observe(placement_ms);
    let granted = now + delay;
    let (event, at, push) = after_grant(cx, tid, attempt, kind, node, granted, backlog);
    if let Some(run) = cx.runs.get_mut(&tid) {
        run.lease_expires_at = at + push + cx.cfg.scheduler.worker_lease_timeout.as_micros();
    }
    let line = cx.model.log.line(now, "scheduler").hex(tid.0).text(" LEASED node=").dec(node.0.into());
    line.text(if spilled { " spillback" } else { "" }).end();
    cx.clock.schedule_at(at, event);
}

/// What follows a lease of task `tid` on `node` reaching its owner at `granted`: a worker
/// for it ([`worker_ready`], `backlog` tasks of its kind waiting behind it), then, for a
/// normal task, its owner's push. Returns the event to schedule, when, and the push
/// latency still to come after it (for `Event::Push`).
///
/// With an idle worker the push's io-thread work is placed now. After a worker start it
/// is a start away, and the work would hold a core idle until then (the cores serve work
/// in the order it is placed): it is placed then (`Event::Push`).
pub(crate) fn after_grant(
    cx: &mut Cx,
    tid: TaskId,
    attempt: u32,
    kind: TaskType,
    node: NodeIdx,
    granted: u64,
    backlog: u32,
) -> (Event, u64, u64) {
    let ready = worker_ready(cx, tid, kind, node, granted, backlog);
    match kind {
        TaskType::NormalTask if ready == granted => (Event::Dispatch(tid, attempt), owner_pushes(cx, tid, granted), 0),
        TaskType::NormalTask => (Event::Push(tid, attempt), ready, cx.cfg.scheduler.task_push_latency.as_micros()),
        _ => (Event::Dispatch(tid, attempt), ready, 0),
    }
}

/// The lease of normal task `tid` reached its owner after a worker start: the owner
/// pushes the task to the leased worker ([`owner_pushes`]), which then runs it
/// (`Event::Dispatch`).
pub(crate) fn push(cx: &mut Cx, tid: TaskId, attempt: u32) {
    if !cx.model.tasks.get(&tid).is_some_and(|t| crate::sim::raylet::task_run::leased_for(t, attempt)) {
        return;
    }
    let pushed = owner_pushes(cx, tid, cx.now());
    cx.clock.schedule_at(pushed, Event::Dispatch(tid, attempt));
}

/// The owner of normal task `tid` pushes it to its leased worker, from `at`: its io
/// thread's work (`owner_push_cost`, after that thread's earlier pushes), then the push
/// itself (`task_push_latency`). Returns when the task reaches the worker.
fn owner_pushes(cx: &mut Cx, tid: TaskId, at: u64) -> u64 {
    let s = &cx.cfg.scheduler;
    let (cost, latency) = (s.owner_push_cost.as_micros(), s.task_push_latency.as_micros());
    let Some(t) = cx.model.tasks.get(&tid) else { return at + latency };
    let owner_node = t.owner_node;
    // The owner is the process that submitted it: the parent's actor, or the parent's
    // worker (a driver is its job's root task).
    let parent = t.parent.get().and_then(|p| cx.model.tasks.get(&p));
    let thread = match (t.parent.get(), parent.and_then(|p| p.actor.get())) {
        (Some(_), Some(actor)) => Thread::OwnerOfActor(actor),
        (Some(p), None) => Thread::OwnerOfTask(p),
        (None, _) => Thread::OwnerOfTask(tid),
    };
    let priority = Priority::of_owner(t.parent.get(), parent);
    cx.cpus.thread_work(owner_node, thread, priority, cx.now(), at, cost) + latency
}

/// Normal task `done` replied: its worker's cleanup (`task_reply_cost`) is work on its
/// node's cores, which its owner does not wait for. Returns when the worker is free.
fn worker_cleans_up(cx: &mut Cx, done: TaskId) -> u64 {
    let now = cx.now();
    let cost = cx.cfg.scheduler.task_reply_cost.as_micros();
    let node = cx.model.tasks.get(&done).filter(|t| t.kind == TaskType::NormalTask).and_then(|t| t.node.get());
    node.map_or(now, |n| cx.cpus.work(n, Priority::Worker, now, cost))
}

/// The first report tick of a node started at `started`, every `period`, at or after `now`.
fn next_report(now: u64, started: u64, period: u64) -> u64 {
    if period == 0 || now <= started {
        return now;
    }
    let since = now - started;
    started + since.div_ceil(period) * period
}

/// When task `tid` leased on `node` at `at` has a worker to run on: an actor's creation
/// takes an idle task worker's process, else starts its own; a normal task gets one from
/// the node's worker pool (`NodeCpus::task_lease_granted`: an idle one, one already
/// starting, or a start of its own), the raylet prestarting for the `backlog` behind it
/// first where `scheduler.worker_prestart` says so. A start's CPU work shares the node's cores within the raylet's start slots. A
/// task worker's first call is marked (`Run::first_call`): Ray's reply to it comes
/// `worker_first_call_latency` late, the lease held meanwhile, and that is CPU work on
/// the node's cores after the body, so it waits behind the worker starts it shares them
/// with.
fn worker_ready(cx: &mut Cx, tid: TaskId, kind: TaskType, node: NodeIdx, at: u64, backlog: u32) -> u64 {
    let s = &cx.cfg.scheduler;
    let cost = StartCost { cpu: s.worker_start_cpu.as_micros(), latency: s.worker_start_latency.as_micros() };
    let (ready, launched, first_call) = match kind {
        TaskType::ActorCreationTask if cx.cpus.actor_takes_idle_worker(node) => (at, 0, false),
        TaskType::ActorCreationTask => (cx.cpus.start_worker(node, at, cost.cpu, cost.latency), 1, false),
        TaskType::NormalTask => {
            // The CPUs free matter only to a prestart: not looked up on the common path.
            let prestart = s.worker_prestart;
            let available_cpus = if prestart { available_cpus(cx, tid, node) } else { 0 };
            let ask = PoolAsk { backlog, available_cpus, prestart, cost };
            let worker = cx.cpus.task_lease_granted(node, at, ask);
            (worker.ready, worker.launched, worker.first_call)
        }
        _ => (at, 0, false),
    };
    if launched > 0 {
        cx.model.worker_processes_started(node, u64::from(launched));
    }
    if let Some(run) = cx.runs.get_mut(&tid) {
        run.first_call = first_call;
        run.unreniced = ready > at;
    }
    ready
}

/// The whole CPUs `node` has available to the lease of `tid` (granted, so its own are
/// counted back in), as Ray's raylet reads them when the request arrives.
fn available_cpus(cx: &Cx, tid: TaskId, node: NodeIdx) -> u32 {
    let own = cx.model.tasks.get(&tid).map_or(0, |t| cx.specs[t.spec as usize].request.get(ResourceId::CPU).0);
    let free = cx.model.nodes()[node.index()].available.get(ResourceId::CPU).0;
    ((free + own).max(0) / FixedPoint::from_units(1).0) as u32
}

/// Give a lease back (task finished, failed or moved); CPU lent during `ray.get` is not
/// returned twice. The freed resources go to the bundle or the node.
pub(crate) fn release_lease(cx: &mut Cx, tid: TaskId) -> Follows {
    let Some(t) = cx.model.tasks.get_mut(&tid) else { return Follows::new() };
    if !t.holds_resources {
        return Follows::new();
    }
    t.holds_resources = false;
    let Some(node) = t.node.get() else { return Follows::new() };
    let cpu_released = std::mem::take(&mut t.cpu_released);
    let (spec, bundle, kind) = (t.spec, t.bundle.get(), t.kind);
    cx.raylets.lease_returned(node, tid, cx.model);
    if kind == TaskType::NormalTask {
        cx.cpus.task_lease_returned(node);
    }
    let req = &cx.specs[spec as usize].request;
    if let Some((pg, b)) = bundle {
        return smallvec![Follow::ReturnToBundle(pg, b, req.clone())];
    }
    if !cx.model.nodes()[node.index()].is_alive() {
        return Follows::new();
    }
    LocalResources::of(cx.model, cx.sched).release_lease(node, req, cpu_released);
    if !cx.model.nodes()[node.index()].is_schedulable() {
        return Follows::new();
    }
    // What `ResourcesFreed` does for a live node, asked directly.
    smallvec![Follow::ResumeGetters(node)]
}
