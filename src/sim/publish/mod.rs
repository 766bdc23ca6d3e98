//! Publishing: building the immutable [`Snapshot`] readers see from the engine.
//!
//! Owns: one function per view (`nodes.rs`, `counts.rs`, `jobs.rs`, `cluster.rs`,
//! `tables.rs`), composed by [`Engine::snapshot`]. Built on the engine thread from
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
mod nodes;
mod tables;

pub(crate) use nodes::NodeViewCache;

use super::engine::Engine;
use crate::model::LoggedEvent;
use crate::snapshot::{Snapshot, Tables};
use std::sync::Arc;

impl Engine {
    /// Build a snapshot. `tables`: the State API row tables to carry, if rebuilt.
    pub fn snapshot(
        &self,
        seq: u64,
        speed: f64,
        lag_seconds: f64,
        tables: Option<Arc<Tables>>,
        recent: Arc<Vec<LoggedEvent>>,
    ) -> Snapshot {
        let m = &self.model;
        let (actor_counts, actor_executor_counts) = self.actor_counts_view();
        Snapshot {
            seq,
            sim_time_us: self.clock.now,
            session_name: m.session_name.clone(),
            version: m.version.clone(),
            seed: self.cfg.sim.seed,
            speed,
            lag_seconds,
            events_processed: self.events_processed(),
            event_log_lines: m.log.total(),
            head: self.node_manager.head().0,
            nodes: self.nodes_view(),
            names: Arc::new(m.names.all().to_vec()),
            task_counts: self.task_counts_view(),
            running_counts: self.running_counts_view(),
            actor_counts,
            actor_executor_counts,
            pg_counts: self.pg_counts_view(),
            jobs: self.jobs_view(),
            running_jobs: self.running_jobs(),
            counters: m.counters.clone(),
            objects_live: m.objects.len() as u64,
            placement_ms: m.placement_ms.clone(),
            scheduler: self.scheduler_view(),
            autoscaler: self.autoscaler_view(),
            recent_events: recent,
            cluster_events: m.cluster_events.view(),
            tables,
            flow: self.flow.publish(),
            published_at: None,
        }
    }

    /// The newest `limit` events, newest first.
    pub fn recent_events(&self, limit: usize) -> Vec<LoggedEvent> {
        self.model.log.recent().take(limit).cloned().collect()
    }
}
