//! One replay of a job's records serves every Flow Insight answer about it: the page
//! asks for six views at once, and asks again every 3 s.
//!
//! Owns: the last [`ENTRIES`] replays (each a job's records as an `Arc` and how many of
//! them were replayed: records are append-only, so that pair names the spans exactly)
//! and, for a replay with no call still open, its what-if ranking, which only the
//! records decide. A request computes what is missing once; requests for the same
//! replay meanwhile wait for that one result instead of computing it again.
//! Must never: answer for an instant the records do not decide (the spans are shared,
//! the instant is each request's: [`Spans::at`]), hold more than [`ENTRIES`] replays,
//! or run on an async worker (callers are on the blocking pool).

use crate::flow::spans::Spans;
use crate::flow::whatif::{self, Impact};
use crate::snapshot::flow::JobRecord;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

/// Replays kept. One of 100,000 recorded calls (a job at the recording cap) takes about
/// 20 MB, so the cache stays under ~40 MB; two lets the page of one job and a look at
/// another (or the same job at an earlier instant) share the server.
pub const ENTRIES: usize = 2;

/// A ranking: the what-ifs, most saved first, and the makespan they are measured against.
pub type Ranked = Option<(Vec<Impact>, u64)>;

struct Entry {
    /// Held, so its address cannot be reused by another job while the entry lives.
    record: Arc<JobRecord>,
    records: usize,
    spans: Arc<OnceLock<Spans>>,
    ranked: Arc<OnceLock<Arc<Ranked>>>,
}

#[derive(Default)]
pub(crate) struct FlowCache {
    /// Most recently used first.
    entries: Mutex<VecDeque<Entry>>,
}

impl FlowCache {
    /// The entry for `record` replayed up to `at`, made (empty) if missing.
    fn entry(&self, record: &Arc<JobRecord>, at: u64) -> (Arc<OnceLock<Spans>>, Arc<OnceLock<Arc<Ranked>>>) {
        let records = Spans::records_until(record, at);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let found = entries.iter().position(|e| Arc::ptr_eq(&e.record, record) && e.records == records);
        let e = match found {
            Some(i) => entries.remove(i).expect("the position is in range"),
            None => Entry {
                record: record.clone(),
                records,
                spans: Arc::new(OnceLock::new()),
                ranked: Arc::new(OnceLock::new()),
            },
        };
        let out = (e.spans.clone(), e.ranked.clone());
        entries.push_front(e);
        entries.truncate(ENTRIES);
        out
    }

    /// `record`'s spans as of `at`: replayed once per set of records.
    pub fn spans(&self, record: &Arc<JobRecord>, at: u64) -> Spans {
        let (spans, _) = self.entry(record, at);
        spans.get_or_init(|| Spans::replay(record, at)).at(at)
    }

    /// The spans, and the what-if ranking (`whatif::rank`) of `record` as of `at`:
    /// ranked once per set of records when no call is open, else every time (an open
    /// call's time grows with the instant).
    pub fn ranked(&self, record: &Arc<JobRecord>, at: u64) -> (Spans, Arc<Ranked>) {
        let (cell, ranked) = self.entry(record, at);
        let spans = cell.get_or_init(|| Spans::replay(record, at)).at(at);
        let ranking = match spans.any_open() {
            true => Arc::new(whatif::rank(record, &spans)),
            false => ranked.get_or_init(|| Arc::new(whatif::rank(record, &spans))).clone(),
        };
        (spans, ranking)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let late = cache.spans(&job, end + 5);
        let later = cache.spans(&job, end + 1_000_000);
        assert!(Arc::ptr_eq(&late.spans, &later.spans), "no record between them: one replay");
        assert_eq!((late.at, later.at), (end + 5, end + 1_000_000), "each answer keeps its instant");
        // Mid-run, the spans are those of a fresh replay at that instant.
        let mid = end / 2;
        let cached = cache.spans(&job, mid);
        assert!(!Arc::ptr_eq(&cached.spans, &late.spans));
        let fresh = Spans::replay(&job, mid);
        assert_eq!(cached.records, fresh.records);
        assert_eq!(cached.spans.len(), fresh.spans.len());
        let ends = |s: &Spans| s.spans.iter().map(|s| (s.span, s.end, s.phases.to_vec())).collect::<Vec<_>>();
        assert_eq!(ends(&cached), ends(&fresh));
        // Two entries at most: a third replay pushes the oldest out.
        cache.spans(&job, mid / 2);
        assert_eq!(cache.entries.lock().unwrap().len(), ENTRIES);
        let again = cache.spans(&job, end + 7);
        assert!(!Arc::ptr_eq(&again.spans, &late.spans), "the first entry was the least recently used");
    }

    #[test]
    fn a_finished_replay_is_ranked_once_and_as_the_views_rank_it() {
        let job = job();
        let cache = FlowCache::default();
        let at = u64::MAX;
        let (spans, first) = cache.ranked(&job, at);
        let (_, second) = cache.ranked(&job, at - 1);
        assert!(Arc::ptr_eq(&first, &second), "ranked once");
        let direct = whatif::rank(&job, &Spans::replay(&job, at));
        let saved = |r: &Ranked| r.as_ref().map(|(v, m)| (v.iter().map(|i| i.saved_us).collect::<Vec<_>>(), *m));
        assert_eq!(saved(&first), saved(&direct));
        assert!(!spans.any_open());
    }
}
