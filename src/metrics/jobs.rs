//! GCS bookkeeping of placement groups and jobs: `ray_placement_groups`,
//! `ray_running_jobs`, `ray_finished_jobs_total`, `ray_job_duration_s`, and the
//! cumulative `ray_node_failure_total` / `ray_unintentional_worker_failures_total`,
//! which exist only from their first event. All come from the GCS on the head.
//!
//! Owns: these GCS families. Must never: import another collector, or report them
//! from any node but the head.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::Core;
use super::scrape::{Family, RayVersion, Scrape};
use crate::model::{JobStatus, PgState};

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let (true, Some(head)) = (s.cluster, s.head_target()) else {
        return Ok(());
    };
    let at = Core { component: "gcs_server", at: head };
    let snap = s.snap;

    // Like the GCS, say nothing about placement groups until one exists; then report
    // every state, so a state that empties reads 0 rather than vanishing.
    if !snap.pg_counts.is_empty() {
        let mut f = Family::gauge(enc, "ray_placement_groups", "Current number of placement groups by state.");
        // Ray 2.49's GCS tags them with State only; 2.60's adds Source="gcs" (the
        // releases between, not checked, get 2.60's form).
        let tagged_with_source = s.version >= RayVersion(2, 50);
        for state in PgState::ALL {
            let count = snap.pg_counts.get(state.as_str()).copied().unwrap_or(0);
            if tagged_with_source {
                f.sample(&(at, [("State", state.as_str()), ("Source", "gcs")]), count)?;
            } else {
                f.sample(&(at, [("State", state.as_str())]), count)?;
            }
        }
    }

    Family::gauge(enc, "ray_running_jobs", "Number of jobs currently running.").sample(&at, snap.running_jobs)?;
    Family::counter(enc, "ray_finished_jobs_total", "Number of jobs finished.")
        .sample(&at, snap.counters.jobs_finished)?;

    let mut f = Family::gauge(enc, "ray_job_duration_s", "Duration of a finished job, in seconds.");
    for j in snap.jobs.iter().filter(|j| j.status != JobStatus::Running && j.status != JobStatus::Pending) {
        if let Some(end) = j.end_time_us {
            let seconds = end.micros_since(j.start_time_us) as f64 / 1e6;
            f.sample(&(at, [("JobId", j.id.as_str())]), seconds)?;
        }
    }

    // The GCS records these at each failure, so like Ray's they do not exist before
    // the first one (`increase()` then sees the first failure as a new series).
    if snap.counters.node_failures > 0 {
        Family::counter(enc, "ray_node_failure_total", "Number of node failures recorded by the GCS.")
            .sample(&at, snap.counters.node_failures)?;
    }
    let failures: u64 =
        snap.counters.worker_failures.values().sum::<u64>() + snap.counters.oom_kills.values().sum::<u64>();
    if failures > 0 {
        Family::counter(
            enc,
            "ray_unintentional_worker_failures_total",
            "Number of worker failures that were not intentional (crashes, OOM kills).",
        )
        .sample(&at, failures)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn ray_2_49_tags_placement_groups_without_source() {
        let old = all_as("2.49.2", None);
        assert!(old.of("ray_placement_groups").count() > 0);
        assert!(old.of("ray_placement_groups").all(|s| !s.has("Source") && s.has("State")));
        assert_eq!(old.sum("ray_placement_groups", &[]), all().sum("ray_placement_groups", &[]));
    }

    #[test]
    fn placement_groups_report_every_state_once_one_exists() {
        let e = all();
        let states: Vec<&str> = e.of("ray_placement_groups").map(|s| s.label("State")).collect();
        assert_eq!(states, ["PENDING", "PREPARED", "CREATED", "REMOVED", "RESCHEDULING"]);
        let total: i64 = cluster().pg_counts.values().sum();
        assert_eq!(e.sum("ray_placement_groups", &[("Source", "gcs")]), total as f64);
    }

    #[test]
    fn no_placement_group_family_before_the_first_one() {
        let mut snap = (**cluster()).clone();
        snap.pg_counts.clear();
        let e = parse(&crate::metrics::render_all(&std::sync::Arc::new(snap.clone()), None, &ctx()));
        assert!(!e.families.contains_key("ray_placement_groups"));
    }

    #[test]
    fn job_counters_come_from_the_gcs_on_the_head() {
        let e = all();
        assert_eq!(e.families["ray_finished_jobs_total"].kind, "counter");
        assert_eq!(e.sum("ray_running_jobs", &[]), cluster().running_jobs as f64);
        assert_eq!(e.of("ray_running_jobs").next().unwrap().label("NodeAddress"), &*head().ip);
        assert_eq!(e.sum("ray_node_failure_total", &[]), cluster().counters.node_failures as f64);
    }

    #[test]
    fn failure_counters_exist_only_from_their_first_failure() {
        let mut snap = (**cluster()).clone();
        assert!(snap.counters.node_failures > 0, "the test cluster kills a node");
        let e = all();
        assert_eq!(e.families["ray_unintentional_worker_failures_total"].kind, "counter");
        snap.counters.node_failures = 0;
        snap.counters.oom_kills.clear();
        snap.counters.worker_failures.clear();
        let e = parse(&crate::metrics::render_all(&std::sync::Arc::new(snap), None, &ctx()));
        assert!(!e.families.contains_key("ray_node_failure_total"));
        assert!(!e.families.contains_key("ray_unintentional_worker_failures_total"));
        assert!(e.families.contains_key("ray_running_jobs"));
    }

    #[test]
    fn a_workers_endpoint_has_no_gcs_series() {
        let e = node(&worker(false).ip);
        assert!(e.of("ray_running_jobs").next().is_none());
    }
}
