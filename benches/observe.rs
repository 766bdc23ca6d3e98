//! Observe mode at the scale of one big real job: an ended job of 1,000,000 calls (a
//! driver fanning out to 1,000 callers, each making 999 calls of its own, the shape
//! whose `ray.get` waits `inferred::get_waits` reads), merged into the store as pushed
//! parts arrive, then made ready to view: the snapshot with the job's Flow Insight
//! records, and the job's records alone.
//!
//! Prints one JSON line (what BENCHMARKS.md records) after a human-readable summary.
//! Not criterion: one run of each step is already seconds long, and the figure wanted
//! is the time an operator waits for it.
//!
//! `cargo bench --bench observe` (`RAYSCOPE_BENCH_CALLS=100000` for a shorter run)

use rayscope::observe::flow::{job_record, Totals};
use rayscope::observe::publish::{snapshot, ClusterInfo, FlowCache};
use rayscope::observe::rows::{ObservedJob, ObservedTask};
use rayscope::observe::store::{Change, Store, StoreLimits};
use std::time::Instant;

// The server's allocator, so allocation costs what it costs there.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const JOB: &str = "01000000";
const T0: u64 = 1_795_000_000_000;

fn task_id(n: u64) -> String {
    format!("{n:016x}ffffffffffffffff{JOB}")
}

/// A call's two pushed parts: its definition and its transitions.
fn call(n: u64, parent: u64, name: &str, submit: u64, run: u64, end: u64) -> [Change; 2] {
    let definition = ObservedTask {
        task_id: task_id(n),
        job_id: JOB.into(),
        name: name.into(),
        func_or_class_name: name.into(),
        kind: if n == 0 { "DRIVER_TASK" } else { "NORMAL_TASK" }.into(),
        parent_task_id: (n != 0).then(|| task_id(parent)),
        ..Default::default()
    };
    let transitions = ObservedTask {
        task_id: task_id(n),
        job_id: JOB.into(),
        state: "FINISHED".into(),
        events: vec![
            ("PENDING_ARGS_AVAIL".into(), submit),
            ("PENDING_NODE_ASSIGNMENT".into(), submit),
            ("RUNNING".into(), run),
            ("FINISHED".into(), end),
        ],
        start_time_ms: Some(run),
        end_time_ms: Some(end),
        ..Default::default()
    };
    [Change::Task(definition), Change::Task(transitions)]
}

fn main() {
    let calls: u64 = std::env::var("RAYSCOPE_BENCH_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let callers = (calls as f64).sqrt().round().max(1.0) as u64;
    let per_caller = calls / callers - 1;
    let mut changes = Vec::with_capacity(calls as usize * 2 + 4);
    changes.push(Change::Job(ObservedJob {
        job_id: JOB.into(),
        status: "RUNNING".into(),
        entrypoint: "python big.py".into(),
        start_time: Some(T0),
        ..Default::default()
    }));
    let end_of_job = T0 + 10 * callers + 31 * (per_caller / 2 + 1) + 1_000;
    changes.extend(call(0, 0, "driver", T0, T0, end_of_job));
    let mut n = 1;
    for c in 0..callers {
        let caller = n;
        let at = T0 + 10 * c;
        let caller_end = at + 2 + 31 * (per_caller / 2 + 1) + 100;
        changes.extend(call(caller, 0, "caller", at, at + 1, caller_end));
        n += 1;
        for k in 0..per_caller {
            // Submitted in pairs, the next pair 1 ms after the last ended: the caller
            // waited for each pair in `ray.get`.
            let submit = at + 2 + 31 * (k / 2);
            changes.extend(call(n, caller, "leaf", submit, submit + 1, submit + 30));
            n += 1;
        }
    }
    changes.push(Change::Job(ObservedJob {
        job_id: JOB.into(),
        status: "SUCCEEDED".into(),
        end_time: Some(end_of_job),
        ..Default::default()
    }));
    let tasks = n;
    let limits = StoreLimits { max_tasks: tasks as usize + 1, ..StoreLimits::default() };

    let started = Instant::now();
    let mut store = Store::new(limits);
    for c in &changes {
        store.apply(c);
    }
    let ingest = started.elapsed().as_secs_f64();
    drop(changes);
    assert_eq!(store.attempts() as u64, tasks, "every call held");

    let started = Instant::now();
    let snap = snapshot(&store, &ClusterInfo::default(), &mut FlowCache::default(), 1, end_of_job);
    let view = started.elapsed().as_secs_f64();
    let recorded = snap.flow.jobs.len();

    let started = Instant::now();
    let record = job_record(&store, 1, &mut Totals::default()).expect("the job");
    let rebuild = started.elapsed().as_secs_f64();
    let blocks =
        record.records.iter().filter(|r| matches!(r, rayscope::snapshot::flow::Rec::Block { .. })).count() as u64;

    println!(
        "observe: an ended job of {tasks} tasks ({callers} callers): ingest {ingest:.2} s \
         ({:.0} parts/s), snapshot with its Flow Insight records {view:.2} s, its records alone {rebuild:.2} s \
         ({blocks} inferred ray.get waits)",
        (2 * tasks + 2) as f64 / ingest
    );
    println!(
        "{}",
        serde_json::json!({
            "bench": "observe", "tasks": tasks, "callers": callers, "ingest_seconds": ingest,
            "snapshot_seconds": view, "job_record_seconds": rebuild, "inferred_waits": blocks,
            "jobs_recorded": recorded,
        })
    );
}
