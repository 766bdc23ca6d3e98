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
        let a = &e.model.actors[&id];
        WorkerTree {
            bottleneck: a.flag && !cleared.contains(&id.0),
            children: a.children.iter().map(|c| build(e, *c, cleared)).collect(),
        }
    }
    // The root: the one actor nobody lists as a child.
    let children: BTreeSet<ActorId> = e.model.actors.values().flat_map(|a| a.children.iter().copied()).collect();
    let root = e.model.actors.values().find(|a| !children.contains(&a.id)).expect("the driver created the root");
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
    e.model.jobs.values().next().and_then(|j| j.makespan_s()).expect("the job finished")
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
        let recorded = e.model.jobs.values().next().and_then(|j| j.makespan_s()).unwrap();
        // Unchanged, the replay is the run.
        assert!((base as f64 / 1e6 - recorded).abs() < 1e-3, "seed {seed}: replay {base} µs vs run {recorded} s");
        // Without a flagged worker above leaves, the program has no delay to remove.
        let delayed = e.model.actors.values().filter(|a| a.flag && a.level <= 1 && !a.children.is_empty()).count();
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
        let spans = Spans::replay(job, snap.sim_time_us);
        let Some(model) = whatif::Model::of(job, &spans) else { continue };
        let root = spans.root().unwrap();
        let recorded = spans.spans[root].end.unwrap() - spans.spans[root].submit;
        let replayed = model.makespan(&whatif::Fix::new());
        assert!(replayed.abs_diff(recorded) <= 1_000, "job {}: replay {replayed} µs, recorded {recorded} µs", job.name);
        checked += 1;
    }
    assert!(checked >= 2, "finished jobs were checked: {checked}");
}
