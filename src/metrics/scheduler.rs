//! The raylets' lease queues and the placement-time histograms:
//! `ray_scheduler_tasks`, `ray_scheduler_unscheduleable_tasks`,
//! `ray_internal_num_spilled_tasks`, `ray_local_resource_view_node_count`,
//! `ray_scheduler_placement_time_ms`.
//!
//! Leases granted to a node (Dispatched, Executing) are that node's. The model queues
//! unplaced work cluster-wide, so the waiting and infeasible counts are the head
//! raylet's (where the drivers submit); other raylets report them as 0.
//!
//! Owns: these scheduler families. Must never: import another collector, or label a
//! series with a task id.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::Core;
use super::scrape::{Family, Scrape};
use crate::model::NodeState;

const STATES: [&str; 7] =
    ["Cancelled", "Executing", "Waiting", "Dispatched", "Received", "SpilledWaiting", "SpilledUnschedulable"];
const REASONS: [&str; 5] =
    ["Infeasible", "WaitingForResources", "WaitingForPlasmaMemory", "WaitingForRemoteResources", "WaitingForWorkers"];

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let q = &s.snap.scheduler;
    let lookup =
        |rows: &[(u32, u64)], node: u32| rows.binary_search_by_key(&node, |r| r.0).map(|i| rows[i].1).unwrap_or(0);
    let waiting = q.waiting_for_resources + q.waiting_for_bundle;

    let mut f = Family::gauge(enc, "ray_scheduler_tasks", "Leases in the local lease manager by state.");
    for &n in &s.nodes {
        let at = Core { component: "raylet", at: s.target(n) };
        for state in STATES {
            let count = match state {
                "Executing" => lookup(&q.executing_by_node, n.idx),
                "Dispatched" => lookup(&q.dispatched_by_node, n.idx),
                "Waiting" if n.is_head => waiting,
                _ => 0,
            };
            f.sample(&(at, [("State", state)]), count)?;
        }
    }

    let mut f =
        Family::gauge(enc, "ray_scheduler_unscheduleable_tasks", "Pending leases that cannot be scheduled, by reason.");
    for &n in &s.nodes {
        let at = Core { component: "raylet", at: s.target(n) };
        for reason in REASONS {
            let count = match reason {
                "Infeasible" if n.is_head => q.infeasible,
                "WaitingForResources" if n.is_head => waiting,
                _ => 0,
            };
            f.sample(&(at, [("Reason", reason)]), count)?;
        }
    }

    let mut f =
        Family::gauge(enc, "ray_internal_num_spilled_tasks", "Cumulative leases spilled back to other raylets.");
    for &n in &s.nodes {
        f.sample(&Core { component: "raylet", at: s.target(n) }, n.stats.spillbacks)?;
    }

    let alive = s.snap.nodes.iter().filter(|n| n.state == NodeState::Alive).count() as u64;
    let mut f = Family::gauge(enc, "ray_local_resource_view_node_count", "Nodes in the raylet's local resource view.");
    for &n in &s.nodes {
        f.sample(&Core { component: "raylet", at: s.target(n) }, alive)?;
    }

    if let (true, Some(head)) = (s.cluster, s.head_target()) {
        let mut f = Family::histogram(
            enc,
            "ray_scheduler_placement_time_ms",
            "Time from a workload's dependencies being resolved to its resources being reserved, in ms.",
        );
        // A series per WorkloadType from its first placement, as Ray records them.
        for (h, (workload, component)) in s.snap.placement_ms.iter().zip([
            ("Task", "raylet"),
            ("Actor", "gcs_server"),
            ("PlacementGroup", "gcs_server"),
        ]) {
            if h.count == 0 {
                continue;
            }
            let at = Core { component, at: head };
            f.histogram_sample(&(at, [("WorkloadType", workload)]), h.bounds, &h.counts, h.sum)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn executing_leases_are_reported_by_their_node() {
        let e = all();
        let executing: u64 = cluster().scheduler.executing_by_node.iter().map(|r| r.1).sum();
        assert!(executing > 0);
        assert_eq!(e.sum("ray_scheduler_tasks", &[("State", "Executing")]), executing as f64);
    }

    #[test]
    fn placement_time_histogram_has_rays_buckets() {
        let e = all();
        assert_eq!(e.families["ray_scheduler_placement_time_ms"].kind, "histogram");
        let les: Vec<&str> = e
            .of("ray_scheduler_placement_time_ms")
            .filter(|s| s.name.ends_with("_bucket") && s.label("WorkloadType") == "Task")
            .map(|s| s.label("le"))
            .collect();
        assert_eq!(les, ["1.0", "10.0", "100.0", "1000.0", "10000.0", "+Inf"]);
        let tasks = &cluster().placement_ms[0];
        assert_eq!(e.sum("ray_scheduler_placement_time_ms_count", &[("WorkloadType", "Task")]), tasks.count as f64);
        assert_eq!(
            e.sum("ray_scheduler_placement_time_ms_bucket", &[("WorkloadType", "Task"), ("le", "+Inf")]),
            tasks.count as f64
        );
    }

    #[test]
    fn no_placement_time_series_before_the_first_placement_of_its_kind() {
        let mut snap = (**cluster()).clone();
        snap.placement_ms[2] = crate::model::Histogram::new(crate::model::PLACEMENT_MS_BUCKETS);
        let e = parse(&crate::metrics::render_all(&std::sync::Arc::new(snap), None, &ctx()));
        let kinds: Vec<&str> = e
            .of("ray_scheduler_placement_time_ms")
            .filter(|s| s.name.ends_with("_count"))
            .map(|s| s.label("WorkloadType"))
            .collect();
        assert_eq!(kinds, ["Task", "Actor"]);
    }

    #[test]
    fn queues_are_the_heads_and_zero_elsewhere() {
        let e = node(&worker(false).ip);
        assert_eq!(e.sum("ray_scheduler_unscheduleable_tasks", &[]), 0.0);
        assert!(e.of("ray_scheduler_placement_time_ms").next().is_none());
    }
}
