//! Snapshots and a text-format reader for the collectors' unit tests.

use std::sync::OnceLock;

use super::{render_all, render_node, RenderContext};
use crate::sim::Engine;
use crate::snapshot::Snapshot;

#[path = "../../tests/metrics_support.rs"]
mod support;
pub(crate) use support::{parse, Exposition, Sample};

/// The metrics test cluster (tests/fixtures/metrics_cluster.yaml).
pub(crate) const CLUSTER_YAML: &str = include_str!("../../tests/fixtures/metrics_cluster.yaml");

/// Run `yaml` to `secs` of virtual time and take a snapshot.
pub(crate) fn snapshot_at(yaml: &str, secs: u64) -> Snapshot {
    let cfg = crate::config::load_str(yaml, "test.yaml").expect("test config loads");
    let mut engine = Engine::new(cfg);
    engine.run_until(secs * 1_000_000);
    engine.publish(crate::sim::PublishOptions::seq(1))
}

/// The test cluster at 40 s: work running, OOM kills done, one node dead.
pub(crate) fn cluster() -> &'static std::sync::Arc<Snapshot> {
    static SNAP: OnceLock<std::sync::Arc<Snapshot>> = OnceLock::new();
    SNAP.get_or_init(|| std::sync::Arc::new(snapshot_at(CLUSTER_YAML, 40)))
}

pub(crate) fn ctx() -> RenderContext {
    RenderContext { metrics_export_port: 8080, ..RenderContext::default() }
}

/// `render_all` of the test cluster without host readings, parsed.
pub(crate) fn all() -> Exposition {
    parse(&render_all(cluster(), None, &ctx()))
}

/// `render_node` of one node of the test cluster, parsed.
pub(crate) fn node(ip: &str) -> Exposition {
    parse(&render_node(cluster(), ip, None, &ctx()).expect("node is alive"))
}

/// An alive non-head node of the test cluster, with GPUs or without.
pub(crate) fn worker(gpu: bool) -> &'static crate::snapshot::NodeView {
    cluster()
        .nodes
        .iter()
        .find(|n| {
            n.state == crate::model::NodeState::Alive && !n.is_head && n.resources.iter().any(|r| &*r.0 == "GPU") == gpu
        })
        .expect("the test cluster has such a node")
}

pub(crate) fn dead() -> &'static crate::snapshot::NodeView {
    cluster().nodes.iter().find(|n| n.state == crate::model::NodeState::Dead).expect("the test cluster has a dead node")
}

pub(crate) fn head() -> &'static crate::snapshot::NodeView {
    cluster().head_node().unwrap()
}

/// `render_all` of the test cluster as Ray `version` would export it, at the
/// cardinality `level` (`None`: that version's default), parsed.
pub(crate) fn all_as(version: &str, level: Option<crate::config::MetricCardinality>) -> Exposition {
    let mut snap = (**cluster()).clone();
    snap.version = version.into();
    let ctx = RenderContext { metric_cardinality: level, ..ctx() };
    parse(&render_all(&std::sync::Arc::new(snap), None, &ctx))
}
