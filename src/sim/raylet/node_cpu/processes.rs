//! A node's worker processes as its cores see them: which worker a lease gets and when
//! (an idle one, one already starting, or a start of its own, the raylet prestarting for
//! the backlog first), the starts' CPU work in the raylet's start slots, and the actors'
//! processes from their creation to their exit.
//!
//! Owns: every change to a node record's process fields (task workers idle, fresh and
//! leased, leases awaiting a start, live processes, each actor's first-work window) but
//! a node's joining and death (`super`). Must never: decide which lease a starting
//! process serves (the start slots do, [`super::worker_pool`]), or place work but a
//! start's.

use super::worker_pool::{self, LeaseWorker, PoolAsk, StartCost};
use super::{NodeCpu, NodeCpus, Slicing};
use crate::model::{ActorId, NodeIdx};

impl NodeCpus {
    /// A normal task's lease on `n` reaches its raylet at `at`: which worker runs it, and
    /// when. First the raylet prestarts for `backlog` more tasks of its owner waiting
    /// behind it, up to `available_cpus` (the node's, this lease's included) less the
    /// workers idle or starting, in free start slots only (`prestart`). Then an idle
    /// worker that has run a call before goes first (Ray's pool hands out its most
    /// recently used), else an idle fresh one; with none, a process already starting
    /// serves it or its request starts one ([`worker_pool`]).
    pub(crate) fn task_lease_granted(&mut self, n: NodeIdx, at: u64, pool: PoolAsk) -> LeaseWorker {
        let floor = self.floor;
        let Some(node) = self.node_mut(n) else { return LeaseWorker { ready: at, first_call: false, launched: 0 } };
        node.settle_starts(floor);
        let idle = node.idle_task_workers();
        // The starts this lease asks for run beside the workers busy now, not beside it.
        let busy = node.busy_task_workers(at);
        let mut launched = 0;
        if pool.prestart && pool.cost.cpu > 0 {
            let wanted = pool.available_cpus.min(pool.backlog);
            let mut usable = idle + node.starts.unclaimed();
            while usable < wanted && self.node(n).is_some_and(|node| node.starts.free_at(at)) {
                let launch = self.launch(n, at, pool.cost, busy).expect("the node has a record");
                self.node_mut(n).expect("made above").starts.starting(launch);
                launched += 1;
                usable += 1;
            }
        }
        let node = self.node_mut(n).expect("made above");
        node.task_leases += 1;
        if idle > 0 {
            let first_call = node.take_idle_worker(idle);
            return LeaseWorker { ready: at, first_call, launched };
        }
        node.task_workers += 1;
        if let Some(early) = node.starts.serves_before_a_start(at) {
            node.awaits_start(at, early.up);
            return LeaseWorker { ready: at.max(early.up), first_call: true, launched };
        }
        let own = self.launch(n, at, pool.cost, busy).expect("the node has a record");
        let node = self.node_mut(n).expect("made above");
        node.starts.starting(own);
        let first = node.starts.first_up().expect("its own start is there");
        node.awaits_start(at, first.up);
        LeaseWorker { ready: at.max(first.up), first_call: true, launched: launched + 1 }
    }

    /// An actor's creation leased on `n` takes an idle task worker's process, if there
    /// is one (true): it needs no start. Ray pops actors' workers from the same pool.
    pub(crate) fn actor_takes_idle_worker(&mut self, n: NodeIdx) -> bool {
        let floor = self.floor;
        let Some(node) = self.existing_mut(n) else { return false };
        node.settle_starts(floor);
        let idle = node.idle_task_workers();
        if idle == 0 {
            return false;
        }
        node.take_idle_worker(idle);
        node.task_workers -= 1;
        true
    }

    /// A normal task's lease on `n` is back: its worker is idle for the next one.
    pub(crate) fn task_lease_returned(&mut self, n: NodeIdx) {
        if let Some(node) = self.existing_mut(n) {
            node.task_leases = node.task_leases.saturating_sub(1);
        }
    }

    /// `actor`'s process on `n` began its creation at `now`: it answers no call before
    /// `answers_from`.
    pub(crate) fn actor_up(&mut self, n: NodeIdx, actor: ActorId, now: u64, answers_from: u64) {
        if let Some(node) = self.node_mut(n) {
            node.fresh_actors.insert(actor, answers_from);
            node.last_actor_up = Some(now);
        }
    }

    /// When an actor's creation last began on `n`, if one has since it joined.
    pub(crate) fn last_actor_up(&self, n: NodeIdx) -> Option<u64> {
        self.node(n).and_then(|node| node.last_actor_up)
    }

    /// A call to `actor` on `n` starts at `now`: the earliest it may begin (`now` once
    /// the actor's first-work window is over, which is then forgotten).
    pub(crate) fn actor_answers_from(&mut self, n: NodeIdx, actor: ActorId, now: u64) -> u64 {
        let Some(node) = self.existing_mut(n) else { return now };
        match node.fresh_actors.get(&actor) {
            Some(&from) if from > now => from,
            Some(_) => {
                node.fresh_actors.remove(&actor);
                now
            }
            None => now,
        }
    }

    /// `actor`'s worker process on `n` exited.
    pub(crate) fn process_exited(&mut self, n: NodeIdx, actor: ActorId) {
        if let Some(node) = self.existing_mut(n) {
            let had = node.processes > 0;
            node.processes = node.processes.saturating_sub(1);
            node.fresh_actors.remove(&actor);
            self.guests_exited(n, u32::from(had));
        }
    }

    /// Worker processes alive on `n` (actors' and the task workers' pool).
    pub(crate) fn processes(&self, n: NodeIdx) -> u32 {
        self.node(n).map_or(0, |node| node.processes)
    }

    /// A worker process starting on `n` at `now` for an actor: it waits for a start
    /// slot, then its `cpu` µs of work share the cores; it answers `latency` µs after that
    /// work ends (what a start waits on beside the CPU). Returns when it is up.
    pub(crate) fn start_worker(&mut self, n: NodeIdx, now: u64, cpu: u64, latency: u64) -> u64 {
        let busy = self.node(n).map_or(0, |node| node.busy_task_workers(now));
        self.launch(n, now, StartCost { cpu, latency }, busy).map_or(now + cpu + latency, |launch| launch.up)
    }

    /// A worker process launched on `n` at `now` in the next start slot (None past the
    /// last node slot), beside `busy` task workers running calls there. A slot is held
    /// for the CPU work only: a start with none holds no slot and is up `latency` after
    /// `now`. The process counts as alive from its start's reservation, so the starts
    /// queued behind it pay for its idle share as Ray's later starts do.
    fn launch(&mut self, n: NodeIdx, now: u64, cost: StartCost, busy: u32) -> Option<worker_pool::Launch> {
        let node = self.node_mut(n)?;
        let begins = match (cost.cpu, node.starts.next_begins(now)) {
            (0, _) => None,
            // A dead node's record: no cores, no slots, no process to count.
            (cpu, None) => return Some(node.starts.launched(now + cpu, now + cpu + cost.latency)),
            (_, Some(begins)) => Some(begins),
        };
        node.processes += 1;
        self.guests_started(n, 1);
        let Some(begins) = begins else {
            return Some(self.node_mut(n).expect("made above").starts.launched(0, now + cost.latency));
        };
        // Ray renices a worker once it is up: its start runs at normal priority, time-sliced.
        // Like a driver's own work, it loses part of its core to each task worker busy
        // here: Ray's starts during a job took longer than those before it, the more so
        // the more workers ran (docs/benchmarks-history.md, "A start beside busy workers").
        let ends = self.run_on(n, now, begins, cost.cpu, Slicing::Sliced);
        let ends = self.slowed_by_busy_workers(begins, ends, busy);
        Some(self.node_mut(n).expect("made above").starts.launched(ends, ends + cost.latency))
    }
}

impl NodeCpu {
    /// The task-worker processes started for no lease that are up by `floor` join the
    /// idle ones, fresh.
    fn settle_starts(&mut self, floor: u64) {
        let up = self.starts.settle(floor);
        self.task_workers += up;
        self.fresh_workers += up;
        // Most leases find none awaiting a start: the list's code stays out of their path.
        if !self.leases_awaiting_start.is_empty() {
            self.leases_awaiting_start.retain(|up| *up > floor);
        }
    }

    /// A task lease granted at `at` waits for a process that comes up at `up`.
    fn awaits_start(&mut self, at: u64, up: u64) {
        if up > at {
            self.leases_awaiting_start.push(up);
        }
    }

    /// Task leases here whose worker is up at `now` and runs their call: those a start
    /// launched now loses part of its core to. A lease waiting for a process to come up
    /// is not busy yet.
    fn busy_task_workers(&self, now: u64) -> u32 {
        let waiting = self.leases_awaiting_start.iter().filter(|up| **up > now).count() as u32;
        self.task_leases.saturating_sub(waiting)
    }

    /// Task workers up here that no lease holds.
    pub(super) fn idle_task_workers(&self) -> u32 {
        self.task_workers.saturating_sub(self.task_leases)
    }

    /// One of `idle` idle task workers is taken: a warm one if any (false), else a
    /// fresh one (true).
    fn take_idle_worker(&mut self, idle: u32) -> bool {
        if idle > self.fresh_workers {
            return false;
        }
        self.fresh_workers -= 1;
        true
    }
}
