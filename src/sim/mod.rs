//! The simulation: a discrete-event engine over the model.
//!
//! Owns: virtual time, the seeded RNG, the event queue, and every mutation of the
//! model. Must never: be written to from another thread (control requests arrive over
//! a channel), read wall-clock time inside event handling, or iterate a hash map where
//! order could leak into the event log.
//!
//! Ray's components, by folder (ARCHITECTURE.md, "The engine's components"). At the
//! top, reaching every component: the engine (`engine.rs`), the router that hands each
//! follow-up to its component (`router.rs`), the worker's program (`exec.rs`), faults
//! and the memory monitor (`faults.rs`), the autoscaler (`autoscaler.rs`), publishing,
//! control and the invariants. The GCS's managers (`gcs/`): jobs, actors, placement
//! groups, node membership. The core worker (`core_worker/`): submission and
//! references, futures, failures and retries, the caller's work on its cores, each
//! live task's run state. Objects, the plasma stores and pulls (`objects.rs`,
//! `objects/`). Each raylet (`raylet/`): the cluster task queues and leases, a leased
//! task's run on its worker, the resource-deadlock check, the local resource manager
//! and the node's cores. On the ground, below every component: the shared vocabulary
//! (`follow.rs`: follow-ups and the narrow context they run with), the clock and event
//! queue, the cluster-event writer and Flow Insight's recorder. No file imports one
//! that imports it back.

mod autoscaler;
mod cache_ahead;
mod clock;
mod cluster_events;
pub mod control;
mod core_worker;
mod engine;
mod event_queue;
mod exec;
mod faults;
mod flow_recorder;
mod follow;
pub(crate) mod gcs;
mod invariants;
pub(crate) mod objects;
pub use objects::{get_micros, put_micros};
mod publish;
pub(crate) mod raylet;
mod report;
mod router;
pub mod runner;
pub mod sweep;

pub use autoscaler::{Autoscaler, TypeState};
pub use engine::{session_name_at, session_name_for, Engine};
pub use objects::pull::transfer_micros;
pub use publish::PublishOptions;
pub use report::Report;

use crate::config::Config;
use crate::model::VirtualTime;
use crate::snapshot::Snapshot;
use std::sync::Arc;
use std::time::Instant;

/// Why a `simulate` run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("the config has a job_mix workload, which never ends: pass --until DURATION (or set sim.until)")]
    Unbounded,
}

/// Run as fast as possible until the workloads finish (or the instant `until`, which
/// wins over the config's `sim.until`). `progress` is called with the engine every
/// 65,536 events (to draw a progress bar).
pub fn simulate(
    cfg: Config,
    until: Option<VirtualTime>,
    events_sink: Option<Box<dyn std::io::Write + Send>>,
    progress: impl FnMut(&Engine),
) -> Result<(Engine, Report), SimulateError> {
    simulate_sampled(cfg, until, events_sink, progress, None)
}

/// How [`simulate_sampled`] looks at the cluster at fixed instants of virtual time.
pub struct Sampler<'a> {
    /// Virtual µs between looks (a scrape interval); must be positive.
    pub every_us: u64,
    /// Called with the snapshot published for an instant (virtual µs), taken once every
    /// event at or before that instant has run and none after it has; snapshots are
    /// numbered from 0 in `seq`.
    pub sample: &'a mut dyn FnMut(&Arc<Snapshot>, u64),
}

/// [`simulate`], also calling `sampler` at every multiple of its interval from 0 to the
/// end of the run. Events run exactly as without a sampler (the same event log): looks
/// happen between events and never advance the clock.
pub fn simulate_sampled(
    cfg: Config,
    until: Option<VirtualTime>,
    events_sink: Option<Box<dyn std::io::Write + Send>>,
    mut progress: impl FnMut(&Engine),
    mut sampler: Option<Sampler<'_>>,
) -> Result<(Engine, Report), SimulateError> {
    // The engine's loop counts in bare µs.
    let until = until.map(VirtualTime::as_micros).or(cfg.sim.until.map(|u| u.as_micros()));
    if until.is_none() && cfg.workloads.iter().any(|w| matches!(w, crate::config::WorkloadConfig::JobMix(_))) {
        return Err(SimulateError::Unbounded);
    }
    let wall = Instant::now();
    // A batch run keeps no ring of recent events: no state API reads it, and copying
    // each of scale.yaml's 5.4 million lines into a 10,000-entry ring cost about 8% of
    // the run. The digest and `--events` see every line either way.
    let mut cfg = cfg;
    cfg.sim.event_log_capacity = 0;
    // Nor cluster events: nothing reads them, and none would reach the log or digest.
    cfg.sim.cluster_event_capacity = 0;
    let mut engine = Engine::with_events_sink(cfg, events_sink);
    let limit = until.unwrap_or(u64::MAX);
    let mut since_progress = 0u32;
    let mut next_sample = 0u64;
    let mut published = 0u64;
    // Look at every instant before `t` (exclusive): the events before them have run.
    let mut sample_before = |engine: &Engine, t: u64, next: &mut u64| {
        if let Some(s) = sampler.as_mut() {
            while *next < t {
                let snapshot = Arc::new(engine.publish(PublishOptions::seq(published)));
                published += 1;
                (s.sample)(&snapshot, *next);
                *next = next.saturating_add(s.every_us.max(1));
            }
        }
    };
    loop {
        if until.is_none() && engine.workloads_done() {
            break;
        }
        match engine.next_event_time() {
            Some(t) if t <= limit => {
                sample_before(&engine, t, &mut next_sample);
                engine.step();
            }
            _ => {
                if let Some(u) = until {
                    // Nothing else happens before `until`: the state holds to the end.
                    sample_before(&engine, u.saturating_add(1), &mut next_sample);
                    engine.run_until(u);
                }
                break;
            }
        }
        since_progress += 1;
        if since_progress >= 65_536 {
            since_progress = 0;
            progress(&engine);
        }
    }
    let sink_error = engine.model.log.finish().err().map(|e| e.to_string());
    let report = Report::build(&engine, wall.elapsed().as_secs_f64(), sink_error);
    Ok((engine, report))
}
