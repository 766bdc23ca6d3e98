//! The clock and the event queue: virtual time and what happens next.
//!
//! Owns: virtual time now (µs), the queue of scheduled events, the sequence number that
//! orders events scheduled for the same instant (insertion order, so the same config
//! and seed always produce the same event log), and the count of events run. Must
//! never: read wall-clock time, run an event (the engine's handlers do), or move time
//! backwards: an event scheduled in the past runs now.

use super::engine::Event;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

struct Scheduled {
    time: u64,
    seq: u64,
    event: Event,
}

// Ordered by (time, seq) only: seq is unique, so the event itself never decides.
impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(o.time, o.seq))
    }
}

#[derive(Default)]
pub(crate) struct Clock {
    /// Virtual time now, in µs.
    pub(crate) now: u64,
    queue: BinaryHeap<Reverse<Scheduled>>,
    seq: u64,
    events_processed: u64,
}

impl Clock {
    /// Schedule `event` at `time` (or now, if that has passed).
    pub(crate) fn schedule_at(&mut self, time: u64, event: Event) {
        self.seq += 1;
        self.queue.push(Reverse(Scheduled { time: time.max(self.now), seq: self.seq, event }));
    }

    /// Time of the next event, if any.
    pub(crate) fn next_time(&self) -> Option<u64> {
        self.queue.peek().map(|Reverse(s)| s.time)
    }

    /// Take the next event if it is due at or before `until`, moving time to it.
    pub(crate) fn pop_due(&mut self, until: u64) -> Option<Event> {
        if self.next_time()? > until {
            return None;
        }
        let Reverse(s) = self.queue.pop()?;
        self.now = s.time;
        self.events_processed += 1;
        Some(s.event)
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
        self.queue.iter().map(|Reverse(s)| &s.event)
    }
}
