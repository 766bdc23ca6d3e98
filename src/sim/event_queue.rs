//! The engine's event queue: a radix heap keyed by virtual time, first in first out
//! among equal times.
//!
//! Owns: the order in which scheduled events come out: by time, and events due at the
//! same time in the order they were pushed. Must never: reorder events with equal times
//! or lose one.
//!
//! A discrete-event simulation only ever schedules at or after the event it is handling,
//! so times come out in non-decreasing order and every new time is at least the last one
//! taken out. A radix heap uses exactly that: an entry sits in the bucket named by the
//! highest bit in which its time differs from the last time taken, pushes are appends,
//! and a pop only splits one bucket into lower ones, each entry moving at most once per
//! bit. At scale.yaml size (tens of thousands of events in flight, millions in all) that
//! is a fraction of the cache misses of a binary heap's sift-down through a cold array.
//!
//! Ties need no sequence number: entries with equal times always share a bucket (the
//! bucket is a function of the time and the last time taken), every bucket keeps push
//! order when it is appended to and when it is split, and entries due at the last time
//! taken wait in `due` in push order. So the order is (time, push order), what a binary
//! heap keyed by (time, sequence number) gives, with half the key and far fewer moves
//! when many events share an instant.
//!
//! A bucket is split only when `due` is empty and someone asks what is next (`peek_time`
//! or `pop`), never right after a pop: the handler of the event just taken schedules at
//! or after its time, which is still `last`, so its pushes are appends. A time below
//! `last` (a control request between a peek and the pop) is still placed correctly, by
//! re-bucketing everything: slower, never wrong.

use std::collections::VecDeque;

/// Bucket `b` (1..=64) holds times whose highest bit differing from `last` is bit b−1.
const BUCKETS: usize = 65;

/// The most entries [`EventQueue::likely_next`] searches in a bucket.
const LOOK_AHEAD: usize = 8;

pub(crate) struct EventQueue<E> {
    /// The time the buckets are relative to: the last time moved into `due`.
    last: u64,
    /// Entries due at `last`, in push order.
    due: VecDeque<(u64, E)>,
    /// Entries after `last`, by bucket (index 0 unused), each in push order among equal
    /// times. Appended to and drained whole, never taken from the front.
    buckets: Vec<Vec<(u64, E)>>,
    len: usize,
    /// Bit `b` set: bucket `b` may hold entries (clear: it is empty), so the first
    /// non-empty bucket is found with one instruction, not a scan of all 64.
    occupied: u128,
}

impl<E> EventQueue<E> {
    pub(crate) fn new() -> Self {
        EventQueue {
            last: 0,
            due: VecDeque::new(),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            len: 0,
            occupied: 0,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn bucket(&self, time: u64) -> usize {
        (64 - (time ^ self.last).leading_zeros()) as usize
    }

    /// Add an event due at `time`, after every event already due at that time.
    pub(crate) fn push(&mut self, time: u64, event: E) {
        if time < self.last {
            self.rebase(time);
        }
        self.len += 1;
        self.place(time, event);
    }

    /// Put an entry after every entry of its time: in `due`, or at the back of its bucket.
    #[inline]
    fn place(&mut self, time: u64, event: E) {
        if time == self.last {
            self.due.push_back((time, event));
        } else {
            let b = self.bucket(time);
            self.buckets[b].push((time, event));
            self.occupied |= 1 << b;
        }
    }

    /// Make `last` = `time` (below it), re-bucketing what is there. `due` goes first and
    /// each bucket is moved in order, and equal times share one, so push order among
    /// them holds.
    #[cold]
    fn rebase(&mut self, time: u64) {
        self.last = time;
        self.occupied = 0;
        let mut all: Vec<(u64, E)> = self.due.drain(..).collect();
        for b in &mut self.buckets {
            all.append(b);
        }
        for (t, e) in all {
            self.place(t, e);
        }
    }

    /// When nothing is due at `last`, move `last` to the earliest queued time by splitting
    /// the first non-empty bucket (nothing, when the queue is empty). Out of line, and
    /// called only when `due` is empty: each event's pop and peek look at `due` inline,
    /// where a call on every look was an instruction-cache miss at the function's entry
    /// (the largest share of its samples).
    #[inline(never)]
    fn refill(&mut self) {
        if self.occupied == 0 {
            return;
        }
        let i = self.occupied.trailing_zeros() as usize;
        let mut from = std::mem::take(&mut self.buckets[i]);
        self.occupied &= !(1 << i);
        self.last = from.iter().map(|(t, _)| *t).min().expect("an occupied bucket is not empty");
        for (t, e) in from.drain(..) {
            self.place(t, e);
        }
        // Keep the emptied bucket's allocation for its next entries.
        self.buckets[i] = from;
    }

    /// The time of the first entry.
    #[inline]
    pub(crate) fn peek_time(&mut self) -> Option<u64> {
        if self.due.is_empty() {
            self.refill();
        }
        self.due.front().map(|(t, _)| *t)
    }

    /// Take the first entry: (time, event).
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
        if self.due.is_empty() {
            self.refill();
        }
        let first = self.due.pop_front()?;
        self.len -= 1;
        Some(first)
    }

    /// The entry most likely to come out next, found without reordering anything: the
    /// first due one, else the earliest of the first non-empty bucket when that holds
    /// at most `LOOK_AHEAD` entries (a larger one is not searched). A guess only: what
    /// is pushed before the next pop may come out first.
    pub(crate) fn likely_next(&self) -> Option<&E> {
        if let Some((_, e)) = self.due.front() {
            return Some(e);
        }
        if self.occupied == 0 {
            return None;
        }
        let bucket = &self.buckets[self.occupied.trailing_zeros() as usize];
        if bucket.len() > LOOK_AHEAD {
            return None;
        }
        // The first of the earliest time: push order among equal times.
        bucket.iter().reduce(|a, b| if b.0 < a.0 { b } else { a }).map(|(_, e)| e)
    }

    /// Every pending event, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &E> {
        self.due.iter().chain(self.buckets.iter().flatten()).map(|(_, e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Events scheduled as the engine schedules them (at or after the one being handled,
    /// many at the same instant) come out exactly as from a binary heap ordered by
    /// (time, push sequence); so do the odd ones scheduled in the past.
    #[test]
    fn pops_in_the_order_of_a_binary_heap_and_the_likely_next_is_the_next_popped() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut q = EventQueue::new();
        let mut h = BinaryHeap::new();
        let (mut now, mut seq, mut guessed) = (0u64, 0u64, 0u64);
        for step in 0..300_000u64 {
            if rng.random_range(0..10) < 5 || h.is_empty() {
                for _ in 0..rng.random_range(1..4) {
                    let delay = match rng.random_range(0..4) {
                        0 => 0,
                        1 => rng.random_range(0..1_000),
                        2 => rng.random_range(0..10_000_000),
                        // Rare: before now (the queue must still order it).
                        _ if step % 997 == 0 => {
                            let t = now.saturating_sub(rng.random_range(0..1_000));
                            seq += 1;
                            q.push(t, step);
                            h.push(Reverse((t, seq, step)));
                            continue;
                        }
                        _ => rng.random_range(0..100),
                    };
                    seq += 1;
                    q.push(now + delay, step);
                    h.push(Reverse((now + delay, seq, step)));
                }
            }
            assert_eq!(q.peek_time(), h.peek().map(|Reverse(x)| x.0));
            if step % 13 == 0 {
                // Between a peek and the pop (a control request): due now, before the
                // time just peeked.
                seq += 1;
                q.push(now, step);
                h.push(Reverse((now, seq, step)));
            }
            let guess = q.likely_next().copied();
            let a = q.pop();
            let b = h.pop().map(|Reverse((t, _, e))| (t, e));
            assert_eq!(a, b);
            // Nothing was pushed since: a guess, when one is made, is what came out.
            if guess.is_some() {
                guessed += 1;
                assert_eq!(guess, a.map(|(_, e)| e));
            }
            if let Some((t, _)) = a {
                now = now.max(t);
            }
            assert_eq!(q.len(), h.len());
        }
        // A guess is made for most pops (most look at a small bucket or a due entry).
        assert!(guessed > 150_000, "only {guessed} of 300000 pops guessed");
        let mut rest: Vec<u64> = q.iter().copied().collect();
        let mut expected: Vec<u64> = h.iter().map(|Reverse(x)| x.2).collect();
        rest.sort();
        expected.sort();
        assert_eq!(rest, expected);
    }
}
