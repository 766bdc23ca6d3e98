//! An explicit Flow Insight tree (`tree:`) is simulated exactly as written: the actors
//! the engine creates form the same tree, with the same flags in the same child order,
//! whatever the seed; and configs that no run of the seed's program could produce are
//! refused with the field that is wrong.

mod common;

use rayscope::config::{self, WorkerTree, WorkloadConfig};
use rayscope::model::ActorId;
use rayscope::sim::Engine;

fn config_with_tree(tree: &str, seed: u64) -> String {
    format!(
        "cluster:\n  host_node: false\n  head: {{cpu: 8, memory: 32GiB}}\n\
         workloads:\n  - kind: flow_insight\n    sleep: 50ms\n    bottleneck_sleep: 300ms\n    tree: {tree}\n\
         sim: {{seed: {seed}}}\n"
    )
}

/// The tree of actors the engine created, read back from the actor table.
fn simulated_tree(e: &Engine) -> WorkerTree {
    let actors = e.model.actors();
    let root = actors.values().find(|a| a.tree_node == Some(0)).expect("the driver created the root");
    fn build(e: &Engine, id: ActorId) -> WorkerTree {
        let a = &e.model.actors()[&id];
        WorkerTree { bottleneck: a.flag, children: a.children.iter().map(|c| build(e, *c)).collect() }
    }
    build(e, root.id)
}

fn configured_tree(cfg: &config::Config) -> WorkerTree {
    match &cfg.workloads[0] {
        WorkloadConfig::FlowInsight(c) => c.tree.clone().expect("a tree is configured"),
        _ => unreachable!(),
    }
}

const SHAPES: &[&str] = &[
    // The seed's depth 3 with mixed fan-out, flags on both kinds of worker.
    "{children: [{bottleneck: true, children: [{children: [{}, {bottleneck: true}]}, {bottleneck: true, children: [{}]}]}, \
     {children: [{bottleneck: true, children: [{}, {}]}]}]}",
    // A chain.
    "{children: [{children: [{bottleneck: true, children: [{}]}]}]}",
    // Wide and shallow: one worker above five leaves, the root flagged.
    "{bottleneck: true, children: [{}, {bottleneck: true}, {}, {}, {bottleneck: true}]}",
];

#[test]
fn the_configured_shape_is_the_simulated_shape_for_any_seed() {
    for shape in SHAPES {
        for seed in [1, 7, 42] {
            let cfg = common::load(&config_with_tree(shape, seed));
            let want = configured_tree(&cfg);
            let e = common::run(cfg);
            assert_eq!(simulated_tree(&e), want, "shape {shape}, seed {seed}");
            let workers = want.size() as u64;
            assert_eq!(e.model.counters.actors_created, workers, "shape {shape}, seed {seed}");
            // The driver calls the root once; each process() call on a worker calls each
            // of its children 10 times.
            fn calls(t: &WorkerTree, times: u64) -> u64 {
                times + t.children.iter().map(|c| calls(c, times * 10)).sum::<u64>()
            }
            let calls = calls(&want, 1);
            let finished: u64 =
                e.model.finished_tasks.iter().filter(|t| e.model.names.get(t.name) == "Worker.process").count() as u64;
            assert_eq!(finished, calls, "shape {shape}, seed {seed}");
        }
    }
}

#[test]
fn a_bottleneck_above_leaves_costs_its_sleep_per_call_and_nowhere_else() {
    // The same tree with and without one flag: a flagged worker whose children are leaves
    // sleeps 300 ms more before each of its 10 calls per child, in each of the 10 calls
    // the root makes to it; each of those sleeps, a second `time.sleep`, returns late by
    // the calibrated overshoot.
    let overshoot = config::SchedulerConfig::default().sleep_overshoot.as_micros() as f64 / 1e6;
    let plain = "{children: [{children: [{}, {}]}]}";
    let flagged = "{children: [{bottleneck: true, children: [{}, {}]}]}";
    let flagged_root_only = "{bottleneck: true, children: [{children: [{}, {}]}]}";
    let makespan = |shape: &str| {
        let e = common::run(common::load(&config_with_tree(shape, 1)));
        e.model.jobs().values().next().and_then(|j| j.makespan_s()).expect("the job finished")
    };
    let (a, b, c) = (makespan(plain), makespan(flagged), makespan(flagged_root_only));
    assert!((b - a - 10.0 * 2.0 * 10.0 * (0.3 + overshoot)).abs() < 1e-6, "plain {a}, flagged {b}");
    // The root's children are not leaves, so its flag changes nothing.
    assert!((c - a).abs() < 1e-9, "plain {a}, flagged root {c}");
}

#[test]
fn trees_the_seed_program_cannot_draw_are_refused_with_the_field() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "{children: [{children: [{}]}, {}]}",
            "workloads[0].tree.children[1].children",
            "at depth 1 but has no children",
        ),
        ("{children: [{}]}\n    depth: 2", "workloads[0].depth", "cannot be combined with `tree`"),
        (
            "{children: [{}]}\n    bottleneck_probability: 1",
            "workloads[0].bottleneck_probability",
            "cannot be combined",
        ),
        ("{children: [{}]}\n    root_bottleneck: true", "workloads[0].root_bottleneck", "`tree.bottleneck`"),
        ("{children: [{bottlenek: true}]}", "workloads[0].tree.children[0].bottlenek", "unknown key `bottlenek`"),
    ];
    for (tree, field, words) in cases {
        let errors = config::load_str(&config_with_tree(tree, 1), "t.yaml").expect_err(tree);
        assert!(
            errors.0.iter().any(|e| e.field == *field && e.message.contains(words) && e.line > 0),
            "tree {tree}: expected {field}: …{words}…, got\n{errors}"
        );
    }
    let leaves = vec!["{}"; config::validate::MAX_TREE_WORKERS].join(", ");
    let errors = config::load_str(&config_with_tree(&format!("{{children: [{leaves}]}}"), 1), "t.yaml").unwrap_err();
    assert!(errors.to_string().contains("at most 10000 are allowed"), "{errors}");
}
