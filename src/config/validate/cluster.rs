//! Rules for the cluster (head, node types, address ranges, autoscaler) and for the
//! engine sections (scheduler, object store, memory monitor, sim, server).

use super::{Addresses, Cluster, Problems, Shape};
use crate::config::ip_range::IpRange;
use crate::config::locate::{join_index, join_key};
use crate::config::schema::{ClusterConfig, Config};
use crate::model::Bytes;
use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddr};

/// Check the cluster section and describe what it provides.
pub(crate) fn check(p: &mut Problems, c: &ClusterConfig) -> Cluster {
    if let Err(why) = crate::config::ray_series::check_ray_version(&c.ray_version) {
        p.push("cluster.ray_version", why.to_string());
    }
    if c.network_bandwidth.0 == 0 {
        p.push("cluster.network_bandwidth", "must be greater than 0 (e.g. 1250MB for 10 Gbit/s)");
    }
    if c.health_check.period.as_micros() == 0 {
        p.push("cluster.health_check.period", "must be greater than 0 (Ray's default: 3s)");
    }
    if c.health_check.failure_threshold == 0 {
        p.push("cluster.health_check.failure_threshold", "must be at least 1 (Ray's default: 5)");
    }
    let head = &c.head;
    let hp = "cluster.head";
    check_node(p, hp, head.cpu, head.gpu, head.memory, head.object_store_memory, &head.resources);
    check_cores(p, hp, head.cores);
    let head_ip = match head.ip.trim().parse::<Ipv4Addr>() {
        Ok(ip) => Addresses::Ip(ip),
        Err(_) => {
            p.push(
                join_key(hp, "ip"),
                format!("invalid IPv4 address `{}`: expected a dotted quad such as 10.0.0.1", head.ip),
            );
            Addresses::Invalid
        }
    };
    if head.name.trim().is_empty() {
        p.push(join_key(hp, "name"), "must not be empty");
    }
    let mut shapes = vec![Shape {
        name: head.name.clone(),
        cpu: head.cpu,
        gpu: head.gpu,
        memory: head.memory.0,
        resources: head.resources.clone(),
        max_nodes: 1,
        addresses: head_ip.clone(),
    }];

    let mut names: HashMap<&str, String> = HashMap::new();
    for (i, t) in c.node_types.iter().enumerate() {
        let path = join_index("cluster.node_types", i);
        check_node(p, &path, t.cpu, t.gpu, t.memory, t.object_store_memory, &t.resources);
        check_cores(p, &path, t.cores);
        if t.on_head_machine && t.cores.is_some() {
            p.push(
                join_key(&path, "cores"),
                "a node type with on_head_machine: true runs on the head's cores (cluster.head.cores); remove cores",
            );
        }

        let name_path = join_key(&path, "name");
        if t.name.trim().is_empty() {
            p.push(&name_path, "must not be empty");
        } else if t.name == head.name {
            p.push(
                &name_path,
                format!(
                    "`{}` is the head node's name (cluster.head.name); node type names must differ from it",
                    t.name
                ),
            );
        } else if let Some(first) = names.get(t.name.as_str()) {
            p.push(
                &name_path,
                format!("duplicate node type name `{}` (already used by {first}); names must be unique", t.name),
            );
        } else {
            names.insert(&t.name, path.clone());
        }

        let min_workers = t.autoscaler.as_ref().map_or(0, |a| a.min_workers);
        let start = t.count.unwrap_or(min_workers) as u64;
        let mut max_nodes = start;
        let mut max_reason = "count";
        if let Some(a) = &t.autoscaler {
            let ap = join_key(&path, "autoscaler");
            if a.min_workers > a.max_workers {
                p.push(
                    join_key(&ap, "min_workers"),
                    format!(
                        "min_workers {} exceeds max_workers {}; must be ≤ max_workers",
                        a.min_workers, a.max_workers
                    ),
                );
            }
            if let Some(count) = t.count.filter(|c| *c > a.max_workers) {
                p.push(
                    join_key(&path, "count"),
                    format!("count {count} exceeds autoscaler.max_workers {}; must be ≤ max_workers", a.max_workers),
                );
            }
            if a.max_workers as u64 > max_nodes {
                max_nodes = a.max_workers as u64;
                max_reason = "autoscaler.max_workers";
            }
        }

        let range_path = join_key(&path, "ip_range");
        let addresses = match IpRange::parse(&t.ip_range) {
            Err(e) => {
                p.push(&range_path, e.to_string());
                Addresses::Invalid
            }
            Ok(range) => {
                check_range(p, &range_path, &t.ip_range, &range, &head_ip, &shapes[1..], c);
                if (range.len() as u64) < max_nodes {
                    p.push(
                        &range_path,
                        format!(
                            "ip_range {} holds {} addresses but node type `{}` may run up to {max_nodes} nodes ({max_reason}); use a larger range",
                            t.ip_range.trim(),
                            range.len(),
                            t.name
                        ),
                    );
                }
                Addresses::Range(t.ip_range.trim().to_string(), range)
            }
        };
        shapes.push(Shape {
            name: t.name.clone(),
            cpu: t.cpu,
            gpu: t.gpu,
            memory: t.memory.0,
            resources: t.resources.clone(),
            max_nodes,
            addresses,
        });
    }
    Cluster { shapes }
}

/// A range must not hold the head's IP nor overlap an earlier node type's range.
fn check_range(
    p: &mut Problems,
    field: &str,
    text: &str,
    range: &IpRange,
    head_ip: &Addresses,
    earlier: &[Shape],
    c: &ClusterConfig,
) {
    if let Addresses::Ip(ip) = head_ip {
        if range.contains(*ip) {
            p.push(
                field,
                format!("ip_range {} contains the head node's IP {ip}; node addresses must be distinct", text.trim()),
            );
        }
    }
    for (j, other) in earlier.iter().enumerate() {
        if let Addresses::Range(other_text, other_range) = &other.addresses {
            if range.overlaps(other_range) {
                p.push(
                    field,
                    format!(
                        "ip_range {} overlaps {other_text} of node type `{}` (cluster.node_types[{j}].ip_range); ranges must not share addresses",
                        text.trim(),
                        c.node_types[j].name
                    ),
                );
            }
        }
    }
}

fn check_node(
    p: &mut Problems,
    path: &str,
    cpu: f64,
    gpu: f64,
    memory: Bytes,
    object_store_memory: Option<Bytes>,
    resources: &BTreeMap<String, f64>,
) {
    p.non_negative(join_key(path, "cpu"), cpu);
    p.non_negative(join_key(path, "gpu"), gpu);
    p.resources(path, resources);
    if memory.0 == 0 {
        p.push(join_key(path, "memory"), "must be greater than 0 (e.g. 64GiB)");
    }
    if let Some(os) = object_store_memory.filter(|os| *os > memory) {
        p.push(
            join_key(path, "object_store_memory"),
            format!("object_store_memory {os} exceeds the node's memory {memory}; must be ≤ memory"),
        );
    }
}

/// Physical cores, where given, are at least one (Ray's own work needs a core to run on).
fn check_cores(p: &mut Problems, path: &str, cores: Option<u32>) {
    if let Some(c) = cores {
        p.at_least(join_key(path, "cores"), c as u64, 1);
    }
}

/// Scheduler, object store, memory monitor, sim and server settings.
pub(crate) fn check_engine(p: &mut Problems, c: &Config) {
    let s = &c.scheduler;
    p.fraction("scheduler.spread_threshold".into(), s.spread_threshold, false);
    p.fraction("scheduler.top_k_fraction".into(), s.top_k_fraction, true);
    p.at_least("scheduler.top_k_absolute".into(), s.top_k_absolute as u64, 1);
    p.fraction("scheduler.idle_worker_cpu".into(), s.idle_worker_cpu, false);
    p.fraction("scheduler.driver_slowdown_per_busy_worker".into(), s.driver_slowdown_per_busy_worker, false);
    if s.worker_niceness > 19 {
        p.push("scheduler.worker_niceness", "must be 0 to 19 (a Linux niceness; Ray's default is 15)");
    }
    if let Some(n) = s.maximum_startup_concurrency {
        p.at_least("scheduler.maximum_startup_concurrency".into(), n as u64, 1);
    }

    p.fraction("object_store.spill_threshold".into(), c.object_store.spill_threshold, true);
    if c.object_store.spill_bandwidth.0 == 0 {
        p.push("object_store.spill_bandwidth", "must be greater than 0 (e.g. 1GiB)");
    }
    if c.object_store.transfer_bandwidth.0 == 0 {
        p.push("object_store.transfer_bandwidth", "must be greater than 0 (e.g. 700MB)");
    }
    if c.object_store.put_bandwidth.0 == 0 {
        p.push("object_store.put_bandwidth", "must be greater than 0 (e.g. 1473MB)");
    }
    if c.object_store.put_parallel_bandwidth.0 == 0 {
        p.push("object_store.put_parallel_bandwidth", "must be greater than 0 (e.g. 2580MB)");
    }
    if c.object_store.put_reused_bandwidth.0 == 0 {
        p.push("object_store.put_reused_bandwidth", "must be greater than 0 (e.g. 11200MB)");
    }
    if c.object_store.get_bandwidth.0 == 0 {
        p.push("object_store.get_bandwidth", "must be greater than 0 (e.g. 16GB)");
    }
    if c.object_store.get_fresh_bandwidth.0 == 0 {
        p.push("object_store.get_fresh_bandwidth", "must be greater than 0 (e.g. 2GB)");
    }
    p.fraction("memory_monitor.usage_threshold".into(), c.memory_monitor.usage_threshold, false);

    let sim = &c.sim;
    const MAX_SPEED: f64 = 1e9;
    p.positive("sim.speed".into(), sim.speed);
    // The same ceiling as `POST /api/control/speed`: beyond it pacing arithmetic loses
    // meaning (virtual µs per wall ns overflow), and no engine keeps such a pace.
    if sim.speed.is_finite() && sim.speed > MAX_SPEED {
        p.push("sim.speed", format!("must be at most {MAX_SPEED:e} (as POST /api/control/speed), got {:e}", sim.speed));
    }
    p.at_least("sim.finished_task_capacity".into(), sim.finished_task_capacity as u64, 1);
    p.at_least("sim.dead_actor_capacity".into(), sim.dead_actor_capacity as u64, 1);
    p.at_least("sim.event_log_capacity".into(), sim.event_log_capacity as u64, 1);
    p.at_least("sim.cluster_event_capacity".into(), sim.cluster_event_capacity as u64, 1);
    p.at_least("sim.finished_job_capacity".into(), sim.finished_job_capacity as u64, 1);
    p.at_least("sim.dead_node_capacity".into(), sim.dead_node_capacity as u64, 1);

    let srv = &c.server;
    /// Tokio's semaphore holds at most this many permits; no real server needs more.
    const MAX_CONNECTIONS: usize = 1_000_000;
    if srv.listen.trim().parse::<SocketAddr>().is_err() {
        p.push(
            "server.listen",
            format!("invalid listen address `{}`: expected IP:PORT such as 127.0.0.1:8080 or [::]:8080", srv.listen),
        );
    }
    if srv.stream_interval.0 == 0 {
        p.push("server.stream_interval", "must be greater than 0 (e.g. 2s)");
    }
    p.at_least("server.max_stream_clients".into(), srv.max_stream_clients as u64, 1);
    p.at_least("server.max_connections".into(), srv.max_connections as u64, 1);
    if srv.max_connections > MAX_CONNECTIONS {
        p.push("server.max_connections", format!("must be at most {MAX_CONNECTIONS}, got {}", srv.max_connections));
    }
    if srv.header_read_timeout.0 == 0 || srv.header_read_timeout.0 > 3_600_000_000 {
        p.push("server.header_read_timeout", "must be greater than 0 and at most 1h (e.g. 10s)");
    }
    let l = &srv.limits;
    for (name, bytes, min) in [
        ("alert_label_bytes", l.alert_label_bytes, 64),
        ("alert_annotation_bytes", l.alert_annotation_bytes, 64),
        ("alerts_bytes", l.alerts_bytes, 64 * 1024),
        ("job_metadata_bytes", l.job_metadata_bytes, 64),
        ("job_string_bytes", l.job_string_bytes, 64),
        ("submissions_bytes", l.submissions_bytes, 64 * 1024),
        ("response_budget", l.response_budget, 1 << 20),
    ] {
        p.at_least(format!("server.limits.{name}"), bytes.0, min);
    }
    if l.websocket_idle_timeout.0 < 1_000_000 || l.websocket_idle_timeout.0 > 3_600_000_000 {
        p.push("server.limits.websocket_idle_timeout", "must be at least 1s and at most 1h (e.g. 60s)");
    }
    for (i, origin) in srv.allowed_origins.iter().flatten().enumerate() {
        let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
        let valid = origin == "*" || rest.is_some_and(|r| !r.is_empty() && !r.contains(['/', '?', '#', ' ']));
        if !valid {
            p.push(
                format!("server.allowed_origins[{i}]"),
                format!("`{origin}` is not an origin: expected scheme://host[:port] such as https://grafana.example.com, or *"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::validate::validate;

    fn problems(yaml: &str) -> Vec<(String, String)> {
        let config = crate::config::diagnose::parse(yaml).expect("parses");
        validate(&config).into_iter().map(|p| (p.field, p.message)).collect()
    }

    const TYPES: &str =
        "cluster:\n  head: {ip: 10.0.0.1, cpu: -1, memory: 1GiB, object_store_memory: 2GiB}\n  node_types:\n";

    #[test]
    fn node_resources_must_be_sane() {
        let p = problems(&format!(
            "{TYPES}    - {{name: a, cpu: .nan, gpu: -1, memory: 0, ip_range: 10.0.1.0/24, resources: {{tpu: -2}}}}\n"
        ));
        let f: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            f,
            [
                "cluster.head.cpu",
                "cluster.head.object_store_memory",
                "cluster.node_types[0].cpu",
                "cluster.node_types[0].gpu",
                "cluster.node_types[0].resources.tpu",
                "cluster.node_types[0].memory",
            ]
        );
        assert!(p[1].1.contains("exceeds the node's memory"), "{}", p[1].1);
    }

    #[test]
    fn names_must_be_unique_and_not_the_heads() {
        let p = problems(
            "cluster:\n  node_types:\n    - {name: a, memory: 1GiB, ip_range: 10.0.1.0/24}\n    \
             - {name: a, memory: 1GiB, ip_range: 10.0.2.0/24}\n    \
             - {name: ray.head.default, memory: 1GiB, ip_range: 10.0.3.0/24}\n",
        );
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p[0].0, "cluster.node_types[1].name");
        assert!(p[0].1.contains("duplicate node type name `a` (already used by cluster.node_types[0])"));
        assert_eq!(p[1].0, "cluster.node_types[2].name");
        assert!(p[1].1.contains("head node's name"));
    }

    #[test]
    fn ranges_must_parse_be_disjoint_avoid_the_head_and_fit_the_nodes() {
        let p = problems(
            "cluster:\n  head: {ip: 10.0.1.7}\n  node_types:\n    - {name: a, memory: 1GiB, ip_range: 10.0.1.0/24}\n    \
             - {name: b, memory: 1GiB, ip_range: 10.0.1.200-10.0.2.10}\n    \
             - {name: c, memory: 1GiB, ip_range: nonsense}\n    \
             - {name: d, memory: 1GiB, ip_range: 10.0.9.0/30, count: 1, autoscaler: {max_workers: 3}}\n",
        );
        let f: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            f,
            [
                "cluster.node_types[0].ip_range",
                "cluster.node_types[1].ip_range",
                "cluster.node_types[2].ip_range",
                "cluster.node_types[3].ip_range",
            ]
        );
        assert!(p[0].1.contains("contains the head node's IP 10.0.1.7"), "{}", p[0].1);
        assert!(p[1].1.contains("overlaps 10.0.1.0/24 of node type `a`"), "{}", p[1].1);
        assert!(p[2].1.contains("CIDR"), "{}", p[2].1);
        assert!(p[3].1.contains("holds 2 addresses") && p[3].1.contains("up to 3 nodes (autoscaler.max_workers)"));
    }

    #[test]
    fn worker_niceness_is_a_linux_niceness() {
        let fields = |yaml: &str| -> Vec<String> { problems(yaml).into_iter().map(|(f, _)| f).collect() };
        assert_eq!(fields("scheduler: {worker_niceness: 20}\n"), ["scheduler.worker_niceness"]);
        assert!(fields("scheduler: {worker_niceness: 15}\n").is_empty());
        let p = crate::config::diagnose::parse("scheduler: {worker_niceness: -1}\n");
        assert!(p.is_err(), "a negative niceness is not parsed");
    }

    #[test]
    fn autoscaler_bounds_are_ordered() {
        let p = problems(
            "cluster:\n  node_types:\n    - name: a\n      memory: 1GiB\n      ip_range: 10.0.1.0/24\n      count: 9\n      \
             autoscaler: {min_workers: 5, max_workers: 4}\n",
        );
        let f: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(f, ["cluster.node_types[0].autoscaler.min_workers", "cluster.node_types[0].count"]);
    }
}
