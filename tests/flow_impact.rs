//! Bottlenecks ranked by what fixing them saves (`flow::whatif`), held against an
//! independent computation: the seed program itself run again by the engine, written
//! down as an explicit tree (`tree:`) with the fixed worker's bottleneck flag cleared.
//!
//! For every seed 0–20 of the seed scenario (`examples/flow-insight.yaml`):
//! - the replay of the recorded calls, unchanged, gives back the recorded makespan;
//! - the first entry saves within 1 % of what the program run without that worker's
//!   delay saves (for parallel twins, the "fix both" entry, against the program without
//!   both delays);
//! - where two workers each hold the job once the other is fixed, "fix both" is
//!   offered, and each alone saves what the program says too.

mod common;

use rayscope::config::{WorkerTree, WorkloadConfig};
use rayscope::flow::spans::Spans;
use rayscope::flow::whatif;
use rayscope::model::ActorId;
use rayscope::sim::Engine;
use std::collections::BTreeSet;

/// The drawn tree, with the flags of `cleared` actors off.
fn tree(e: &Engine, cleared: &BTreeSet<u64>) -> WorkerTree {
    fn build(e: &Engine, id: ActorId, cleared: &BTreeSet<u64>) -> WorkerTree {
        let a = &e.model.actors()[&id];
        WorkerTree {
            bottleneck: a.flag && !cleared.contains(&id.0),
            children: a.children.iter().map(|c| build(e, *c, cleared)).collect(),
        }
    }
    // The root: the one actor nobody lists as a child.
    let children: BTreeSet<ActorId> = e.model.actors().values().flat_map(|a| a.children.iter().copied()).collect();
    let root = e.model.actors().values().find(|a| !children.contains(&a.id)).expect("the driver created the root");
    build(e, root.id, cleared)
}

/// The program's makespan (s) with that tree written down, as the engine runs it.
fn program_makespan(seed: u64, tree: WorkerTree) -> f64 {
    let mut cfg = common::seed_example(seed);
    match &mut cfg.workloads[0] {
        WorkloadConfig::FlowInsight(c) => {
            c.tree = Some(tree);
            c.depth = None;
        }
        _ => unreachable!(),
    }
    let e = common::run(cfg);
    e.model.jobs().values().next().and_then(|j| j.makespan_s()).expect("the job finished")
}

#[test]
fn the_first_entry_saves_what_the_program_without_that_delay_saves_for_seeds_0_to_20() {
    let mut twins = 0;
    for seed in 0..=20u64 {
        let e = common::run(common::seed_example(seed));
        let snap = e.publish(rayscope::sim::PublishOptions::seq(0));
        let job = snap.flow.jobs.values().next().unwrap().clone();
        let spans = Spans::replay(&job, u64::MAX);
        let (entries, base) = whatif::rank(&job, &spans).expect("the job finished");
        let recorded = e.model.jobs().values().next().and_then(|j| j.makespan_s()).unwrap();
        // Unchanged, the replay is the run.
        assert!((base as f64 / 1e6 - recorded).abs() < 1e-3, "seed {seed}: replay {base} µs vs run {recorded} s");
        // Without a flagged worker above leaves, the program has no delay to remove.
        let delayed = e.model.actors().values().filter(|a| a.flag && a.level <= 1 && !a.children.is_empty()).count();
        if delayed == 0 {
            assert!(entries.is_empty(), "seed {seed}: nothing to fix, yet {entries:?}");
            continue;
        }
        let first = &entries[0];
        let fixed: BTreeSet<u64> = first.targets.iter().filter_map(|&t| job.target(t).actor).collect();
        assert_eq!(fixed.len(), first.targets.len(), "seed {seed}: the first fix is of actor methods");
        // The independent computation: the same program, those delays gone.
        let plain = program_makespan(seed, tree(&e, &BTreeSet::new()));
        let without = program_makespan(seed, tree(&e, &fixed));
        let (want, got) = (plain - without, first.saved_us as f64 / 1e6);
        assert!(want > 0.0, "seed {seed}: removing {fixed:?}'s delay saves something");
        assert!((got - want).abs() <= 0.01 * want, "seed {seed}: saves {got} s, the program says {want} s");
        if first.targets.len() > 1 {
            twins += 1;
            // Either one alone leaves the other holding the job: both save well more.
            for &t in &first.targets {
                let alone = entries.iter().find(|i| i.targets == [t]).map_or(0, |i| i.saved_us);
                assert!(alone * 3 / 2 < first.saved_us, "seed {seed}: {t} alone saves {alone}");
                let solo = program_makespan(seed, tree(&e, &[job.target(t).actor.unwrap()].into()));
                let want = plain - solo;
                let got = alone as f64 / 1e6;
                assert!(
                    (got - want).abs() <= 0.01 * want.max(1.0),
                    "seed {seed}: {t} alone saves {got} s, the program says {want} s"
                );
            }
        }
    }
    assert!(twins >= 1, "the seeds include parallel twins");
}

#[test]
fn the_replay_gives_back_every_finished_job_of_the_fault_scenario() {
    // Retries, OOM kills, a node lost with its objects, an actor killed: the model of
    // each finished job, replayed unchanged, takes the job's recorded makespan.
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/faults.yaml")).unwrap();
    let mut cfg = common::load(&yaml);
    cfg.sim.seed = 5;
    let e = common::run(cfg);
    let snap = e.publish(rayscope::sim::PublishOptions::seq(0));
    let mut checked = 0;
    for job in snap.flow.jobs.values() {
        let spans = Spans::replay(job, snap.sim_time_us.as_micros());
        let Some(model) = whatif::Model::of(job, &spans) else { continue };
        let root = spans.root().unwrap();
        let recorded = spans.spans[root].end.unwrap() - spans.spans[root].submit;
        let replayed = model.makespan(&whatif::Fix::new());
        assert!(replayed.abs_diff(recorded) <= 1_000, "job {}: replay {replayed} µs, recorded {recorded} µs", job.name);
        checked += 1;
    }
    assert!(checked >= 2, "finished jobs were checked: {checked}");
}

/// What making an entry instant saves agrees with the ranking on `serve`'s jobs (the
/// default config's job mix, each job finished): an entry holding X s of the critical
/// path saves at most X s, and one that saves less than half of what it holds says why.
#[test]
fn made_instant_an_entry_saves_at_most_what_it_holds_and_says_why_when_far_less() {
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/default.yaml")).unwrap();
    let e = common::run_until(common::load(&yaml), 900_000_000);
    let snap = e.publish(rayscope::sim::PublishOptions::seq(0));
    let (mut checked, mut explained) = (0, 0);
    for job in snap.flow.jobs.values() {
        let spans = Spans::replay(job, snap.sim_time_us.as_micros());
        if whatif::Model::of(job, &spans).is_none() {
            continue;
        }
        let v = rayscope::flow::bottleneck::bottlenecks(job, &spans);
        for e in v["entries"].as_array().unwrap().iter().take(whatif::INSTANT_ENTRIES) {
            let held = e["self_s"].as_f64().unwrap();
            let saves = e["saves_s"].as_f64().unwrap_or_else(|| panic!("job {}: no saves_s in {e}", job.name));
            assert!(saves <= held * 1.01 + 0.002, "job {}: {} holds {held} s, saves {saves} s", job.name, e["name"]);
            let share = e["share"].as_f64().unwrap();
            if saves < held / 2.0 && share >= 0.01 {
                let why =
                    e["saves_why"].as_str().unwrap_or_else(|| panic!("job {}: saves far less, no why: {e}", job.name));
                assert!(why.contains("next-longest path") && why.contains("executed"), "{why}");
                explained += 1;
            }
            assert!(e["slowest_call"]["task_id"].as_str().is_some_and(|t| t.len() == 48), "{e}");
            checked += 1;
        }
    }
    assert!(checked >= 5, "entries of finished jobs were checked: {checked}");
    // The inference pool's actors run side by side: its top actor made instant saves
    // little, and says so.
    assert!(explained >= 1, "no entry needed its why");
}

/// A caller that submits and blocks in the same instant (`ray.get(f.remote())` in a
/// loop) keeps its submits before its waits in the replay: the model replayed
/// unchanged takes the recorded time (it had waited for calls never submitted, and
/// never ended).
#[test]
fn the_replay_of_ray_get_in_a_loop_gives_back_its_makespan() {
    use rayscope::config::replay::{ReplayCall, ReplayConfig, ReplayJob, ReplayKind, ReplayStep};
    let f = |steps| ReplayCall {
        kind: ReplayKind::Function,
        name: "f".into(),
        class: "f".into(),
        actor: None,
        resources: vec![("CPU".into(), 1.0)],
        deps: Vec::new(),
        return_bytes: 0,
        first_on_worker: false,
        steps,
        computes: Default::default(),
    };
    let mut calls =
        vec![ReplayCall { kind: ReplayKind::Driver, name: "_main".into(), class: "_main".into(), ..f(vec![]) }];
    calls[0].resources.clear();
    for k in 1..=5 {
        calls[0].steps.extend([ReplayStep::Submit(k), ReplayStep::Get]);
        calls.push(f(vec![ReplayStep::Hold(100_000)]));
    }
    let job = std::sync::Arc::new(ReplayJob {
        source: "test".into(),
        calls,
        actors: 0,
        recorded_makespan_us: 0,
        ends_lost: 0,
    });
    let mut cfg = common::load("cluster:\n  host_node: false\n  head: {cpu: 4, memory: 8GiB}\n");
    cfg.workloads = vec![WorkloadConfig::Replay(ReplayConfig { name: "loop".into(), job })];
    let e = common::run(cfg);
    let snap = e.publish(rayscope::sim::PublishOptions::seq(0));
    let job = snap.flow.jobs.values().next().unwrap();
    let spans = Spans::replay(job, snap.sim_time_us.as_micros());
    let root = spans.root().unwrap();
    let recorded = spans.spans[root].end.unwrap() - spans.spans[root].submit;
    let replayed = whatif::Model::of(job, &spans).unwrap().makespan(&whatif::Fix::new());
    assert!(replayed.abs_diff(recorded) <= 1_000, "replay {replayed} µs, recorded {recorded} µs");
}

/// An observed job (Ray's task rows, whole-ms times, waits inferred): forty maps, one
/// of them 8 s, then a reduce submitted `reduce_after` ms after the slow map ended;
/// the slow map's bottleneck entry and the whole answer.
fn observed_slow_map(reduce_after: u64) -> (serde_json::Value, serde_json::Value) {
    use rayscope::observe::publish::{snapshot, ClusterInfo, FlowCache};
    use rayscope::observe::rows::ObservedTask;
    use rayscope::observe::store::{Change, Store};
    const JOB: &str = "01000000";
    const T0: u64 = 1_795_000_000_000;
    let driver = format!("{}{JOB}", "f".repeat(40));
    let task = |id: String, name: &str, submit: u64, start: u64, end: u64| {
        Change::Task(ObservedTask {
            task_id: id,
            job_id: JOB.into(),
            name: name.into(),
            kind: "NORMAL_TASK".into(),
            state: "FINISHED".into(),
            parent_task_id: Some(driver.clone()),
            node_id: Some("aa".into()),
            required_resources: vec![("CPU".into(), 1.0)],
            events: vec![
                ("PENDING_NODE_ASSIGNMENT".into(), T0 + submit),
                ("RUNNING".into(), T0 + start),
                ("FINISHED".into(), T0 + end),
            ],
            start_time_ms: Some(T0 + start),
            end_time_ms: Some(T0 + end),
            ..Default::default()
        })
    };
    let mut changes = common::observed_job_opening(JOB, "python slow.py", 64.0, T0, 9_202);
    // Forty maps submitted at once, one of them sleeping 8 s; then, right after the
    // last map returned, a reduce of 1 s, and the driver ends after it.
    for k in 0..40u64 {
        let end = if k == 7 { 8_001 } else { 101 + k };
        changes.push(task(format!("{:016x}{}{JOB}", k + 1, "0".repeat(24)), "map", 1, 1, end));
    }
    let r = 8_001 + reduce_after;
    changes.push(task(format!("{:016x}{}{JOB}", 100, "0".repeat(24)), "reduce", r, r, r + 1_000));
    let mut store = Store::new(Default::default());
    for c in &changes {
        store.apply(c);
    }
    let snap = snapshot(&store, &ClusterInfo::default(), &mut FlowCache::default(), 0, T0 + 9_300);
    let job = snap.flow.job(JOB).expect("the job is recorded");
    let spans = Spans::replay(job, snap.sim_time_us.as_micros());
    let v = rayscope::flow::bottleneck::bottlenecks(job, &spans);
    let map = v["entries"].as_array().unwrap().iter().find(|e| e["name"] == "map").expect("map is on the path").clone();
    (map, v)
}

/// The reduce submitted 1 ms after the slow map ended: the driver's wait is inferred,
/// and the slow map made instant saves about what it holds (the driver's inferred
/// waits are waits on its calls in the re-run, not fixed gaps).
#[test]
fn on_an_observed_job_the_slow_call_made_instant_saves_what_it_holds() {
    let (map, v) = observed_slow_map(1);
    let held = map["self_s"].as_f64().unwrap();
    let saves = map["saves_s"].as_f64().unwrap();
    assert!(held > 7.5, "the slow map holds its 8 s: {map}");
    // Made instant, the job waits for the next-slowest map (0.14 s) instead.
    assert!(saves > held - 0.5 && saves <= held * 1.01 + 0.002, "holds {held} s, saves {saves} s: {v}");
    assert_eq!(v["driver_waits_inferred"], true, "{v}");
}

/// The reduce submitted 10 ms after: no wait can be read from the times, the driver
/// reads as executing while the slow map ran, so the re-run holds the driver's time
/// and the map made instant saves little; the answer says why, not "another path".
#[test]
fn a_slow_call_its_caller_was_not_seen_waiting_for_says_why_it_saves_little() {
    let (map, v) = observed_slow_map(10);
    let held = map["self_s"].as_f64().unwrap();
    let saves = map["saves_s"].as_f64().unwrap();
    assert!(held > 7.5 && saves < held / 2.0, "holds {held} s, saves {saves} s: {v}");
    let why = map["saves_why"].as_str().unwrap_or_else(|| panic!("no why: {map}"));
    assert!(why.contains("its caller _main was executing, not waiting in ray.get"), "{why}");
}
