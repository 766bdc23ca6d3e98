//! Semantic validation: what a config must mean, beyond what its types say.
//!
//! Owns: every rule that spans values (ranges, cross-references between node types,
//! workloads and faults, feasibility of resource requests). Collects all problems, each
//! named by its dotted field path so the loader can point at it. Must never: stop at the
//! first problem, or modify the config.

mod cluster;
mod faults;
mod limits;
mod workloads;

pub use workloads::MAX_TREE_WORKERS;

use super::ip_range::IpRange;
use super::locate::{join_index, join_key};
use super::schema::Config;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// One semantic problem: the field it is about and what would be valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Dotted field path, e.g. `workloads[0].num_cpus`.
    pub field: String,
    pub message: String,
}

/// Check everything; an empty result means the config is valid.
pub fn validate(config: &Config) -> Vec<Problem> {
    let mut p = Problems::default();
    let cluster = cluster::check(&mut p, &config.cluster);
    cluster::check_engine(&mut p, config);
    for (i, w) in config.workloads.iter().enumerate() {
        workloads::check(&mut p, &cluster, w, &join_index("workloads", i), false);
    }
    faults::check(&mut p, &cluster, config);
    limits::check(&mut p, config);
    p.0
}

/// The problems found so far, with the range checks every section needs.
#[derive(Default)]
pub(crate) struct Problems(Vec<Problem>);

impl Problems {
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem { field: field.into(), message: message.into() });
    }

    /// A resource quantity: finite and ≥ 0. Returns whether it is.
    pub fn non_negative(&mut self, field: String, x: f64) -> bool {
        let ok = x.is_finite() && x >= 0.0;
        if !ok {
            self.push(field, format!("must be a finite number ≥ 0, got {x}"));
        }
        ok
    }

    /// `x` in [0, 1] (`open_low`: in (0, 1]).
    pub fn fraction(&mut self, field: String, x: f64, open_low: bool) {
        let ok = if open_low { x > 0.0 && x <= 1.0 } else { (0.0..=1.0).contains(&x) };
        if !ok {
            let range = if open_low { "(0, 1] (greater than 0, at most 1)" } else { "[0, 1]" };
            self.push(field, format!("must be in {range}, got {x}"));
        }
    }

    pub fn positive(&mut self, field: String, x: f64) {
        if !(x.is_finite() && x > 0.0) {
            self.push(field, format!("must be a finite number greater than 0, got {x}"));
        }
    }

    pub fn at_least(&mut self, field: String, x: u64, min: u64) {
        if x < min {
            self.push(field, format!("must be at least {min}, got {x}"));
        }
    }

    /// Ray's retry and restart counts: -1 means unlimited.
    pub fn retries(&mut self, field: String, x: i32) {
        if x < -1 {
            self.push(field, format!("must be -1 (unlimited) or a count ≥ 0, got {x}"));
        }
    }

    /// Custom resources: each amount finite and ≥ 0.
    pub fn resources(&mut self, path: &str, resources: &BTreeMap<String, f64>) -> bool {
        let mut ok = true;
        for (name, amount) in resources {
            ok &= self.non_negative(join_key(&join_key(path, "resources"), name), *amount);
        }
        ok
    }
}

/// What a node of one type (or the head) offers; the basis of feasibility checks.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    pub name: String,
    pub cpu: f64,
    pub gpu: f64,
    pub memory: u64,
    pub resources: BTreeMap<String, f64>,
    /// How many nodes of this shape may ever exist (the head: 1).
    pub max_nodes: u64,
    /// Its addresses: the head's IP, or the type's range.
    pub addresses: Addresses,
}

#[derive(Clone, Debug)]
pub(crate) enum Addresses {
    Ip(Ipv4Addr),
    Range(String, IpRange),
    /// The address did not parse (already reported).
    Invalid,
}

impl Shape {
    pub fn amount(&self, resource: &str) -> f64 {
        match resource {
            "CPU" => self.cpu,
            "GPU" => self.gpu,
            "memory" => self.memory as f64,
            other => self.resources.get(other).copied().unwrap_or(0.0),
        }
    }

    pub fn holds(&self, ip: Ipv4Addr) -> bool {
        match &self.addresses {
            Addresses::Ip(a) => *a == ip,
            Addresses::Range(_, r) => r.contains(ip),
            Addresses::Invalid => false,
        }
    }
}

/// The cluster as the rest of validation sees it: the head first, then node types.
pub(crate) struct Cluster {
    pub shapes: Vec<Shape>,
}

impl Cluster {
    pub fn head(&self) -> &Shape {
        &self.shapes[0]
    }

    pub fn names(&self) -> Vec<&str> {
        self.shapes.iter().map(|s| s.name.as_str()).collect()
    }

    /// Resolve a node IP to the shape that owns it, or say why it cannot be.
    pub fn node_at(&self, ip: &str) -> Result<&Shape, NodeAtError> {
        let addr: Ipv4Addr = ip.trim().parse().map_err(|_| NodeAtError::NotAnAddress(ip.to_string()))?;
        self.shapes.iter().find(|s| s.holds(addr)).ok_or_else(|| {
            let mut places = Vec::new();
            for s in &self.shapes {
                match &s.addresses {
                    Addresses::Ip(a) => places.push(format!("head {a}")),
                    Addresses::Range(text, _) => places.push(format!("`{}` {text}", s.name)),
                    Addresses::Invalid => {}
                }
            }
            NodeAtError::NotInCluster { ip: ip.to_string(), places: places.join(", ") }
        })
    }
}

/// Why a node address names no node of the cluster.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NodeAtError {
    #[error("invalid IPv4 address `{0}`: expected a dotted quad such as 10.0.1.5")]
    NotAnAddress(String),
    #[error("node {ip} is not in the cluster; node addresses are: {places}")]
    NotInCluster { ip: String, places: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;

    fn problems(yaml: &str) -> Vec<(String, String)> {
        let config: Config = crate::config::diagnose::parse(yaml).expect("parses");
        validate(&config).into_iter().map(|p| (p.field, p.message)).collect()
    }

    fn fields(yaml: &str) -> Vec<String> {
        problems(yaml).into_iter().map(|(f, _)| f).collect()
    }

    #[test]
    fn defaults_are_valid() {
        assert!(problems("").is_empty());
        assert!(load_str("cluster: {}", "t").is_ok());
    }

    #[test]
    fn engine_settings_are_range_checked() {
        let f = fields(
            "scheduler: {spread_threshold: 1.5, top_k_fraction: 0, top_k_absolute: 0}\n\
             object_store: {spill_threshold: 0}\nmemory_monitor: {usage_threshold: -0.1}\n\
             sim: {speed: .inf, event_log_capacity: 0}\n\
             server: {listen: 'localhost', stream_interval: 0s, max_stream_clients: 0}\n",
        );
        assert_eq!(
            f,
            [
                "scheduler.spread_threshold",
                "scheduler.top_k_fraction",
                "scheduler.top_k_absolute",
                "object_store.spill_threshold",
                "memory_monitor.usage_threshold",
                "sim.speed",
                "sim.event_log_capacity",
                "server.listen",
                "server.stream_interval",
                "server.max_stream_clients",
            ]
        );
    }

    #[test]
    fn a_node_on_the_head_machine_takes_no_cores_of_its_own() {
        let node = |extra: &str| {
            format!(
                "cluster:\n  head: {{cpu: 2, cores: 2}}\n  node_types:\n    - {{name: w, count: 1, cpu: 2, memory: 8GiB, ip_range: 10.0.1.0/24{extra}}}\n"
            )
        };
        assert!(problems(&node(", on_head_machine: true")).is_empty());
        assert!(problems(&node(", cores: 4")).is_empty());
        let err = load_str(&node(", on_head_machine: true, cores: 4"), "two.yaml").unwrap_err().to_string();
        assert!(err.contains("two.yaml:4") && err.contains("cluster.node_types[0].cores"), "{err}");
        assert!(err.contains("head's cores"), "{err}");
        let cfg = load_str(&node(", on_head_machine: true"), "t").unwrap();
        assert_eq!(cfg.cluster.machine_of(Some(0)), (2.0, 2), "the head's cores");
    }

    #[test]
    fn nan_is_never_in_range() {
        let p = problems("scheduler: {spread_threshold: .nan}\n");
        assert_eq!(p.len(), 1);
        assert!(p[0].1.contains("[0, 1]"), "{}", p[0].1);
    }
}
