//! Ray's cluster events: what `ray list cluster-events` lists (the dashboard's event
//! module reads them from the GCS's, raylets', autoscaler's and job manager's
//! `logs/events/event_*.log`): nodes added, dead and removed, OOM kills, job starts and
//! completions, autoscaler launches and launch failures, actor deaths.
//!
//! Owns: [`ClusterEvents`], a bounded ring of [`ClusterEvent`]s recorded by the engine as
//! they happen, separate from the GCS event log (whose lines are mostly task
//! transitions), and its publication as a [`ClusterEventsView`].
//!
//! The ring is a queue of chunks of [`CHUNK`] events behind `Arc`s: a full chunk never
//! changes again, so publishing shares it with every snapshot, and only the open chunk
//! is copied, when an event lands in it while a snapshot still holds it (at most once
//! per publication, never per event). A snapshot's view is then a few dozen `Arc`s,
//! whatever the ring holds.
//!
//! Must never: write the event log or draw from the RNG (recording never changes the
//! run); keep more than `capacity` + [`CHUNK`] events; format anything while disabled
//! (capacity 0, as batch runs are).

use super::VirtualTime;
use std::collections::VecDeque;
use std::sync::Arc;

/// Events per chunk: small enough that copying the open chunk is cheap, large enough
/// that a view of 10,000 events is ~160 `Arc`s.
pub const CHUNK: usize = 64;

/// Ray's `Event.Severity` values that cluster events use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "INFO",
            Severity::Warning => "WARNING",
            Severity::Error => "ERROR",
        }
    }
}

/// Ray's `Event.SourceType`: which component wrote the event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum Source {
    Gcs,
    Raylet,
    Autoscaler,
    Jobs,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Gcs => "GCS",
            Source::Raylet => "RAYLET",
            Source::Autoscaler => "AUTOSCALER",
            Source::Jobs => "JOBS",
        }
    }
}

/// One cluster event, as Ray's `Event` message holds it.
#[derive(Clone, Debug)]
pub struct ClusterEvent {
    /// Position in the stream of cluster events (0 first); the `event_id` derives from it.
    pub seq: u64,
    pub time_us: VirtualTime,
    pub severity: Severity,
    pub source: Source,
    /// Ray's `label` (`RAY_NODE_REMOVED`, `Out of Memory`; empty for the Python emitters).
    pub label: &'static str,
    pub message: String,
    /// Ray's `custom_fields`: the ids of what the event is about, as the State API
    /// writes them (`node_id`, `ip`, `job_id`, `actor_id`, `task_id`, ...).
    pub fields: Box<[(&'static str, String)]>,
}

/// What a recording call supplies; the store adds `seq` and the time.
pub struct NewEvent {
    pub severity: Severity,
    pub source: Source,
    pub label: &'static str,
    pub message: String,
    pub fields: Vec<(&'static str, String)>,
}

/// The bounded ring of cluster events.
pub struct ClusterEvents {
    capacity: usize,
    chunks: VecDeque<Arc<Vec<ClusterEvent>>>,
    /// Events in `chunks`.
    held: usize,
    total: u64,
    /// Per node slot, when its raylet last wrote a rate-limited event (Ray's
    /// `RAY_EVENT_EVERY_MS`); a slot's next node starts afresh.
    last_limited: Vec<Option<u64>>,
}

impl ClusterEvents {
    /// Keeps the last `capacity` events; 0 keeps none and records nothing.
    pub fn new(capacity: usize) -> ClusterEvents {
        ClusterEvents { capacity, chunks: VecDeque::new(), held: 0, total: 0, last_limited: Vec::new() }
    }

    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Events recorded since the start (kept or not).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Record the event `make` builds, at `time_us` (the engine's clock). `make` runs
    /// only while enabled, so a disabled store costs a branch.
    pub fn record_with(&mut self, time_us: u64, make: impl FnOnce() -> NewEvent) {
        if !self.enabled() {
            return;
        }
        let e = make();
        let event = ClusterEvent {
            seq: self.total,
            time_us: VirtualTime(time_us),
            severity: e.severity,
            source: e.source,
            label: e.label,
            message: e.message,
            fields: e.fields.into_boxed_slice(),
        };
        self.total += 1;
        match self.chunks.back_mut() {
            // Copies the open chunk only if a published view still shares it.
            Some(open) if open.len() < CHUNK => Arc::make_mut(open).push(event),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(event);
                self.chunks.push_back(Arc::new(chunk));
            }
        }
        self.held += 1;
        // Drop whole chunks while the rest still holds `capacity` events.
        while let Some(front) = self.chunks.front() {
            if self.held - front.len() < self.capacity {
                break;
            }
            self.held -= front.len();
            self.chunks.pop_front();
        }
    }

    /// Whether `slot`'s raylet may write a rate-limited event now (at most one per
    /// `period_us`, as Ray's `RAY_EVENT_EVERY_MS`); if so, the time is noted.
    pub fn due(&mut self, slot: usize, now: u64, period_us: u64) -> bool {
        if self.last_limited.len() <= slot {
            self.last_limited.resize(slot + 1, None);
        }
        match self.last_limited[slot] {
            Some(last) if now < last + period_us => false,
            _ => {
                self.last_limited[slot] = Some(now);
                true
            }
        }
    }

    /// A new node took `slot`: its raylet has written nothing yet.
    pub fn slot_reused(&mut self, slot: usize) {
        if let Some(s) = self.last_limited.get_mut(slot) {
            *s = None;
        }
    }

    /// The last `capacity` events, shared with the ring (no event is copied).
    pub fn view(&self) -> ClusterEventsView {
        let len = self.held.min(self.capacity);
        ClusterEventsView {
            chunks: self.chunks.iter().cloned().collect(),
            skip: self.held - len,
            len,
            total: self.total,
            capacity: self.capacity,
        }
    }
}

/// The cluster events a snapshot carries, oldest first: the ring's chunks, shared.
#[derive(Clone, Debug, Default)]
pub struct ClusterEventsView {
    chunks: Vec<Arc<Vec<ClusterEvent>>>,
    /// Events at the front of the first chunk that are past the capacity.
    skip: usize,
    len: usize,
    /// Events recorded since the start (kept or not).
    pub total: u64,
    /// How many the ring keeps.
    pub capacity: usize,
}

impl ClusterEventsView {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `i`th event kept, oldest first. Every chunk but the last is full.
    pub fn get(&self, i: usize) -> Option<&ClusterEvent> {
        if i >= self.len {
            return None;
        }
        let j = self.skip + i;
        self.chunks.get(j / CHUNK).and_then(|c| c.get(j % CHUNK))
    }

    /// Oldest first; `.rev()` for newest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &ClusterEvent> + ExactSizeIterator + '_ {
        (self.skip..self.skip + self.len).map(move |j| &self.chunks[j / CHUNK][j % CHUNK])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(i: u64) -> NewEvent {
        NewEvent {
            severity: Severity::Info,
            source: Source::Gcs,
            label: "",
            message: format!("event {i}"),
            fields: vec![("n", i.to_string())],
        }
    }

    #[test]
    fn the_ring_keeps_exactly_the_last_capacity_events() {
        for capacity in [1, 5, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7] {
            let mut ring = ClusterEvents::new(capacity);
            for i in 0..(5 * CHUNK as u64 + 3) {
                ring.record_with(i, || event(i));
                let v = ring.view();
                let want = (i as usize + 1).min(capacity);
                assert_eq!(v.len(), want, "capacity {capacity} after {i}");
                let seqs: Vec<u64> = v.iter().map(|e| e.seq).collect();
                let first = i + 1 - want as u64;
                assert_eq!(seqs, (first..=i).collect::<Vec<_>>(), "capacity {capacity}");
                assert_eq!(v.iter().next_back().map(|e| e.message.as_str()), Some(format!("event {i}").as_str()));
                // Memory stays within one chunk of the capacity.
                assert!(ring.held < capacity + CHUNK, "{} held for capacity {capacity}", ring.held);
            }
        }
    }

    #[test]
    fn a_published_view_does_not_change_when_more_events_come() {
        let mut ring = ClusterEvents::new(100);
        for i in 0..10 {
            ring.record_with(i, || event(i));
        }
        let before = ring.view();
        for i in 10..300 {
            ring.record_with(i, || event(i));
        }
        assert_eq!(before.iter().map(|e| e.seq).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
        let after = ring.view();
        assert_eq!(after.len(), 100);
        assert_eq!(after.get(0).unwrap().seq, 200);
        assert_eq!(after.total, 300);
    }

    #[test]
    fn a_full_chunk_is_shared_not_copied() {
        let mut ring = ClusterEvents::new(1000);
        for i in 0..(CHUNK as u64 + 1) {
            ring.record_with(i, || event(i));
        }
        let (a, b) = (ring.view(), ring.view());
        assert!(Arc::ptr_eq(&a.chunks[0], &b.chunks[0]));
        assert!(Arc::ptr_eq(&a.chunks[0], &ring.chunks[0]));
    }

    #[test]
    fn a_disabled_store_builds_nothing() {
        let mut ring = ClusterEvents::new(0);
        ring.record_with(1, || panic!("built an event while disabled"));
        assert!(ring.view().is_empty());
        assert_eq!(ring.total(), 0);
    }

    #[test]
    fn rate_limited_events_wait_out_their_period_per_slot() {
        let mut ring = ClusterEvents::new(10);
        assert!(ring.due(3, 0, 10));
        assert!(!ring.due(3, 9, 10));
        assert!(ring.due(2, 9, 10), "another node's raylet is not limited");
        assert!(ring.due(3, 10, 10));
        ring.slot_reused(3);
        assert!(ring.due(3, 11, 10), "a new node in the slot starts afresh");
    }
}
