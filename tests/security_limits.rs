//! Issue 7, A3: unbounded work is refused up front, naming the limit and the setting
//! that raises it (`cluster.limits.*`):
//! - configs with 3M nodes, 2^64 tasks, a depth-60 tree or 1e12 arrivals per minute
//!   exit 2 from `check` and `simulate` with file:line and the field;
//! - `POST /api/jobs/` with `fan-out --tasks 4000000000` is a 400, at once;
//! - the sum of live work is admitted job by job: 429 once it would pass
//!   `cluster.limits.max_live_tasks`.

mod api_support;

use api_support::*;
use std::process::Command;

const HUGE: &[(&str, &str, &str, &str)] = &[
    (
        "nodes.yaml",
        "cluster:\n  node_types:\n    - name: w\n      count: 3000000\n      cpu: 1\n      memory: 1GiB\n      ip_range: 10.0.0.0/8\n",
        "cluster.node_types",
        "cluster.limits.max_nodes",
    ),
    (
        "tasks.yaml",
        "workloads:\n  - kind: fan_out\n    tasks: 18446744073709551615\n",
        "workloads[0]",
        "cluster.limits.max_tasks_per_job",
    ),
    (
        "tree.yaml",
        "workloads:\n  - kind: flow_insight\n    depth: 60\n",
        "workloads[0]",
        "cluster.limits.max_tasks_per_job",
    ),
    (
        "arrivals.yaml",
        "workloads:\n  - kind: job_mix\n    arrivals_per_minute: 1e12\n    templates:\n      - workload: {kind: fan_out, tasks: 10}\n",
        "workloads[0].arrivals_per_minute",
        "cluster.limits.max_arrivals_per_minute",
    ),
];

#[test]
fn configs_asking_for_unbounded_work_exit_2_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, field, setting) in HUGE {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        for args in [
            vec!["check", path.to_str().unwrap()],
            vec!["simulate", "--config", path.to_str().unwrap(), "--until", "1m", "--quiet"],
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_rayscope")).args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {err}");
            assert!(err.contains(&format!("{name}:")) && err.contains(field) && err.contains(setting), "{name}: {err}");
        }
    }
}

#[test]
fn raising_the_limit_admits_the_config() {
    let text = "cluster:\n  limits: {max_tasks_per_job: 100000000, max_live_tasks: 100000000}\n\
                workloads:\n  - kind: fan_out\n    tasks: 10000000\n";
    rayscope::config::load_str(text, "raised.yaml").expect("a raised limit admits the job");
    let err = rayscope::config::load_str(
        &text.replace("max_tasks_per_job: 100000000", "max_tasks_per_job: 1000"),
        "low.yaml",
    )
    .expect_err("a lowered limit refuses it")
    .to_string();
    assert!(err.contains("low.yaml:4") && err.contains("over the limit of 1000"), "{err}");
}

#[tokio::test]
async fn a_job_of_four_billion_tasks_is_refused_with_400() {
    let s = Server::with_token().await;
    let r = s.post("/api/jobs/", r#"{"entrypoint": "fan-out --tasks 4000000000"}"#).await;
    assert_eq!(r.status, 400, "{}", r.text());
    let error = r.json()["error"].as_str().unwrap().to_string();
    assert!(error.contains("cluster.limits.max_tasks_per_job") && error.contains("4000000000"), "{error}");
    s.stop().await;
}

#[tokio::test]
async fn live_work_is_admitted_only_while_it_fits() {
    let mut cfg = config();
    cfg.workloads.clear();
    cfg.cluster.limits.max_live_tasks = 1_000;
    let s = Server::start(cfg, Tokens { token: Some(TOKEN), alert: None }).await;
    let job = r#"{"workload": "kind: fan_out\ntasks: 600\ntask_duration: 1h"}"#;
    let first = s.post("/api/jobs/", job).await;
    assert_eq!(first.status, 200, "{}", first.text());
    // 600 tasks and the driver are live for an hour: another 600 would pass 1,000.
    let second = s.post("/api/jobs/", job).await;
    assert_eq!(second.status, 429, "{}", second.text());
    let error = second.json()["error"].as_str().unwrap().to_string();
    assert!(error.contains("cluster.limits.max_live_tasks"), "{error}");
    // A job that fits is still admitted.
    let small = s.post("/api/jobs/", r#"{"workload": "kind: fan_out\ntasks: 10"}"#).await;
    assert_eq!(small.status, 200, "{}", small.text());
    s.stop().await;
}
