//! `IdTable`: the storage behind the live task and object tables, indexed by dense id.
//!
//! Owns: where a live record sits in memory and how it is found from its id (a large
//! reservation is faulted in ahead of use: `model/prefault.rs`).
//! Must never: decide anything about the records it holds, hand out ids, or grow with
//! the number of records ever inserted (only with the live ones).
//!
//! Task and object ids are handed out in sequence and most records die roughly in the
//! order they were born, so the live ones form a window of consecutive ids with holes.
//! The window is a ring of slots indexed by `id - base`: a lookup is a subtraction and a
//! bounds check, not a hash, and a slot holds the record itself (no per-entry bucket
//! overhead, no power-of-two rehash doubling at a million entries). Holes at the front
//! are dropped as they appear; a record that outlives everything around it (a driver, a
//! long-lived actor's creation task) would pin the window open, so before the window
//! grows past its capacity while holes outnumber live slots two to one, the oldest
//! records move to a small ordered map and the window moves on. Memory is therefore
//! O(peak live records), whatever the age of the oldest one.
//!
//! Only growth compacts, not removal: a window that is sparse but not growing costs no
//! memory it does not already hold, and a fan-out's reducers free their inputs all over
//! the window; compacting on removal moved hundreds of thousands of still-live map
//! outputs into the (slower) map as they did.
//!
//! The API is the subset of `HashMap`'s the engine uses (`get`, `get_mut`, `insert`,
//! `remove`, `contains_key`, `values`, `Index<&K>`), so call sites read as before;
//! iteration is in id order, which no caller relied on not having.

use super::prefault::prefaulted_vec;
use std::collections::{BTreeMap, VecDeque};

/// An id handed out in sequence (`TaskId`, `ObjectId`).
pub trait DenseId: Copy + Ord {
    fn dense(self) -> u64;
    fn from_dense(n: u64) -> Self;
}

/// Ids that are a `u64` counter already: the number is the dense id.
macro_rules! dense_u64_id {
    ($($id:ty),*) => {$(
        impl DenseId for $id {
            #[inline]
            fn dense(self) -> u64 {
                self.0
            }
            #[inline]
            fn from_dense(n: u64) -> Self {
                Self(n)
            }
        }
    )*};
}

dense_u64_id!(super::TaskId, super::ObjectId);

/// Slots beyond twice the live ones (plus this slack) are worth moving the window for.
const SLACK: usize = 1024;

pub struct IdTable<K, V> {
    /// Id of `window[0]`.
    base: u64,
    window: VecDeque<Option<V>>,
    /// Occupied slots in `window`.
    in_window: usize,
    /// Records older than `base`: the few that outlived their neighbours.
    old: BTreeMap<K, V>,
}

impl<K: DenseId, V> Default for IdTable<K, V> {
    fn default() -> Self {
        IdTable { base: 0, window: VecDeque::new(), in_window: 0, old: BTreeMap::new() }
    }
}

impl<K: DenseId, V> IdTable<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `n` more live records without reallocating the window. A large empty
    /// window's memory is faulted in beside the caller (`model/prefault.rs`).
    pub fn reserve(&mut self, n: usize) {
        if self.window.is_empty() && self.window.capacity() < n {
            // O(1), the same buffer: `From<Vec>` never reallocates.
            self.window = VecDeque::from(prefaulted_vec::<Option<V>>(n));
        } else {
            self.window.reserve(n);
        }
    }

    pub fn len(&self) -> usize {
        self.in_window + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    fn slot(&self, id: K) -> Option<usize> {
        let i = id.dense().checked_sub(self.base)?;
        (i < self.window.len() as u64).then_some(i as usize)
    }

    #[inline]
    pub fn get(&self, id: &K) -> Option<&V> {
        match self.slot(*id) {
            Some(i) => self.window[i].as_ref(),
            None if id.dense() < self.base => self.old.get(id),
            None => None,
        }
    }

    #[inline]
    pub fn get_mut(&mut self, id: &K) -> Option<&mut V> {
        match self.slot(*id) {
            Some(i) => self.window[i].as_mut(),
            None if id.dense() < self.base => self.old.get_mut(id),
            None => None,
        }
    }

    #[inline]
    pub fn contains_key(&self, id: &K) -> bool {
        self.get(id).is_some()
    }

    /// Insert or replace; returns the record it replaced.
    pub fn insert(&mut self, id: K, value: V) -> Option<V> {
        let k = id.dense();
        if self.window.is_empty() && k >= self.base {
            // Nothing to keep contiguous with: start the window at this id.
            self.base = k;
        }
        if k < self.base {
            return self.old.insert(id, value);
        }
        if (k - self.base) as usize >= self.window.capacity() {
            // The window would grow: first make room by moving stragglers out.
            self.compact();
            if k < self.base {
                return self.old.insert(id, value);
            }
            if self.window.is_empty() {
                self.base = k;
            }
        }
        let i = (k - self.base) as usize;
        if i >= self.window.len() {
            self.window.resize_with(i + 1, || None);
        }
        let prev = self.window[i].replace(value);
        if prev.is_none() {
            self.in_window += 1;
        }
        prev
    }

    pub fn remove(&mut self, id: &K) -> Option<V> {
        let Some(i) = self.slot(*id) else {
            return if id.dense() < self.base { self.old.remove(id) } else { None };
        };
        let prev = self.window[i].take();
        if prev.is_some() {
            self.in_window -= 1;
            self.drop_front_holes();
        }
        prev
    }

    /// When holes outnumber live slots two to one, move the oldest records to `old`
    /// until the window is just back under that bound. Moving only that far matters: a
    /// batch job's running wave sits right behind its finished tasks, and squeezing the
    /// window denser would move the whole wave into the (slower) map. Amortised O(1)
    /// per insert: each slot leaves the window once.
    fn compact(&mut self) {
        if self.window.len() > 2 * self.in_window + SLACK {
            while self.window.len() > 2 * self.in_window + SLACK / 2 {
                match self.window.pop_front() {
                    Some(Some(v)) => {
                        self.in_window -= 1;
                        self.old.insert(K::from_dense(self.base), v);
                    }
                    Some(None) => {}
                    None => break,
                }
                self.base += 1;
            }
        }
        self.drop_front_holes();
    }

    fn drop_front_holes(&mut self) {
        while let Some(None) = self.window.front() {
            self.window.pop_front();
            self.base += 1;
        }
    }

    /// Records in id order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.old.values().chain(self.window.iter().flatten())
    }

    /// Records in id order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.old.values_mut().chain(self.window.iter_mut().flatten())
    }

    /// Slots in the window, live or not (for the memory report and tests).
    pub fn window_len(&self) -> usize {
        self.window.len()
    }

    /// Slots the window holds memory for.
    pub fn window_capacity(&self) -> usize {
        self.window.capacity()
    }
}

impl<K: DenseId, V> std::ops::Index<&K> for IdTable<K, V> {
    type Output = V;
    #[track_caller]
    fn index(&self, id: &K) -> &V {
        self.get(id).expect("no record with this id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TaskId;
    use rand::{Rng, SeedableRng};

    /// Random inserts and removes, mostly of recent ids with some long-lived stragglers,
    /// give the same answers as an ordered map, in the same iteration order.
    #[test]
    fn behaves_like_an_ordered_map() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut t: IdTable<TaskId, u64> = IdTable::new();
        let mut m: BTreeMap<TaskId, u64> = BTreeMap::new();
        let mut next = 1u64;
        let mut peak = 0;
        for step in 0..200_000u64 {
            match rng.random_range(0..10) {
                0..=3 => {
                    let id = TaskId(next);
                    next += rng.random_range(1..3);
                    assert_eq!(t.insert(id, step), m.insert(id, step));
                }
                4 => {
                    // Re-insert an old id (a reconstructed object, a replaced record).
                    let id = TaskId(rng.random_range(0..next));
                    assert_eq!(t.insert(id, step), m.insert(id, step));
                }
                _ => {
                    // Remove, mostly among the newest ids; ids below 50 mostly live on.
                    let lo = next.saturating_sub(3_000).max(50);
                    let id = TaskId(rng.random_range(lo..next.max(lo + 1)));
                    assert_eq!(t.remove(&id), m.remove(&id));
                }
            }
            let probe = TaskId(rng.random_range(0..next + 5));
            assert_eq!(t.get(&probe), m.get(&probe));
            if let Some(v) = t.get_mut(&probe) {
                *v += 1;
                *m.get_mut(&probe).unwrap() += 1;
            }
            assert_eq!(t.len(), m.len());
            peak = peak.max(t.len());
        }
        assert!(t.values().eq(m.values()));
        for v in t.values_mut() {
            *v = 0;
        }
        assert!(t.values().all(|v| *v == 0));
        // Bounded by the live records at their peak, not by every id ever handed out.
        assert!(
            t.window_capacity() <= 4 * peak + 4 * SLACK,
            "window of {} for a peak of {peak} live",
            t.window_capacity()
        );
    }

    /// A batch job: one driver that lives throughout, tasks finishing roughly in id
    /// order (any of the oldest 1,000 live ones next). Removing moves nothing out of
    /// the window; the next wave reuses its memory, and only the driver leaves it.
    #[test]
    fn a_running_wave_stays_in_the_window() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut t: IdTable<TaskId, ()> = IdTable::new();
        t.insert(TaskId(1), ());
        let mut live: std::collections::VecDeque<u64> = (2..200_002).collect();
        for id in &live {
            t.insert(TaskId(*id), ());
        }
        let capacity = t.window_capacity();
        for wave in 0..2u64 {
            while !live.is_empty() {
                let i = rng.random_range(0..live.len().min(1_000));
                let id = live.remove(i).unwrap();
                assert!(t.remove(&TaskId(id)).is_some());
                assert!(t.old.len() <= wave as usize, "{} records moved out of the window", t.old.len());
            }
            assert_eq!(t.len(), 1);
            // The next wave: the driver moves out, the wave reuses the window's memory.
            live = (200_002 * (wave + 1)..200_002 * (wave + 2)).collect();
            for id in &live {
                t.insert(TaskId(*id), ());
            }
            assert_eq!(t.old.len(), 1, "only the driver left the window");
            assert_eq!(t.window_capacity(), capacity, "the window did not grow");
        }
        assert!(t.contains_key(&TaskId(1)));
    }

    /// A reservation big enough to be faulted in beside the caller holds what it is given
    /// while that runs, and keeps its capacity.
    #[test]
    fn a_large_reservation_is_an_ordinary_window() {
        let mut t: IdTable<TaskId, u64> = IdTable::new();
        t.reserve(1 << 20);
        assert!(std::mem::size_of::<Option<u64>>() << 20 >= crate::model::prefault::PREFAULT_MIN_BYTES);
        let capacity = t.window_capacity();
        assert!(capacity >= 1 << 20);
        for i in 0..(1u64 << 20) {
            t.insert(TaskId(i), i * 3);
        }
        assert!((0..(1u64 << 20)).all(|i| t.get(&TaskId(i)) == Some(&(i * 3))));
        assert_eq!(t.window_capacity(), capacity, "filled without reallocating");
    }

    #[test]
    fn a_straggler_does_not_pin_the_window() {
        let mut t: IdTable<TaskId, ()> = IdTable::new();
        t.insert(TaskId(1), ());
        for i in 2..1_000_000u64 {
            t.insert(TaskId(i), ());
            t.remove(&TaskId(i));
        }
        assert_eq!(t.len(), 1);
        assert!(t.window_capacity() <= 4 * SLACK, "window of {}", t.window_capacity());
        assert!(t.contains_key(&TaskId(1)));
        assert!(t.remove(&TaskId(1)).is_some());
        assert!(t.is_empty());
    }
}
