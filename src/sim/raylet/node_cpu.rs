//! The machine under each node: its physical cores, shared by the work Ray's own
//! processes do for a call (the owner's submit and push, the raylet's dispatch, the worker's
//! per-call overhead, a worker process's start).
//!
//! On real Ray these costs depend on load: 200 actors starting on a 2-core machine
//! take far longer than 200 times one start, because every worker process's start is
//! CPU work and the raylet starts at most `maximum_startup_concurrency` at a time
//! (BENCHMARKS.md, fidelity). So each cost is work on the node's cores rather than a
//! latency: a piece of work takes the core that comes free first, no sooner than it
//! arrives (first come, first served, not preempted), and ends its cost later. The
//! raylet is one thread: its dispatches also wait for each other. Each live worker
//! process also uses a little of a core while idle (`scheduler.idle_worker_cpu`), so a
//! node holding many actors does everything more slowly: the cores left to work on are
//! what those processes leave. A node's workload bodies (`task_duration`, sleeps) are
//! not CPU work here; only Ray's overheads are.
//!
//! Two kinds of work are not queued but time-sliced, as Linux shares a core among
//! runnable threads: a driver's own work (its Python: the submit loop) and a worker
//! process's start. Each runs as long as it takes with the other such work running
//! beside it, and never waits for a worker's work; the worker work placed after it
//! waits for it. Each also loses part of its core to each task worker busy on its node
//! when it is placed (`scheduler.driver_slowdown_per_busy_worker`): Ray's driver loop
//! waits runnable while reniced workers run (loop_wait.py), and its starts during a job
//! take longer than those before it.
//!
//! Ray renices each worker process once it is up (`scheduler.worker_niceness`). When
//! that is set above 0, work has two priorities ([`Priority`]): the raylet's and the
//! drivers' threads share the cores with the work above too, and a worker's work gets
//! the cores that work leaves. The renice comes 20–80 ms after a process registers, and
//! a process started for a lease is handed that call first: the call's start is normal
//! work, time-sliced like the starts beside it rather than queued behind them.
//!
//! Nodes may share one machine (`node_types[].on_head_machine`: several raylets on one
//! host, as `ray.cluster_utils.Cluster` runs them): a guest node's work then takes the
//! head's cores, and its worker processes' idle share loads them too. Its raylet, its
//! processes' threads and its worker-start slots stay its own.
//!
//! Owns: each live node's cores (when each comes free), its raylet's thread, its
//! processes' single threads (an async actor's event loop, an owner's io thread), its
//! worker-start slots and when an actor's creation last began there (which the raylet's
//! look reads: `gc_rounds.rs`). Must never: be read for anything but timing (the event log
//! sees only the times it gives), or change a node's resources.
//!
//! The worker processes' side (a lease's worker, starts, actors' processes) is in
//! `node_cpu/processes.rs`, the start slots in `node_cpu/worker_pool.rs`, the priorities
//! in `node_cpu/priority.rs`.

use crate::config::Config;
use crate::model::{ActorId, NodeIdx, TaskId};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

mod priority;
mod processes;
mod worker_pool;
use priority::NormalWork;
pub(crate) use priority::Priority;
use worker_pool::StartSlots;
pub(crate) use worker_pool::{PoolAsk, StartCost};

/// Every node's cores, by node slot.
pub(crate) struct NodeCpus {
    /// A live node's record, boxed: it holds the cores inline, and a dead node's slot
    /// (one of up to 1,000 cached) keeps only the pointer. An empty slot reads as a
    /// record with nothing on it, and becomes one when work is placed there.
    nodes: Vec<Option<Box<NodeCpu>>>,
    /// The scheduler's settings, alike on every node: kept once here, so a node slot (a
    /// dead node's kept for the views included) stays small.
    settings: CpuSettings,
    /// No work placed from now on arrives before this time: the virtual time of the
    /// event the engine is handling ([`NodeCpus::time_is`]). A core free by then is as
    /// free as any other ([`NodeCpu::run_as_is`]).
    floor: u64,
}

/// What every node's cores are run by: the scheduler's settings, not a node type's.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CpuSettings {
    /// The share of a core each live worker process uses while idle.
    pub idle_cpu: f64,
    /// Whether worker processes run at a lower priority (`worker_niceness` above 0).
    pub reniced_workers: bool,
    /// The part of a core a driver's own work loses to each busy task worker.
    pub driver_slowdown: f64,
}

impl CpuSettings {
    /// Those of `cfg`'s scheduler.
    pub(crate) fn of(cfg: &Config) -> Self {
        let s = &cfg.scheduler;
        CpuSettings {
            idle_cpu: s.idle_worker_cpu,
            reniced_workers: s.worker_niceness > 0,
            driver_slowdown: s.driver_slowdown_per_busy_worker,
        }
    }

    /// How a thread's piece at `priority` is placed: where workers are reniced, the
    /// raylet's and the drivers' threads are time-sliced with the rest of normal work;
    /// else they queue with the workers' work.
    fn slicing_at(&self, priority: Priority) -> Slicing {
        if self.reniced_workers && priority == Priority::Normal {
            Slicing::Sliced
        } else {
            Slicing::Queued
        }
    }
}

#[derive(Default)]
struct NodeCpu {
    /// When each core comes free (µs), in no order; empty in a record made for an empty
    /// slot (work placed on a node after it died). All work is charged here, so the
    /// worker processes' work waits for everything placed before it. Held in the record
    /// (up to 16 cores), not behind a pointer: every piece of work reads it, and the
    /// record is brought into cache ahead of the event (`cache_ahead.rs`), where a
    /// heap's buffer was a cache miss each time.
    cores: SmallVec<[u64; 16]>,
    /// The time-sliced work placed here and not over by now, as stretches of busy time
    /// (a driver's own work, the starts, and at `worker_niceness` above 0 every piece
    /// at normal priority): it shares the cores among itself. Boxed when first used.
    shared: Option<Box<NormalWork>>,
    /// When the raylet's thread comes free.
    raylet_free: u64,
    /// When each of a process's single threads ([`Thread`]) comes free; an entry in the
    /// past is as good as none, so those are dropped as the map grows.
    threads: FxHashMap<Thread, u64>,
    /// Actors up here whose process answers no call before a time (its first work's
    /// `scheduler.worker_first_call_latency`), until a call starts after it.
    fresh_actors: FxHashMap<ActorId, u64>,
    /// The raylet's worker-start slots, and the task-worker processes starting there
    /// that no lease holds yet.
    starts: StartSlots,
    /// When an actor's creation last began its run here, which the raylet's look reads
    /// as progress for a while (`gc_rounds.rs`).
    last_actor_up: Option<u64>,
    /// Worker processes alive here (actors' own and the task workers' pool), and the
    /// core each uses while idle.
    processes: u32,
    /// The node whose machine (cores) this one runs on, when not its own.
    machine: Option<NodeIdx>,
    /// Worker processes alive on the nodes that run on this one's machine: their idle
    /// share loads these cores too.
    guest_processes: u32,
    /// Normal tasks leased here now, and task workers started to run them (a pool
    /// that only grows while the node lives, less those an actor took: Ray keeps idle
    /// workers for reuse).
    task_leases: u32,
    task_workers: u32,
    /// Idle task workers that have not run a call yet (prestarted ones): their first
    /// call's reply comes late (`scheduler.worker_first_call_latency`).
    fresh_workers: u32,
    /// When the workers of the task leases served by a process still starting come up:
    /// those leases are not busy yet ([`NodeCpu::busy_task_workers`]). Entries up by the
    /// floor are dropped as leases are granted.
    leases_awaiting_start: SmallVec<[u64; 4]>,
}

/// However many idle processes a node holds, work still gets this share of its cores
/// (an overloaded machine crawls; it does not stop).
const MIN_SHARE: f64 = 0.05;

impl NodeCpus {
    /// No node yet; every node's cores run by `settings`.
    pub(crate) fn new(settings: CpuSettings) -> Self {
        NodeCpus { nodes: Vec::new(), settings, floor: 0 }
    }

    /// A node joined (or came back in a reused slot) with `cores` physical cores, room
    /// to start `startup_concurrency` worker processes at once, and `prestarted` idle
    /// task workers already up (Ray's raylet starts them for the first driver, before
    /// its first call).
    pub(crate) fn joined(&mut self, n: NodeIdx, machine: NodeMachine) {
        let NodeMachine { cores, startup_concurrency, prestarted, on } = machine;
        let on = on.filter(|&host| host != n);
        let i = n.index();
        if i >= self.nodes.len() {
            self.nodes.resize_with(i + 1, || None);
        }
        self.nodes[i] = Some(Box::new(NodeCpu {
            cores: smallvec::smallvec![0; cores.max(1) as usize],
            shared: None,
            raylet_free: 0,
            threads: FxHashMap::default(),
            fresh_actors: FxHashMap::default(),
            starts: StartSlots::new(startup_concurrency),
            last_actor_up: None,
            processes: prestarted,
            machine: on,
            guest_processes: 0,
            task_leases: 0,
            task_workers: prestarted,
            fresh_workers: prestarted,
            leases_awaiting_start: SmallVec::new(),
        }));
        self.guests_started(n, prestarted);
    }

    /// The node whose cores `n`'s work takes: its own, or its host's.
    #[inline]
    fn machine_of(&self, n: NodeIdx) -> NodeIdx {
        self.node(n).and_then(|node| node.machine).unwrap_or(n)
    }

    /// The record of the machine `n` runs on as a guest, if it has one (None: `n` runs
    /// on its own machine).
    fn host_of_guest(&mut self, n: NodeIdx) -> Option<&mut NodeCpu> {
        let host = self.machine_of(n);
        (host != n).then_some(())?;
        self.existing_mut(host)
    }

    /// `count` worker processes started on `n`: a guest's count on its host's machine too.
    fn guests_started(&mut self, n: NodeIdx, count: u32) {
        if let Some(h) = self.host_of_guest(n) {
            h.guest_processes += count;
        }
    }

    /// `count` worker processes on `n` exited (see [`Self::guests_started`]).
    fn guests_exited(&mut self, n: NodeIdx, count: u32) {
        if let Some(h) = self.host_of_guest(n) {
            h.guest_processes = h.guest_processes.saturating_sub(count);
        }
    }

    /// Virtual time has reached `now`: every piece of work placed from here on arrives
    /// at `now` or later. The engine says so before it handles each event.
    #[inline]
    pub(crate) fn time_is(&mut self, now: u64) {
        debug_assert!(now >= self.floor, "virtual time never goes back");
        self.floor = now;
    }

    /// `cost` of `n`'s work, placed `now` and arriving at `arrives`, on the cores of the
    /// machine `n` runs on ([`NodeCpu::run`]).
    fn run_on(&mut self, n: NodeIdx, now: u64, arrives: u64, cost: u64, slicing: Slicing) -> u64 {
        let settings = self.settings;
        let floor = self.floor;
        let host = self.machine_of(n);
        match self.node_mut(host) {
            Some(machine) => machine.run(&settings, floor, now, arrives, cost, slicing),
            None => arrives + cost,
        }
    }

    /// `n`'s record to change (an empty slot's made first), or None past the last slot.
    #[inline]
    fn node_mut(&mut self, n: NodeIdx) -> Option<&mut NodeCpu> {
        self.nodes.get_mut(n.index()).map(|slot| &mut **slot.get_or_insert_with(Box::default))
    }

    /// `n`'s record if it has one (an empty slot holds nothing: no processes, no queue).
    #[inline]
    fn node(&self, n: NodeIdx) -> Option<&NodeCpu> {
        self.nodes.get(n.index()).and_then(|slot| slot.as_deref())
    }

    /// `n`'s record to change if it has one: unlike [`Self::node_mut`], an empty slot
    /// stays empty (a count taken back, or a window forgotten, makes no record).
    #[inline]
    fn existing_mut(&mut self, n: NodeIdx) -> Option<&mut NodeCpu> {
        self.nodes.get_mut(n.index()).and_then(|slot| slot.as_deref_mut())
    }

    /// Bring `n`'s record into cache ahead of work placed there (`cache_hint`).
    #[inline]
    pub(crate) fn prefetch(&self, n: NodeIdx) {
        if let Some(node) = self.node(n) {
            crate::model::cache_hint::prefetch(node);
        }
    }

    /// A node died: what its heaps held goes.
    pub(crate) fn lost(&mut self, n: NodeIdx) {
        let processes = self.node(n).map_or(0, |node| node.processes);
        self.guests_exited(n, processes);
        if let Some(slot) = self.nodes.get_mut(n.index()) {
            *slot = None;
        }
    }

    /// `cost` µs of work by a process of `priority` arriving on `n` at `now`: when it
    /// ends. Zero work ends at once and takes no core. Normal work placed here is a
    /// driver's own: it is time-sliced, and slowed by the node's busy task workers.
    pub(crate) fn work(&mut self, n: NodeIdx, priority: Priority, now: u64, cost: u64) -> u64 {
        self.work_leasing(n, priority, now, cost, 0)
    }

    /// As [`NodeCpus::work`], for work that itself hands `leasing` normal tasks to this
    /// node as it starts (a submit loop's calls, whose leases are granted while it runs):
    /// each an idle task worker here will take is busy beside a driver's work from its
    /// start, as Ray's first task runs some 8 ms into a 58 ms loop of 1,000 calls
    /// (first_submit.py).
    pub(crate) fn work_leasing(&mut self, n: NodeIdx, priority: Priority, now: u64, cost: u64, leasing: u32) -> u64 {
        if cost == 0 {
            return now;
        }
        if self.node_mut(n).is_none() {
            return now + cost;
        }
        if priority == Priority::Worker {
            return self.run_on(n, now, now, cost, Slicing::Queued);
        }
        let end = self.run_on(n, now, now, cost, Slicing::Sliced);
        let node = self.node(n).expect("made above");
        let busy = node.task_leases + leasing.min(node.idle_task_workers());
        self.slowed_by_busy_workers(now, end, busy)
    }

    /// The end of normal-priority work that began at `from` and would end at `end`, once
    /// it has lost its part of a core to each of `busy` task workers busy beside it
    /// (`scheduler.driver_slowdown_per_busy_worker`): a nice-0 process waits runnable
    /// while the reniced workers run.
    fn slowed_by_busy_workers(&self, from: u64, end: u64, busy: u32) -> u64 {
        let slowdown = 1.0 + self.settings.driver_slowdown * f64::from(busy);
        from + crate::model::time::round_to_u64((end - from) as f64 * slowdown)
    }

    /// `cost` µs of work by the node's idle processes themselves (a GC round): it takes a
    /// core like any work, but is not stretched by their idle share, which is theirs.
    /// Returns when it ends.
    pub(crate) fn idle_processes_work(&mut self, n: NodeIdx, now: u64, cost: u64) -> u64 {
        if cost == 0 {
            return now;
        }
        let host = self.machine_of(n);
        let floor = self.floor;
        let Some(machine) = self.node_mut(host) else { return now + cost };
        machine.run_as_is(floor, now, cost)
    }

    /// Work of `n`'s raylet (one thread): it waits for the raylet's earlier work too.
    pub(crate) fn raylet_work(&mut self, n: NodeIdx, now: u64, cost: u64) -> u64 {
        if cost == 0 {
            return now;
        }
        let slicing = self.settings.slicing_at(Priority::Normal);
        let Some(node) = self.node_mut(n) else { return now + cost };
        let start = now.max(node.raylet_free);
        let end = self.run_on(n, now, start, cost, slicing);
        self.node_mut(n).expect("made above").raylet_free = end;
        end
    }

    /// Work of one `thread` of a process of `priority` on `n`, placed `now` and arriving at
    /// `at` (no sooner): it waits for that thread's earlier work too. Returns when it ends.
    pub(crate) fn thread_work(
        &mut self,
        n: NodeIdx,
        thread: Thread,
        priority: Priority,
        now: u64,
        at: u64,
        cost: u64,
    ) -> u64 {
        if cost == 0 {
            return at;
        }
        let slicing = self.settings.slicing_at(priority);
        let Some(node) = self.node_mut(n) else { return at + cost };
        if node.threads.len() >= 1024 {
            // Free by now, a thread holds back no work placed from now on; one free by
            // `at` only may still hold back work arriving before `at`.
            node.threads.retain(|_, free| *free > now);
        }
        let start = at.max(node.threads.get(&thread).copied().unwrap_or(0));
        let end = self.run_on(n, now, start, cost, slicing);
        self.node_mut(n).expect("made above").threads.insert(thread, end);
        end
    }
}

/// A process's one thread that serves its work in turn ([`NodeCpus::thread_work`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Thread {
    /// The event loop of an actor that runs calls concurrently: their per-call Python.
    ActorLoop(ActorId),
    /// The core worker's io thread of an owner (a driver or a task's worker, by the
    /// task it runs): it pushes each normal task the owner submitted to its leased
    /// worker and takes the reply.
    OwnerOfTask(TaskId),
    /// The same, of an actor's process (its calls submit as one owner).
    OwnerOfActor(ActorId),
}

/// How a piece of work takes a node's cores ([`NodeCpu::run`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slicing {
    /// First come, first served: it waits for the work placed before it.
    Queued,
    /// Time-sliced with the other such work running (Linux's share of a core).
    Sliced,
}

/// What a node is made of, for [`NodeCpus::joined`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeMachine {
    pub cores: u32,
    pub startup_concurrency: u32,
    pub prestarted: u32,
    /// The node whose machine this one shares (its cores), if not its own.
    pub on: Option<NodeIdx>,
}

impl NodeMachine {
    /// The head's (`None`) or a node type's machine under `cfg`: Ray's raylet starts as
    /// many workers at once as the fewer of its CPUs and cores. The head's also prestarts
    /// that many (no more than its whole CPUs) for the first driver: a raylet prestarts
    /// when a driver registers with it, and drivers run on the head. Another node's
    /// raylet prestarts none, on its own machine or on the head's (Ray 2.60 with
    /// `ray.cluster_utils.Cluster`: 2 idle workers on the head, none on the second node,
    /// 4 s after the first driver connected, 3 runs: scripts/ray-calibration/runs/
    /// prestart-nodes.json).
    pub(crate) fn of(cfg: &Config, node_type: Option<u16>) -> Self {
        let s = &cfg.scheduler;
        let (cpu, cores) = cfg.cluster.machine_of(node_type);
        let whole_cpus = cpu.floor() as u32;
        let startup_concurrency = s.maximum_startup_concurrency.unwrap_or(whole_cpus.min(cores).max(1));
        let drivers_here = node_type.is_none();
        let prestarted =
            if s.prestart_worker_first_driver && drivers_here { startup_concurrency.min(whole_cpus) } else { 0 };
        NodeMachine { cores, startup_concurrency, prestarted, on: None }
    }
}

impl NodeCpu {
    /// `cost`, stretched by the idle processes' share, placed at `now` and arriving at
    /// `arrives`. Every piece is charged to all the cores, so a queued piece waits for
    /// what came before it. A time-sliced piece instead shares the cores with the
    /// time-sliced work running when it arrives: it gets a whole core if one is left,
    /// else its share (Linux shares a core among equals; a long start does not hold a
    /// driver's loop back for its whole length). A piece is not slowed by sliced work
    /// that arrives after it, nor a queued piece placed before a sliced one pushed back
    /// by it: the queued work placed after is, by as much.
    fn run(&mut self, settings: &CpuSettings, floor: u64, now: u64, arrives: u64, cost: u64, slicing: Slicing) -> u64 {
        let cost = self.loaded(settings.idle_cpu, cost);
        let end = self.run_as_is(floor, arrives, cost);
        if slicing == Slicing::Queued {
            return end;
        }
        let cores = self.cores.len().max(1) as u64;
        let shared = self.shared.get_or_insert_with(Box::default);
        let running = shared.running_at(now, arrives);
        let stretched = if running < cores { cost } else { cost * (running + 1) / cores };
        shared.place(arrives, arrives + stretched)
    }

    /// `cost` on the core that comes free first, no sooner than it arrives. Cores free
    /// at the same time are alike: which of them is taken changes no time. So are cores
    /// free by `floor` (no piece placed from now on arrives before it): each starts any
    /// later piece on its arrival. The first such core is taken without a look at the
    /// rest: on a node whose cores are mostly free (Ray's overheads between long task
    /// bodies), the first core or the second.
    fn run_as_is(&mut self, floor: u64, arrives: u64, cost: u64) -> u64 {
        debug_assert!(arrives >= floor, "work arrives no sooner than virtual time now");
        let free = match self.cores.iter_mut().find(|free| **free <= floor) {
            Some(free) => free,
            None => match self.cores.iter_mut().min() {
                Some(free) => free,
                None => return arrives + cost,
            },
        };
        let end = arrives.max(*free) + cost;
        *free = end;
        end
    }
}

impl NodeCpu {
    /// `cost` stretched by what the idle processes take of the cores.
    fn loaded(&self, idle_cpu: f64, cost: u64) -> u64 {
        let processes = self.processes + self.guest_processes;
        if processes == 0 || idle_cpu <= 0.0 {
            return cost;
        }
        let cores = self.cores.len().max(1) as f64;
        let left = (cores - idle_cpu * processes as f64).max(cores * MIN_SHARE);
        crate::model::time::round_to_u64(cost as f64 * cores / left)
    }
}

#[cfg(test)]
mod tests;
