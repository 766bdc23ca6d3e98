//! Worker processes, OOM kills and failures: `ray_memory_manager_worker_eviction_total`,
//! `ray_node_manager_unexpected_worker_failure_total`, `ray_internal_num_processes_started`.
//!
//! Each raylet counts the kills of its own memory monitor and the workers that died
//! unexpectedly on its node, so both counters come from the node where it happened
//! (its `instance` and `NodeAddress`). Like Ray's, a series (node, Type, Name) appears
//! at its first event, and a node's series leave with the node.
//!
//! Owns: these worker families. Must never: import another collector, or label a
//! series with a worker or task id (`Name` is the task's or actor class's name).

use std::collections::BTreeMap;
use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::Core;
use super::scrape::{Family, RayVersion, Scrape};
use crate::snapshot::NodeView;

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let raylet = |n| Core { component: "raylet", at: s.target(n) };
    let by_node = [
        (
            "ray_memory_manager_worker_eviction_total",
            "Workers killed by the OOM killer, by type and task or actor name.",
            &s.snap.counters.oom_kills_by_node,
        ),
        (
            "ray_node_manager_unexpected_worker_failure_total",
            "Workers that exited unexpectedly (system error, killed), by type and task or actor name.",
            &s.snap.counters.worker_failures_by_node,
        ),
    ];
    for (name, help, counts) in by_node {
        // Ray 2.49's raylet has no unexpected-failure counter (2.60's has; the releases
        // between, not checked, get 2.60's).
        if name == "ray_node_manager_unexpected_worker_failure_total" && s.version < RayVersion(2, 50) {
            continue;
        }
        let mut f = Family::counter(enc, name, help);
        for &n in &s.nodes {
            for ((kind, task), count) in of_node(counts, n) {
                f.sample(&(raylet(n), [("Type", kind), ("Name", task)]), count)?;
            }
        }
    }
    let mut f = Family::gauge(
        enc,
        "ray_internal_num_processes_started",
        "Worker processes started by the raylet's worker pool.",
    );
    // Like Ray's, a node's series appears with its pool's first start.
    for &n in s.nodes.iter().filter(|n| n.stats.workers_started > 0) {
        f.sample(&raylet(n), n.stats.workers_started)?;
    }
    Ok(())
}

/// One node's counts by (Type, Name), in order.
fn of_node<'a>(
    counts: &'a BTreeMap<(u32, &'static str, String), u64>,
    n: &NodeView,
) -> impl Iterator<Item = ((&'static str, &'a str), u64)> + 'a {
    let idx = n.idx;
    counts
        .range((idx, "", String::new())..)
        .take_while(move |(k, _)| k.0 == idx)
        .map(|(k, v)| ((k.1, k.2.as_str()), *v))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::model::NodeState;

    #[test]
    fn oom_kills_are_reported_by_the_node_that_killed() {
        let e = all();
        let by_node = &cluster().counters.oom_kills_by_node;
        assert!(!by_node.is_empty(), "the test cluster's memory pressure kills something on an alive node");
        assert_eq!(e.families["ray_memory_manager_worker_eviction_total"].kind, "counter");
        for ((idx, kind, name), count) in by_node {
            let n = &cluster().nodes[*idx as usize];
            assert_eq!(n.state, NodeState::Alive);
            assert!(!n.is_head, "the pressure is on CPU workers");
            let at = [("NodeAddress", &*n.ip), ("Type", *kind), ("Name", name.as_str())];
            assert_eq!(e.sum("ray_memory_manager_worker_eviction_total", &at), *count as f64);
        }
        for s in e.of("ray_memory_manager_worker_eviction_total") {
            assert_eq!(s.label("instance"), format!("{}:8080", s.label("NodeAddress")));
            assert_eq!(s.label("Component"), "raylet");
        }
        // The dead node's kills are no longer anyone's series.
        let exported = e.sum("ray_memory_manager_worker_eviction_total", &[]);
        let alive: u64 = by_node.values().sum();
        assert_eq!(exported, alive as f64);
    }

    #[test]
    fn worker_failures_are_reported_by_the_node_they_ran_on() {
        let e = all();
        let by_node = &cluster().counters.worker_failures_by_node;
        assert!(!by_node.is_empty(), "the test cluster's task failures crash workers");
        for ((idx, kind, name), count) in by_node {
            let ip = &*cluster().nodes[*idx as usize].ip;
            let at = [("NodeAddress", ip), ("Type", *kind), ("Name", name.as_str())];
            assert_eq!(e.sum("ray_node_manager_unexpected_worker_failure_total", &at), *count as f64);
        }
        let w = node(&worker(false).ip);
        assert!(w
            .of("ray_node_manager_unexpected_worker_failure_total")
            .all(|s| s.label("NodeAddress") == &*worker(false).ip));
    }

    #[test]
    fn ray_2_49_has_no_unexpected_failure_counter() {
        assert!(all().families.contains_key("ray_node_manager_unexpected_worker_failure_total"));
        let old = all_as("2.49.2", None);
        assert!(!old.families.contains_key("ray_node_manager_unexpected_worker_failure_total"));
        assert!(old.families.contains_key("ray_memory_manager_worker_eviction_total"));
    }

    #[test]
    fn no_eviction_or_failure_series_before_the_first_event() {
        let mut snap = (**cluster()).clone();
        snap.counters.oom_kills_by_node.clear();
        snap.counters.worker_failures_by_node.clear();
        let e = parse(&crate::metrics::render_all(&std::sync::Arc::new(snap), None, &ctx()));
        assert!(!e.families.contains_key("ray_memory_manager_worker_eviction_total"));
        assert!(!e.families.contains_key("ray_node_manager_unexpected_worker_failure_total"));
    }
}
