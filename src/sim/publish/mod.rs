//! Publishing: building the immutable [`Snapshot`] readers see from the engine.
//!
//! Owns: one function per view (`nodes.rs`, `counts.rs`, `jobs.rs`, `cluster.rs`,
//! `tables.rs`), each a function of the parts it reads, composed by
//! [`Engine::publish`]. Built on the engine thread from
//! aggregates the model keeps incrementally, so the cost is proportional to nodes,
//! names and jobs, not to tasks. The row tables behind the State API (tasks, actors,
//! objects) are the exception: they are rebuilt only while someone reads them, at most
//! once per `tables_every` (the runner decides, and passes them in).
//!
//! Must never: mutate the model (the only state touched is the engine's cache of dead
//! nodes' views); hand readers anything but the types of [`crate::snapshot`].

mod cluster;
mod counts;
mod jobs;
pub(super) mod nodes;
mod tables;

use super::engine::Engine;
use crate::model::LoggedEvent;
use crate::snapshot::{Snapshot, Tables};
use std::sync::Arc;

/// What a snapshot carries beside the engine's state: the runner's own figures, and
/// the parts it refreshes at its own pace. `PublishOptions::seq(n)` (or `default()`)
/// is a batch run's: speed 1, no lag, no row tables, no recent events.
#[derive(Clone, Debug)]
pub struct PublishOptions {
    /// The snapshot's sequence number.
    pub seq: u64,
    /// Virtual seconds per wall second (serve mode's pacing).
    pub speed: f64,
    /// How far virtual time is behind where the pacing wants it.
    pub lag_seconds: f64,
    /// The State API row tables to carry, if rebuilt (`Engine::build_tables`).
    pub tables: Option<Arc<Tables>>,
    /// The newest event-log lines, newest first (`Engine::recent_events`).
    pub recent: Arc<Vec<LoggedEvent>>,
}

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions { seq: 0, speed: 1.0, lag_seconds: 0.0, tables: None, recent: Arc::new(Vec::new()) }
    }
}

impl PublishOptions {
    /// A batch run's options with sequence number `seq`.
    pub fn seq(seq: u64) -> Self {
        PublishOptions { seq, ..Default::default() }
    }
}

impl Engine {
    /// Build a snapshot: the one way the engine's state reaches readers.
    pub fn publish(&self, options: PublishOptions) -> Snapshot {
        let PublishOptions { seq, speed, lag_seconds, tables, recent } = options;
        let m = &self.model;
        let head = self.node_manager.head();
        let (actor_counts, actor_executor_counts) = counts::actor_counts(m);
        Snapshot {
            seq,
            sim_time_us: crate::model::VirtualTime(self.clock.now),
            session_name: m.session_name.clone(),
            version: m.version.clone(),
            seed: self.cfg.sim.seed,
            speed,
            lag_seconds,
            events_processed: self.clock.events_processed(),
            event_log_lines: m.log.total(),
            head: head.0,
            nodes: nodes::nodes(m, &self.raylets, &self.actor_manager, &self.node_views),
            names: Arc::new(m.names.all().to_vec()),
            task_counts: counts::task_counts(m),
            running_counts: counts::running_counts(m),
            actor_counts,
            actor_executor_counts,
            pg_counts: counts::pg_counts(m),
            jobs: jobs::jobs(m),
            running_jobs: jobs::running_jobs(m),
            counters: m.counters.clone(),
            objects_live: m.objects.len() as u64,
            placement_ms: m.placement_ms.clone(),
            scheduler: cluster::scheduler(m, &self.raylets, &self.queues, &self.pg_manager),
            autoscaler: cluster::autoscaler(m, &self.autoscaler, head, &self.raylets),
            recent_events: recent,
            cluster_events: m.cluster_events.view(),
            tables,
            flow: self.flow.publish(),
            published_at: None,
            observed: None,
        }
    }

    /// The newest `limit` events, newest first.
    pub fn recent_events(&self, limit: usize) -> Vec<LoggedEvent> {
        self.model.log.recent().take(limit).collect()
    }
}
