use super::*;
use crate::model::{node::NodeStats, FixedPoint, NodeState, ObjectStore, PgStrategy, ResourceId};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub(crate) fn node(idx: u32, cpu: i64, gpu: i64) -> Node {
    let mut total = ResVec::zeros(4);
    total.set(ResourceId::CPU, FixedPoint::from_units(cpu));
    total.set(ResourceId::GPU, FixedPoint::from_units(gpu));
    Node {
        idx: NodeIdx(idx),
        node_id: format!("{idx:056x}").into(),
        ip: format!("10.0.0.{}", idx + 1).into(),
        node_type: None,
        type_name: "t".into(),
        is_head: idx == 0,
        state: NodeState::Alive,
        available: crate::model::Available::new(total.clone()),
        total,
        memory_bytes: crate::model::Bytes(1 << 34),
        store: ObjectStore::default(),
        worker_heap_used: Default::default(),
        pressure_bytes: Default::default(),
        gpu_model: None,
        gpu_memory: Default::default(),
        started_at: 0,
        died_at: None,
        death_reason: None,
        crashed_at: None,
        idle_since: None,
        stats: NodeStats::default(),
    }
}

fn cluster(n: u32, cpu: i64) -> (Scheduler, Vec<Node>) {
    let mut s =
        Scheduler::new(Params { spread_threshold: 0.5, top_k_fraction: 0.2, top_k_absolute: 1, avoid_gpu_nodes: true });
    let nodes: Vec<Node> = (0..n).map(|i| node(i, cpu, 0)).collect();
    for nd in &nodes {
        s.add_node(nd);
    }
    (s, nodes)
}

fn take(s: &mut Scheduler, nodes: &mut [Node], at: NodeIdx, req: &ResourceRequest) {
    let mut left = (*nodes[at.index()].available).clone();
    left.subtract(req);
    nodes[at.index()].available = crate::model::Available::new(left);
    s.update_node(&nodes[at.index()]);
}

#[test]
fn hybrid_packs_local_node_below_threshold_then_spreads() {
    let (mut s, mut nodes) = cluster(10, 8);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let req = ResourceRequest::cpu(1.0);
    // Below 50% utilization the local node keeps the work: 4 of 8 CPUs.
    for _ in 0..4 {
        let p = s.schedule(&nodes, &req, Strategy::Default, NodeIdx(0), None, &mut rng);
        assert_eq!(p, Decision::Node(NodeIdx(0)));
        take(&mut s, &mut nodes, NodeIdx(0), &req);
    }
    // At 50% the local node is no longer preferred: work goes elsewhere.
    let p = s.schedule(&nodes, &req, Strategy::Default, NodeIdx(0), None, &mut rng);
    match p {
        Decision::Node(n) => assert_ne!(n, NodeIdx(0)),
        other => panic!("expected a node, got {other:?}"),
    }
}

#[test]
fn hybrid_picks_among_top_k_least_utilized_when_all_are_busy() {
    let (mut s, mut nodes) = cluster(10, 10);
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    // Utilize node i by 50% + i*4%: node 0 least.
    for i in 0..10u32 {
        let r = ResourceRequest::cpu(5.0 + (i as f64) * 0.4);
        take(&mut s, &mut nodes, NodeIdx(i), &r);
    }
    let req = ResourceRequest::cpu(0.1);
    // k = max(0.2 * 10, 1) = 2: only the two least utilized nodes are ever chosen.
    for _ in 0..200 {
        match s.schedule(&nodes, &req, Strategy::Default, NodeIdx(9), None, &mut rng) {
            Decision::Node(n) => assert!(n.0 <= 1, "chose node {n:?} outside the top-k"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn full_cluster_waits_and_oversized_request_is_infeasible() {
    let (mut s, mut nodes) = cluster(3, 2);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for i in 0..3 {
        take(&mut s, &mut nodes, NodeIdx(i), &ResourceRequest::cpu(2.0));
    }
    assert_eq!(
        s.schedule(&nodes, &ResourceRequest::cpu(1.0), Strategy::Default, NodeIdx(0), None, &mut rng),
        Decision::Wait { only: None }
    );
    assert_eq!(
        s.schedule(&nodes, &ResourceRequest::cpu(3.0), Strategy::Default, NodeIdx(0), None, &mut rng),
        Decision::Infeasible
    );
}

#[test]
fn cpu_work_avoids_gpu_nodes_while_cpu_nodes_have_room() {
    let mut s =
        Scheduler::new(Params { spread_threshold: 0.5, top_k_fraction: 1.0, top_k_absolute: 1, avoid_gpu_nodes: true });
    let nodes = vec![node(0, 8, 4), node(1, 8, 0)];
    for n in &nodes {
        s.add_node(n);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for _ in 0..50 {
        let p = s.schedule(&nodes, &ResourceRequest::cpu(1.0), Strategy::Default, NodeIdx(0), None, &mut rng);
        assert_eq!(p, Decision::Node(NodeIdx(1)));
    }
    let gpu = ResourceRequest::new(vec![(ResourceId::GPU, FixedPoint::from_units(1))]);
    assert_eq!(s.schedule(&nodes, &gpu, Strategy::Default, NodeIdx(1), None, &mut rng), Decision::Node(NodeIdx(0)));
}

#[test]
fn spread_round_robins_over_nodes() {
    let (mut s, nodes) = cluster(4, 4);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let picks: Vec<_> = (0..8)
        .map(|_| s.schedule(&nodes, &ResourceRequest::cpu(1.0), Strategy::Spread, NodeIdx(0), None, &mut rng))
        .collect();
    let expect: Vec<_> = (0..8).map(|i| Decision::Node(NodeIdx(i % 4))).collect();
    assert_eq!(picks, expect);
}

#[test]
fn hard_affinity_to_dead_node_fails_soft_goes_elsewhere() {
    let (mut s, mut nodes) = cluster(3, 4);
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    nodes[2].state = NodeState::Dead;
    s.remove_node(&nodes[2]);
    let req = ResourceRequest::cpu(1.0);
    let hard = Strategy::NodeAffinity { node: NodeIdx(2), soft: false };
    let soft = Strategy::NodeAffinity { node: NodeIdx(2), soft: true };
    assert_eq!(s.schedule(&nodes, &req, hard, NodeIdx(0), None, &mut rng), Decision::Unschedulable);
    match s.schedule(&nodes, &req, soft, NodeIdx(0), None, &mut rng) {
        Decision::Node(n) => assert_ne!(n, NodeIdx(2)),
        other => panic!("{other:?}"),
    }
    // Alive but busy: hard affinity waits for that node only.
    let busy = Strategy::NodeAffinity { node: NodeIdx(1), soft: false };
    take(&mut s, &mut nodes, NodeIdx(1), &ResourceRequest::cpu(4.0));
    assert_eq!(s.schedule(&nodes, &req, busy, NodeIdx(0), None, &mut rng), Decision::Wait { only: Some(NodeIdx(1)) });
}

#[test]
fn strict_spread_is_infeasible_with_too_few_nodes() {
    let (s, nodes) = cluster(3, 4);
    let bundles = vec![ResourceRequest::cpu(1.0); 4];
    assert_eq!(s.place_bundles(&nodes, &bundles, PgStrategy::StrictSpread), PgDecision::Infeasible);
    match s.place_bundles(&nodes, &bundles[..3], PgStrategy::StrictSpread) {
        PgDecision::Placed(v) => {
            let mut d = v.clone();
            d.sort();
            d.dedup();
            assert_eq!(d.len(), 3, "bundles must be on distinct nodes: {v:?}");
        }
        other => panic!("{other:?}"),
    }
    // SPREAD is best effort: four bundles on three nodes is fine.
    assert!(matches!(s.place_bundles(&nodes, &bundles, PgStrategy::Spread), PgDecision::Placed(_)));
}

#[test]
fn strict_pack_needs_one_node_and_pack_falls_back_to_several() {
    let (mut s, mut nodes) = cluster(2, 4);
    let bundles = vec![ResourceRequest::cpu(3.0); 2];
    assert_eq!(s.place_bundles(&nodes, &bundles, PgStrategy::StrictPack), PgDecision::Infeasible);
    match s.place_bundles(&nodes, &bundles, PgStrategy::Pack) {
        PgDecision::Placed(v) => assert_ne!(v[0], v[1]),
        other => panic!("{other:?}"),
    }
    let small = vec![ResourceRequest::cpu(1.0); 3];
    assert_eq!(s.place_bundles(&nodes, &small, PgStrategy::StrictPack), PgDecision::Placed(vec![NodeIdx(0); 3]));
    // Busy but feasible: wait.
    take(&mut s, &mut nodes, NodeIdx(0), &ResourceRequest::cpu(4.0));
    take(&mut s, &mut nodes, NodeIdx(1), &ResourceRequest::cpu(4.0));
    assert_eq!(s.place_bundles(&nodes, &small, PgStrategy::StrictPack), PgDecision::Wait);
}
