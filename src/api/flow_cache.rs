//! One replay of a job's records serves every Flow Insight answer about it: the page
//! asks for six views at once, and asks again every 3 s.
//!
//! Owns: the last [`ENTRIES`] replays (each a job's records as an `Arc` and how many of
//! them were replayed: records are append-only, so that pair names the spans exactly)
//! and, for a replay with no call still open, what the views derived from it
//! (`flow::derived`: the critical path, the wall-time flame graph, the what-ifs), which
//! only the records decide. A request computes what is missing once; requests for the
//! same replay meanwhile wait for that one result instead of computing it again.
//! When a job of [`PREWARM_CALLS`] recorded calls or more ends, [`run_prewarm`] replays
//! it and derives every piece in the background (the newest [`ENTRIES`] such jobs), so that the page's first look at a
//! finished job (its what-ifs re-run the job a dozen times: ~0.1 s at the recording
//! cap) finds them made.
//! Must never: answer for an instant the records do not decide (the spans are shared,
//! the instant is each request's: [`Spans::at`]; a replay with a call open gets fresh
//! derivations per request), hold more than [`ENTRIES`] replays, or run on an async
//! worker (callers are on the blocking pool).

use super::app::AppState;
use crate::flow::derived::Derived;
use crate::flow::spans::Spans;
use crate::snapshot::flow::JobRecord;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Replays kept. One of 100,000 recorded calls (a job at the recording cap) takes about
/// 20 MB, so the cache stays under ~40 MB; two lets the page of one job and a look at
/// another (or the same job at an earlier instant) share the server.
pub const ENTRIES: usize = 2;

/// A replay, whether a call is still open in it, and what was derived from it.
struct Replayed {
    spans: Spans,
    open: bool,
    derived: Arc<Derived>,
}

struct Entry {
    /// Held, so its address cannot be reused by another job while the entry lives.
    record: Arc<JobRecord>,
    records: usize,
    replayed: Arc<OnceLock<Replayed>>,
}

#[derive(Default)]
pub(crate) struct FlowCache {
    /// Most recently used first.
    entries: Mutex<VecDeque<Entry>>,
}

impl FlowCache {
    /// `record`'s spans as of `at` (replayed once per set of records), and what the
    /// views may reuse from them.
    pub fn get(&self, record: &Arc<JobRecord>, at: u64) -> (Spans, Arc<Derived>) {
        let records = Spans::records_until(record, at);
        let cell = {
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            let found = entries.iter().position(|e| Arc::ptr_eq(&e.record, record) && e.records == records);
            let e = match found {
                Some(i) => entries.remove(i).expect("the position is in range"),
                None => Entry { record: record.clone(), records, replayed: Arc::new(OnceLock::new()) },
            };
            let cell = e.replayed.clone();
            entries.push_front(e);
            entries.truncate(ENTRIES);
            cell
        };
        let r = cell.get_or_init(|| {
            let spans = Spans::replay(record, at);
            Replayed { open: spans.any_open(), spans, derived: Arc::default() }
        });
        let derived = if r.open { Arc::default() } else { r.derived.clone() };
        (r.spans.at(at), derived)
    }
}

impl FlowCache {
    /// Whether `record`'s whole replay is cached with its what-ifs ranked: a first
    /// look at every view of the finished job computes nothing.
    pub fn prepared(&self, record: &Arc<JobRecord>) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.iter().any(|e| {
            Arc::ptr_eq(&e.record, record)
                && e.records == record.records.len()
                && e.replayed.get().is_some_and(|r| !r.open && r.derived.has_impacts())
        })
    }
}

/// Jobs with at least this many recorded calls are prepared when they end; a smaller
/// one answers its first look within a few ms anyway.
pub const PREWARM_CALLS: u64 = 1_000;

/// How often the newest ended job is looked for.
const PREWARM_EVERY: Duration = Duration::from_millis(500);

/// Prepare the newest ended jobs of [`PREWARM_CALLS`] calls or more (as many as the
/// cache holds), one at a time, each once, for the server's life.
pub(crate) async fn run_prewarm(app: AppState) {
    let mut tick = tokio::time::interval(PREWARM_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut stopping = app.stopping.clone();
    // The jobs (and their record counts) prepared last: each is prepared once, even
    // when a look at another job pushes it out of the cache afterwards.
    let mut prepared: VecDeque<(u32, usize)> = VecDeque::new();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopping.changed() => return,
        }
        let snap = app.handle.snapshot();
        let mut newest: Vec<Arc<JobRecord>> = snap
            .flow
            .jobs
            .values()
            .rev()
            .filter(|j| j.end_us.is_some() && j.recorded_calls >= PREWARM_CALLS)
            .take(ENTRIES)
            .cloned()
            .collect();
        // The oldest first, so that the newest is the most recently used.
        newest.reverse();
        for record in newest {
            let key = (record.job, record.records.len());
            if prepared.contains(&key) {
                continue;
            }
            prepared.push_front(key);
            prepared.truncate(ENTRIES);
            let (app, at) = (app.clone(), snap.sim_time_us);
            let _ = tokio::task::spawn_blocking(move || {
                let started = Instant::now();
                let (spans, derived) = app.flow_cache.get(&record, at);
                derived.path(&record, &spans);
                derived.wall(&record, &spans);
                // The bottlenecks' made-instant re-runs and the findings' before the
                // what-ifs: the what-ifs are the last piece, which `prepared` looks for.
                derived.instant(&record, &spans);
                derived.findings(&record, &spans);
                derived.impacts(&record, &spans);
                let ms = started.elapsed().as_millis() as u64;
                tracing::debug!(job = %record.job_hex, calls = record.recorded_calls, ms, "flow views of the ended job prepared");
            })
            .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::whatif;
    use crate::snapshot::flow::Rec;

    fn job() -> Arc<JobRecord> {
        let cfg = crate::config::load_str(include_str!("../../examples/flow-insight.yaml"), "flow-insight.yaml")
            .expect("the example parses");
        let (engine, _) = crate::sim::simulate(cfg, None, None, |_| {}).expect("it runs");
        let snap = engine.publish(crate::sim::PublishOptions::seq(0));
        snap.flow.jobs.values().next().cloned().expect("a job")
    }

    #[test]
    fn a_replay_is_shared_by_instants_with_the_same_records_and_only_by_them() {
        let job = job();
        let cache = FlowCache::default();
        let end = job.records.iter().map(Rec::time).max().unwrap();
        let (late, d1) = cache.get(&job, end + 5);
        let (later, d2) = cache.get(&job, end + 1_000_000);
        assert!(Arc::ptr_eq(&late.spans, &later.spans), "no record between them: one replay");
        assert!(Arc::ptr_eq(&d1, &d2), "every call ended: what is derived is shared too");
        assert_eq!((late.at, later.at), (end + 5, end + 1_000_000), "each answer keeps its instant");
        // Mid-run, the spans are those of a fresh replay at that instant, and a call is
        // open: nothing derived is shared.
        let mid = end / 2;
        let (cached, d3) = cache.get(&job, mid);
        let (_, d4) = cache.get(&job, mid);
        assert!(!Arc::ptr_eq(&cached.spans, &late.spans));
        assert!(cached.any_open() && !Arc::ptr_eq(&d3, &d4));
        let fresh = Spans::replay(&job, mid);
        assert_eq!(cached.records, fresh.records);
        let ends = |s: &Spans| s.spans.iter().map(|s| (s.span, s.end, s.phases.to_vec())).collect::<Vec<_>>();
        assert_eq!(ends(&cached), ends(&fresh));
        // Two entries at most: a third replay pushes the least recently used out.
        cache.get(&job, mid / 2);
        assert_eq!(cache.entries.lock().unwrap().len(), ENTRIES);
        let (again, _) = cache.get(&job, end + 7);
        assert!(!Arc::ptr_eq(&again.spans, &late.spans), "the first entry was the least recently used");
    }

    #[test]
    fn a_finished_replay_is_ranked_once_and_as_the_views_rank_it() {
        let job = job();
        let cache = FlowCache::default();
        let (spans, derived) = cache.get(&job, u64::MAX);
        let first = derived.impacts(&job, &spans);
        let (spans2, derived2) = cache.get(&job, u64::MAX - 1);
        assert!(Arc::ptr_eq(&first, &derived2.impacts(&job, &spans2)), "ranked once");
        let direct = whatif::rank(&job, &Spans::replay(&job, u64::MAX));
        let saved = |r: &Option<(Vec<whatif::Impact>, u64)>| {
            r.as_ref().map(|(v, m)| (v.iter().map(|i| i.saved_us).collect::<Vec<_>>(), *m))
        };
        assert_eq!(saved(&first), saved(&direct));
    }
}
