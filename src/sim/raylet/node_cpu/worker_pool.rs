//! A raylet's worker-start slots and the task-worker processes starting in them, as
//! Ray 2.60's worker pool runs them (its own debug log, read in order:
//! scripts/ray-calibration/worker_pool_log.py, runs/worker-pool-log.json).
//!
//! - Every lease request first asks the pool to prestart for the owner's backlog: as
//!   many processes as the fewer of the CPUs available and the backlog, less those idle
//!   or starting. A start beyond the free slots is dropped, not queued.
//! - A lease that finds no idle worker asks for one. Its request starts a process when a
//!   slot is free; else it waits, and starts one when a slot frees, if the lease is
//!   still waiting then.
//! - A process that registers serves the lease that has waited longest, whichever
//!   request started it; only then does its slot start the next waiting request.
//!
//! So two processes prestarted together, with more leases waiting than slots, leave
//! one process over: the first to register serves the oldest lease, its slot starts the
//! next lease's request, and the second prestarted process serves that lease before the
//! request's process is up. Ray ran one such spare in every run of a burst (1,000
//! no-ops on 4 CPUs, 12 producers on 6 CPUs). Here the processes registering at one
//! time register one after the other, in the order they were launched.
//!
//! Owns: when each slot frees and which process holds it, the processes starting that no
//! lease has yet. Must never: place work on the cores (`super` does, and says when a
//! start's work ends), or know of leases beyond the one asking.

use smallvec::SmallVec;

/// What starting a worker process costs: its CPU work, then how long until it answers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StartCost {
    pub cpu: u64,
    pub latency: u64,
}

/// The worker a normal task's lease gets ([`NodeCpus::task_lease_granted`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeaseWorker {
    /// When it can take the task.
    pub ready: u64,
    /// Whether the task is its first call (its reply comes late).
    pub first_call: bool,
    /// Worker processes the request launched (its own, and the prestarts it asked for).
    pub launched: u32,
}

/// What a normal task's lease asks of its node's worker pool
/// ([`NodeCpus::task_lease_granted`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PoolAsk {
    /// Tasks of its owner waiting behind it (Ray's lease request carries the count).
    pub backlog: u32,
    /// The node's whole CPUs available, this lease's included.
    pub available_cpus: u32,
    /// Whether the raylet prestarts for the backlog (Ray's `enable_worker_prestart`).
    pub prestart: bool,
    /// What a start costs there.
    pub cost: StartCost,
}

/// A process launched in a slot: when it registers, and its place in launch order
/// (registrations at one time go in that order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Launch {
    pub(super) up: u64,
    pub(super) seq: u32,
}

/// One of the raylet's start slots: when the start in it has done its work, and which
/// process that was (none before the first).
#[derive(Clone, Copy, Debug)]
struct Slot {
    free_at: u64,
    holder: Option<Launch>,
}

/// A node's start slots and the task-worker processes starting that no lease holds. The
/// default has no slots: a record made for work placed on a node after it died, whose
/// starts take no cores.
#[derive(Debug, Default)]
pub(super) struct StartSlots {
    slots: SmallVec<[Slot; 4]>,
    /// Processes started for task leases and not yet serving one, by launch order.
    unclaimed: SmallVec<[Launch; 4]>,
    launches: u32,
}

impl StartSlots {
    /// `count` slots (at least one), all free.
    pub(super) fn new(count: u32) -> Self {
        let slot = Slot { free_at: 0, holder: None };
        StartSlots { slots: (0..count.max(1)).map(|_| slot).collect(), unclaimed: SmallVec::new(), launches: 0 }
    }

    /// The slot the next start takes: the first to free, the earlier launch's at a tie.
    fn next(&self) -> Option<usize> {
        let key = |s: &Slot| (s.free_at, s.holder.map_or(0, |h| h.seq));
        (0..self.slots.len()).min_by_key(|&i| key(&self.slots[i]))
    }

    /// When the next start can begin if asked at `at`; None with no slots.
    pub(super) fn next_begins(&self, at: u64) -> Option<u64> {
        self.next().map(|i| at.max(self.slots[i].free_at))
    }

    /// Whether a slot is free at `at` (a prestart takes only those).
    pub(super) fn free_at(&self, at: u64) -> bool {
        self.next().is_some_and(|i| self.slots[i].free_at <= at)
    }

    /// A start took the next slot (if there is one): its work ends at `work_ends`, and it
    /// registers at `up`. Returns the launch.
    pub(super) fn launched(&mut self, work_ends: u64, up: u64) -> Launch {
        self.launches += 1;
        let launch = Launch { up, seq: self.launches };
        if let Some(i) = self.next() {
            self.slots[i] = Slot { free_at: work_ends, holder: Some(launch) };
        }
        launch
    }

    /// A task-worker process launched for no lease yet (a prestart, or a request whose
    /// lease another process may serve first).
    pub(super) fn starting(&mut self, launch: Launch) {
        self.unclaimed.push(launch);
    }

    /// Task-worker processes starting that no lease holds.
    pub(super) fn unclaimed(&self) -> u32 {
        self.unclaimed.len() as u32
    }

    /// Those registered by `floor` leave: they are idle workers now. Returns how many.
    pub(super) fn settle(&mut self, floor: u64) -> u32 {
        // Most leases find no process starting: `retain`'s code stays out of their path.
        if self.unclaimed.is_empty() {
            return 0;
        }
        let before = self.unclaimed.len();
        self.unclaimed.retain(|p| p.up > floor);
        (before - self.unclaimed.len()) as u32
    }

    /// The process that serves a lease asking at `at` before its own request would
    /// start one, if any: one up by then, or one that registers no later than the
    /// process whose registration frees the slot the request waits for. It is taken.
    pub(super) fn serves_before_a_start(&mut self, at: u64) -> Option<Launch> {
        let slot = self.next().map(|i| self.slots[i]);
        let by = match slot {
            Some(Slot { free_at, holder: Some(holder) }) if free_at > at => holder,
            _ => Launch { up: at, seq: u32::MAX },
        };
        let (i, _) = self.unclaimed.iter().enumerate().filter(|(_, p)| **p <= by).min_by_key(|(_, p)| **p)?;
        Some(self.unclaimed.remove(i))
    }

    /// The first of the unclaimed processes to register, taken (a request's own start
    /// is among them).
    pub(super) fn first_up(&mut self) -> Option<Launch> {
        let (i, _) = self.unclaimed.iter().enumerate().min_by_key(|(_, p)| **p)?;
        Some(self.unclaimed.remove(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_serves_before_its_slot_starts_the_next_request() {
        let mut slots = StartSlots::new(2);
        // Two prestarted together (work ends at 680, up at 682).
        for _ in 0..2 {
            let p = slots.launched(680, 682);
            slots.starting(p);
        }
        // The first lease: the first process registers as its slot frees, and serves it.
        assert_eq!(slots.serves_before_a_start(100).map(|p| p.seq), Some(1));
        // The second: that slot frees as the first registers, before the second does.
        assert_eq!(slots.serves_before_a_start(100), None, "its request starts a process");
        assert_eq!(slots.next_begins(100), Some(680));
        let third = slots.launched(1_280, 1_282);
        slots.starting(third);
        assert_eq!(slots.first_up().map(|p| p.seq), Some(2), "the second prestarted serves it");
        assert_eq!(slots.unclaimed(), 1, "the third is over");
    }

    #[test]
    fn a_process_up_by_the_request_serves_it_and_settles_as_idle_by_the_floor() {
        let mut slots = StartSlots::new(1);
        let p = slots.launched(400, 402);
        slots.starting(p);
        assert_eq!(slots.settle(401), 0);
        assert_eq!(slots.serves_before_a_start(500).map(|p| p.up), Some(402));
        let q = slots.launched(900, 902);
        slots.starting(q);
        assert_eq!(slots.settle(902), 1, "registered by the floor: an idle worker now");
        assert_eq!(slots.unclaimed(), 0);
    }
}
