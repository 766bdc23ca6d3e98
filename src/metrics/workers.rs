//! Worker processes, OOM kills and failures: `ray_memory_manager_worker_eviction_total`,
//! `ray_node_manager_unexpected_worker_failure_total`, `ray_internal_num_processes_started`.
//!
//! The model counts kills and failures by (Type, Name) cluster-wide, so the head's
//! raylet reports them; like Ray, neither family appears before its first event.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::Core;
use super::scrape::{Family, Scrape};

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    if let (true, Some(head)) = (s.cluster, s.head_target()) {
        let at = Core {
            component: "raylet",
            at: head,
        };
        let mut f = Family::counter(
            enc,
            "ray_memory_manager_worker_eviction_total",
            "Workers killed by the OOM killer, by type and task or actor name.",
        );
        for ((kind, name), count) in &s.snap.counters.oom_kills {
            f.sample(
                &(at, [("Type", *kind), ("Name", name.as_str())]),
                *count,
            )?;
        }
        let mut f = Family::counter(
            enc,
            "ray_node_manager_unexpected_worker_failure_total",
            "Workers that exited unexpectedly (system error, killed), by type and task or actor name.",
        );
        for ((kind, name), count) in &s.snap.counters.worker_failures {
            f.sample(
                &(at, [("Type", *kind), ("Name", name.as_str())]),
                *count,
            )?;
        }
    }
    let mut f = Family::gauge(
        enc,
        "ray_internal_num_processes_started",
        "Worker processes started by the raylet's worker pool.",
    );
    for &n in &s.nodes {
        f.sample(
            &Core {
                component: "raylet",
                at: s.target(n),
            },
            n.stats.workers_started,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn oom_kills_are_counted_by_type_and_name() {
        let e = all();
        let kills = &cluster().counters.oom_kills;
        assert!(
            !kills.is_empty(),
            "the test cluster's memory pressure kills something"
        );
        assert_eq!(
            e.families["ray_memory_manager_worker_eviction_total"].kind,
            "counter"
        );
        for ((kind, name), count) in kills {
            assert_eq!(
                e.sum(
                    "ray_memory_manager_worker_eviction_total",
                    &[("Type", *kind), ("Name", name.as_str())]
                ),
                *count as f64
            );
        }
    }

    #[test]
    fn no_eviction_family_before_the_first_kill() {
        let mut snap = (**cluster()).clone();
        snap.counters.oom_kills.clear();
        let e = parse(&crate::metrics::render_all(&std::sync::Arc::new(snap.clone()), None, &ctx()));
        assert!(!e
            .families
            .contains_key("ray_memory_manager_worker_eviction_total"));
    }
}
