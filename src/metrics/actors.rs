//! `ray_actors`: actors per lifecycle state from the GCS (`Source="gcs"`, on the head),
//! and alive actors per node from their own workers (`Source="executor"`), idle or
//! running tasks.
//!
//! The GCS does not know an actor's job when it records (`JobId=""`), so its series
//! sum over jobs; executor series keep `JobId`. Ray 2.4x named the executor states
//! `IDLE` / `RUNNING_TASK`; 2.5x+ `ALIVE_IDLE` / `ALIVE_RUNNING_TASKS`.
//!
//! Owns: `ray_actors`. Must never: import another collector, or label a series with an
//! actor id.

use std::collections::BTreeMap;
use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::{Core, TaskOrActor, WorkerId};
use super::scrape::{Family, RayVersion, Scrape};
use super::shared::rows_of;
use crate::model::ActorState;
use crate::snapshot::ActorExecutorCount;

const HELP: &str = "Current number of actors by state.";

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let mut f = Family::gauge(enc, "ray_actors", HELP);
    if let (true, Some(head)) = (s.cluster, s.head_target()) {
        let at = Core { component: "gcs_server", at: head };
        let worker = s.task_worker_id(WorkerId::System);
        let mut counts = gcs_counts(s);
        if s.task_name("").is_none() {
            // Names dropped (low): Ray sums what is left, per state.
            counts.iter_mut().for_each(|c| c.0 = "");
            counts.sort_unstable_by_key(|c| c.1);
            counts.dedup_by(|later, kept| {
                let same = later.1 == kept.1;
                if same {
                    kept.2 += later.2;
                }
                same
            });
        }
        for (class, state, count) in counts {
            let rest = [("Source", "gcs"), ("JobId", "")];
            f.sample(&(at, TaskOrActor { state: state.as_str(), name: s.task_name(class), rest, worker }), count)?;
        }
    }
    let (idle, running) =
        if s.version < RayVersion(2, 50) { ("IDLE", "RUNNING_TASK") } else { ("ALIVE_IDLE", "ALIVE_RUNNING_TASKS") };
    for n in &s.nodes {
        let at = Core { component: "core_worker", at: s.target(n) };
        let worker = s.task_worker_id(WorkerId::OfNode(n.idx));
        // Keyed by the class name the cardinality level keeps, so dropped names sum.
        let mut rows: BTreeMap<(&str, Option<&str>, &str), i64> = BTreeMap::new();
        for a in rows_of(&s.snap.actor_executor_counts, n.idx, |a: &ActorExecutorCount| a.node) {
            let state = if a.running { running } else { idle };
            *rows.entry((state, s.task_name(&a.class), a.job.as_str())).or_default() += a.count;
        }
        for ((state, name, job), count) in rows {
            let rest = [("Source", "executor"), ("JobId", job)];
            f.sample(&(at, TaskOrActor { state, name, rest, worker }), count)?;
        }
    }
    Ok(())
}

/// Actors per (class, state), summed over jobs.
fn gcs_counts<'a>(s: &Scrape<'a>) -> Vec<(&'a str, ActorState, i64)> {
    let mut rows: Vec<(&str, ActorState, i64)> =
        s.snap.actor_counts.iter().map(|a| (a.class.as_str(), a.state, a.count)).collect();
    rows.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    rows.dedup_by(|later, kept| {
        let same = (later.0, later.1) == (kept.0, kept.1);
        if same {
            kept.2 += later.2;
        }
        same
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::config::MetricCardinality;

    #[test]
    fn cardinality_levels_shape_actor_series_as_ray_does() {
        let total = |e: &Exposition, source: &str| e.sum("ray_actors", &[("Source", source)]);
        let base = all_as("2.60.0", None);
        let legacy = all_as("2.60.0", Some(MetricCardinality::Legacy));
        let low = all_as("2.60.0", Some(MetricCardinality::Low));
        assert!(base.of("ray_actors").all(|s| !s.has("WorkerId") && s.has("Name")));
        // GCS series: WorkerId "" (not a worker), which the text format carries as written.
        for s in legacy.of("ray_actors") {
            let id = s.label("WorkerId");
            assert!(s.has("WorkerId"), "{s:?}");
            assert_eq!(id.is_empty(), s.label("Source") == "gcs", "{s:?}");
        }
        assert!(low.of("ray_actors").all(|s| !s.has("Name") && !s.has("WorkerId")));
        let states = |e: &Exposition| e.of("ray_actors").filter(|s| s.label("Source") == "gcs").count();
        assert!(states(&low) <= states(&base));
        for source in ["gcs", "executor"] {
            assert!(total(&base, source) > 0.0, "{source}");
            assert_eq!(total(&legacy, source), total(&base, source), "{source}");
            assert_eq!(total(&low, source), total(&base, source), "{source}");
        }
    }

    #[test]
    fn gcs_series_count_every_actor_once() {
        let e = all();
        let total: i64 = cluster().actor_counts.iter().map(|a| a.count).sum();
        assert!(total > 0);
        assert_eq!(e.sum("ray_actors", &[("Source", "gcs")]), total as f64);
        for s in e.of("ray_actors").filter(|s| s.label("Source") == "gcs") {
            assert_eq!(s.label("Component"), "gcs_server");
            assert_eq!(s.label("NodeAddress"), &*head().ip);
        }
    }

    #[test]
    fn executor_series_count_alive_actors_by_node() {
        let e = all();
        let alive: i64 =
            cluster().actor_counts.iter().filter(|a| a.state == crate::model::ActorState::Alive).map(|a| a.count).sum();
        assert!(alive > 0);
        assert_eq!(e.sum("ray_actors", &[("Source", "executor")]), alive as f64);
        for s in e.of("ray_actors").filter(|s| s.label("Source") == "executor") {
            assert!(matches!(s.label("State"), "ALIVE_IDLE" | "ALIVE_RUNNING_TASKS"), "{s:?}");
            assert!(s.has("instance") && s.label("Component") == "core_worker");
        }
    }

    #[test]
    fn ray_2_4x_names_executor_states_the_old_way() {
        let mut snap = (**cluster()).clone();
        snap.version = "2.44.1".into();
        let e = parse(&crate::metrics::render_all(&std::sync::Arc::new(snap.clone()), None, &ctx()));
        assert!(e
            .of("ray_actors")
            .filter(|s| s.label("Source") == "executor")
            .all(|s| matches!(s.label("State"), "IDLE" | "RUNNING_TASK")));
    }
}
