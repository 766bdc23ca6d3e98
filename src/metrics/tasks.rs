//! `ray_tasks`: tasks per state, as the sum of what owners and executors report.
//!
//! Owners (core workers that submitted the tasks) report every non-running state; the
//! model keeps one cluster-wide owner view, reported as if every owner ran on the head
//! (see the module docs of `metrics`). Each executing node reports RUNNING and
//! RUNNING_IN_RAY_GET for what runs there (`Source="executor"`, what "Running Tasks by
//! Node" reads). Summing over `Source` gives the model's exact counts.
//!
//! Owner series carry `JobId=""`, as Ray's owners send them (the owner-side task event
//! buffer does not tag the job), so the owner view is summed over jobs; only executor
//! series name their job. A dashboard that groups `ray_tasks` by `JobId` would see
//! nothing pending on real Ray, and must not see it here either.
//!
//! Owns: `ray_tasks`. Must never: import another collector, or label a series with a
//! task id.

use std::collections::BTreeMap;
use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::{Core, TaskOrActor, WorkerId};
use super::scrape::{Family, Scrape};
use super::shared::rows_of;
use crate::snapshot::RunningCount;

const HELP: &str = "Current number of tasks (including finished and failed ones) by state.";

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let mut f = Family::gauge(enc, "ray_tasks", HELP);
    if let (true, Some(head)) = (s.cluster, s.head_target()) {
        let at = Core { component: "core_worker", at: head };
        // Keyed by the name the cardinality level keeps, so dropped names sum.
        let mut owned: BTreeMap<(&str, Option<&str>, bool), i64> = BTreeMap::new();
        for t in s.snap.task_counts.iter().filter(|t| !t.state.is_running()) {
            *owned.entry((t.state.as_str(), s.task_name(&t.name), t.is_retry)).or_default() += t.count;
        }
        let worker = s.task_worker_id(WorkerId::OfNode(s.head.map_or(0, |h| h.idx)));
        for ((state, name, is_retry), count) in owned {
            let rest = [("Source", "owner"), ("IsRetry", retry(is_retry)), ("JobId", "")];
            f.sample(&(at, TaskOrActor { state, name, rest, worker }), count)?;
        }
    }
    for n in &s.nodes {
        let at = Core { component: "core_worker", at: s.target(n) };
        let worker = s.task_worker_id(WorkerId::OfNode(n.idx));
        let rows = rows_of(&s.snap.running_counts, n.idx, |r: &RunningCount| r.node);
        if s.task_name("").is_some() {
            for t in rows {
                let rest = [("Source", "executor"), ("IsRetry", retry(t.is_retry)), ("JobId", t.job.as_str())];
                let labels = TaskOrActor { state: t.state.as_str(), name: Some(&t.name), rest, worker };
                f.sample(&(at, labels), t.count)?;
            }
        } else {
            // Names dropped (low): Ray sums what is left.
            let mut summed: BTreeMap<(&str, bool, &str), i64> = BTreeMap::new();
            for t in rows {
                *summed.entry((t.state.as_str(), t.is_retry, t.job.as_str())).or_default() += t.count;
            }
            for ((state, is_retry, job), count) in summed {
                let rest = [("Source", "executor"), ("IsRetry", retry(is_retry)), ("JobId", job)];
                f.sample(&(at, TaskOrActor { state, name: None, rest, worker }), count)?;
            }
        }
    }
    Ok(())
}

fn retry(is_retry: bool) -> &'static str {
    if is_retry {
        "1"
    } else {
        "0"
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::config::MetricCardinality;
    use std::collections::BTreeMap;

    #[test]
    fn summing_over_source_gives_the_snapshots_counts() {
        let e = all();
        let mut got: BTreeMap<(String, String, String), f64> = BTreeMap::new();
        for s in e.of("ray_tasks") {
            let key = (s.label("State").into(), s.label("Name").into(), s.label("IsRetry").into());
            *got.entry(key).or_default() += s.value;
        }
        let mut want: BTreeMap<(String, String, String), f64> = BTreeMap::new();
        for t in &cluster().task_counts {
            let key = (t.state.as_str().into(), t.name.clone(), if t.is_retry { "1" } else { "0" }.into());
            *want.entry(key).or_default() += t.count as f64;
        }
        assert!(want.keys().any(|k| k.0 == "RUNNING"), "the test cluster has running tasks");
        assert_eq!(got, want);
    }

    #[test]
    fn executor_series_report_running_states_on_their_own_node() {
        let e = all();
        let mut executors = 0;
        for s in e.of("ray_tasks").filter(|s| s.label("Source") == "executor") {
            executors += 1;
            assert!(matches!(s.label("State"), "RUNNING" | "RUNNING_IN_RAY_GET"), "{s:?}");
            assert_eq!(s.label("instance"), format!("{}:8080", s.label("NodeAddress")));
        }
        assert!(executors > 0);
        for s in e.of("ray_tasks").filter(|s| s.label("Source") == "owner") {
            assert_eq!(s.label("NodeAddress"), &*head().ip);
            assert_eq!(s.label("JobId"), "", "owners send no job id, as in Ray: {s:?}");
            assert!(!s.label("State").starts_with("RUNNING"), "{s:?}");
        }
    }

    /// Per (State, Source, IsRetry, JobId): what summing over names and workers gives.
    fn totals(e: &Exposition) -> BTreeMap<[String; 4], f64> {
        let mut t = BTreeMap::new();
        for s in e.of("ray_tasks") {
            let key = ["State", "Source", "IsRetry", "JobId"].map(|k| s.label(k).to_string());
            *t.entry(key).or_default() += s.value;
        }
        t
    }

    #[test]
    fn legacy_cardinality_keeps_worker_id_on_every_series() {
        let e = all_as("2.60.0", Some(MetricCardinality::Legacy));
        assert!(e.of("ray_tasks").count() > 0);
        for s in e.of("ray_tasks") {
            let id = s.label("WorkerId");
            assert!(id.len() == 56 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{s:?}");
            assert!(s.has("Name"), "{s:?}");
        }
        assert_eq!(totals(&e), totals(&all()), "the level changes labels, never the counts");
    }

    #[test]
    fn recommended_cardinality_drops_worker_id_and_keeps_names() {
        let e = all_as("2.60.0", Some(MetricCardinality::Recommended));
        assert!(e.of("ray_tasks").all(|s| !s.has("WorkerId") && s.has("Name")));
        assert_eq!(totals(&e), totals(&all()));
    }

    #[test]
    fn low_cardinality_drops_names_too_and_sums_what_is_left() {
        let full = all_as("2.60.0", Some(MetricCardinality::Recommended));
        let e = all_as("2.60.0", Some(MetricCardinality::Low));
        assert!(e.of("ray_tasks").all(|s| !s.has("WorkerId") && !s.has("Name")));
        assert!(e.of("ray_tasks").count() < full.of("ray_tasks").count(), "names summed away");
        let mut keys: Vec<_> = e.of("ray_tasks").map(|s| s.labels.clone()).collect();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "one series per label set");
        assert_eq!(totals(&e), totals(&full));
    }

    #[test]
    fn each_version_has_its_own_default_level() {
        // 2.49: legacy (WorkerId kept); 2.60: recommended (dropped).
        assert!(all_as("2.49.2", None).of("ray_tasks").all(|s| s.has("WorkerId")));
        assert!(all_as("2.60.0", None).of("ray_tasks").all(|s| !s.has("WorkerId")));
        // 2.49's OpenCensus backend acts on recommended only: low keeps every label.
        let low = all_as("2.49.2", Some(MetricCardinality::Low));
        assert!(low.of("ray_tasks").all(|s| s.has("WorkerId") && s.has("Name")));
        let rec = all_as("2.49.2", Some(MetricCardinality::Recommended));
        assert!(rec.of("ray_tasks").all(|s| !s.has("WorkerId") && s.has("Name")));
    }

    #[test]
    fn a_workers_endpoint_has_only_its_executor_series() {
        let w = worker(false);
        let e = node(&w.ip);
        assert!(e.of("ray_tasks").all(|s| s.label("Source") == "executor" && s.label("NodeAddress") == &*w.ip));
    }
}
