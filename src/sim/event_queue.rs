//! The engine's event queue: a radix heap keyed by (virtual time, sequence number).
//!
//! Owns: the order in which scheduled events come out. Must never: reorder events with
//! equal keys (keys are unique: the sequence number breaks every tie) or lose one.
//!
//! A discrete-event simulation only ever schedules at or after the event it is handling,
//! so keys come out in non-decreasing order and every new key is at least the last one
//! taken out. A radix heap uses exactly that: an entry sits in the bucket named by the
//! highest bit in which its key differs from the last key taken, pushes are appends, and
//! a pop only splits one bucket into lower ones, each entry moving at most once per bit.
//! At scale.yaml size (tens of thousands of events in flight, millions in all) that is
//! a fraction of the cache misses of a binary heap's sift-down through a cold array.
//!
//! The smallest entry is held outside the buckets so `peek` needs no `&mut`; a key below
//! the last one taken out (never produced by the engine) is still placed correctly, by
//! re-bucketing everything: slower, never wrong.

/// Key bits: 64 of time, 64 of sequence number.
const BUCKETS: usize = 129;

pub(crate) struct EventQueue<E> {
    /// The smallest entry, if any.
    top: Option<(u128, E)>,
    /// The key the buckets are relative to: the last key moved out of them.
    last: u128,
    buckets: Vec<Vec<(u128, E)>>,
    /// Entries in `buckets`.
    in_buckets: usize,
}

#[inline]
fn key(time: u64, seq: u64) -> u128 {
    (u128::from(time) << 64) | u128::from(seq)
}

impl<E> EventQueue<E> {
    pub(crate) fn new() -> Self {
        EventQueue { top: None, last: 0, buckets: (0..BUCKETS).map(|_| Vec::new()).collect(), in_buckets: 0 }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.in_buckets + usize::from(self.top.is_some())
    }

    #[inline]
    fn bucket(&self, k: u128) -> usize {
        (128 - (k ^ self.last).leading_zeros()) as usize
    }

    /// Add an event due at `time`; `seq` must be unique (it orders equal times).
    pub(crate) fn push(&mut self, time: u64, seq: u64, event: E) {
        let k = key(time, seq);
        if self.top.as_ref().is_none_or(|(tk, _)| k < *tk) {
            if let Some(old) = self.top.replace((k, event)) {
                self.push_bucket(old);
            }
        } else {
            self.push_bucket((k, event));
        }
    }

    fn push_bucket(&mut self, entry: (u128, E)) {
        if entry.0 < self.last {
            self.rebase(entry.0);
        }
        let b = self.bucket(entry.0);
        self.buckets[b].push(entry);
        self.in_buckets += 1;
    }

    /// Make `last` = `k` (below it), re-bucketing what is there.
    #[cold]
    fn rebase(&mut self, k: u128) {
        self.last = k;
        let all: Vec<(u128, E)> = self.buckets.iter_mut().flat_map(|b| b.drain(..)).collect();
        for e in all {
            let b = self.bucket(e.0);
            self.buckets[b].push(e);
        }
    }

    /// The smallest key: (time, seq).
    pub(crate) fn peek_time(&self) -> Option<u64> {
        self.top.as_ref().map(|(k, _)| (*k >> 64) as u64)
    }

    /// Take the smallest entry: (time, event).
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
        let (k, e) = self.top.take()?;
        self.top = self.pop_bucket();
        Some(((k >> 64) as u64, e))
    }

    fn pop_bucket(&mut self) -> Option<(u128, E)> {
        if self.in_buckets == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            let i = self.buckets.iter().position(|b| !b.is_empty()).expect("a bucket holds an entry");
            let mut from = std::mem::take(&mut self.buckets[i]);
            self.last = from.iter().map(|(k, _)| *k).min().expect("bucket is not empty");
            for e in from.drain(..) {
                let b = self.bucket(e.0);
                self.buckets[b].push(e);
            }
            // Keep the emptied bucket's allocation for its next entries.
            self.buckets[i] = from;
        }
        self.in_buckets -= 1;
        self.buckets[0].pop()
    }

    /// Every pending event, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &E> {
        self.top.iter().chain(self.buckets.iter().flatten()).map(|(_, e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Events scheduled as the engine schedules them (at or after the one being handled,
    /// ties broken by sequence) come out exactly as from a binary heap ordered by
    /// (time, seq); so do the odd ones scheduled in the past.
    #[test]
    fn pops_in_the_order_of_a_binary_heap() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut q = EventQueue::new();
        let mut h = BinaryHeap::new();
        let (mut now, mut seq) = (0u64, 0u64);
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
                            q.push(t, seq, step);
                            h.push(Reverse((t, seq, step)));
                            continue;
                        }
                        _ => rng.random_range(0..100),
                    };
                    seq += 1;
                    q.push(now + delay, seq, step);
                    h.push(Reverse((now + delay, seq, step)));
                }
            }
            assert_eq!(q.peek_time(), h.peek().map(|Reverse(x)| x.0));
            let a = q.pop();
            let b = h.pop().map(|Reverse((t, _, e))| (t, e));
            assert_eq!(a, b);
            if let Some((t, _)) = a {
                now = now.max(t);
            }
            assert_eq!(q.len(), h.len());
        }
        let mut rest: Vec<u64> = q.iter().copied().collect();
        let mut expected: Vec<u64> = h.iter().map(|Reverse(x)| x.2).collect();
        rest.sort();
        expected.sort();
        assert_eq!(rest, expected);
    }
}
