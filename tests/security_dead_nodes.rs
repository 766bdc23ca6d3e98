//! Issue 7, A7: the node table forgets the longest-dead nodes past
//! `sim.dead_node_capacity`, as Ray's GCS does with `maximum_gcs_dead_node_cached_count`.
//! The default config, with its autoscaler's idle timeouts cut to a minute so that it
//! replaces nodes all the time: the table must not grow with every node it ever
//! replaced, and the model stays consistent when slots are reused.

use rayscope::config::default_config;
use rayscope::sim::Engine;
use std::collections::HashSet;

const HOUR_US: u64 = 3_600 * 1_000_000;

/// Run the default config for `hours` of virtual time, checking the node table after
/// every event; returns the engine and the most slots the table had beyond the most
/// nodes alive at once.
fn run(capacity: usize, hours: u64) -> (Engine, usize) {
    let mut cfg = default_config();
    cfg.sim.dead_node_capacity = capacity;
    for t in &mut cfg.cluster.node_types {
        if let Some(a) = &mut t.autoscaler {
            a.idle_timeout = rayscope::config::DurationSpec::secs(60.0);
        }
    }
    let mut engine = Engine::new(cfg);
    let (mut slots, mut most_alive) = (0, 0);
    while engine.next_event_time().is_some_and(|t| t < hours * HOUR_US) {
        engine.step();
        let dead = engine.model.nodes().iter().filter(|n| !n.is_alive()).count();
        let alive = engine.model.nodes().len() - dead;
        most_alive = most_alive.max(alive);
        slots = slots.max(engine.model.nodes().len());
        // Dead nodes past the capacity are kept only while the cluster has shrunk.
        assert!(
            dead <= capacity + (most_alive - alive),
            "{dead} dead nodes kept with sim.dead_node_capacity {capacity} ({alive} alive, at most {most_alive})"
        );
    }
    (engine, slots.saturating_sub(most_alive))
}

#[test]
fn dead_nodes_beyond_the_capacity_are_forgotten_and_slots_reused_consistently() {
    let (engine, extra_slots) = run(5, 2);
    let m = &engine.model;
    // The table grows only while fewer than `capacity` nodes are dead: never past the
    // most nodes alive at once plus the dead kept.
    assert!(extra_slots <= 5, "node table holds {extra_slots} slots beyond the most nodes alive");
    let ids: HashSet<&str> = m.nodes().iter().map(|n| &*n.node_id).collect();
    assert_eq!(ids.len(), m.nodes().len(), "node ids are unique even in reused slots");
    for (i, n) in m.nodes().iter().enumerate() {
        assert_eq!(n.idx.index(), i, "a node sits at its own slot");
    }
    engine.check_invariants().expect("the model stays consistent after slots are reused");
}

#[test]
fn with_a_large_capacity_the_same_run_keeps_more_dead_nodes() {
    // The same run without the bound biting keeps more than five dead nodes, so the
    // bounded run above really forgot some.
    let (engine, _) = run(100_000, 2);
    let dead = engine.model.nodes().iter().filter(|n| !n.is_alive()).count();
    assert!(dead > 5, "the default config replaced only {dead} nodes in 2 virtual hours");
}

#[test]
fn forgotten_nodes_still_count_in_the_reports_utilization() {
    // Every node that ever joined is counted in its type's utilization, forgotten or not:
    // the report folds a forgotten node's CPU time into an aggregate before its slot is
    // reused.
    let (engine, _) = run(5, 2);
    let report = rayscope::sim::Report::build(&engine, 0.0, None);
    let forgotten: u64 = engine.model.counters.forgotten_nodes.values().map(|f| f.nodes).sum();
    assert!(forgotten > 0, "the run forgot no node, so it proves nothing");
    let in_report: u64 = report.utilization.iter().map(|u| u.nodes).sum();
    assert_eq!(in_report, engine.model.nodes().len() as u64 + forgotten);
    for u in &report.utilization {
        assert!((0.0..=1.0).contains(&u.cpu_utilization), "{u:?}");
    }
    let workers = report.utilization.iter().find(|u| u.node_type == "cpu-worker").expect("cpu workers ran");
    assert!(workers.cpu_utilization > 0.0, "{workers:?}");
}
