//! `ray_resources`: each raylet's logical resources, available and used, in Ray's
//! units (cores, GPUs, bytes for `memory` and `object_store_memory`).
//!
//! Owns: `ray_resources`. Must never: import another collector, or report a dead
//! node's resources.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::Core;
use super::scrape::{Family, Scrape};

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let mut f = Family::gauge(enc, "ray_resources", "Logical resources of a node by state (AVAILABLE or USED).");
    for n in &s.nodes {
        let at = Core { component: "raylet", at: s.target(n) };
        for (name, total, available) in n.resources.iter() {
            f.sample(&(at, [("Name", &**name), ("State", "AVAILABLE")]), *available)?;
            f.sample(&(at, [("Name", &**name), ("State", "USED")]), (total - available).max(0.0))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn available_plus_used_is_each_nodes_total() {
        let e = all();
        for n in cluster().nodes.iter().filter(|n| n.state == crate::model::NodeState::Alive) {
            for (name, total, _) in n.resources.iter() {
                let sum = e.sum("ray_resources", &[("NodeAddress", &n.ip), ("Name", name)]);
                assert!((sum - total).abs() < 1e-6, "{} {name}: {sum} != {total}", n.ip);
            }
        }
    }

    #[test]
    fn dead_nodes_report_no_resources() {
        let e = all();
        assert!(e.of("ray_resources").all(|s| s.label("NodeAddress") != &*dead().ip));
    }

    #[test]
    fn gpu_nodes_report_gpus() {
        let e = node(&worker(true).ip);
        assert!(e.sum("ray_resources", &[("Name", "GPU")]) > 0.0);
        assert_eq!(e.of("ray_resources").next().unwrap().label("instance"), format!("{}:8080", worker(true).ip));
    }
}
