//! The snapshot contract: the immutable types readers see.
//!
//! Owns: [`Snapshot`], everything a reader (metrics, the API, the live stream, Flow
//! Insight) may look at as of one instant of virtual time, split by view: nodes
//! (`nodes.rs`), task and actor counts (`tasks.rs`, `actors.rs`), jobs (`jobs.rs`),
//! the autoscaler and scheduler (`cluster.rs`), the State API's row tables
//! (`tables.rs`) and what Flow Insight records of each call ([`flow`]). Cumulative
//! counters are the model's own [`Counters`], copied.
//!
//! Must never: import the engine (`sim`) or a reader (`metrics`, `api`, `flow`), hold
//! a lock or a reference into the model, or offer a way to change anything. `sim`
//! builds snapshots (`sim::publish`); readers only read them, on any thread, without
//! waiting on the engine.

mod actors;
mod cluster;
pub mod flow;
pub mod flow_notes;
mod jobs;
mod nodes;
mod observed;
mod tables;
mod tasks;

pub use actors::{ActorCount, ActorExecutorCount};
pub use cluster::{AutoscalerTypeView, AutoscalerView, SchedulerView};
pub use jobs::JobView;
pub use nodes::{NodeResources, NodeView};
pub use observed::{ObservedView, RayMetricsTarget};
pub use tables::{ActorRow, BundleRow, ObjectRow, PgRow, Tables, TaskRow};
pub use tasks::{RunningCount, TaskCount};

/// The model's cumulative counters, plain data: a snapshot carries a copy.
pub use crate::model::Counters;
/// Instants of virtual time and sizes in bytes, as the views give them.
pub use crate::model::{Bytes, VirtualTime};
/// Ray's cluster events, oldest first: chunks shared with the engine's ring, which
/// never change once full (`model::cluster_events`).
pub use crate::model::{ClusterEvent, ClusterEventsView};

use crate::model::{Histogram, LoggedEvent};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Everything a reader may look at, as of one instant of virtual time.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub seq: u64,
    /// The instant this snapshot is of.
    pub sim_time_us: VirtualTime,
    pub session_name: String,
    pub version: String,
    pub seed: u64,
    pub speed: f64,
    /// How far virtual time trails where the wall clock says it should be, in seconds.
    pub lag_seconds: f64,
    pub events_processed: u64,
    pub event_log_lines: u64,
    pub head: u32,
    /// Every node in the table; a dead node's view is built once and shared by every
    /// later snapshot (it no longer changes), so a cache of dead nodes costs one view each.
    pub nodes: Vec<Arc<NodeView>>,
    pub names: Arc<Vec<String>>,
    pub task_counts: Vec<TaskCount>,
    pub running_counts: Vec<RunningCount>,
    pub actor_counts: Vec<ActorCount>,
    pub actor_executor_counts: Vec<ActorExecutorCount>,
    pub pg_counts: BTreeMap<String, i64>,
    pub jobs: Vec<JobView>,
    pub running_jobs: u64,
    pub counters: Counters,
    /// Objects in the object table now (the counters count creations and frees).
    pub objects_live: u64,
    /// Placement time histograms (ms): Task, Actor, PlacementGroup.
    pub placement_ms: [Histogram; 3],
    pub scheduler: SchedulerView,
    pub autoscaler: AutoscalerView,
    pub recent_events: Arc<Vec<LoggedEvent>>,
    /// The last `sim.cluster_event_capacity` cluster events (not the log's task lines).
    pub cluster_events: ClusterEventsView,
    pub tables: Option<Arc<Tables>>,
    /// Flow Insight's records of every job (sealed chunks shared between snapshots).
    pub flow: Arc<flow::Recorded>,
    /// Wall-clock instant the runner published it (serve mode), for its age.
    pub published_at: Option<std::time::Instant>,
    /// Observe mode's own counters; `None` in a snapshot of the model.
    pub observed: Option<Arc<ObservedView>>,
}

impl Snapshot {
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map(|s| s.as_str()).unwrap_or("")
    }
    pub fn node(&self, idx: u32) -> Option<&NodeView> {
        self.nodes.get(idx as usize).map(|v| &**v)
    }
    pub fn head_node(&self) -> Option<&NodeView> {
        self.node(self.head)
    }
}
