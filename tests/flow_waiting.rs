//! Flow Insight tells execution apart from waiting: what each view calls a call's own
//! time is the time its body ran, checked against what the program says it does.
//!
//! - The seed tree (`examples/flow-insight.yaml`): a worker's `process` sleeps before
//!   each call it makes and pays the submit cost, then blocks in `ray.get`. Its
//!   execution is exactly that, from the actor table's children and flags and the
//!   config; the rest after it started is blocked.
//! - A map-reduce: reducers wait for their maps' outputs. On the critical path a
//!   reducer's own time is its execution (within the configured reduce duration), and
//!   the graph's mean is an execution mean, with queueing beside it.

mod common;

use rayscope::flow::critical_path;
use rayscope::flow::flame::{self, Mode};
use rayscope::flow::graph::{self, Level};
use rayscope::flow::spans::Spans;
use rayscope::snapshot::flow::{actor_hex, span_hex};
use std::collections::BTreeMap;

const SEEDS: &[u64] = &[1, 2, 3, 5, 42];

fn seed_config(seed: u64) -> rayscope::config::Config {
    let mut cfg = common::seed_example(seed);
    // Idle actors' share of a core stretches every submit a little (`sim/raylet/node_cpu.rs`);
    // without it, and with each node's 8 cores never all busy here, a submit takes
    // exactly `actor_call_submit_cost`, so a worker's execution can be checked to the µs.
    cfg.scheduler.idle_worker_cpu = 0.0;
    cfg
}

#[test]
fn a_worker_s_execution_is_its_own_sleeps_and_submits_and_the_rest_is_blocked() {
    for &seed in SEEDS {
        let cfg = seed_config(seed);
        let s = &cfg.scheduler;
        let (overshoot, submit) = (s.sleep_overshoot.as_micros(), s.actor_call_submit_cost.as_micros());
        // The seed workload: 5 s before each call, 30 s more where flagged above leaves.
        let (sleep, extra, per_child) = (5_000_000 + overshoot, 30_000_000 + overshoot, 10);
        let engine = common::run(cfg);
        let snap = engine.publish(rayscope::sim::PublishOptions::seq(0));
        let tables = engine.build_tables();
        let job = snap.flow.jobs.values().next().unwrap().clone();
        let spans = Spans::replay(&job, u64::MAX);
        let actors: BTreeMap<u64, _> = tables.actors.iter().map(|a| (a.id, a)).collect();
        let mut checked = 0;
        let mut mean_exec: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for (i, sp) in spans.spans.iter().enumerate() {
            let t = job.target(sp.target);
            let Some(a) = t.actor.filter(|_| t.method == "process").map(|a| actors[&a]) else { continue };
            let calls = a.children.len() as u64 * per_child;
            let pause = sleep + if a.flag && a.level <= 1 { extra } else { 0 };
            let want = calls * (pause + submit);
            let times = spans.times(i);
            assert_eq!(
                times.executing,
                want,
                "seed {seed}: {} process executes its own work only",
                actor_hex(a.id, a.job)
            );
            let start = sp.start.expect("it ran");
            let end = sp.end.expect("it ended");
            assert_eq!(times.blocked, end - start - want, "seed {seed}: the rest after it started is ray.get");
            assert_eq!(times.queued, start - sp.submit, "seed {seed}: {} queued until it began", span_hex(sp.span));
            let m = mean_exec.entry(t.instance_name()).or_default();
            m.0 += want;
            m.1 += 1;
            checked += 1;
        }
        assert!(checked >= 10, "seed {seed}: the tree's calls were checked");
        // The graph's mean is that execution mean.
        let g = graph::graph(&job, &spans, Level::Instance, true);
        for n in g["nodes"].as_array().unwrap() {
            if let Some((sum, count)) = mean_exec.get(n["id"].as_str().unwrap()) {
                let mean = n["mean_s"].as_f64().unwrap();
                assert!((mean - *sum as f64 / *count as f64 / 1e6).abs() < 1e-6, "seed {seed}: {n}");
                assert!(n["mean_wall_s"].as_f64().unwrap() >= mean, "seed {seed}: {n}");
            }
        }
        // The execution flame graph holds exactly the calls' execution.
        let folded = flame::folded(&job, &spans, Mode::Execution);
        let process: u64 = folded.iter().filter(|(k, _)| k.ends_with("Worker.process")).map(|(_, v)| *v).sum();
        assert_eq!(process, mean_exec.values().map(|v| v.0).sum::<u64>(), "seed {seed}: flame = execution");
        assert!(folded.keys().all(|k| !k.contains('[')), "seed {seed}: no waiting in the execution flame graph");
    }
}

#[test]
fn a_reducer_s_time_on_the_critical_path_is_its_execution_not_its_wait_for_maps() {
    let cfg = common::load(
        r#"
cluster:
  head: {cpu: 4, memory: 16GiB}
  node_types:
    - {name: worker, count: 2, cpu: 4, memory: 16GiB, ip_range: 10.0.1.0/24}
workloads:
  - kind: fan_out
    name: etl
    tasks: 60
    reducers: 4
    task_duration: {min: 2s, max: 6s}
    reduce_duration: {min: 5s, max: 8s}
    output_size: 1MiB
    function: preprocess
sim: {seed: 7}
"#,
    );
    let overshoot = cfg.scheduler.sleep_overshoot.as_micros() as f64 / 1e6;
    let engine = common::run(cfg);
    let snap = engine.publish(rayscope::sim::PublishOptions::seq(0));
    let job = snap.flow.jobs.values().next().unwrap().clone();
    let spans = Spans::replay(&job, u64::MAX);
    let (entries, total, _) = critical_path::rank(&job, &spans);
    let reduce = entries.iter().find(|e| job.target(e.target).class_name() == "reduce").expect("reduce on the path");
    let own = reduce.self_us as f64 / 1e6;
    assert!((5.0..=8.0 + overshoot + 0.01).contains(&own), "one reducer's execution on the path: {own} s");
    // The wait for the maps went to the maps, whose executions are on the path too.
    let maps = entries.iter().find(|e| job.target(e.target).class_name() == "preprocess").expect("maps on the path");
    assert!(maps.self_us >= 2_000_000, "a map's execution is on the path: {:?}", maps.on_path);
    assert!(reduce.on_path.wall() < total / 2, "the reducer does not hold the path: {:?} of {total}", reduce.on_path);
    // The graph's mean is the reducers' execution; their wait is beside it.
    let g = graph::graph(&job, &spans, Level::Class, true);
    let node = g["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "reduce").unwrap().clone();
    let mean = node["mean_s"].as_f64().unwrap();
    assert!((5.0..=8.0 + overshoot + 0.01).contains(&mean), "{node}");
    assert!(node["mean_queued_s"].as_f64().unwrap() > 1.0, "reducers wait for their maps: {node}");
    assert!(node["mean_wall_s"].as_f64().unwrap() > mean + 1.0, "{node}");
}
