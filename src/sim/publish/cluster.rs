//! The cluster views: the scheduler's queues and the autoscaler's node types.
//!
//! Owns: reading the cluster queues, the raylets' leases and the autoscaler's state into
//! [`SchedulerView`] and [`AutoscalerView`]. Must never: mutate the engine or the
//! model.

use crate::model::*;
use crate::sim::autoscaler::Autoscaler;
use crate::sim::gcs::placement_groups::PlacementGroupManager;
use crate::sim::raylet::cluster_queues::ClusterQueues;
use crate::sim::raylet::node_runtime::Raylets;
use crate::snapshot::{AutoscalerTypeView, AutoscalerView, SchedulerView};

/// Work waiting in the scheduler, and per alive node the leases dispatched but not
/// yet running and those running.
pub(super) fn scheduler(
    m: &Model,
    raylets: &Raylets,
    queues: &ClusterQueues,
    pg_manager: &PlacementGroupManager,
) -> SchedulerView {
    let mut dispatched = Vec::new();
    let mut executing = Vec::new();
    for (i, leased) in raylets.leases().enumerate() {
        if !m.nodes()[i].is_alive() {
            continue;
        }
        let mut d = 0;
        let mut e = 0;
        for t in leased.iter().filter_map(|t| m.tasks.get(t)) {
            if t.state().is_running() {
                e += 1;
            } else {
                d += 1;
            }
        }
        dispatched.push((i as u32, d));
        executing.push((i as u32, e));
    }
    SchedulerView {
        waiting_for_resources: queues.waiting_count() as u64,
        infeasible: queues.infeasible_count() as u64,
        waiting_for_bundle: queues.bundle_waiters().map(|(_, q)| q.len() as u64).sum(),
        pending_placement_groups: pg_manager.pending().count() as u64,
        dispatched_by_node: dispatched,
        executing_by_node: executing,
    }
}

/// The head's type (never scaled) first, then each configured worker type.
pub(super) fn autoscaler(m: &Model, autoscaler: &Autoscaler, head: NodeIdx, raylets: &Raylets) -> AutoscalerView {
    let mut types: Vec<AutoscalerTypeView> = Vec::new();
    let head = m.node(head);
    types.push(AutoscalerTypeView {
        name: head.type_name.to_string(),
        autoscaled: false,
        min_workers: 1,
        max_workers: 1,
        active: m.nodes().iter().filter(|n| n.is_alive() && n.is_head).count() as u32,
        pending: 0,
        recently_failed: 0,
        idle: 0,
        started_total: 0,
        stopped_total: 0,
        failed_create_total: 0,
    });
    for (i, t) in autoscaler.types().iter().enumerate() {
        let alive: Vec<&Node> = m.nodes().iter().filter(|n| n.is_alive() && n.node_type == Some(i as u16)).collect();
        let idle =
            alive.iter().filter(|n| n.available == n.total && raylets.leased_on(n.idx).is_empty()).count() as u32;
        types.push(AutoscalerTypeView {
            name: t.name.clone(),
            autoscaled: t.enabled,
            min_workers: t.min,
            max_workers: t.max,
            active: alive.len() as u32,
            pending: t.pending,
            recently_failed: t.recently_failed,
            idle,
            started_total: t.started_total,
            stopped_total: t.stopped_total,
            failed_create_total: t.failed_create_total,
        });
    }
    let mut cluster: Vec<(String, f64)> = m.resource_names.iter().map(|(_, n)| (n.to_string(), 0.0)).collect();
    for n in m.nodes().iter().filter(|n| n.is_alive()) {
        for (id, _) in m.resource_names.iter() {
            cluster[id.index()].1 += n.total.get(id).to_f64();
        }
    }
    AutoscalerView {
        types,
        cluster_resources: cluster,
        pending_resources: autoscaler.pending_resources().to_vec(),
        updates: autoscaler.updates(),
    }
}
