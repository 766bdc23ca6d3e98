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

use super::labels::Core;
use super::scrape::{Family, Scrape};
use super::shared::rows_of;
use crate::snapshot::RunningCount;

const HELP: &str = "Current number of tasks (including finished and failed ones) by state.";

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let mut f = Family::gauge(enc, "ray_tasks", HELP);
    if let (true, Some(head)) = (s.cluster, s.head_target()) {
        let at = Core { component: "core_worker", at: head };
        let mut owned: BTreeMap<(&str, &str, bool), i64> = BTreeMap::new();
        for t in s.snap.task_counts.iter().filter(|t| !t.state.is_running()) {
            *owned.entry((t.state.as_str(), t.name.as_str(), t.is_retry)).or_default() += t.count;
        }
        for ((state, name, is_retry), count) in owned {
            let labels =
                [("State", state), ("Name", name), ("Source", "owner"), ("IsRetry", retry(is_retry)), ("JobId", "")];
            f.sample(&(at, labels), count)?;
        }
    }
    for n in &s.nodes {
        let at = Core { component: "core_worker", at: s.target(n) };
        for t in rows_of(&s.snap.running_counts, n.idx, |r: &RunningCount| r.node) {
            let labels = [
                ("State", t.state.as_str()),
                ("Name", t.name.as_str()),
                ("Source", "executor"),
                ("IsRetry", retry(t.is_retry)),
                ("JobId", t.job.as_str()),
            ];
            f.sample(&(at, labels), t.count)?;
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

    #[test]
    fn a_workers_endpoint_has_only_its_executor_series() {
        let w = worker(false);
        let e = node(&w.ip);
        assert!(e.of("ray_tasks").all(|s| s.label("Source") == "executor" && s.label("NodeAddress") == &*w.ip));
    }
}
