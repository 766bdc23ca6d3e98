//! The server's long-lived tasks beside the connections: each reads `App` until the
//! server stops. Sampling the seed dashboard's history, preparing Flow Insight's views
//! of big ended jobs, and writing the state directory. (The live stream's ticker is
//! the stream's, `stream.rs`.)
//!
//! Owns: only the loops' pacing and what each remembers between rounds. Must never:
//! hold a store's state (each store owns its own: `stores/`, `state_dir.rs`), or block
//! an async worker (replays and file writes go to the blocking pool).

use super::app::AppState;
use super::jobs::all_submitted;
use super::server::stopped;
use super::state_dir::{Failing, ALERTS, JOBS};
use super::stores::dashboard_history::{sample, Previous};
use super::stores::flow_cache::ENTRIES;
use crate::snapshot::flow::JobRecord;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sample every cluster until the server stops (observe mode: each observed cluster,
/// into its own ring; the registry's cap bounds how many).
pub(crate) async fn sample_history(app: AppState) {
    let mut tick = tokio::time::interval(app.history_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut previous: BTreeMap<Arc<str>, Previous> = BTreeMap::new();
    let mut stopping = app.stopping.clone();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopped(&mut stopping) => return,
        }
        for cluster in app.every_cluster() {
            let snap = cluster.handle.snapshot();
            let now = Instant::now();
            let sample = sample(&snap, previous.get(&cluster.name), now);
            previous.insert(
                cluster.name.clone(),
                Previous {
                    at: now,
                    finished: snap.counters.tasks_finished,
                    failed: snap.counters.tasks_failed,
                    submitted: snap.counters.tasks_submitted,
                },
            );
            app.history.push(&cluster.name, sample);
        }
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
        let snap = app.handle().snapshot();
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
            let (app, at) = (app.clone(), snap.sim_time_us.as_micros());
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

/// Write the alerts and jobs whenever they change, at most once a second, until the
/// server stops; then once more.
pub(crate) async fn save_state(app: AppState) {
    let Some(state) = app.state_dir.clone() else { return };
    let mut stopping = app.stopping.clone();
    let (mut alerts_written, mut jobs_written) = (None, None);
    let (mut alerts_failing, mut jobs_failing) = (Failing::default(), Failing::default());
    loop {
        let stop = tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => false,
            _ = stopped(&mut stopping) => true,
        };
        let generation = app.alerts.generation();
        if alerts_written != Some(generation) {
            let body = app.alerts.export();
            let state = state.clone();
            if let Ok(result) = tokio::task::spawn_blocking(move || state.write(ALERTS, &body)).await {
                if result.is_ok() {
                    alerts_written = Some(generation);
                }
                alerts_failing.note(ALERTS, result);
            }
        }
        let jobs = serde_json::to_vec(&all_submitted(&app)).unwrap_or_default();
        let digest = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            jobs.hash(&mut h);
            h.finish()
        };
        if jobs_written != Some(digest) {
            let state = state.clone();
            if let Ok(result) = tokio::task::spawn_blocking(move || state.write(JOBS, &jobs)).await {
                if result.is_ok() {
                    jobs_written = Some(digest);
                }
                jobs_failing.note(JOBS, result);
            }
        }
        if stop {
            return;
        }
    }
}
