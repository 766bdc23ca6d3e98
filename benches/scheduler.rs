//! One scheduling decision at 2,000 nodes (DEFAULT hybrid policy), in the states that
//! matter: an empty cluster (the owner's node keeps the work), a busy cluster (walk the
//! top-k, since some nodes have a fraction of a CPU free), a busy cluster whose nodes
//! have whole CPUs free (the top-k pick is counted from the index, as at scale.yaml),
//! and a saturated one (no node fits: the answer is to wait).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayscope::config;
use rayscope::model::{FixedPoint, NodeIdx, ResourceId, ResourceRequest};
use rayscope::scheduler::{Decision, Params, Scheduler, Strategy};
use rayscope::sim::Engine;

const NODES: usize = 2_000;

fn cluster(busy_fraction: f64, whole_cpus: bool) -> (Scheduler, Vec<rayscope::model::Node>) {
    let yaml = format!(
        "cluster:\n  head: {{cpu: 16, memory: 64GiB}}\n  node_types:\n    - {{name: w, count: {}, cpu: 16, memory: 64GiB, ip_range: 10.1.0.0/16}}\n",
        NODES - 1
    );
    let cfg = config::load_str(&yaml, "bench").expect("bench config is valid");
    let params = Params::from(&cfg.scheduler);
    let engine = Engine::new(cfg);
    let mut nodes = engine.model.nodes().to_vec();
    let mut sched = Scheduler::new(params);
    for (i, n) in nodes.iter_mut().enumerate() {
        // idle: nothing used. busy: every node between 55% and 95% used (all above the
        // spread threshold, so the decision walks the top-k). saturated: all full.
        let used = match busy_fraction {
            b if b <= 0.0 => 0.0,
            b if b >= 1.0 => 16.0,
            _ => 16.0 * (0.55 + (i % 100) as f64 * 0.004),
        };
        let used = if whole_cpus { used.round() } else { used };
        let mut left = (*n.available).clone();
        let cpu = left.get(ResourceId::CPU);
        left.set(ResourceId::CPU, FixedPoint(cpu.0 - FixedPoint::from_f64(used).0));
        n.available = rayscope::model::Available::new(left);
        sched.add_node(n);
    }
    (sched, nodes)
}

fn bench(c: &mut Criterion) {
    let req = ResourceRequest::cpu(1.0);
    let mut g = c.benchmark_group("schedule_one_task_2000_nodes");
    for (label, busy, whole) in
        [("idle", 0.0, false), ("busy", 0.5, false), ("busy_whole_cpus", 0.5, true), ("saturated", 1.0, false)]
    {
        let (sched, nodes) = cluster(busy, whole);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        g.bench_function(label, |b| {
            b.iter_batched_ref(
                || sched_clone(&sched, &nodes),
                |s| {
                    let p = s.schedule(&nodes, &req, Strategy::Default, NodeIdx(0), None, &mut rng);
                    assert!(matches!(p, Decision::Node(_) | Decision::Wait { .. }));
                    p
                },
                BatchSize::LargeInput,
            )
        });
        // Steady state: decisions back to back on one scheduler (caches warm).
        let mut s = sched_clone(&sched, &nodes);
        g.bench_function(format!("{label}_repeated"), |b| {
            b.iter(|| s.schedule(&nodes, &req, Strategy::Default, NodeIdx(0), None, &mut rng))
        });
    }
    g.finish();
}

fn sched_clone(template: &Scheduler, nodes: &[rayscope::model::Node]) -> Scheduler {
    let mut s = Scheduler::new(template.params().clone());
    for n in nodes {
        s.add_node(n);
    }
    s
}

criterion_group!(benches, bench);
criterion_main!(benches);
