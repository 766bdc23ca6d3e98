//! `IdTable`: the storage behind the live task and object tables, indexed by dense id.
//!
//! Owns: where a live record sits in memory and how it is found from its id (a large
//! reservation is faulted in ahead of use: `model/prefault.rs`).
//! Must never: decide anything about the records it holds, hand out ids, or grow with
//! the number of records ever inserted, or with the ids between live ones (only with
//! the live ones).
//!
//! Task and object ids are handed out in sequence and most records die roughly in the
//! order they were born, so the live ones form a window of consecutive ids with holes.
//! The window is held in pages of `PAGE` slots, found by `id / PAGE - first_page`: a
//! lookup is a subtraction, a shift and two bounds checks, not a hash, and a slot holds
//! the record itself (no per-entry bucket overhead, no rehash doubling at a million
//! entries). A page is held only while it has a live record, so a span of ids with no
//! record (tasks a queue holds as a run, a job's ids that all ended) costs an empty
//! entry of the page index, not a slot per id; an emptied page is kept for reuse while
//! the spares are fewer than the pages held (or reserved), and freed after that, so a
//! long-running table gives a burst's memory back once the burst has passed.
//!
//! A record that outlives everything around it (a driver, a long-lived actor's
//! creation task) would pin its page, and the index would stretch from it to the
//! newest id; so before a page is opened on new memory while the held pages are two
//! thirds holes, or whenever the index is long for the pages it finds, the oldest
//! pages' records move to a small ordered map and the window moves on. Memory is therefore O(peak live records),
//! whatever the age of the oldest one.
//!
//! Only growth compacts, not removal or reuse: a window that is sparse but not growing
//! costs no memory it does not already hold, and a fan-out's reducers free their inputs
//! all over the window; compacting on removal moved hundreds of thousands of still-live
//! map outputs into the (slower) map as they did.
//!
//! The API is the subset of `HashMap`'s the engine uses (`get`, `get_mut`, `insert`,
//! `remove`, `contains_key`, `values`, `Index<&K>`), so call sites read as before;
//! iteration is in id order, which no caller relied on not having.

use super::prefault::prefault_all;
use std::collections::BTreeMap;

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

const PAGE_BITS: u32 = 10;
/// Slots in a page: 200 KB of task records, 144 KB of objects.
const PAGE: usize = 1 << PAGE_BITS;
const SLOT_MASK: u64 = PAGE as u64 - 1;
/// Held slots beyond twice the live records (plus this) are worth moving the window for.
const SLACK: usize = 4 * PAGE;
/// Index entries beyond this many per held page are worth moving the window for. An
/// entry is 32 bytes: the index behind a straggler's page costs at most a fifth of the
/// page, and a span of a million ids with no record between live pages (a queued run)
/// costs 31 KB, where its slots would cost 150-200 MB.
const INDEX_PER_PAGE: usize = PAGE;
/// Index entries allowed beyond `INDEX_PER_PAGE` a held page.
const INDEX_SLACK: usize = 64;
/// Emptied pages kept for reuse however few are held: a table that empties and reopens
/// a page at a time keeps its page written.
const SPARE_FLOOR: usize = 8;

/// Up to `PAGE` consecutive ids' slots. Slots past `slots.len()` are empty: a page
/// fills mostly front to back, so it is written (and its memory touched) only as far
/// as its highest record, as a growing vector would be.
struct Page<V> {
    slots: Vec<Option<V>>,
    live: u32,
}

pub struct IdTable<K, V> {
    /// Page number (`id / PAGE`) of `pages[0]`.
    first_page: u64,
    /// The window's pages in id order; `None` for a span of ids with no live record. A
    /// `Vec`, not a ring: a lookup is one index, and pages leave the front once per
    /// `PAGE` records, so shifting the short index then costs next to nothing.
    pages: Vec<Option<Page<V>>>,
    /// Pages in `pages` that are held (`Some`).
    held: usize,
    /// Records in `pages`.
    in_pages: usize,
    /// Emptied pages' memory (each `PAGE` slots of capacity), for the next page opened:
    /// at most as many as are held, or as `reserve` asked for, or `SPARE_FLOOR`, so a
    /// burst's pages go back once it has passed.
    spare: Vec<Vec<Option<V>>>,
    /// Pages the last `reserve` asked for, kept as spares even when few are held.
    reserved_pages: usize,
    /// Records older than the window: the few that outlived their neighbours.
    old: BTreeMap<K, V>,
}

impl<K: DenseId, V> Default for IdTable<K, V> {
    fn default() -> Self {
        IdTable {
            first_page: 0,
            pages: Vec::new(),
            held: 0,
            in_pages: 0,
            spare: Vec::new(),
            reserved_pages: 0,
            old: BTreeMap::new(),
        }
    }
}

impl<K: DenseId, V> IdTable<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `n` more live records without allocating. The pages' memory is faulted
    /// in beside the caller when it is large (`model/prefault.rs`), in the order they
    /// will be used: the last spare page is the next one opened.
    pub fn reserve(&mut self, n: usize) {
        let want = n.div_ceil(PAGE) + 1;
        self.reserved_pages = want;
        let mut ranges = Vec::new();
        while self.spare.len() < want {
            let page: Vec<Option<V>> = Vec::with_capacity(PAGE);
            ranges.push((page.as_ptr() as usize, PAGE * std::mem::size_of::<Option<V>>()));
            self.spare.push(page);
        }
        ranges.reverse();
        prefault_all(ranges);
    }

    pub fn len(&self) -> usize {
        self.in_pages + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index of `id`'s page in `pages` (in the window or just past it), or `None`
    /// when it is older than the window.
    #[inline]
    fn page_of(&self, k: u64) -> Option<usize> {
        (k >> PAGE_BITS).checked_sub(self.first_page).map(|i| i as usize)
    }

    /// The slot of dense id `k` in the window's page `i`, if that page is held and
    /// written that far.
    #[inline]
    fn slot(&self, i: usize, k: u64) -> Option<&Option<V>> {
        self.pages.get(i)?.as_ref()?.slots.get((k & SLOT_MASK) as usize)
    }

    #[inline]
    pub fn get(&self, id: &K) -> Option<&V> {
        let k = id.dense();
        match self.page_of(k) {
            Some(i) => self.slot(i, k)?.as_ref(),
            None => self.old.get(id),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, id: &K) -> Option<&mut V> {
        let k = id.dense();
        match self.page_of(k) {
            Some(i) => self.pages.get_mut(i)?.as_mut()?.slots.get_mut((k & SLOT_MASK) as usize)?.as_mut(),
            None => self.old.get_mut(id),
        }
    }

    /// Ask the CPU to bring `id`'s record into cache ahead of its use (a hint: nothing
    /// is read, and an id with no record, or one outside the window, does nothing).
    #[inline]
    pub fn prefetch(&self, id: &K) {
        let k = id.dense();
        if let Some(slot) = self.page_of(k).and_then(|i| self.slot(i, k)) {
            super::cache_hint::prefetch(slot);
        }
    }

    #[inline]
    pub fn contains_key(&self, id: &K) -> bool {
        self.get(id).is_some()
    }

    /// `k`'s index in `pages`, starting an empty window at its page; `None` when it is
    /// older than the window.
    fn page_for_insert(&mut self, k: u64) -> Option<usize> {
        let p = k >> PAGE_BITS;
        if self.pages.is_empty() && p >= self.first_page {
            // Nothing to keep contiguous with: start the window at this id's page.
            self.first_page = p;
        }
        self.page_of(k)
    }

    /// Insert or replace; returns the record it replaced.
    pub fn insert(&mut self, id: K, value: V) -> Option<V> {
        let k = id.dense();
        let Some(mut i) = self.page_for_insert(k) else {
            return self.old.insert(id, value);
        };
        if !matches!(self.pages.get(i), Some(Some(_))) {
            // A page is opened: if that takes new memory, or the index is long, first
            // make room by moving stragglers out.
            if self.spare.is_empty() || self.index_long() {
                self.compact();
                // That may have moved the window past this id, or emptied it.
                let Some(at) = self.page_for_insert(k) else {
                    return self.old.insert(id, value);
                };
                i = at;
            }
            if i >= self.pages.len() {
                self.pages.resize_with(i + 1, || None);
            }
            let slots = self.spare.pop().unwrap_or_else(|| Vec::with_capacity(PAGE));
            self.pages[i] = Some(Page { slots, live: 0 });
            self.held += 1;
        }
        let page = self.pages[i].as_mut().expect("the page was just opened");
        let j = (k & SLOT_MASK) as usize;
        if j >= page.slots.len() {
            page.slots.resize_with(j + 1, || None);
        }
        let prev = page.slots[j].replace(value);
        if prev.is_none() {
            page.live += 1;
            self.in_pages += 1;
        }
        prev
    }

    pub fn remove(&mut self, id: &K) -> Option<V> {
        let k = id.dense();
        let Some(i) = self.page_of(k) else {
            return self.old.remove(id);
        };
        let page = self.pages.get_mut(i)?.as_mut()?;
        let prev = page.slots.get_mut((k & SLOT_MASK) as usize)?.take();
        if prev.is_some() {
            page.live -= 1;
            self.in_pages -= 1;
            if page.live == 0 {
                self.release(i);
                self.trim();
            }
        }
        prev
    }

    /// Give up the held page `pages[i]`, every slot of it empty, for reuse, or free it
    /// when the spares are already as many as the table keeps (and free spares beyond
    /// that). A kept page's slots stay written (as empty): a workload that empties and
    /// reopens one page, a task at a time, would otherwise write its empty slots again at
    /// each reopening.
    fn release(&mut self, i: usize) {
        let page = self.pages[i].take().expect("a held page");
        debug_assert!(page.slots.iter().all(Option::is_none));
        self.held -= 1;
        let keep = self.held.max(self.reserved_pages).max(SPARE_FLOOR);
        if self.spare.len() < keep {
            self.spare.push(page.slots);
        }
        // Fewer held now: spares beyond what is kept go back (the oldest first).
        if self.spare.len() > keep {
            self.spare.drain(..self.spare.len() - keep);
        }
    }

    /// Too much held for what lives: two thirds of the held slots holes (beyond `slack`),
    /// or an index long for the pages it finds.
    fn sparse(&self, slack: usize) -> bool {
        self.held * PAGE > 2 * self.in_pages + slack || self.index_long()
    }

    fn index_long(&self) -> bool {
        self.pages.len() > INDEX_PER_PAGE * self.held + INDEX_SLACK
    }

    /// When the window is [`Self::sparse`], move the oldest pages' records to `old`
    /// until it is just back under that bound. Moving only that far matters: a batch
    /// job's running wave sits right behind its finished tasks, and squeezing the window
    /// denser would move the whole wave into the (slower) map. Amortised O(1) per
    /// insert: each record leaves the window once.
    fn compact(&mut self) {
        if !self.sparse(SLACK) {
            return;
        }
        while !self.pages.is_empty() && self.sparse(SLACK / 2) {
            if self.pages[0].is_some() {
                let base = self.first_page << PAGE_BITS;
                let page = self.pages[0].as_mut().expect("held");
                for (j, slot) in page.slots.iter_mut().enumerate() {
                    if let Some(v) = slot.take() {
                        self.old.insert(K::from_dense(base + j as u64), v);
                    }
                }
                self.in_pages -= page.live as usize;
                page.live = 0;
                self.release(0);
            }
            self.pages.remove(0);
            self.first_page += 1;
            self.trim();
        }
    }

    /// Drop the index's empty entries at either end. An index left empty keeps the last
    /// entry's page as its first: the next ids are likely in it, and below the first
    /// page they would go to `old`.
    fn trim(&mut self) {
        let empty_front = self.pages.iter().take_while(|p| p.is_none()).count();
        if empty_front == self.pages.len() {
            self.first_page += empty_front.saturating_sub(1) as u64;
            self.pages.clear();
        } else if empty_front > 0 {
            self.pages.drain(..empty_front);
            self.first_page += empty_front as u64;
        }
        while let Some(None) = self.pages.last() {
            self.pages.pop();
        }
    }

    /// Records in id order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.old.values().chain(self.pages.iter().flatten().flat_map(|p| p.slots.iter().flatten()))
    }

    /// Records with their ids, in id order (a record need not hold its own id).
    pub fn iter(&self) -> impl Iterator<Item = (K, &V)> {
        let first = self.first_page;
        let paged = self.pages.iter().enumerate().filter_map(move |(i, p)| Some((first + i as u64, p.as_ref()?)));
        self.old.iter().map(|(k, v)| (*k, v)).chain(paged.flat_map(|(page, p)| {
            p.slots
                .iter()
                .enumerate()
                .filter_map(move |(j, v)| Some((K::from_dense((page << PAGE_BITS) | j as u64), v.as_ref()?)))
        }))
    }

    /// Records in id order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.old.values_mut().chain(self.pages.iter_mut().flatten().flat_map(|p| p.slots.iter_mut().flatten()))
    }

    /// Pages the table holds memory for, in use or spare (for tests).
    pub fn pages_held(&self) -> usize {
        self.held + self.spare.len()
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
            // A prefetch of any id, live, removed, old or never inserted, changes nothing.
            t.prefetch(&TaskId(step.wrapping_mul(7_919) % (next + 5_000)));
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
        assert!(t.iter().eq(m.iter().map(|(k, v)| (*k, v))), "each record with its own id");
        for v in t.values_mut() {
            *v = 0;
        }
        assert!(t.values().all(|v| *v == 0));
        // Bounded by the live records at their peak, not by every id ever handed out.
        assert!(t.pages_held() * PAGE <= 4 * peak + 4 * SLACK, "{} pages for a peak of {peak} live", t.pages_held());
        assert!(t.pages.len() <= INDEX_PER_PAGE * t.held + INDEX_SLACK + 1, "an index of {}", t.pages.len());
    }

    /// A batch job: one driver that lives throughout, tasks finishing roughly in id
    /// order (any of the oldest 1,000 live ones next). Nothing moves out of the window
    /// (the driver keeps its one page), and the next wave reuses the emptied pages.
    #[test]
    fn a_running_wave_stays_in_the_window() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut t: IdTable<TaskId, ()> = IdTable::new();
        t.insert(TaskId(1), ());
        let mut live: std::collections::VecDeque<u64> = (2..200_002).collect();
        for id in &live {
            t.insert(TaskId(*id), ());
        }
        let pages = t.pages_held();
        for wave in 0..3u64 {
            while !live.is_empty() {
                let i = rng.random_range(0..live.len().min(1_000));
                let id = live.remove(i).unwrap();
                assert!(t.remove(&TaskId(id)).is_some());
                assert!(t.old.is_empty(), "{} records moved out of the window", t.old.len());
            }
            assert_eq!(t.len(), 1);
            assert_eq!(t.held, 1, "only the driver's page is held between waves");
            // The next wave reuses the emptied pages (the driver's stays, and a wave may
            // straddle one page more than the first).
            live = (200_002 * (wave + 1)..200_002 * (wave + 2)).collect();
            for id in &live {
                t.insert(TaskId(*id), ());
            }
            assert!(t.old.is_empty(), "{} records moved out of the window", t.old.len());
            assert!(t.pages_held() <= pages + 2, "{} pages, from {pages}", t.pages_held());
        }
        assert!(t.contains_key(&TaskId(1)));
    }

    /// A reservation big enough to be faulted in beside the caller holds what it is given
    /// while that runs, without allocating again.
    #[test]
    fn a_large_reservation_is_an_ordinary_window() {
        let mut t: IdTable<TaskId, u64> = IdTable::new();
        t.reserve(1 << 20);
        assert!(std::mem::size_of::<Option<u64>>() << 20 >= crate::model::prefault::PREFAULT_MIN_BYTES);
        let pages = t.pages_held();
        assert!(pages * PAGE >= 1 << 20);
        for i in 0..(1u64 << 20) {
            t.insert(TaskId(i), i * 3);
        }
        assert!((0..(1u64 << 20)).all(|i| t.get(&TaskId(i)) == Some(&(i * 3))));
        assert_eq!(t.pages_held(), pages, "filled without allocating");
    }

    /// Live records on either side of a million ids that have none (a queued run, a job
    /// whose tasks all ended): the span holds no page, and nothing leaves the window.
    #[test]
    fn a_span_of_ids_without_records_holds_no_page() {
        let mut t: IdTable<TaskId, u64> = IdTable::new();
        let early = 1..3_000u64;
        let late = 1_003_000..1_006_000u64;
        for i in early.clone().chain(late.clone()) {
            t.insert(TaskId(i), i);
        }
        assert!(t.pages_held() <= 8, "{} pages for two runs of 3 pages", t.pages_held());
        assert!(t.old.is_empty());
        assert!(early.chain(late).all(|i| t.get(&TaskId(i)) == Some(&i)));
        assert_eq!(t.get(&TaskId(500_000)), None);
        assert_eq!(t.remove(&TaskId(500_000)), None);
    }

    /// A record every page's worth of ids lives on (long-lived actors' creation tasks):
    /// they move to the ordered map rather than each holding a page.
    #[test]
    fn stragglers_spread_over_the_ids_do_not_each_hold_a_page() {
        let mut t: IdTable<TaskId, u64> = IdTable::new();
        for i in 0..1_000_000u64 {
            t.insert(TaskId(i), i);
            if i % PAGE as u64 != 7 {
                t.remove(&TaskId(i));
            }
        }
        assert_eq!(t.len(), 1_000_000 / PAGE + 1);
        assert!(t.pages_held() * PAGE <= 2 * t.len() + 2 * SLACK, "{} pages held", t.pages_held());
        assert!(t.values().copied().eq((0..1_000_000u64).filter(|i| i % PAGE as u64 == 7)));
    }

    /// A burst's pages are freed as it drains, all but a few; a reservation is kept.
    #[test]
    fn a_burst_s_pages_go_back_once_it_has_passed() {
        let mut t: IdTable<TaskId, u64> = IdTable::new();
        let burst = 200 * PAGE as u64;
        for id in 0..burst {
            t.insert(TaskId(id), id);
        }
        assert!(t.pages_held() >= 200);
        for id in 0..burst - 1 {
            t.remove(&TaskId(id));
        }
        assert_eq!(t.len(), 1);
        assert!(t.pages_held() <= 1 + SPARE_FLOOR, "{} pages for one live record", t.pages_held());
        // What was reserved stays, though nothing uses it yet.
        t.reserve(50 * PAGE);
        t.remove(&TaskId(burst - 1));
        assert!(t.pages_held() >= 50, "{} pages after reserving 50", t.pages_held());
    }

    /// One record at a time (a trickle of tasks, each done before the next): the page
    /// empties and reopens, and nothing goes to the ordered map.
    #[test]
    fn one_record_at_a_time_stays_in_the_window() {
        let mut t: IdTable<TaskId, u64> = IdTable::new();
        for i in 0..10_000u64 {
            assert_eq!(t.insert(TaskId(i), i), None);
            assert!(t.old.is_empty(), "id {i} went to the ordered map");
            assert_eq!(t.remove(&TaskId(i)), Some(i));
        }
        assert!(t.is_empty());
        assert!(t.pages_held() <= 2, "{} pages", t.pages_held());
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
        assert!(t.pages_held() <= 2, "{} pages", t.pages_held());
        assert!(t.pages.len() <= INDEX_PER_PAGE + INDEX_SLACK + 1, "an index of {}", t.pages.len());
        assert!(t.contains_key(&TaskId(1)));
        assert!(t.remove(&TaskId(1)).is_some());
        assert!(t.is_empty());
    }
}
