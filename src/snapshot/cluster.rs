//! The cluster-level views: the autoscaler's node types and the scheduler's queues.
//!
//! Owns: [`AutoscalerView`], [`AutoscalerTypeView`] and [`SchedulerView`]. Must never:
//! import the engine or mutate anything.

use serde::Serialize;

/// One node type as the autoscaler sees it (the head's type first).
#[derive(Clone, Debug, Serialize)]
pub struct AutoscalerTypeView {
    pub name: String,
    pub autoscaled: bool,
    pub min_workers: u32,
    pub max_workers: u32,
    pub active: u32,
    pub pending: u32,
    pub recently_failed: u32,
    pub idle: u32,
    pub started_total: u64,
    pub stopped_total: u64,
    pub failed_create_total: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct AutoscalerView {
    pub types: Vec<AutoscalerTypeView>,
    /// Total logical resources of alive nodes, by name.
    pub cluster_resources: Vec<(String, f64)>,
    pub pending_resources: Vec<(String, f64)>,
    pub updates: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SchedulerView {
    pub waiting_for_resources: u64,
    pub infeasible: u64,
    pub waiting_for_bundle: u64,
    pub pending_placement_groups: u64,
    /// Per node: leases granted but not yet running (Dispatched) and running (Executing).
    pub dispatched_by_node: Vec<(u32, u64)>,
    pub executing_by_node: Vec<(u32, u64)>,
}
