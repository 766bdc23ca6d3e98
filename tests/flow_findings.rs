//! Findings named after Ray's documented patterns and anti-patterns (`flow::findings`),
//! on small programs whose shape is fixed by their source: each anti-pattern program run
//! in the model gets its finding, with what its fix saves from a re-run, and the same
//! program written the documented way gets none. Where the model cannot run a program
//! (a result fetched alone, an argument sent by value), its records are written by hand
//! as an observed job's would be.

mod common;

use rayscope::config::replay::{ReplayCall, ReplayConfig, ReplayJob, ReplayKind, ReplayStep};
use rayscope::config::{self, WorkloadConfig};
use rayscope::flow::findings::{self, Finding, Kind};
use rayscope::flow::spans::Spans;
use rayscope::snapshot::flow::{Chunked, JobRecord, Rec, Target, TargetKind};
use std::collections::BTreeMap;
use std::sync::Arc;

const MS: u64 = 1_000;

fn call(kind: ReplayKind, name: &str, actor: Option<u32>, cpu: f64, steps: Vec<ReplayStep>) -> ReplayCall {
    let class = name.split('.').next().unwrap_or(name).to_string();
    ReplayCall {
        kind,
        name: name.into(),
        class,
        actor,
        resources: if cpu > 0.0 { vec![("CPU".into(), cpu)] } else { Vec::new() },
        deps: Vec::new(),
        return_bytes: 0,
        first_on_worker: false,
        steps,
        computes: Default::default(),
    }
}

/// A driver (call 0) with `driver` steps and `calls` after it; run on a head of `cpus`
/// CPUs, and the job's findings.
fn run(cpus: u32, driver: Vec<ReplayStep>, calls: Vec<ReplayCall>) -> (Vec<Finding>, u64) {
    let mut all = vec![call(ReplayKind::Driver, "_main", None, 0.0, driver)];
    all.extend(calls);
    let actors = all.iter().filter_map(|c| c.actor).max().map_or(0, |a| a + 1);
    let job = Arc::new(ReplayJob { source: "test".into(), calls: all, actors, recorded_makespan_us: 0, ends_lost: 0 });
    let yaml = format!("cluster:\n  host_node: false\n  head: {{cpu: {cpus}, memory: 64GiB}}\n");
    let mut cfg = config::load_str(&yaml, "findings.yaml").unwrap_or_else(|e| panic!("{e}"));
    cfg.workloads = vec![WorkloadConfig::Replay(ReplayConfig { name: "program".into(), job })];
    let (engine, _) = rayscope::sim::simulate(cfg, None, None, |_| {}).unwrap();
    let snap = engine.publish(rayscope::sim::PublishOptions::seq(0));
    let record = snap.flow.jobs.values().next().expect("the program's job is recorded").clone();
    let spans = Spans::replay(&record, snap.sim_time_us.as_micros());
    let root = spans.root().unwrap();
    let makespan = spans.spans[root].end.expect("the program ends") - spans.spans[root].submit;
    (findings::findings(&record, &spans), makespan)
}

fn kinds(f: &[Finding]) -> Vec<Kind> {
    f.iter().map(|f| f.kind).collect()
}

fn hold(ms: u64) -> Vec<ReplayStep> {
    vec![ReplayStep::Hold(ms * MS)]
}

/// `f` called `n` times: one at a time (`ray.get` after each submit) or all first.
fn get_loop_program(n: u32, in_loop: bool) -> (Vec<ReplayStep>, Vec<ReplayCall>) {
    let calls = (0..n).map(|_| call(ReplayKind::Function, "f", None, 1.0, hold(200))).collect();
    let mut driver = Vec::new();
    for k in 1..=n {
        driver.push(ReplayStep::Submit(k));
        if in_loop {
            driver.push(ReplayStep::Get);
        }
    }
    if !in_loop {
        driver.push(ReplayStep::Get);
    }
    (driver, calls)
}

#[test]
fn ray_get_in_a_loop_is_named_and_its_fix_saves_what_parallel_calls_save() {
    let (driver, calls) = get_loop_program(10, true);
    let (found, makespan) = run(16, driver, calls);
    assert_eq!(kinds(&found), vec![Kind::GetInLoop], "{found:#?}");
    let f = &found[0];
    assert_eq!(f.place, "_main → f");
    // Ten 200 ms calls one after another, or side by side on 16 CPUs: about 1.8 s.
    let saved = f.saves_us.expect("the job ended: its fix was re-run");
    assert!(saved >= 1_500_000 && saved < makespan, "saves {saved} µs of {makespan} µs");
    let (driver, calls) = get_loop_program(10, false);
    let (found, _) = run(16, driver, calls);
    assert!(found.is_empty(), "all submitted, then one ray.get: {found:#?}");
}

#[test]
fn an_actor_called_one_call_at_a_time_is_named_and_a_pipelined_one_is_not() {
    let program = |pipelined: bool| {
        let mut calls = vec![call(ReplayKind::ActorCreation, "Queue.__init__", Some(0), 0.0, hold(1))];
        calls.extend((0..8).map(|_| call(ReplayKind::Method, "Queue.put", Some(0), 0.0, hold(50))));
        let mut driver = vec![ReplayStep::Submit(1)];
        for k in 2..=9 {
            driver.push(ReplayStep::Submit(k));
            if !pipelined {
                driver.push(ReplayStep::Get);
            }
        }
        driver.push(ReplayStep::Get);
        run(4, driver, calls)
    };
    let (found, makespan) = program(false);
    assert_eq!(kinds(&found), vec![Kind::BlockedActorCalls], "{found:#?}");
    assert_eq!(found[0].place, "_main → Queue.put");
    assert!(found[0].saves_us.is_some_and(|s| s < makespan), "{found:#?}");
    let (found, _) = program(true);
    assert!(found.is_empty(), "pipelined: {found:#?}");
}

#[test]
fn calls_shorter_than_their_own_start_are_too_fine_grained_and_long_ones_are_not() {
    let program = |hold_us: u64| {
        // On 4 CPUs, so that the calls reuse the workers the first ones started.
        let calls =
            (0..100).map(|_| call(ReplayKind::Function, "tiny", None, 1.0, vec![ReplayStep::Hold(hold_us)])).collect();
        let mut driver: Vec<ReplayStep> = (1..=100).map(ReplayStep::Submit).collect();
        driver.push(ReplayStep::Get);
        run(4, driver, calls)
    };
    let (found, _) = program(10);
    assert_eq!(kinds(&found), vec![Kind::TooFineGrained], "{found:#?}");
    assert!(found[0].saves_us.is_some_and(|s| s > 0), "{found:#?}");
    let (found, _) = program(500_000);
    assert!(!kinds(&found).contains(&Kind::TooFineGrained), "500 ms calls: {found:#?}");
}

#[test]
fn a_job_that_waits_for_cpus_is_pending_on_resources_and_one_that_fits_is_not() {
    let program = |cpus: u32| {
        let calls = (0..10).map(|_| call(ReplayKind::Function, "work", None, 1.0, hold(1_000))).collect();
        let mut driver: Vec<ReplayStep> = (1..=10).map(ReplayStep::Submit).collect();
        driver.push(ReplayStep::Get);
        run(cpus, driver, calls)
    };
    let (found, makespan) = program(2);
    assert_eq!(kinds(&found), vec![Kind::PendingOnResources], "{found:#?}");
    // Five rounds of two 1 s calls, or one round with enough CPUs: about 4 s saved.
    let saved = found[0].saves_us.unwrap();
    assert!(saved >= 3_000_000 && saved < makespan, "saves {saved} µs of {makespan} µs");
    let (found, _) = program(16);
    assert!(found.is_empty(), "ten calls on 16 CPUs: {found:#?}");
}

/// A job written by hand, as an observed one reads: the driver (span 1) submits calls
/// (span 2...) at `submits`, each starting 1 ms later and ending at `ends`, each taking
/// `arg_bytes`; `driver_recs` adds the driver's own puts and waits.
fn handmade(ends: &[u64], arg_bytes: u64, driver_recs: Vec<Rec>, driver_end: u64) -> JobRecord {
    let submits: Vec<u64> = (0..ends.len() as u64).map(|k| k * MS).collect();
    handmade_at(&submits, ends, arg_bytes, driver_recs, driver_end)
}

/// [`handmade`], each call submitted at its own time in `submits`.
fn handmade_at(submits: &[u64], ends: &[u64], arg_bytes: u64, driver_recs: Vec<Rec>, driver_end: u64) -> JobRecord {
    let mut targets = Chunked::default();
    let t = |kind, name: &str, frame| Target {
        kind,
        class: name.into(),
        method: name.into(),
        actor: None,
        job: 1,
        level: 0,
        flag: false,
        frame,
    };
    targets.push(t(TargetKind::Driver, "_main", 0));
    targets.push(t(TargetKind::Function, "g", 1));
    let mut recs = vec![
        Rec::Submit { span: 1, parent: 0, target: 0, t: 0, arg_bytes: 0 },
        Rec::Begin { span: 1, t: 0, node: 0, pid: 10 },
    ];
    for (k, &end) in ends.iter().enumerate() {
        let span = k as u64 + 2;
        let at = submits[k];
        recs.push(Rec::Submit { span, parent: 1, target: 1, t: at, arg_bytes });
        recs.push(Rec::Begin { span, t: at + MS, node: 0, pid: 20 + k as u32 });
        recs.push(Rec::End { span, t: end, ok: true, return_bytes: 8 });
    }
    recs.extend(driver_recs);
    recs.push(Rec::End { span: 1, t: driver_end, ok: true, return_bytes: 0 });
    recs.sort_by_key(|r| r.time());
    let mut records = Chunked::default();
    for r in recs {
        records.push(r);
    }
    JobRecord {
        job: 1,
        job_hex: "01000000".into(),
        name: "handmade".into(),
        start_us: 0,
        end_us: Some(driver_end),
        driver: 1,
        calls: ends.len() as u64 + 1,
        recorded_calls: ends.len() as u64 + 1,
        records,
        targets,
        frames: Arc::new(vec!["_main".into(), "g".into()]),
        edges: BTreeMap::new(),
        task_ids: Arc::default(),
        inferred: Arc::default(),
        observed: None,
    }
}

fn findings_of(job: &JobRecord) -> Vec<Finding> {
    let spans = Spans::replay(job, job.end_us.unwrap());
    findings::findings(job, &spans)
}

#[test]
fn results_got_in_submission_order_while_later_ones_were_ready_are_named() {
    const S: u64 = 1_000_000;
    // Six calls ending at 4, 1, 7, 2, 10, 3 s; the driver gets each in submission order
    // and works 1 s on each result: it blocks on the 1st, 3rd and 5th while later ones
    // are ready.
    let ends = [4 * S, S, 7 * S, 2 * S, 10 * S, 3 * S];
    let waits = |pairs: &[(u64, u64)]| -> Vec<Rec> {
        pairs
            .iter()
            .flat_map(|&(from, to)| [Rec::Block { span: 1, t: from }, Rec::Unblock { span: 1, t: to }])
            .collect()
    };
    let job = handmade(&ends, 0, waits(&[(6 * MS, 4 * S), (6 * S, 7 * S), (9 * S, 10 * S)]), 12 * S);
    let found = findings_of(&job);
    assert_eq!(kinds(&found), vec![Kind::GetInSubmissionOrder], "{found:#?}");
    let saved = found[0].saves_us.unwrap();
    assert!(saved > 0 && saved < 12 * S, "saves {saved} µs");
    // The same calls got as they finish (ray.wait): each wait is for the next to end.
    let job = handmade(&ends, 0, waits(&[(6 * MS, S)]), 12 * S);
    assert!(findings_of(&job).is_empty());
    // Ray's rows, whole ms: all six submitted in one ms, listed (and so numbered) in
    // another order than the program's; the driver still blocks on the 1st, 3rd and
    // 5th of its own order.
    let listed = [2, 0, 5, 1, 4, 3];
    let ends_listed: Vec<u64> = listed.iter().map(|&k| ends[k]).collect();
    let job = handmade_at(&[0; 6], &ends_listed, 0, waits(&[(MS, 4 * S), (6 * S, 7 * S), (9 * S, 10 * S)]), 12 * S);
    assert_eq!(kinds(&findings_of(&job)), vec![Kind::GetInSubmissionOrder]);
    // A ray.wait loop over them: each wait ends with the first call to end, none inside.
    let job = handmade_at(
        &[0; 6],
        &ends_listed,
        0,
        waits(&[(MS, S), (S + 500 * MS, 2 * S), (2 * S + 500 * MS, 3 * S)]),
        12 * S,
    );
    assert!(findings_of(&job).is_empty());
}

#[test]
fn the_same_large_value_sent_by_value_is_named_and_one_put_once_is_not() {
    const S: u64 = 1_000_000;
    let ends = [S, S + MS, S + 2 * MS, S + 3 * MS];
    let wait = vec![Rec::Block { span: 1, t: 4 * MS }, Rec::Unblock { span: 1, t: S + 3 * MS }];
    let job = handmade(&ends, 64 << 20, wait.clone(), S + 4 * MS);
    let found = findings_of(&job);
    assert_eq!(kinds(&found), vec![Kind::LargeArgByValue], "{found:#?}");
    assert!(found[0].evidence.contains("4 calls each took a 67108864 byte argument"), "{}", found[0].evidence);
    let mut put_once = wait;
    put_once.push(Rec::Put { span: 1, t: 0, bytes: 64 << 20 });
    let job = handmade(&ends, 64 << 20, put_once, S + 4 * MS);
    assert!(findings_of(&job).is_empty());
}

/// The examples' jobs are written the documented way: no anti-pattern is named in the
/// seed's actor tree.
#[test]
fn the_seed_program_has_no_anti_pattern() {
    let cfg = config::load_file(std::path::Path::new("examples/flow-insight.yaml")).unwrap();
    let (engine, _) = rayscope::sim::simulate(cfg, None, None, |_| {}).unwrap();
    let snap = engine.publish(rayscope::sim::PublishOptions::seq(0));
    for job in snap.flow.jobs.values() {
        let spans = Spans::replay(job, snap.sim_time_us.as_micros());
        let found = findings::findings(job, &spans);
        assert!(found.is_empty(), "job {}: {found:#?}", job.job_hex);
    }
}

/// A job recorded from a real cluster (`rayscope observe --record`), read back with
/// `rayscope flow --trace`: `ray.get` in a loop, seen in Ray's task rows alone (each
/// call submitted 4 ms after the one before ended, so no wait is inferred), is named
/// in the printed text and in `findings.json`, and its fix saves what the waits cost.
#[test]
fn a_recorded_trace_of_a_get_loop_gets_its_finding_from_rayscope_flow() {
    use rayscope::observe::store::Change;
    const JOB: &str = "01000000";
    const T0: u64 = 1_795_000_000_000;
    let mut changes = common::observed_job_opening(JOB, "python loop.py", 8.0, T0, 1_100);
    for k in 0..10u64 {
        // Each submitted 4 ms after the one before ended: too late for a wait to be
        // inferred (the driver reads as executing), soon enough for the loop.
        let (submit, end) = (T0 + 1 + k * 105, T0 + 1 + k * 105 + 101);
        changes.push(Change::Task(observed_call(JOB, k as usize + 1, "f", 1.0, (submit, submit + 1, end))));
    }
    let (printed, v) = flow_of_trace(&changes);
    assert!(printed.contains("[get_in_loop] ray.get in a loop: _main waits on each f"), "{printed}");
    assert!(
        printed.contains("(observed)") && printed.contains("the driver's waits in ray.get are inferred"),
        "{printed}"
    );
    let f = &v["findings"][0];
    assert_eq!(f["kind"], "get_in_loop", "{v}");
    // The slowest call is named by Ray's own task id.
    assert!(f["calls"][0]["task_id"].as_str().unwrap().ends_with(&format!("{}{JOB}", "0".repeat(24))), "{f}");
    // Submitted together on 8 CPUs, the ten 100 ms calls take about 0.1 s, not 1 s.
    assert!(f["saves_s"].as_f64().unwrap() > 0.7, "{f}");
}

/// The shipped examples' jobs: a training loop that gets each step's results at once, a
/// map-reduce whose reduces take their maps' returns, reduces that waited long for
/// CPUs; none is named an anti-pattern. What they do show is real waiting for
/// resources (more work than CPUs), and only that is named, with what it costs.
#[test]
fn the_examples_name_no_anti_pattern_only_their_waits_for_resources() {
    let mut pending = 0;
    for (file, until_us) in [
        ("examples/default.yaml", 900_000_000u64),
        ("examples/faults.yaml", 600_000_000),
        ("tests/fixtures/flow-page-scale.yaml", 3_600_000_000),
    ] {
        let yaml = std::fs::read_to_string(file).unwrap();
        let e = common::run_until(common::load(&yaml), until_us);
        let snap = e.publish(rayscope::sim::PublishOptions::seq(0));
        for job in snap.flow.jobs.values() {
            let spans = Spans::replay(job, snap.sim_time_us.as_micros());
            let ended = spans.root().is_some_and(|r| spans.spans[r].end.is_some());
            for f in findings::findings(job, &spans) {
                assert_eq!(f.kind, Kind::PendingOnResources, "{file} job {} ({}): {f:#?}", job.job_hex, job.name);
                // A finished job's wait for CPUs, re-run with CPUs free, saves time.
                if ended && !f.calls.iter().any(|&c| spans.spans[c].start.is_none()) {
                    assert!(f.saves_us.is_some_and(|s| s > 0), "{file} job {}: {f:#?}", job.name);
                }
                pending += 1;
            }
        }
    }
    assert!(pending >= 3, "the map-reduces larger than their clusters wait for CPUs: {pending}");
}

#[test]
fn an_actor_call_whose_start_ray_lost_is_read_without_a_panic() {
    // Ray 2.49 by pull, a driver that exits at once: the driver's one call to an actor
    // is listed with its submit and end but no RUNNING, and the actor ran nothing else
    // that Ray kept. The critical path passes through it.
    let mut targets = Chunked::default();
    let t = |kind, class: &str, method: &str, actor, frame| Target {
        kind,
        class: class.into(),
        method: method.into(),
        actor,
        job: 1,
        level: 0,
        flag: false,
        frame,
    };
    targets.push(t(TargetKind::Driver, "_main", "_main", None, 0));
    targets.push(t(TargetKind::Method, "Counter", "add", Some(7), 1));
    let recs = [
        Rec::Submit { span: 1, parent: 0, target: 0, t: 0, arg_bytes: 0 },
        Rec::Begin { span: 1, t: 0, node: 0, pid: 10 },
        Rec::Submit { span: 2, parent: 1, target: 1, t: MS, arg_bytes: 0 },
        Rec::End { span: 2, t: 900 * MS, ok: true, return_bytes: 8 },
        Rec::End { span: 1, t: 901 * MS, ok: true, return_bytes: 0 },
    ];
    let mut records = Chunked::default();
    for r in recs {
        records.push(r);
    }
    let job = JobRecord {
        job: 1,
        job_hex: "01000000".into(),
        name: "lost start".into(),
        start_us: 0,
        end_us: Some(901 * MS),
        driver: 1,
        calls: 2,
        recorded_calls: 2,
        records,
        targets,
        frames: Arc::new(vec!["_main".into(), "Counter.add".into()]),
        edges: BTreeMap::new(),
        task_ids: Arc::default(),
        inferred: Arc::default(),
        observed: None,
    };
    assert_eq!(kinds(&findings_of(&job)), []);
    let spans = Spans::replay(&job, 901 * MS);
    let b = rayscope::flow::bottleneck::bottlenecks(&job, &spans);
    assert!(b["entries"].is_array(), "the bottlenecks are ranked too: {b}");
}

/// Observed jobs (`rayscope flow --trace`): calls that waited only for the worker
/// processes Ray started for them are not pending on resources; calls queued behind
/// one another for the node's only CPU are, worker start or not.
#[test]
fn an_observed_wait_for_worker_starts_is_not_pending_on_resources_and_one_for_a_cpu_is() {
    use rayscope::observe::rows::ObservedTask;
    use rayscope::observe::store::Change;
    const JOB: &str = "02000000";
    const T0: u64 = 1_795_000_000_000;
    // (cpus, the calls' node, [(start ms, end ms, worker pid)]), every call submitted
    // at T0.
    let findings_of_observed = |cpus: f64, node: Option<&str>, calls: &[(u64, u64, u32)]| {
        let run_ms = calls.iter().map(|c| c.1).max().unwrap() + 5;
        let mut changes = common::observed_job_opening(JOB, "python prog.py", cpus, T0, run_ms);
        for (k, &(start, end, pid)) in calls.iter().enumerate() {
            let times = (T0 + 1, T0 + start, T0 + end);
            changes.push(Change::Task(ObservedTask {
                node_id: node.map(str::to_string),
                worker_pid: Some(pid),
                ..observed_call(JOB, k + 1, "g", cpus.min(1.0), times)
            }));
        }
        let (_, v) = flow_of_trace(&changes);
        v["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    // One call on a worker already up; three on workers Ray started for them, 1.5 s
    // each, on 4 CPUs: nothing waited for resources.
    let starts = [(5, 105, 100), (1_500, 1_600, 101), (1_520, 1_620, 102), (1_540, 1_640, 103)];
    assert_eq!(findings_of_observed(4.0, Some("aa"), &starts), Vec::<String>::new());
    // The same with no node named (Ray 2.49's pushes carry none).
    assert_eq!(findings_of_observed(4.0, None, &starts), Vec::<String>::new());
    // Four 0.5 s calls on one CPU, one worker started once: each waits for the one
    // before it.
    let queued = [(1_500, 2_000, 100), (2_000, 2_500, 100), (2_500, 3_000, 100), (3_000, 3_500, 100)];
    assert_eq!(findings_of_observed(1.0, Some("aa"), &queued), vec!["pending_on_resources".to_string()]);
}

/// Where Ray lost a call's start (its driver exited at once), the worker started for it
/// is unknown: a wait counts only while another call of the job ran. A call that waited
/// 1.9 s while nothing ran is not pending on resources; calls queued behind one another
/// for the node's only CPU still are.
#[test]
fn an_observed_wait_while_nothing_ran_is_not_pending_on_resources_where_ray_lost_a_start() {
    use rayscope::observe::rows::ObservedTask;
    use rayscope::observe::store::Change;
    const JOB: &str = "04000000";
    const T0: u64 = 1_795_000_000_000;
    // [(start ms, end ms, worker pid)], every call submitted at T0, then one more call
    // whose start Ray lost, ended at `lost_end`.
    let findings_of_observed = |cpus: f64, calls: &[(u64, u64, u32)], lost_end: u64, unended: bool| {
        let run_ms = calls.iter().map(|c| c.1).max().unwrap().max(lost_end) + 5;
        let mut changes = common::observed_job_opening(JOB, "python prog.py", cpus, T0, run_ms);
        for (k, &(start, end, pid)) in calls.iter().enumerate() {
            let times = (T0 + 1, T0 + start, T0 + end);
            changes.push(Change::Task(ObservedTask {
                worker_pid: Some(pid),
                ..observed_call(JOB, k + 1, "g", cpus.min(1.0), times)
            }));
        }
        let mut lost = observed_call(JOB, calls.len() + 1, "g", cpus.min(1.0), (T0 + 1, T0 + 1, T0 + lost_end));
        lost.events.retain(|e| e.0 != "RUNNING");
        lost.start_time_ms = None;
        changes.push(Change::Task(lost));
        if unended {
            // A call `p` (5 ms to 1.8 s) whose own call Ray left RUNNING from 50 ms: its
            // worker was killed with the job; `p` got its result and returned.
            let k = calls.len() + 2;
            let p = observed_call(JOB, k, "p", cpus.min(1.0), (T0 + 1, T0 + 5, T0 + 1_800));
            let mut u = observed_call(JOB, k + 1, "u", cpus.min(1.0), (T0 + 40, T0 + 50, T0 + 50));
            (u.state, u.end_time_ms, u.worker_pid) = ("RUNNING".into(), None, Some(200));
            u.parent_task_id = Some(p.task_id.clone());
            u.events.retain(|e| e.0 != "FINISHED");
            changes.push(Change::Task(ObservedTask { worker_pid: Some(300), ..p }));
            changes.push(Change::Task(u));
        }
        let (_, v) = flow_of_trace(&changes);
        v["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    // Two calls on a worker already up, then one that waited until 2 s with nothing
    // running (for a worker Ray started for the lost call, then for it).
    let waited_for_a_worker = [(5, 105, 100), (110, 210, 100), (2_000, 2_100, 100)];
    assert_eq!(findings_of_observed(4.0, &waited_for_a_worker, 1_900, false), Vec::<String>::new());
    // The same beside a call Ray left RUNNING when the job ended: that it ran on until
    // its caller's end is not known, so it held nothing the wait can be put on.
    assert_eq!(findings_of_observed(4.0, &waited_for_a_worker, 1_900, true), Vec::<String>::new());
    // Four 0.5 s calls on one CPU after the lost one: each waits while the one before
    // it runs.
    let queued = [(1_500, 2_000, 100), (2_000, 2_500, 100), (2_500, 3_000, 100), (3_000, 3_500, 100)];
    assert_eq!(findings_of_observed(1.0, &queued, 1_450, false), vec!["pending_on_resources".to_string()]);
}

/// An observed job's arguments, as the object listing gives them (`args` on its calls):
/// four calls each given its own 4 MiB object by value are `large_arg_by_value`; the
/// same four given one object (a reference the caller put once) are not.
#[test]
fn an_observed_large_value_sent_to_each_call_is_named_and_one_reference_is_not() {
    use rayscope::observe::rows::{ArgObject, ObservedTask};
    use rayscope::observe::store::Change;
    const JOB: &str = "03000000";
    const T0: u64 = 1_795_000_000_000;
    let findings_with_args = |object_of: &dyn Fn(usize) -> String| {
        let mut changes = common::observed_job_opening(JOB, "python prog.py", 4.0, T0, 3_000);
        for k in 0..4 {
            let (start, end) = (100 + 10 * k as u64, 2_600 + 10 * k as u64);
            changes.push(Change::Task(ObservedTask {
                worker_pid: Some(100 + k as u32),
                args: vec![ArgObject { object_id: object_of(k), bytes: 4 << 20 }],
                ..observed_call(JOB, k + 1, "consume", 0.5, (T0 + 1, T0 + start, T0 + end))
            }));
        }
        let (_, v) = flow_of_trace(&changes);
        v["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    let put = |index: usize| format!("{}{JOB}{:08x}", "f".repeat(40), (100_000_001u32 + index as u32).swap_bytes());
    assert_eq!(findings_with_args(&|k| put(k)), vec!["large_arg_by_value".to_string()]);
    assert_eq!(findings_with_args(&|_| put(0)), Vec::<String>::new());
}

/// The `k`th call of job `job`'s driver as Ray's rows show a finished one: `name`, on
/// node `aa`, needing `cpus`, submitted, started and ended at the Unix ms `times`.
fn observed_call(
    job: &str,
    k: usize,
    name: &str,
    cpus: f64,
    (submit, start, end): (u64, u64, u64),
) -> rayscope::observe::rows::ObservedTask {
    rayscope::observe::rows::ObservedTask {
        task_id: format!("{k:016x}{}{job}", "0".repeat(24)),
        job_id: job.into(),
        name: name.into(),
        kind: "NORMAL_TASK".into(),
        state: "FINISHED".into(),
        parent_task_id: Some(format!("{}{job}", "f".repeat(40))),
        node_id: Some("aa".into()),
        required_resources: vec![("CPU".into(), cpus)],
        events: vec![("PENDING_NODE_ASSIGNMENT".into(), submit), ("RUNNING".into(), start), ("FINISHED".into(), end)],
        start_time_ms: Some(start),
        end_time_ms: Some(end),
        ..Default::default()
    }
}

/// `rayscope flow --trace` on a trace of `changes`, as `observe --record` writes one:
/// what it printed, and its `findings.json`.
fn flow_of_trace(changes: &[rayscope::observe::store::Change]) -> (String, serde_json::Value) {
    use rayscope::observe::trace::{Header, TraceLimits, TraceWriter};
    let trace = tempfile::tempdir().unwrap();
    let mut w = TraceWriter::open(trace.path(), TraceLimits::default(), Header::default()).unwrap();
    w.append(changes).unwrap();
    drop(w);
    let out = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["flow", "--trace", trace.path().to_str().unwrap(), "--out", out.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let findings = serde_json::from_slice(&std::fs::read(out.path().join("findings.json")).unwrap()).unwrap();
    (String::from_utf8_lossy(&run.stdout).into_owned(), findings)
}
