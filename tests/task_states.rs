//! Task states as Ray 2.60 records them, compared with what real Ray listed for the same
//! kinds of task (`scripts/ray-calibration/task_states.py`, kept in
//! `scripts/ray-calibration/runs/task-states.json`): a normal task, an actor's creation,
//! actor calls queued behind each other, and a task retried after an application error,
//! whose every attempt is its own record with its own terminal state and error type.

mod common;

use rayscope::model::{ErrorType, TaskRecord, TaskState, TaskType};
use serde_json::Value;
use std::path::Path;

/// Ray's recorded sequence for the first record matching `(type, name, attempt)`.
fn ray_sequence(runs: &Value, kind: &str, name: &str, attempt: u64) -> Vec<String> {
    let task = runs["tasks"]
        .as_array()
        .expect("a list of tasks")
        .iter()
        .find(|t| t["type"] == kind && t["name"] == name && t["attempt_number"] == attempt)
        .unwrap_or_else(|| panic!("real Ray recorded {kind} {name} attempt {attempt}"));
    task["sequence"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

/// The model's sequence for a finished record. The argument fetch states are left out:
/// the tasks Ray ran for the recording had no arguments to fetch.
fn model_sequence(r: &TaskRecord) -> Vec<String> {
    r.history
        .events(r.state)
        .map(|(s, _)| s)
        .filter(|s| !matches!(s, TaskState::PendingArgsFetch | TaskState::PendingActorTaskArgsFetch))
        .map(|s| s.as_str().to_string())
        .collect()
}

fn at(r: &TaskRecord, state: TaskState) -> Option<u64> {
    r.history.events(r.state).find(|(s, _)| *s == state).map(|(_, t)| t)
}

const CONFIG: &str = "cluster:
  host_node: false
  head: {cpu: 8, memory: 32GiB}
workloads:
  - kind: fan_out
    name: flaky
    tasks: 200
    reducers: 1
    task_duration: 100ms
    reduce_duration: 100ms
    max_retries: 5
    retry_exceptions: true
  - kind: actor_pool
    name: pool
    actors: 2
    calls_per_actor: 20
    call_duration: 50ms
faults:
  - {kind: task_failures, at: 0s, until: 5s, probability: 0.3, application_error: true}
sim: {seed: 3}
";

#[test]
fn every_kind_of_task_goes_through_rays_own_states() {
    let runs: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ray-calibration/runs/task-states.json"),
        )
        .expect("the recording is in the repo"),
    )
    .unwrap();
    assert_eq!(runs["ray_version"], "2.60.0");
    let normal = ray_sequence(&runs, "NORMAL_TASK", "plain", 0);
    let failed_attempt = ray_sequence(&runs, "NORMAL_TASK", "flaky", 0);
    let retried = ray_sequence(&runs, "NORMAL_TASK", "flaky", 1);
    let actor_call = ray_sequence(&runs, "ACTOR_TASK", "Queue.quick", 0);
    let creation = ray_sequence(&runs, "ACTOR_CREATION_TASK", "Queue.__init__", 0);

    let e = common::run(common::load(CONFIG));
    let records: Vec<&TaskRecord> = e.model.finished_tasks.iter().collect();
    let of = |kind: TaskType, state: TaskState| records.iter().filter(move |r| r.kind == kind && r.state == state);
    let mut checked = [0usize; 5];
    for r in of(TaskType::NormalTask, TaskState::Finished) {
        let want = if r.attempt == 0 { &normal } else { &retried };
        assert_eq!(&model_sequence(r), want, "{r:?}");
        // Handed to the worker, then running after the worker's per-call overhead.
        assert!(at(r, TaskState::Running) >= at(r, TaskState::SubmittedToWorker), "{r:?}");
        checked[0] += 1;
        checked[2] += (r.attempt > 0) as usize;
    }
    for r in of(TaskType::NormalTask, TaskState::Failed) {
        assert_eq!(&model_sequence(r), &failed_attempt, "{r:?}");
        assert_eq!(r.error, Some(ErrorType::TaskExecutionException), "{r:?}");
        checked[1] += 1;
    }
    for r in of(TaskType::ActorTask, TaskState::Finished) {
        assert_eq!(&model_sequence(r), &actor_call, "{r:?}");
        checked[3] += 1;
    }
    for r in of(TaskType::ActorCreationTask, TaskState::Finished) {
        assert_eq!(&model_sequence(r), &creation, "{r:?}");
        checked[4] += 1;
    }
    assert!(checked.iter().all(|n| *n > 0), "every kind was seen: {checked:?}");

    // Every attempt of a retried task is its own record: attempts 0..=k of one task id,
    // all FAILED with the application's error but the last.
    let mut by_id: std::collections::BTreeMap<u64, Vec<&TaskRecord>> = Default::default();
    for r in records.iter().filter(|r| r.kind == TaskType::NormalTask) {
        by_id.entry(r.id.0).or_default().push(r);
    }
    let mut retried_tasks = 0;
    for attempts in by_id.values().filter(|a| a.len() > 1) {
        let mut numbers: Vec<u32> = attempts.iter().map(|r| r.attempt).collect();
        numbers.sort();
        assert_eq!(numbers, (0..attempts.len() as u32).collect::<Vec<_>>(), "{attempts:?}");
        let last = attempts.iter().max_by_key(|r| r.attempt).unwrap();
        for r in attempts.iter().filter(|r| r.attempt != last.attempt) {
            assert_eq!((r.state, r.error), (TaskState::Failed, Some(ErrorType::TaskExecutionException)), "{r:?}");
        }
        retried_tasks += 1;
    }
    assert!(retried_tasks > 10, "only {retried_tasks} tasks were retried");
}

#[test]
fn a_call_to_an_actor_not_yet_alive_waits_for_its_address_then_is_pushed() {
    // The pool's first calls are submitted while the actors start: they wait in
    // PENDING_NODE_ASSIGNMENT, then are pushed (SUBMITTED_TO_WORKER) and queue.
    let e = common::run(common::load(CONFIG));
    let created: Vec<u64> = e
        .model
        .finished_tasks
        .iter()
        .filter(|r| r.kind == TaskType::ActorCreationTask)
        .filter_map(|r| at(r, TaskState::Finished))
        .collect();
    let alive_at = *created.iter().min().expect("actors were created");
    let early = e
        .model
        .finished_tasks
        .iter()
        .filter(|r| r.kind == TaskType::ActorTask && r.submitted_at / 1000 < alive_at)
        .collect::<Vec<_>>();
    assert!(!early.is_empty(), "some calls were made before the actors were alive");
    for r in early {
        let pushed = at(r, TaskState::SubmittedToWorker).expect("pushed");
        assert!(pushed >= alive_at, "pushed at {pushed} ms, before any actor was alive at {alive_at} ms: {r:?}");
        assert!(at(r, TaskState::PendingActorTaskOrderingOrConcurrency) >= Some(pushed), "{r:?}");
    }
}
