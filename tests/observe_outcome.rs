//! Calls Ray marks FAILED only because their job ended, read from real Ray 2.49 and
//! 2.60 listings (tests/fixtures/ray-profile/, made by
//! scripts/ray-observe/profile_probe.py): a `Supervisor` actor's `run()` got all 6 of
//! its `train` calls' results (the program asserts it), returned, and the driver exited
//! at once. Ray's listing then holds a few FINISHED `train`s, two FAILED with
//! `WORKER_DIED` ("Worker force exited because its job has finished") and the rest stuck
//! where their workers' last report left them. None may show as failed: each is a call
//! that "ended with the job, outcome not reported", with Ray's state kept beside it.

use rayscope::flow::graph::{graph, Level};
use rayscope::flow::spans::Spans;
use rayscope::observe::flow::{job_record, Totals};
use rayscope::observe::rows::{read_rows, ObservedJob, ObservedTask};
use rayscope::observe::store::{Change, Store, StoreLimits};
use serde_json::Value;
use std::path::Path;

fn listing(version: &str) -> Vec<ObservedTask> {
    program_listing(version, "supervisor")
}

fn program_listing(version: &str, program: &str) -> Vec<ObservedTask> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/ray-profile/{version}/{program}/tasks.json"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (tasks, bad) = read_rows("tasks", v["data"]["result"]["result"].as_array().unwrap(), ObservedTask::from_row);
    assert!(bad.is_empty(), "{bad:?}");
    tasks
}

/// The job as the store holds it after the listing, ended with `status`.
fn observed(version: &str, status: &str) -> (Store, u32) {
    observed_program(version, "supervisor", status)
}

fn observed_program(version: &str, program: &str, status: &str) -> (Store, u32) {
    let tasks = program_listing(version, program);
    let driver = tasks.iter().find(|t| t.is_driver()).expect("listed with exclude_driver=false");
    let mut store = Store::new(StoreLimits::default());
    store.apply(&Change::Job(ObservedJob {
        job_id: driver.job_id.clone(),
        status: status.into(),
        start_time: driver.started_ms(),
        end_time: driver.ended_ms(),
        ..Default::default()
    }));
    for t in &tasks {
        store.apply(&Change::Task(t.clone()));
    }
    let job = u32::from_str_radix(&driver.job_id[..2], 16).unwrap();
    (store, job)
}

fn train_edge(store: &Store, job: u32) -> (Value, usize) {
    let rec = job_record(store, job, &mut Totals::default()).expect("the job's records");
    let spans = Spans::replay(&rec, u64::MAX);
    let failed = spans.spans.iter().filter(|s| s.end.is_some() && !s.ok).count();
    let g = graph(&rec, &spans, Level::Class, true);
    let edge = g["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["source"] == "Supervisor.run" && e["target"] == "train")
        .cloned()
        .unwrap_or_else(|| panic!("no Supervisor.run -> train edge: {g}"));
    (edge, failed)
}

#[test]
fn calls_killed_with_their_job_after_their_caller_returned_are_not_failed() {
    for version in ["2.49", "2.60"] {
        let listed = listing(version);
        let trains: Vec<&ObservedTask> = listed.iter().filter(|t| t.name == "train").collect();
        let finished = trains.iter().filter(|t| t.state == "FINISHED").count() as u64;
        assert_eq!(trains.len(), 6, "{version}: the program's 6 calls are listed");
        assert!(
            trains.iter().any(|t| t.state == "FAILED" && t.killed_with_job),
            "{version}: Ray marked some FAILED for the job's end (the case under test)"
        );
        let (store, job) = observed(version, "SUCCEEDED");
        let (edge, failed) = train_edge(&store, job);
        assert_eq!(failed, 0, "{version}: no returned call shows as failed: {edge}");
        assert_eq!(edge["calls"], 6, "{version}: {edge}");
        assert_eq!(edge["completed"], finished, "{version}: only Ray's FINISHED calls are completed: {edge}");
        assert_eq!(edge["ended_with_job"], 6 - finished, "{version}: the rest ended with the job: {edge}");
        let rec = job_record(&store, job, &mut Totals::default()).unwrap();
        let notes = rec.observed.as_deref().unwrap();
        let states: Vec<&str> = notes.ended_with_job.values().map(|e| e.ray_state.as_str()).collect();
        assert!(states.contains(&"FAILED"), "{version}: Ray's state is kept beside each: {states:?}");
        assert_eq!(notes.lost, [], "{version}: nothing is told lost that is told ended with the job");
        let json = rayscope::flow::observed::observed_json(&rec);
        let listed = json["ended_with_job_calls"].as_array().unwrap();
        assert_eq!(listed.len() as u64, 6 - finished, "{json}");
        assert!(listed.iter().any(|c| c["ray_state"] == "FAILED" && c["ray_error_type"] == "WORKER_DIED"), "{json}");
    }
}

#[test]
fn a_job_whose_driver_failed_keeps_rays_failures() {
    // The supervisor's run() returned, so its calls still went on; but the driver's
    // own call did not go on for a failed job: had run() been killed too, it would fail.
    let (store, job) = observed("2.60", "FAILED");
    let (edge, _) = train_edge(&store, job);
    assert_eq!(edge["calls"], 6);
    assert!(edge["ended_with_job"].as_u64().unwrap_or(0) > 0, "run() returned, its calls went on: {edge}");
}

#[test]
fn a_job_whose_driver_lingered_has_nothing_lost_or_unreported() {
    // The probe program lingers 2.5 s before ray.shutdown(): Ray's listing is whole.
    for version in ["2.49", "2.60"] {
        let (store, job) = observed_program(version, "probe", "SUCCEEDED");
        let rec = job_record(&store, job, &mut Totals::default()).unwrap();
        let notes = rec.observed.as_deref().unwrap();
        assert_eq!((notes.ended_with_job.len(), notes.lost.len()), (0, 0), "{version}: {notes:?}");
        assert_eq!(rec.recorded_calls, 12, "{version}: 11 calls and the driver");
    }
}

/// The Gantt draws a call whose end Ray lost to its caller's end, the latest it can have
/// ended, and says so in its args; a call Ray saw end says nothing of the kind.
#[test]
fn the_gantt_marks_the_calls_whose_end_ray_lost() {
    use rayscope::flow::timeline::{timeline, Window};
    use std::collections::BTreeSet;
    let mut marked_somewhere = 0;
    for version in ["2.49", "2.60"] {
        let (store, job) = observed(version, "SUCCEEDED");
        let rec = job_record(&store, job, &mut Totals::default()).expect("the job's records");
        let spans = Spans::replay(&rec, u64::MAX);
        let tl = timeline(&rec, &spans, &Window::ALL);
        let calls: Vec<&Value> = tl["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "task").collect();
        let marked: BTreeSet<String> = calls
            .iter()
            .filter(|e| e["args"]["end_lost"] == true)
            .map(|e| e["args"]["span"].as_str().unwrap().to_string())
            .collect();
        let lost: BTreeSet<String> = rec
            .observed
            .as_ref()
            .expect("an observed job's notes")
            .ended_with_job
            .keys()
            .map(|span| format!("{span:016x}"))
            .collect();
        assert!(!lost.is_empty(), "{version}: the case under test has calls that ended with the job");
        // A call still pending when its job ended never ran: it has no bar to mark.
        let drawn: BTreeSet<String> = calls.iter().map(|e| e["args"]["span"].as_str().unwrap().to_string()).collect();
        let lost_drawn: BTreeSet<String> = lost.intersection(&drawn).cloned().collect();
        assert_eq!(marked, lost_drawn, "{version}: every bar whose end Ray lost is marked, and only those");
        assert!(calls.len() > marked.len(), "{version}: the calls Ray saw end are not marked: {calls:?}");
        marked_somewhere += marked.len();
    }
    assert!(marked_somewhere > 0, "neither listing has a started call whose end Ray lost: the case is not under test");
}
