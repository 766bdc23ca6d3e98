//! `rayscope calibrate` on a recorded job whose costs are known: a synthetic trace in
//! the shape `observe --record` writes, every stamp placed from chosen costs (a 1 ms
//! `.remote()`, a 2.5 ms lease on an idle worker, 1.5 ms from the push to RUNNING, a
//! 300 ms worker start, a 100 MB argument pulled at about 1 GB/s). The command must
//! find each figure, set its costs in the reference machine's proportions, name every
//! cost it could not find with its fallback, and refuse a bad trace or job clearly.
//! Then `simulate --replay` runs with those costs by default, says where each came
//! from, and prints its prediction with the band measured for that kind of change.

mod common;

use rayscope::calibrate::{self, bands};
use rayscope::config::{self, scheduler::SchedulerConfig, WorkloadConfig};
use rayscope::observe::rows::{ObservedActor, ObservedJob, ObservedNode, ObservedTask};
use rayscope::observe::store::Change;
use rayscope::observe::trace::{Header, TraceLimits, TraceWriter};
use std::path::Path;

const JOB: &str = "01000000";
const T0: u64 = 1_795_000_000_000;
const SUBMITS: u64 = 42;
const START_MS: u64 = 300;
const BIG: u64 = 100_000_000;

fn driver() -> String {
    format!("{}{JOB}", "f".repeat(40))
}

struct Stamps {
    submit: u64,
    ready: u64,
    pushed: Option<u64>,
    running: u64,
    end: u64,
}

#[allow(clippy::too_many_arguments)]
fn task(id: String, kind: &str, node: &str, pid: u32, actor: Option<&str>, s: Stamps, bytes: Option<u64>) -> Change {
    let mut events =
        vec![("PENDING_ARGS_AVAIL".to_string(), T0 + s.submit), ("PENDING_NODE_ASSIGNMENT".to_string(), T0 + s.ready)];
    if let Some(p) = s.pushed {
        events.push(("SUBMITTED_TO_WORKER".into(), T0 + p));
    }
    events.push(("RUNNING".into(), T0 + s.running));
    events.push(("FINISHED".into(), T0 + s.end));
    Change::Task(ObservedTask {
        name: if kind == "ACTOR_CREATION_TASK" { "Sink.__init__".into() } else { "work".into() },
        task_id: id,
        job_id: JOB.into(),
        kind: kind.into(),
        state: "FINISHED".into(),
        parent_task_id: Some(driver()),
        actor_id: actor.map(Into::into),
        node_id: Some(node.into()),
        worker_pid: Some(pid),
        // An actor's creation asks for Ray's default: 1 CPU to be placed, none held.
        required_resources: if kind == "ACTOR_CREATION_TASK" { Vec::new() } else { vec![("CPU".into(), 1.0)] },
        start_time_ms: Some(T0 + s.running),
        end_time_ms: Some(T0 + s.end),
        events,
        return_bytes: bytes,
        ..Default::default()
    })
}

fn node(id: &str, head: bool) -> Change {
    Change::Node(ObservedNode {
        node_id: id.into(),
        node_ip: if head { "10.0.0.1".into() } else { "10.0.0.2".into() },
        is_head_node: head,
        state: "ALIVE".into(),
        resources_total: vec![("CPU".into(), 2.0)],
        start_time_ms: Some(T0),
        ..Default::default()
    })
}

/// The recorded job: 42 tasks submitted 1 ms apart, run on two workers of the head
/// (each worker's first call started its process: 300 ms), each later one leased 2 or
/// 3 ms after it asked and RUNNING 1 or 2 ms after its push; two actors created in
/// 300 ms + a lease + a push; then a 100 MB return made on the head and taken by a
/// call on the second node, pulled in 100.5 ms beyond its lease.
fn changes() -> Vec<Change> {
    let mut out = vec![
        node("aa", true),
        node("bb", false),
        Change::Job(ObservedJob {
            job_id: JOB.into(),
            entrypoint: "python job.py".into(),
            status: "SUCCEEDED".into(),
            start_time: Some(T0),
            end_time: Some(T0 + 5_000),
            ..Default::default()
        }),
        Change::Task(ObservedTask {
            task_id: driver(),
            job_id: JOB.into(),
            kind: "DRIVER_TASK".into(),
            state: "FINISHED".into(),
            start_time_ms: Some(T0),
            end_time_ms: Some(T0 + 5_000),
            ..Default::default()
        }),
    ];
    let mut free = [0u64; 2];
    for i in 0..SUBMITS {
        let worker = (i % 2) as usize;
        let submit = 10 + i;
        let ready = submit.max(free[worker]);
        let first = free[worker] == 0;
        let lease = if (i / 2) % 2 == 0 { 2 } else { 3 };
        let push = if (i / 2) % 2 == 0 { 1 } else { 2 };
        let pushed = ready + lease + if first { START_MS } else { 0 };
        let running = pushed + push;
        let end = running + 10;
        free[worker] = end;
        let s = Stamps { submit, ready, pushed: Some(pushed), running, end };
        out.push(task(format!("t{i:03}"), "NORMAL_TASK", "aa", 100 + worker as u32, None, s, None));
    }
    for (a, at) in [("cc01", 1_000), ("cc02", 1_500)] {
        out.push(Change::Actor(ObservedActor {
            actor_id: a.into(),
            job_id: JOB.into(),
            class_name: "Sink".into(),
            state: "DEAD".into(),
            ..Default::default()
        }));
        // A creation's wait: 2.5 ms of lease, 1.5 ms of push and start, 300 ms of start.
        let s = Stamps { submit: at, ready: at, pushed: None, running: at + START_MS + 4, end: at + START_MS + 5 };
        out.push(task(format!("c{a}"), "ACTOR_CREATION_TASK", "aa", 200 + at as u32, Some(a), s, None));
    }
    // The second node's worker: its first call starts it, the next pulls its argument.
    let s = Stamps { submit: 2_000, ready: 2_000, pushed: Some(2_000 + START_MS + 2), running: 2_304, end: 2_310 };
    out.push(task("w0".into(), "NORMAL_TASK", "bb", 300, None, s, None));
    let s = Stamps { submit: 3_000, ready: 3_000, pushed: Some(3_003), running: 3_004, end: 3_100 };
    out.push(task("p0".into(), "NORMAL_TASK", "aa", 400, None, s, Some(BIG)));
    let s = Stamps { submit: 3_001, ready: 3_101, pushed: Some(3_101 + 103), running: 3_205, end: 3_300 };
    out.push(task("q0".into(), "NORMAL_TASK", "bb", 300, None, s, None));
    out
}

fn write_trace(dir: &Path, changes: &[Change]) {
    let mut w = TraceWriter::open(dir, TraceLimits::default(), Header::default()).unwrap();
    w.append(changes).unwrap();
}

fn reference_us(f: impl Fn(&SchedulerConfig) -> u64) -> f64 {
    f(&SchedulerConfig::default()) as f64
}

fn derived_us(costs: &calibrate::TraceCosts, key: &str) -> f64 {
    let d = costs.derived.iter().find(|d| d.key == key).unwrap_or_else(|| panic!("{key} not derived: {costs:#?}"));
    d.value.strip_suffix("us").and_then(|v| v.parse::<f64>().ok()).unwrap_or_else(|| panic!("{key}: {}", d.value))
}

#[test]
fn calibrate_recovers_the_costs_the_stamps_were_placed_from() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), &changes());
    let (_, costs) = calibrate::from_trace(dir.path(), None).unwrap();
    let figure = |name: &str| {
        costs.figures.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no {name} figure: {costs:#?}"))
    };
    // The loop: 42 submits, 41 ms apart in all.
    assert!((figure("submit").value - 1_000.0).abs() < 1.0, "{:?}", figure("submit"));
    assert_eq!(derived_us(&costs, "scheduler.call_submit_cost"), 1_000.0);
    // The lease and the push: the mean of whole-ms stamps.
    assert!((figure("lease").value - 2_500.0).abs() < 1.0, "{:?}", figure("lease"));
    // 1 or 2 ms on the loop's calls, and 1 ms on the pulling call's.
    let push = figure("push and start").value;
    assert!((push - 61_000.0 / 41.0).abs() < 1.0, "{:?}", figure("push and start"));
    // A figure's costs add up to it, in the reference machine's proportions.
    let (lease, dispatch) =
        (derived_us(&costs, "scheduler.lease_latency"), derived_us(&costs, "scheduler.dispatch_cost"));
    assert!((lease + dispatch - 2_500.0).abs() <= 1.0, "{lease} + {dispatch}");
    let reference = reference_us(|s| s.lease_latency.as_micros()) / reference_us(|s| s.dispatch_cost.as_micros());
    assert!((lease / dispatch - reference).abs() < 0.01, "{lease}/{dispatch} against the reference's {reference}");
    // A lone worker start.
    let start = figure("worker start").value;
    assert!((start - 300_000.0).abs() < 1_000.0, "worker start {start} µs");
    let start_costs =
        derived_us(&costs, "scheduler.worker_start_cpu") + derived_us(&costs, "scheduler.worker_start_latency");
    assert!((start_costs - start).abs() <= 1.0);
    // 100 MB in 100.5 ms.
    let rate = figure("transfer").value;
    assert!((rate - 1e8 / 0.1005).abs() < 1e6, "transfer {rate} B/s");
    // What no stamp shows keeps the reference machine's value, named with why.
    let fallback = |key: &str| costs.fallbacks.iter().find(|f| f.key == key).unwrap_or_else(|| panic!("{key}"));
    assert!(fallback("scheduler.sleep_overshoot").why.contains("does not say what a call asked to sleep"));
    assert_eq!(fallback("scheduler.sleep_overshoot").value, SchedulerConfig::default().sleep_overshoot.to_string());
    assert!(fallback("scheduler.actor_call_submit_cost").why.contains("shows no actor call submit loop"));
    let all = config::calibration::CALIBRATED_SCHEDULER_COSTS.len()
        + config::calibration::CALIBRATED_OBJECT_STORE_COSTS.len();
    assert_eq!(costs.derived.len() + costs.fallbacks.len(), all, "every calibrated cost is derived or falls back");
    // The fragment is a config's sections: it loads, and gives those values.
    let cfg = config::load_str(&format!("{}workloads:\n  - {{kind: fan_out, tasks: 1}}\n", costs.to_yaml()), "costs")
        .unwrap_or_else(|e| panic!("{e}\n{}", costs.to_yaml()));
    assert_eq!(cfg.scheduler.call_submit_cost.as_micros(), 1_000);
    assert_eq!(
        cfg.scheduler.sleep_overshoot,
        SchedulerConfig::default().sleep_overshoot,
        "a fallback is the reference's"
    );
}

#[test]
fn a_job_that_shows_no_figure_keeps_every_reference_cost_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let few: Vec<Change> = changes().into_iter().take(8).collect();
    write_trace(dir.path(), &few);
    let (_, costs) = calibrate::from_trace(dir.path(), Some(JOB)).unwrap();
    assert!(costs.derived.is_empty(), "{:?}", costs.derived);
    assert!(costs.fallbacks.iter().any(|f| f.key == "scheduler.lease_latency" && f.why.contains("10 normal tasks")));
    assert!(costs.to_yaml().contains("scheduler: {}"), "{}", costs.to_yaml());
}

fn rayscope(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rayscope")).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn the_command_writes_the_fragment_and_refuses_a_bad_trace_or_job() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    write_trace(&trace, &changes());
    let out = dir.path().join("costs.yaml");
    let (code, _, err) = rayscope(&["calibrate", "--trace", trace.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("lease 2.500 ms over 40") && err.contains("not determined (24)"), "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("  call_submit_cost: 1000us") && text.contains("# sleep_overshoot:"), "{text}");
    let (code, _, err) = rayscope(&["calibrate", "--trace", trace.to_str().unwrap(), "--job", "02000000"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--job 02000000: the trace has no such job (jobs: 01000000)"), "{err}");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, _, err) = rayscope(&["calibrate", "--trace", empty.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no trace here"), "{err}");
    let (code, help, _) = rayscope(&["calibrate", "--help"]);
    assert_eq!(code, Some(0));
    assert!(help.contains("SUBMITTED_TO_WORKER") && help.contains("--costs FILE"), "{help}");
}

#[test]
fn a_replay_runs_with_its_traces_costs_says_where_each_came_from_and_bands_its_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    write_trace(&trace, &changes());
    let trace_arg = trace.to_str().unwrap();
    let cluster = |head_cpu: u32| {
        let path = dir.path().join(format!("cluster-{head_cpu}.yaml"));
        std::fs::write(
            &path,
            format!(
                "cluster:\n  host_node: false\n  head: {{cpu: {head_cpu}, memory: 8GiB}}\n  node_types:\n    - {{name: w, \
                 cpu: 2, memory: 8GiB, ip_range: 10.1.0.0/16, count: 1}}\n"
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    let same = cluster(2);
    let json = |extra: &[&str]| {
        let mut args = vec!["simulate", "--config", &same, "--replay", trace_arg, "--report", "json"];
        args.extend(extra);
        let (code, out, err) = rayscope(&args);
        assert_eq!(code, Some(0), "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let by_trace = json(&[]);
    let costs = by_trace["costs"].as_array().unwrap();
    let source = |key: &str| costs.iter().find(|c| c["key"] == key).map(|c| c["source"].as_str().unwrap().to_string());
    assert_eq!(source("scheduler.call_submit_cost").as_deref(), Some("trace"));
    assert_eq!(source("scheduler.sleep_overshoot").as_deref(), Some("reference"));
    assert!(by_trace["costs_origin"].as_str().unwrap().contains("this trace's"), "{by_trace}");
    assert!(by_trace.get("calibration_warning").is_none(), "costs from the trace are no config's change: {by_trace}");
    // The suite's errors were measured with the reference costs: a replay with its
    // trace's is not quoted them (its band is `prediction`'s).
    let quoted = |r: &serde_json::Value| r.get("measured").and_then(|m| m.as_array()).map_or(0, |m| m.len());
    assert_eq!(quoted(&by_trace), 0, "{by_trace}");
    assert_eq!(by_trace["prediction"]["change"], "same_shape");
    // A costs file written by calibrate gives the same run; the reference, another.
    let file = dir.path().join("costs.yaml");
    let (code, _, err) = rayscope(&["calibrate", "--trace", trace_arg, "--out", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let by_file = json(&["--costs", file.to_str().unwrap()]);
    assert_eq!(by_file["event_log_sha256"], by_trace["event_log_sha256"]);
    assert_eq!(source_of(&by_file, "scheduler.call_submit_cost"), "file");
    let by_reference = json(&["--costs", "reference"]);
    assert_ne!(by_reference["event_log_sha256"], by_trace["event_log_sha256"]);
    assert_eq!(source_of(&by_reference, "scheduler.call_submit_cost"), "reference");
    assert!(quoted(&by_reference) > 0, "the reference costs are the suite's: {by_reference}");
    assert_eq!(quoted(&by_file), 0, "{by_file}");
    // A start measured on the user's cluster brings Ray's own worker pool with it; the
    // reference costs run the reference's pool, and a config's choice stands.
    let pool = |r: &serde_json::Value| {
        r["costs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["key"] == "scheduler.worker_prestart")
            .map(|c| (c["value"].as_str().unwrap().to_string(), c["source"].as_str().unwrap().to_string()))
    };
    assert_eq!(source("scheduler.worker_start_cpu").as_deref(), Some("trace"), "{by_trace}");
    assert_eq!(pool(&by_trace), Some(("true".into(), "trace".into())));
    assert_eq!(pool(&by_file), Some(("true".into(), "file".into())));
    assert_eq!(pool(&by_reference), None);
    // A fit's record sets a start too, but it is the suite's, fitted with the pool off.
    let fit = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ray-calibration/runs/fit.json");
    let by_fit = json(&["--costs", fit.to_str().unwrap()]);
    assert_eq!(source_of(&by_fit, "scheduler.worker_start_cpu"), "file");
    assert_eq!(pool(&by_fit), None);
    let without_pool = json(&["--set", "scheduler.worker_prestart=false"]);
    assert_eq!(pool(&without_pool), Some(("false".into(), "config".into())));
    // A recorded job replayed on 6 CPUs starts workers for its burst of leases, and the
    // pool one more (a kept what-if recording: scripts/ray-whatif/runs/traces).
    let kept = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/ray-whatif/runs/traces/2026-12-06T15-56-46Z/mixed/record/trace");
    let six = cluster(6);
    let on_six = |extra: &[&str]| {
        let mut args = vec!["simulate", "--config", &six, "--replay", kept.to_str().unwrap(), "--report", "json"];
        args.extend(extra);
        let (code, out, err) = rayscope(&args);
        assert_eq!(code, Some(0), "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["jobs"][0]["makespan"].as_f64().unwrap()
    };
    let (with, without) = (on_six(&[]), on_six(&["--set", "scheduler.worker_prestart=false"]));
    assert!(with > without, "the spare's start takes the cores: {with} s against {without} s");
    // A cost the config sets stays the config's.
    let by_config = json(&["--set", "scheduler.call_submit_cost=7us"]);
    assert_eq!(source_of(&by_config, "scheduler.call_submit_cost"), "config");
    assert!(by_config["calibration_warning"].as_str().unwrap().contains("(scheduler.call_submit_cost)"), "{by_config}");
    // 100× the CPUs: the band of a shape change and a warning.
    let big = cluster(398);
    let (code, text, err) = rayscope(&["simulate", "--config", &big, "--replay", trace_arg]);
    assert_eq!(code, Some(0), "{err}");
    assert!(text.contains("prediction        predicted makespan") && text.contains("more or fewer CPUs"), "{text}");
    assert!(text.contains("WARNING: 100.000× the recorded CPUs (400 against 4)"), "{text}");
    assert!(text.contains("costs             ") && text.contains("from this trace:"), "{text}");
    assert!(!text.contains("measured on Ray"), "{text}");
    // A sweep bands each value's prediction and warns where a value is far out.
    let sweep = json(&["--sweep", "cluster.head.cpu=2,398"]);
    let predictions = sweep["predictions"].as_array().unwrap_or_else(|| panic!("{sweep}"));
    assert_eq!(predictions[0]["prediction"]["change"], "same_shape");
    assert_eq!(predictions[0]["replay_warnings"], serde_json::json!([]));
    assert_eq!(predictions[1]["prediction"]["change"], "shape");
    assert!(predictions[1]["replay_warnings"][0].as_str().unwrap().contains("the recorded CPUs"), "{sweep}");
    assert_eq!(source_of(&sweep, "scheduler.call_submit_cost"), "trace");
    assert_eq!(quoted(&sweep), 0, "{sweep}");
    let (code, _, err) = rayscope(&["simulate", "--config", &same, "--costs", "trace"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--costs trace: only a replay has a trace"), "{err}");
}

fn source_of(report: &serde_json::Value, key: &str) -> String {
    report["costs"].as_array().unwrap().iter().find(|c| c["key"] == key).unwrap()["source"].as_str().unwrap().into()
}

#[test]
fn a_replay_with_the_reference_costs_is_the_run_it_was_before_costs_came_from_traces() {
    // `--costs reference` adds no override: the same event log as the library's run of
    // the config with the replayed job, as `simulate --replay` made before.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    write_trace(&trace, &changes());
    let yaml = "cluster:\n  host_node: false\n  head: {cpu: 2, memory: 8GiB}\n";
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, yaml).unwrap();
    let (code, out, err) = rayscope(&[
        "simulate",
        "--config",
        cluster.to_str().unwrap(),
        "--replay",
        trace.to_str().unwrap(),
        "--costs",
        "reference",
        "--report",
        "json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let cli: serde_json::Value = serde_json::from_str(&out).unwrap();
    let snap = rayscope::observe::runner::trace_snapshot(&trace, Default::default()).unwrap();
    let record = snap.flow.job(JOB).unwrap().clone();
    let tables = snap.tables.as_ref().unwrap();
    let requests = tables.tasks.iter().map(|r| (r.id, tables.spec_requests[r.spec as usize].clone())).collect();
    let job = rayscope::flow::replay::replay_job(&record, &trace.display().to_string(), &requests, Default::default())
        .unwrap();
    let mut cfg = config::load_file_with(&cluster, &[]).unwrap();
    // The recorded first calls give up the first-call cost the model charges itself.
    let job = job.for_first_call_cost(cfg.scheduler.worker_first_call_latency.as_micros());
    cfg.workloads = vec![WorkloadConfig::Replay(config::replay::ReplayConfig {
        name: "replay".into(),
        job: std::sync::Arc::new(job),
    })];
    let (_, report) = rayscope::sim::simulate(cfg, None, None, |_| {}).unwrap();
    assert_eq!(cli["event_log_sha256"].as_str().unwrap(), report.event_log_sha256);
    assert_eq!(cli["calibration"].as_str().unwrap(), config::calibration::CALIBRATION.line());
    let recorded = bands::recorded_shape(&calibrate::from_trace(&trace, None).unwrap().0, JOB);
    assert_eq!(recorded.node_cpus, vec![2.0, 2.0], "the head and the node the calls ran on");
}

/// The actor tree recorded by `scripts/ray-whatif/whatif.py` on a 2-CPU head (Ray 2.60,
/// this project's 2-core Intel Xeon VM, 2026-12-02 20:13 UTC; Ray's Jobs API gave 6.548
/// s): each actor's first call began 2-11 ms after its creation ended. `calibrate` reads
/// that gap, and the same-shape replay holds its 2 % bound with it, where the task
/// workers' first-call cost as the actors' window (the model before) does not.
#[test]
fn an_actor_trees_own_first_call_gap_keeps_its_same_shape_replay_within_two_percent() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ray-2.60/actor-tree-trace");
    let (code, _, err) = rayscope(&["calibrate", "--trace", trace]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("actor's first call 8.000 ms over 3"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::head2_cluster(dir.path());
    let makespan = |extra: &[&str]| {
        let mut args = vec!["simulate", "--config", cfg.to_str().unwrap(), "--replay", trace, "--report", "json"];
        args.extend_from_slice(extra);
        let (code, out, err) = rayscope(&args);
        assert_eq!(code, Some(0), "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        report["jobs"][0]["makespan"].as_f64().unwrap()
    };
    let recorded = 6.548;
    let error = |s: f64| (s - recorded) / recorded;
    let own = makespan(&[]);
    assert!(error(own).abs() <= 0.02, "replay {own} s against Ray's {recorded} s");
    let before = makespan(&["--set", "scheduler.actor_first_call_latency=271500us"]);
    assert!(error(before) > 0.02, "with the task workers' first-call cost: {before} s");
}
