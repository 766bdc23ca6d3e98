//! A job run with `RAY_PROFILING=1`, read from real Ray 2.49 and 2.60 listings
//! (tests/fixtures/ray-profile/, scripts/ray-observe/profile_probe.py): the waits of
//! each caller in `ray.get`/`ray.wait` are Ray's own spans, not inferred, and the same
//! job without its spans falls back to inference and says so.

use rayscope::flow::spans::Spans;
use rayscope::observe::flow::{job_record, Totals};
use rayscope::observe::rows::{read_rows, ObservedJob, ObservedTask};
use rayscope::observe::store::{Change, Store, StoreLimits};
use rayscope::snapshot::flow::Rec;
use rayscope::snapshot::flow_notes::Waits;
use serde_json::Value;
use std::path::Path;

fn listing(version: &str) -> Vec<ObservedTask> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/ray-profile/{version}/probe/tasks.json"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (tasks, bad) = read_rows("tasks", v["data"]["result"]["result"].as_array().unwrap(), ObservedTask::from_row);
    assert!(bad.is_empty(), "{bad:?}");
    tasks
}

fn store_of(tasks: &[ObservedTask]) -> (Store, u32) {
    let driver = tasks.iter().find(|t| t.is_driver()).unwrap();
    let mut store = Store::new(StoreLimits::default());
    store.apply(&Change::Job(ObservedJob {
        job_id: driver.job_id.clone(),
        status: "SUCCEEDED".into(),
        start_time: driver.started_ms(),
        end_time: driver.ended_ms(),
        ..Default::default()
    }));
    for t in tasks {
        store.apply(&Change::Task(t.clone()));
    }
    (store, u32::from_str_radix(&driver.job_id[..2], 16).unwrap())
}

/// Each span's blocked time in the records, µs.
fn blocked_by_span(rec: &rayscope::snapshot::flow::JobRecord) -> std::collections::BTreeMap<u64, u64> {
    let mut from = std::collections::BTreeMap::new();
    let mut out = std::collections::BTreeMap::new();
    for r in rec.records.iter() {
        match *r {
            Rec::Block { span, t } => {
                from.insert(span, t);
            }
            Rec::Unblock { span, t } => *out.entry(span).or_insert(0) += t - from.remove(&span).unwrap(),
            _ => {}
        }
    }
    out
}

#[test]
fn a_profiled_jobs_waits_are_rays_own_spans() {
    for version in ["2.49", "2.60"] {
        let tasks = listing(version);
        let (store, job) = store_of(&tasks);
        let rec = job_record(&store, job, &mut Totals::default()).unwrap();
        assert_eq!(rec.observed.as_deref().unwrap().waits, Waits::Measured, "{version}");
        let blocked = blocked_by_span(&rec);
        for caller in tasks.iter().filter(|t| !t.profile.is_empty()) {
            let span = store.task_number(&caller.task_id).unwrap();
            let spans_us: u64 =
                caller.profile.iter().filter(|p| p.name != "ray.put").map(|p| p.end_us - p.start_us).sum();
            let got = blocked.get(&span).copied().unwrap_or(0);
            // Ray's task times are whole ms: a span may be clamped by a ms at either end.
            assert!(
                got <= spans_us && spans_us - got <= 2_000 * 3,
                "{version}: {} blocked {got} µs in the records, {spans_us} µs in Ray's spans",
                if caller.name.is_empty() { "the driver" } else { &caller.name }
            );
        }
        let mid = tasks.iter().find(|t| t.name == "mid").unwrap();
        assert_eq!(
            mid.profile.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["ray.wait", "ray.put", "ray.get", "ray.get"],
            "{version}: mid's calls, as the program makes them"
        );
        // The spans replay: the driver is blocked for most of the job.
        let spans = Spans::replay(&rec, u64::MAX);
        assert!(spans.spans.iter().all(|s| s.end.is_some()), "{version}: every call ended");
    }
}

#[test]
fn without_profile_spans_the_waits_are_inferred_and_said_so() {
    let tasks: Vec<ObservedTask> =
        listing("2.60").into_iter().map(|t| ObservedTask { ray_profiling: false, profile: Vec::new(), ..t }).collect();
    let (store, job) = store_of(&tasks);
    let rec = job_record(&store, job, &mut Totals::default()).unwrap();
    assert_eq!(rec.observed.as_deref().unwrap().waits, Waits::Inferred);
    let json = rayscope::flow::observed::observed_json(&rec);
    assert!(json["profiling_howto"].as_str().unwrap().contains("RAY_PROFILING"), "{json}");
}

/// The job as a push-only observer holds it after Ray's pushed events.
fn pushed(version: &str) -> (Store, u32) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/ray-profile/{version}/probe/push.json"));
    let body = std::fs::read(path).unwrap();
    let (changes, acc) = rayscope::observe::push::parse_batch(&body).unwrap();
    assert_eq!(acc.errors, Vec::<String>::new(), "{version}");
    let mut store = Store::new(StoreLimits::default());
    for c in &changes {
        store.apply(c);
    }
    let job = store.jobs.keys().next().copied().or_else(|| store.tasks.values().map(|t| t.job).next()).unwrap();
    (store, job)
}

fn edges(store: &Store, job: u32) -> Vec<((u32, u32), u64, u64)> {
    let rec = job_record(store, job, &mut Totals::default()).unwrap();
    rec.edges.iter().map(|(k, e)| (*k, e.calls, e.completed)).collect()
}

#[test]
fn ray_249_and_260_pushes_give_the_job_pull_gives() {
    for version in ["2.49", "2.60"] {
        let (pulled, job) = store_of(&listing(version));
        let (pushed, pushed_job) = pushed(version);
        assert_eq!(pushed_job, job, "{version}");
        assert_eq!(edges(&pushed, job), edges(&pulled, job), "{version}: the same calls, all completed");
        let rec = job_record(&pushed, job, &mut Totals::default()).unwrap();
        assert!(rec.end_us.is_some(), "{version}: the pushed job ended");
        // Ray 2.60 pushes the profile spans; 2.49 sends none.
        let want = if version == "2.60" { Waits::Measured } else { Waits::Inferred };
        assert_eq!(rec.observed.as_deref().unwrap().waits, want, "{version}");
    }
}
