//! The clock and the event queue: virtual time and what happens next.
//!
//! Owns: virtual time now (µs), the queue of scheduled events (a radix heap,
//! `event_queue.rs`, which keeps events scheduled for the same instant in insertion
//! order, so the same config and seed always produce the same event log), and the count
//! of events run. Must
//! never: read wall-clock time, run an event (the engine's handlers do), or move time
//! backwards: an event scheduled in the past runs now.

use super::event_queue::EventQueue;
use crate::model::{NodeIdx, PgId, TaskId};

/// Something that happens at a virtual time.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Event {
    StartJob(usize),
    MixArrival(usize),
    /// A normal task's lease reached its owner after a worker start: it pushes the task
    /// to the worker.
    Push(TaskId, u32),
    /// A lease was granted: fetch arguments, then start. Carries the attempt it is for.
    Dispatch(TaskId, u32),
    ArgsFetched(TaskId, u32),
    /// What a getter's `ray.get` asked for is in its node's store now: it copies it out.
    Pulled(TaskId, u32),
    /// The worker begins running a call it was handed (after `call_start_cost`).
    Begin(TaskId, u32),
    /// A call's raised error is stored (after `task_error_cost`): it fails now.
    Raised(TaskId, u32),
    /// The current compute/sleep op of a running task finished.
    OpDone(TaskId, u32),
    /// The caller is done paying for the calls it just submitted (`call_submit_cost`).
    Resume(TaskId, u32),
    /// Resubmit a task (after a retry backoff).
    Resubmit(TaskId, u32),
    Fault(usize),
    FaultEnd(usize),
    NodeLaunched(u16),
    AutoscalerTick,
    /// The memory monitor's next look at a node (Ray checks every 250 ms).
    MemoryCheck(NodeIdx),
    /// A placed group's two-phase commit is done: it is CREATED.
    PgCommitted(PgId),
    /// The GCS's health checks of a crashed node reached their failure threshold.
    NodeDeathDetected(NodeIdx),
    /// The raylets' periodic look for leases waiting on resources (`gc_rounds.rs`).
    GcLook,
}

impl Event {
    /// The task this event is a step of, if it is one.
    pub(crate) fn task(&self) -> Option<TaskId> {
        match self {
            Event::Push(t, _)
            | Event::Dispatch(t, _)
            | Event::ArgsFetched(t, _)
            | Event::Pulled(t, _)
            | Event::Begin(t, _)
            | Event::Raised(t, _)
            | Event::OpDone(t, _)
            | Event::Resume(t, _)
            | Event::Resubmit(t, _) => Some(*t),
            _ => None,
        }
    }
}

pub(crate) struct Clock {
    /// Virtual time now, in µs.
    pub(crate) now: u64,
    /// Ordered by (time, insertion): the event itself never decides.
    queue: EventQueue<Event>,
    events_processed: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock { now: 0, queue: EventQueue::new(), events_processed: 0 }
    }
}

impl Clock {
    /// Schedule `event` at `time` (or now, if that has passed).
    pub(crate) fn schedule_at(&mut self, time: u64, event: Event) {
        self.queue.push(time.max(self.now), event);
    }

    /// Schedule `event` `delay` µs from now.
    pub(crate) fn schedule_in(&mut self, delay: u64, event: Event) {
        self.schedule_at(self.now + delay, event);
    }

    /// Time of the next event, if any.
    pub(crate) fn next_time(&mut self) -> Option<u64> {
        self.queue.peek_time()
    }

    /// Take the next event if it is due at or before `until`, moving time to it.
    pub(crate) fn pop_due(&mut self, until: u64) -> Option<Event> {
        if self.next_time()? > until {
            return None;
        }
        let (time, event) = self.queue.pop()?;
        self.now = time;
        self.events_processed += 1;
        Some(event)
    }

    /// The event most likely to be taken next, if one is cheap to find (a guess:
    /// events scheduled meanwhile may come first).
    pub(crate) fn likely_next(&self) -> Option<&Event> {
        self.queue.likely_next()
    }

    /// Nothing is due before `t`: time moves on to it.
    pub(crate) fn advance_to(&mut self, t: u64) {
        self.now = self.now.max(t);
    }

    pub(crate) fn events_processed(&self) -> u64 {
        self.events_processed
    }

    /// Every scheduled event, in no particular order (for the invariant checks).
    pub(crate) fn pending(&self) -> impl Iterator<Item = &Event> {
        self.queue.iter()
    }
}
