//! Issue 7, A6: durations beyond the virtual clock's range are refused (config and
//! Jobs API) instead of wrapping the clock; the longest accepted one does not wrap.

mod api_support;

use api_support::*;
use std::process::Command;

#[test]
fn a_config_duration_past_the_clock_range_exits_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for value in ["99999999999999999h", "1e300", "18446744073709551615"] {
        let path = dir.path().join("long.yaml");
        std::fs::write(&path, format!("workloads:\n  - kind: fan_out\n    tasks: 10\n    task_duration: {value}\n"))
            .unwrap();
        let out =
            Command::new(env!("CARGO_BIN_EXE_rayscope")).args(["check", path.to_str().unwrap()]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        assert!(
            err.contains("long.yaml:4") && err.contains("workloads[0].task_duration") && err.contains("100 years"),
            "{value}: {err}"
        );
    }
}

#[test]
fn the_longest_accepted_duration_does_not_wrap_the_clock() {
    let text = "cluster: {host_node: false}\nworkloads:\n  - kind: fan_out\n    tasks: 10\n    task_duration: 36500d\n";
    let cfg = rayscope::config::load_str(text, "max.yaml").expect("100 years is accepted");
    let (_, report) = rayscope::sim::simulate(cfg, Some(rayscope::model::VirtualTime(3_600 * 1_000_000)), None, |_| {})
        .expect("a bounded run");
    // An hour in, tasks of 100 years are still running: none finished "immediately".
    assert_eq!(report.tasks_finished, 0, "tasks finished within an hour: the clock wrapped");
    assert!(report.tasks_submitted >= 10);
}

#[tokio::test]
async fn a_submitted_duration_past_the_clock_range_is_a_400() {
    let s = Server::with_token().await;
    let r = s.post("/api/jobs/", r#"{"entrypoint": "fan-out --tasks 10 --task-duration 99999999999999999h"}"#).await;
    assert_eq!(r.status, 400, "{}", r.text());
    let error = r.json()["error"].as_str().unwrap().to_string();
    assert!(error.contains("--task-duration") && error.contains("100 years"), "{error}");
    let r = s.post("/api/jobs/", r#"{"workload": "kind: fan_out\ntasks: 10\ntask_duration: 1e300"}"#).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("100 years"), "{}", r.text());
    s.stop().await;
}
