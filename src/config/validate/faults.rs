//! Rules for faults: every node, node type and actor class a fault names must exist.

use super::{Cluster, Problems};
use crate::config::locate::{join_index, join_key};
use crate::config::schema::*;
use crate::config::suggest::did_you_mean;

pub(crate) fn check(p: &mut Problems, cluster: &Cluster, config: &Config) {
    let classes = actor_classes(&config.workloads);
    for (i, fault) in config.faults.iter().enumerate() {
        let path = join_index("faults", i);
        let f = |name: &str| join_key(&path, name);
        match fault {
            FaultConfig::KillNode { node, node_type, .. } => {
                target(p, cluster, "kill_node", node, node_type, &path);
            }
            FaultConfig::MemoryPressure { node, node_type, fraction, .. } => {
                target(p, cluster, "memory_pressure", node, node_type, &path);
                p.fraction(f("fraction"), *fraction, true);
            }
            FaultConfig::RestoreNode { node, .. } => {
                if let Err(e) = cluster.node_at(node) {
                    p.push(f("node"), e.to_string());
                }
            }
            FaultConfig::KillActor { class, .. } => {
                if !classes.iter().any(|c| c == class) {
                    let known: Vec<&str> = classes.iter().map(String::as_str).collect();
                    let hint = did_you_mean(class, &known).map_or(String::new(), |s| format!(" (did you mean `{s}`?)"));
                    let list = if known.is_empty() {
                        "no workload creates actors (flow_insight creates Worker, training TrainWorker, actor_pool its `class`)".to_string()
                    } else {
                        format!("known classes: {}", known.join(", "))
                    };
                    p.push(f("class"), format!("no workload creates actor class `{class}`{hint}; {list}"));
                }
            }
            FaultConfig::TaskFailures { at, until, probability, .. } => {
                p.fraction(f("probability"), *probability, false);
                if let Some(until) = until.filter(|u| u < at) {
                    p.push(f("until"), format!("until {until} is before at {at}; must be ≥ at"));
                }
            }
        }
    }
}

/// `kill_node` and `memory_pressure` name exactly one of a node IP or a node type.
fn target(
    p: &mut Problems,
    cluster: &Cluster,
    kind: &str,
    node: &Option<String>,
    node_type: &Option<String>,
    path: &str,
) {
    let names = cluster.names();
    match (node, node_type) {
        (Some(_), Some(_)) => {
            p.push(join_key(path, "node_type"), format!("{kind} takes either `node` (an IP) or `node_type`, not both"));
        }
        (None, None) => p.push(
            join_key(path, "node"),
            format!(
                "{kind} needs `node` (the IP of a node in the cluster) or `node_type` (one of: {})",
                names.join(", ")
            ),
        ),
        (Some(ip), None) => {
            if let Err(e) = cluster.node_at(ip) {
                p.push(join_key(path, "node"), e.to_string());
            }
        }
        (None, Some(t)) => {
            if !names.contains(&t.as_str()) {
                let hint = did_you_mean(t, &names).map_or(String::new(), |s| format!(" (did you mean `{s}`?)"));
                p.push(
                    join_key(path, "node_type"),
                    format!("undefined node type `{t}`{hint}; defined node types: {}", names.join(", ")),
                );
            }
        }
    }
}

/// Actor classes the workloads create, job_mix templates included, in first-seen order.
fn actor_classes(workloads: &[WorkloadConfig]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |c: &str| {
        if !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
    };
    let mut stack: Vec<&WorkloadConfig> = workloads.iter().rev().collect();
    while let Some(w) = stack.pop() {
        match w {
            WorkloadConfig::FlowInsight(_) => add("Worker"),
            WorkloadConfig::Training(_) => add("TrainWorker"),
            WorkloadConfig::ActorPool(c) => add(&c.class),
            WorkloadConfig::FanOut(_) => {}
            WorkloadConfig::Replay(c) => {
                for call in c.job.calls.iter().filter(|c| c.kind == crate::config::replay::ReplayKind::ActorCreation) {
                    add(&call.class);
                }
            }
            WorkloadConfig::JobMix(c) => stack.extend(c.templates.iter().rev().map(|t| &t.workload)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::config::validate::validate;

    const BASE: &str = "\
cluster:
  node_types:
    - {name: cpu, memory: 8GiB, ip_range: 10.0.1.0/24}
workloads:
  - {kind: actor_pool, actors: 1, class: Cache}
  - kind: job_mix
    arrivals_per_minute: 1
    templates: [{workload: {kind: training, workers: 1, bundle_gpu: 0}}]
";

    fn problems(faults: &str) -> Vec<(String, String)> {
        let config = crate::config::diagnose::parse(&format!("{BASE}faults:\n{faults}")).expect("parses");
        validate(&config).into_iter().map(|p| (p.field, p.message)).collect()
    }

    #[test]
    fn node_faults_name_exactly_one_existing_target() {
        let p = problems(
            "  - {kind: kill_node, at: 1s}\n  - {kind: kill_node, at: 1s, node: 10.0.1.4, node_type: cpu}\n  \
             - {kind: kill_node, at: 1s, node_type: gpu}\n  - {kind: memory_pressure, at: 1s, node: 10.0.7.1, fraction: 0, duration: 5s}\n  \
             - {kind: kill_node, at: 1s, node_type: ray.head.default}\n  - {kind: restore_node, at: 2s, node: 10.0.1.300}\n",
        );
        let f: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            f,
            [
                "faults[0].node",
                "faults[1].node_type",
                "faults[2].node_type",
                "faults[3].node",
                "faults[3].fraction",
                "faults[5].node"
            ]
        );
        assert!(p[2].1.starts_with("undefined node type `gpu`"), "{}", p[2].1);
        assert!(p[2].1.ends_with("defined node types: ray.head.default, cpu"), "{}", p[2].1);
        assert!(p[5].1.contains("invalid IPv4 address"), "{}", p[5].1);
    }

    #[test]
    fn actor_faults_name_a_class_some_workload_creates() {
        assert!(problems("  - {kind: kill_actor, at: 1s, class: TrainWorker}\n").is_empty());
        let p = problems("  - {kind: kill_actor, at: 1s, class: cache}\n");
        assert_eq!(p[0].0, "faults[0].class");
        assert!(p[0].1.contains("(did you mean `Cache`?); known classes: Cache, TrainWorker"), "{}", p[0].1);
    }

    #[test]
    fn task_failures_have_a_probability_and_ordered_window() {
        let p = problems("  - {kind: task_failures, at: 10s, until: 5s, probability: 1.5}\n");
        let f: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(f, ["faults[0].probability", "faults[0].until"]);
        assert!(p[1].1.contains("until 5s is before at 10s"));
    }
}
