//! The node runtime is the one path by which a node's availability changes: the
//! scheduler's index and the nodes agree after every event (`Engine::check_scheduler_index`),
//! through leases, CPU lent back in `ray.get`, actors, placement-group bundles, node
//! death and restore, and the memory monitor's kills. The compiler keeps other code off
//! that path (`model::Available` changes in place only with `sim::raylet::node_runtime::Key`);
//! this proves the path itself keeps the index current.

mod common;

use common::load;
use rayscope::sim::Engine;

/// Step `faults.yaml` under `seed`, checking the index after every event and every
/// invariant now and then; returns the engine at the end.
fn run_faults(seed: u64) -> Engine {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/faults.yaml");
    let text = std::fs::read_to_string(path).unwrap().replace("seed: 11", &format!("seed: {seed}"));
    let mut e = Engine::new(load(&text));
    let mut n = 0u64;
    while !e.workloads_done() && e.step() {
        n += 1;
        e.check_scheduler_index().unwrap_or_else(|m| panic!("seed {seed}, after event {n}: {m}"));
        if n.is_multiple_of(997) {
            e.check_invariants().unwrap_or_else(|m| panic!("seed {seed}, after event {n}: {m}"));
        }
    }
    e.check_invariants().unwrap_or_else(|m| panic!("seed {seed}, at the end: {m}"));
    assert!(e.workloads_done(), "seed {seed}: the workloads end");
    e
}

#[test]
fn the_index_and_the_nodes_agree_after_every_event_through_faults_and_bundles() {
    for seed in [11, 1, 2] {
        let e = run_faults(seed);
        let c = &e.model.counters;
        // The run went through the paths the property is about.
        assert!(c.node_failures >= 1, "seed {seed}: a node died");
        assert!(c.pgs_created >= 1, "seed {seed}: a placement group reserved bundles");
        assert!(e.model.nodes().iter().filter(|n| n.is_alive()).count() >= 2, "seed {seed}: nodes left to check");
        // Every job ended: everything reserved was given back through the same path.
        for n in e.model.nodes().iter().filter(|n| n.is_alive()) {
            assert_eq!(*n.available, n.total, "seed {seed}: node {} has everything back", n.idx.0);
        }
    }
}
