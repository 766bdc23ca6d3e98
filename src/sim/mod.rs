//! The simulation: a discrete-event engine over the model.
//!
//! Owns: virtual time, the seeded RNG, the event queue, and every mutation of the
//! model. Must never: be written to from another thread (control requests arrive over
//! a channel), read wall-clock time inside event handling, or iterate a hash map where
//! order could leak into the event log.

mod actors;
mod autoscaler;
mod dead_nodes;
mod engine;
mod exec;
mod faults;
mod invariants;
mod objects;
mod placement_groups;
mod retries;
pub mod snapshot;
pub mod control;
pub mod runner;
pub mod report;
mod tasks;

pub use autoscaler::{Autoscaler, TypeState};
pub use engine::{session_name_for, Engine};
pub use report::Report;

use crate::config::Config;
use std::time::Instant;

/// Why a `simulate` run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("the config has a job_mix workload, which never ends: pass --until DURATION (or set sim.until)")]
    Unbounded,
}

/// Run as fast as possible until the workloads finish (or `until`, in µs of virtual time).
/// `progress` is called now and then with (virtual µs, events processed, tasks finished).
pub fn simulate(
    cfg: Config,
    until: Option<u64>,
    events_sink: Option<Box<dyn std::io::Write + Send>>,
    mut progress: impl FnMut(&Engine),
) -> Result<(Engine, Report), SimulateError> {
    let until = until.or(cfg.sim.until.map(|u| u.as_micros()));
    if until.is_none() && cfg.workloads.iter().any(|w| matches!(w, crate::config::WorkloadConfig::JobMix(_))) {
        return Err(SimulateError::Unbounded);
    }
    let wall = Instant::now();
    let mut engine = Engine::with_events_sink(cfg, events_sink);
    let limit = until.unwrap_or(u64::MAX);
    let mut since_progress = 0u32;
    loop {
        if until.is_none() && engine.workloads_done() {
            break;
        }
        match engine.next_event_time() {
            Some(t) if t <= limit => {
                engine.step();
            }
            _ => {
                if let Some(u) = until {
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
    let sink_error = engine.model.log.finish().err();
    let report = Report::build(&engine, wall.elapsed().as_secs_f64(), sink_error);
    Ok((engine, report))
}
