//! Secondary copies are evicted when a store is over capacity, so an OOM-killed task's
//! retries can end. Before, copies fetched by killed attempts stayed until their object
//! was freed: on `examples/faults.yaml` with a 6,000-task ETL and seed 8, 9 or 12 one
//! node stayed above the memory threshold for good, and its reducers were OOM-killed and
//! retried forever, so the run never finished.

mod common;

use common::{load, run_checked, Limits};
use std::path::Path;

#[test]
fn reducers_killed_for_memory_finish_once_stale_copies_are_evicted() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/faults.yaml")).unwrap();
    let text = text.replacen("    tasks: 4000\n", "    tasks: 6000\n", 1);
    assert!(text.contains("    tasks: 6000\n"), "faults.yaml's ETL changed shape; update this test");
    for seed in [8, 9, 12] {
        let mut cfg = load(&text);
        cfg.sim.seed = seed;
        let limits = Limits { every: 5_000, until_us: 3 * 3_600_000_000, max_events: 5_000_000 };
        let e = run_checked(cfg, limits).unwrap_or_else(|m| panic!("seed {seed}: {m}"));
        assert!(e.workloads_done(), "seed {seed}: jobs still running after 3 virtual hours");
        for n in e.model.nodes().iter().filter(|n| n.is_alive()) {
            let s = &n.store;
            assert!(
                n.memory_used().0 as f64 <= 0.95 * n.memory_bytes.0 as f64,
                "seed {seed}: node {} ends above the memory threshold (store {} of {}, fallback {})",
                n.ip,
                s.used.0,
                s.capacity.0,
                s.fallback.0
            );
        }
    }
}
