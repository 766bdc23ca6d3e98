//! The raylets' lease queues and the placement-time histograms:
//! `ray_scheduler_tasks`, `ray_scheduler_unscheduleable_tasks`,
//! `ray_internal_num_spilled_tasks`, `ray_local_resource_view_node_count`,
//! `ray_scheduler_placement_time_ms` (`ray_scheduler_placement_time_s`, in seconds,
//! before Ray 2.52).
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
use super::scrape::{Family, RayVersion, Scrape};
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
    // Not in Ray 2.49 (in 2.60; the releases between, not checked, get 2.60's).
    if s.version >= RayVersion(2, 50) {
        let mut f =
            Family::gauge(enc, "ray_local_resource_view_node_count", "Nodes in the raylet's local resource view.");
        for &n in &s.nodes {
            f.sample(&Core { component: "raylet", at: s.target(n) }, alive)?;
        }
    }

    if let (true, Some(head)) = (s.cluster, s.head_target()) {
        let seconds = s.version < PLACEMENT_IN_MS_FROM;
        let mut f = if seconds {
            Family::histogram(
                enc,
                "ray_scheduler_placement_time_s",
                "Time from a workload's dependencies being resolved to its resources being reserved, in s.",
            )
        } else {
            Family::histogram(
                enc,
                "ray_scheduler_placement_time_ms",
                "Time from a workload's dependencies being resolved to its resources being reserved, in ms.",
            )
        };
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
            if seconds {
                let counts = in_second_buckets(&h.counts);
                f.histogram_sample(&(at, [("WorkloadType", workload)]), PLACEMENT_S_BUCKETS, &counts, h.sum / 1000.0)?;
            } else {
                f.histogram_sample(&(at, [("WorkloadType", workload)]), h.bounds, &h.counts, h.sum)?;
            }
        }
    }
    Ok(())
}

/// The first Ray with `ray_scheduler_placement_time_ms` (ray-project/ray#58217,
/// merged October 2025); before it the histogram is `ray_scheduler_placement_time_s`.
const PLACEMENT_IN_MS_FROM: RayVersion = RayVersion(2, 52);
/// Ray 2.49's buckets for `ray_scheduler_placement_time_s`, in seconds.
const PLACEMENT_S_BUCKETS: &[f64] = &[0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0];

/// The model's per-bucket counts in ms (`PLACEMENT_MS_BUCKETS`: 1, 10, 100, 1000,
/// 10000, +Inf) in Ray 2.49's second buckets: ≤ 0.1 s holds ≤ 100 ms, 1 s and 10 s are
/// the same bounds; what took over 10 s is put at ≤ 100 s (the ms buckets end there).
fn in_second_buckets(ms: &[u64]) -> [u64; 7] {
    debug_assert_eq!(crate::model::PLACEMENT_MS_BUCKETS, &[1.0, 10.0, 100.0, 1000.0, 10000.0]);
    let c = |i: usize| ms.get(i).copied().unwrap_or(0);
    [c(0) + c(1) + c(2), c(3), c(4), c(5), 0, 0, 0]
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn ray_2_49_names_placement_time_in_seconds() {
        let ms = all();
        let s = all_as("2.49.2", None);
        assert!(!s.families.contains_key("ray_scheduler_placement_time_ms"));
        assert_eq!(s.families["ray_scheduler_placement_time_s"].kind, "histogram");
        let les: Vec<&str> = s
            .of("ray_scheduler_placement_time_s")
            .filter(|x| x.name.ends_with("_bucket") && x.label("WorkloadType") == "Task")
            .map(|x| x.label("le"))
            .collect();
        assert_eq!(les, ["0.1", "1.0", "10.0", "100.0", "1000.0", "10000.0", "+Inf"]);
        for w in ["Task", "Actor", "PlacementGroup"] {
            let n = ms.sum("ray_scheduler_placement_time_ms_count", &[("WorkloadType", w)]);
            assert_eq!(s.sum("ray_scheduler_placement_time_s_count", &[("WorkloadType", w)]), n, "{w}");
            let sum_ms = ms.sum("ray_scheduler_placement_time_ms_sum", &[("WorkloadType", w)]);
            let sum_s = s.sum("ray_scheduler_placement_time_s_sum", &[("WorkloadType", w)]);
            assert!((sum_s * 1000.0 - sum_ms).abs() < 1e-6 * sum_ms.max(1.0), "{w}: {sum_s} s vs {sum_ms} ms");
            // Same bounds, same cumulative counts: 1 s = 1000 ms, 10 s = 10000 ms, 0.1 s = 100 ms.
            for (sec, milli) in [("0.1", "100.0"), ("1.0", "1000.0"), ("10.0", "10000.0")] {
                let a = s.sum("ray_scheduler_placement_time_s_bucket", &[("WorkloadType", w), ("le", sec)]);
                let b = ms.sum("ray_scheduler_placement_time_ms_bucket", &[("WorkloadType", w), ("le", milli)]);
                assert_eq!(a, b, "{w} le={sec}");
            }
        }
        assert!(ms.sum("ray_scheduler_placement_time_ms_count", &[]) > 0.0);
        assert!(ms.families.contains_key("ray_local_resource_view_node_count"));
        assert!(!s.families.contains_key("ray_local_resource_view_node_count"), "not in Ray 2.49");
    }

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
