//! Cluster-wide node counts: the head reporter's `ray_cluster_*{node_type}`
//! (ray-facts.md §3.10). The autoscaler's own `autoscaler_*` families are in
//! [`super::autoscaler`].
//!
//! Owns: the `ray_cluster_*` families. Must never: import another collector
//! (`autoscaler` counts the same node types from the same snapshot view on its own).

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, LabelSetEncoder};

use super::labels::{put, Instance, Target};
use super::scrape::{Family, RayVersion, Scrape};
use crate::snapshot::AutoscalerTypeView;

/// A per-node-type count: family, help, reading.
type PerType = (&'static str, &'static str, fn(&AutoscalerTypeView) -> u32);

/// The head reporter's target: `instance`.
#[derive(Clone, Copy)]
struct Head<'a>(Target<'a>);

impl EncodeLabelSet for Head<'_> {
    fn encode(&self, enc: &mut LabelSetEncoder) -> fmt::Result {
        put(enc, "instance", Instance(self.0.ip, self.0.port))
    }
}

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let (true, Some(head)) = (s.cluster, s.head_target()) else {
        return Ok(());
    };
    let types = &s.snap.autoscaler.types;

    let at = Head(head);
    let per_type: [PerType; 4] = [
        ("ray_cluster_active_nodes", "Active nodes by node type.", |t| t.active),
        // Autoscaler v2 only (Ray 2.60).
        ("ray_cluster_idle_nodes", "Idle nodes by node type.", |t| t.idle),
        ("ray_cluster_failed_nodes", "Recently failed nodes by node type.", |t| t.recently_failed),
        ("ray_cluster_pending_nodes", "Pending nodes by node type.", |t| t.pending),
    ];
    for (name, help, read) in per_type {
        if name == "ray_cluster_idle_nodes" && s.version < RayVersion(2, 60) {
            continue;
        }
        let mut f = Family::gauge(enc, name, help);
        for t in types {
            f.sample(&(at, [("node_type", t.name.as_str())]), read(t))?;
        }
    }

    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn active_nodes_per_type_add_up_to_the_alive_nodes() {
        let e = all();
        let alive = cluster().nodes.iter().filter(|n| n.state == crate::model::NodeState::Alive).count() as f64;
        assert_eq!(e.sum("ray_cluster_active_nodes", &[]), alive);
        assert_eq!(e.sum("autoscaler_active_nodes", &[]), alive);
        assert_eq!(e.sum("autoscaler_running_workers_nodes", &[]), alive - 1.0);
        assert!(e.of("ray_cluster_active_nodes").any(|s| s.label("node_type") == "gpu-worker"));
    }

    #[test]
    fn autoscaler_series_carry_the_autoscaler_target_and_session() {
        let e = all();
        let s = e.of("autoscaler_cluster_resources").find(|s| s.label("resource") == "GPU").unwrap();
        assert_eq!(s.label("instance"), format!("{}:44217", head().ip));
        assert_eq!(s.label("SessionName"), cluster().session_name);
        assert_eq!(e.families["autoscaler_started_nodes_total"].kind, "counter");
    }

    #[test]
    fn only_the_heads_endpoint_has_cluster_counts() {
        assert!(node(&head().ip).of("ray_cluster_active_nodes").next().is_some());
        assert!(node(&worker(true).ip).of("autoscaler_active_nodes").next().is_none());
    }
}
