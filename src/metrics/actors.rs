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

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::Core;
use super::scrape::{Family, RayVersion, Scrape};
use super::shared::rows_of;
use crate::model::ActorState;
use crate::snapshot::ActorExecutorCount;

const HELP: &str = "Current number of actors by state.";

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let mut f = Family::gauge(enc, "ray_actors", HELP);
    if let (true, Some(head)) = (s.cluster, s.head_target()) {
        let at = Core { component: "gcs_server", at: head };
        for (class, state, count) in gcs_counts(s) {
            let labels = [("State", state.as_str()), ("Name", class), ("Source", "gcs"), ("JobId", "")];
            f.sample(&(at, labels), count)?;
        }
    }
    let (idle, running) =
        if s.version < RayVersion(2, 50) { ("IDLE", "RUNNING_TASK") } else { ("ALIVE_IDLE", "ALIVE_RUNNING_TASKS") };
    for n in &s.nodes {
        let at = Core { component: "core_worker", at: s.target(n) };
        for a in rows_of(&s.snap.actor_executor_counts, n.idx, |a: &ActorExecutorCount| a.node) {
            let state = if a.running { running } else { idle };
            let labels =
                [("State", state), ("Name", a.class.as_str()), ("Source", "executor"), ("JobId", a.job.as_str())];
            f.sample(&(at, labels), a.count)?;
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
