//! Rules for workloads: counts, probabilities, scheduling strategies, and whether
//! each resource request fits on some node the cluster could ever have.
//!
//! A task's or actor's `memory` is heap it *uses* (what the memory monitor sees), not a
//! logical resource it requests, so it is left out of feasibility: a config may mean to
//! overrun a node to exercise OOM kills. A bundle's `bundle_memory` is a reservation and
//! is checked.

use super::{Cluster, Problems, Shape};
use crate::config::locate::{join_index, join_key};
use crate::config::schema::*;
use crate::model::Bytes;
use std::collections::BTreeMap;

/// Most workers an explicit Flow Insight tree may hold (the seed's draw has at most 15).
pub const MAX_TREE_WORKERS: usize = 10_000;

/// An explicit tree replaces the random draw, so the draw's settings must be absent, and
/// it must be a tree the seed's program could create: every worker above the leaves has
/// children, so all leaves sit at depth 0 and `self.depth - 1 <= 0` means what it says.
fn worker_tree(p: &mut Problems, c: &FlowInsightConfig, tree: &WorkerTree, field: &str) {
    let drawn = [
        ("depth", c.depth.is_some()),
        ("min_children", c.min_children.is_some()),
        ("max_children", c.max_children.is_some()),
        ("bottleneck_probability", c.bottleneck_probability.is_some()),
        ("root_bottleneck", c.root_bottleneck),
    ];
    let base = field.strip_suffix(".tree").unwrap_or(field);
    for (key, given) in drawn {
        if given {
            p.push(
                join_key(base, key),
                format!("`{key}` is for the random draw and cannot be combined with `tree`, which gives the shape (the root's flag is `tree.bottleneck`); remove one"),
            );
        }
    }
    let size = tree.size();
    if size > MAX_TREE_WORKERS {
        p.push(field.to_string(), format!("the tree has {size} workers; at most {MAX_TREE_WORKERS} are allowed"));
        return;
    }
    uniform_leaves(p, tree, tree.height(), field);
}

fn uniform_leaves(p: &mut Problems, node: &WorkerTree, depth: u32, field: &str) {
    if node.children.is_empty() && depth > 0 {
        p.push(
            join_key(field, "children"),
            format!(
                "this worker is at depth {depth} but has no children; every worker above depth 0 creates at least one, \
                 as the seed's program does, so all leaves must be equally deep"
            ),
        );
    }
    for (i, child) in node.children.iter().enumerate() {
        uniform_leaves(p, child, depth.saturating_sub(1), &join_index(&join_key(field, "children"), i));
    }
}

/// One resource in a request and the field that asked for it.
struct Item {
    resource: String,
    amount: f64,
    field: String,
}

/// A task's, actor's or bundle's resource request.
struct Request {
    /// What asks, for messages: "each task", "each `Worker` actor".
    who: String,
    items: Vec<Item>,
}

impl Request {
    fn new(who: impl Into<String>) -> Request {
        Request { who: who.into(), items: Vec::new() }
    }

    fn with(mut self, resource: &str, amount: f64, field: String) -> Request {
        if amount > 0.0 {
            self.items.push(Item { resource: resource.into(), amount, field });
        }
        self
    }

    fn with_custom(mut self, path: &str, resources: &BTreeMap<String, f64>) -> Request {
        for (name, amount) in resources {
            self = self.with(name, *amount, join_key(&join_key(path, "resources"), name));
        }
        self
    }

    fn scaled(&self, k: f64, who: String) -> Request {
        let items = self
            .items
            .iter()
            .map(|i| Item { resource: i.resource.clone(), amount: i.amount * k, field: i.field.clone() })
            .collect();
        Request { who, items }
    }

    fn fits(&self, s: &Shape) -> bool {
        self.items.iter().all(|i| i.amount <= s.amount(&i.resource))
    }

    fn describe(&self) -> String {
        let parts: Vec<String> =
            self.items.iter().map(|i| format!("{}: {}", i.resource, amount(&i.resource, i.amount))).collect();
        format!("{{{}}}", parts.join(", "))
    }
}

fn amount(resource: &str, x: f64) -> String {
    if resource == "memory" {
        Bytes(x as u64).to_string()
    } else {
        format!("{x}")
    }
}

/// Check one workload at `path` (`workloads[0]`, or a job_mix template's workload).
pub(crate) fn check(p: &mut Problems, cluster: &Cluster, w: &WorkloadConfig, path: &str, in_template: bool) {
    let f = |name: &str| join_key(path, name);
    match w {
        // Built from a trace, not written: a recorded request no node of this cluster
        // can hold shows in the run as infeasible tasks, as it would on Ray.
        WorkloadConfig::Replay(_) => {}
        WorkloadConfig::FanOut(c) => {
            p.at_least(f("tasks"), c.tasks, 1);
            if c.reducers > c.tasks {
                p.push(f("reducers"), format!("reducers {} exceeds tasks {}; must be ≤ tasks", c.reducers, c.tasks));
            }
            let sane = p.non_negative(f("num_cpus"), c.num_cpus)
                & p.non_negative(f("num_gpus"), c.num_gpus)
                & p.resources(path, &c.resources);
            p.retries(f("max_retries"), c.max_retries);
            let pinned = strategy(p, cluster, &c.strategy, &f("strategy"));
            if sane {
                let req = Request::new(format!("each `{}` task", c.function))
                    .with("CPU", c.num_cpus, f("num_cpus"))
                    .with("GPU", c.num_gpus, f("num_gpus"))
                    .with_custom(path, &c.resources);
                feasible(p, cluster, &req, pinned);
            }
        }
        WorkloadConfig::FlowInsight(c) => {
            let (min_children, max_children) = c.children_range();
            p.at_least(f("min_children"), min_children as u64, 1);
            if min_children > max_children {
                p.push(
                    f("max_children"),
                    format!("max_children {max_children} is below min_children {min_children}; must be ≥ min_children"),
                );
            }
            p.fraction(f("bottleneck_probability"), c.bottleneck_chance(), false);
            if let Some(tree) = &c.tree {
                worker_tree(p, c, tree, &f("tree"));
            }
            p.at_least(f("max_concurrency"), c.max_concurrency as u64, 1);
            // Ray schedules an actor with no num_cpus as needing 1 CPU.
            let cpus = c.num_cpus.unwrap_or(1.0);
            if p.non_negative(f("num_cpus"), cpus) {
                let req = Request::new("each `Worker` actor").with("CPU", cpus, f("num_cpus"));
                feasible(p, cluster, &req, None);
            }
        }
        WorkloadConfig::Training(c) => {
            p.at_least(f("workers"), c.workers as u64, 1);
            p.retries(f("max_restarts"), c.max_restarts);
            p.retries(f("max_task_retries"), c.max_task_retries);
            let sane = p.non_negative(f("bundle_cpu"), c.bundle_cpu) & p.non_negative(f("bundle_gpu"), c.bundle_gpu);
            if sane {
                let bundle = Request::new("each placement group bundle")
                    .with("CPU", c.bundle_cpu, f("bundle_cpu"))
                    .with("GPU", c.bundle_gpu, f("bundle_gpu"))
                    .with("memory", c.bundle_memory.0 as f64, f("bundle_memory"));
                if feasible(p, cluster, &bundle, None) {
                    placement(p, cluster, c, &bundle, path);
                }
            }
        }
        WorkloadConfig::ActorPool(c) => {
            p.at_least(f("actors"), c.actors as u64, 1);
            p.at_least(f("max_concurrency"), c.max_concurrency as u64, 1);
            p.retries(f("max_restarts"), c.max_restarts);
            p.retries(f("max_task_retries"), c.max_task_retries);
            if c.class.trim().is_empty() {
                p.push(f("class"), "must not be empty");
            }
            let cpus = c.num_cpus.unwrap_or(1.0);
            let sane = p.non_negative(f("num_cpus"), cpus) & p.non_negative(f("num_gpus"), c.num_gpus);
            let pinned = strategy(p, cluster, &c.strategy, &f("strategy"));
            if sane {
                let req = Request::new(format!("each `{}` actor", c.class)).with("CPU", cpus, f("num_cpus")).with(
                    "GPU",
                    c.num_gpus,
                    f("num_gpus"),
                );
                feasible(p, cluster, &req, pinned);
            }
        }
        WorkloadConfig::JobMix(c) => {
            if in_template {
                p.push(
                    f("kind"),
                    "a job_mix template cannot itself be a job_mix; use flow_insight, fan_out, training or actor_pool",
                );
                return;
            }
            p.positive(f("arrivals_per_minute"), c.arrivals_per_minute);
            p.at_least(f("max_concurrent_jobs"), c.max_concurrent_jobs as u64, 1);
            if c.templates.is_empty() {
                p.push(
                    f("templates"),
                    "must list at least one template ({weight: 1, workload: {kind: fan_out, tasks: 10}})",
                );
            }
            for (j, t) in c.templates.iter().enumerate() {
                let tp = join_index(&f("templates"), j);
                p.positive(join_key(&tp, "weight"), t.weight);
                check(p, cluster, &t.workload, &join_key(&tp, "workload"), true);
            }
        }
    }
}

/// Check a strategy; for a hard NODE_AFFINITY to a valid node, return that node's shape.
fn strategy<'c>(p: &mut Problems, cluster: &'c Cluster, s: &StrategyConfig, path: &str) -> Option<&'c Shape> {
    let node_field = join_key(path, "node");
    match (s.kind, &s.node) {
        (StrategyKind::NodeAffinity, None) => {
            p.push(
                node_field,
                format!(
                    "kind NODE_AFFINITY needs `node`: the IP of a node in the cluster (e.g. the head's {})",
                    head_ip(cluster)
                ),
            );
            None
        }
        (StrategyKind::NodeAffinity, Some(ip)) => match cluster.node_at(ip) {
            Ok(shape) => (!s.soft).then_some(shape),
            Err(e) => {
                p.push(node_field, e.to_string());
                None
            }
        },
        (kind, Some(_)) => {
            let kind = if kind == StrategyKind::Spread { "SPREAD" } else { "DEFAULT" };
            p.push(node_field, format!("`node` is only used with kind NODE_AFFINITY (kind here is {kind}); remove it or set kind: NODE_AFFINITY"));
            None
        }
        (_, None) => None,
    }
}

fn head_ip(cluster: &Cluster) -> String {
    match &cluster.head().addresses {
        super::Addresses::Ip(ip) => ip.to_string(),
        _ => "IP".into(),
    }
}

/// Report a request no node could ever hold. Returns whether some node can.
fn feasible(p: &mut Problems, cluster: &Cluster, req: &Request, pinned: Option<&Shape>) -> bool {
    if req.items.is_empty() {
        return true;
    }
    if let Some(node) = pinned {
        if let Some(i) = req.items.iter().find(|i| i.amount > node.amount(&i.resource)) {
            p.push(
                &i.field,
                format!(
                    "infeasible on the NODE_AFFINITY node (node type `{}`, soft: false): {} requests {}; it has {} {}",
                    node.name,
                    req.who,
                    req.describe(),
                    i.resource,
                    amount(&i.resource, node.amount(&i.resource))
                ),
            );
            return false;
        }
    }
    let possible: Vec<&Shape> = cluster.shapes.iter().filter(|s| s.max_nodes > 0).collect();
    if possible.iter().any(|s| req.fits(s)) {
        return true;
    }
    let head = format!("infeasible on every node type: {} requests {}", req.who, req.describe());
    for i in &req.items {
        let largest = possible.iter().map(|s| s.amount(&i.resource)).fold(0.0, f64::max);
        if i.amount > largest {
            let why = if largest == 0.0 && !matches!(i.resource.as_str(), "CPU" | "GPU" | "memory") {
                format!("no node type has resource `{}`", i.resource)
            } else {
                format!("largest {} is {}", i.resource, amount(&i.resource, largest))
            };
            p.push(&i.field, format!("{head}; {why}"));
            return false;
        }
    }
    let names: Vec<&str> = possible.iter().map(|s| s.name.as_str()).collect();
    p.push(&req.items[0].field, format!("{head}; no single node type ({}) has all of it", names.join(", ")));
    false
}

/// STRICT_PACK needs every bundle on one node; STRICT_SPREAD one node per bundle.
fn placement(p: &mut Problems, cluster: &Cluster, c: &TrainingConfig, bundle: &Request, path: &str) {
    match c.placement_strategy {
        PgStrategyConfig::StrictPack if c.workers > 1 => {
            let all = bundle.scaled(
                c.workers as f64,
                format!("the STRICT_PACK placement group ({} bundles on one node)", c.workers),
            );
            feasible(p, cluster, &all, None);
        }
        PgStrategyConfig::StrictSpread => {
            let nodes: u64 = cluster.shapes.iter().filter(|s| bundle.fits(s)).map(|s| s.max_nodes).sum();
            if nodes < c.workers as u64 {
                p.push(
                    join_key(path, "workers"),
                    format!(
                        "STRICT_SPREAD needs {} nodes that each fit a bundle {}, but the cluster can have at most {nodes}",
                        c.workers,
                        bundle.describe()
                    ),
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::config::validate::validate;

    const CLUSTER: &str = "\
cluster:
  head: {ip: 10.0.0.1, cpu: 4, memory: 16GiB}
  node_types:
    - {name: cpu, cpu: 16, memory: 64GiB, ip_range: 10.0.1.0/24, count: 2}
    - {name: gpu, cpu: 8, gpu: 2, memory: 64GiB, ip_range: 10.0.2.0/24, autoscaler: {max_workers: 2}}
    - {name: never, cpu: 64, memory: 64GiB, ip_range: 10.0.3.0/24}
";

    fn problems(workloads: &str) -> Vec<(String, String)> {
        let config = crate::config::diagnose::parse(&format!("{CLUSTER}workloads:\n{workloads}")).expect("parses");
        validate(&config).into_iter().map(|p| (p.field, p.message)).collect()
    }

    #[test]
    fn requests_are_checked_against_nodes_that_can_exist() {
        let p = problems("  - {kind: fan_out, tasks: 1, num_cpus: 32}\n");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0, "workloads[0].num_cpus");
        // `never` has 64 CPUs but no node of it can ever start.
        assert!(p[0].1.ends_with("largest CPU is 16"), "{}", p[0].1);
        let p = problems("  - {kind: fan_out, tasks: 1, num_cpus: 12, num_gpus: 1}\n");
        assert!(p[0].1.contains("no single node type (ray.head.default, cpu, gpu) has all of it"), "{}", p[0].1);
        let p = problems("  - {kind: fan_out, tasks: 1, resources: {TPU: 1}}\n");
        assert_eq!(p[0].0, "workloads[0].resources.TPU");
        assert!(p[0].1.contains("no node type has resource `TPU`"), "{}", p[0].1);
    }

    #[test]
    fn counts_and_probabilities_are_range_checked() {
        let p = problems(
            "  - {kind: fan_out, tasks: 2, reducers: 3, num_gpus: -1, max_retries: -2}\n  \
             - {kind: flow_insight, min_children: 3, max_children: 2, bottleneck_probability: 2, max_concurrency: 0}\n  \
             - {kind: training, workers: 0}\n  - {kind: actor_pool, actors: 0, max_concurrency: 0}\n",
        );
        let f: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            f,
            [
                "workloads[0].reducers",
                "workloads[0].num_gpus",
                "workloads[0].max_retries",
                "workloads[1].max_children",
                "workloads[1].bottleneck_probability",
                "workloads[1].max_concurrency",
                "workloads[2].workers",
                "workloads[3].actors",
                "workloads[3].max_concurrency",
            ]
        );
    }

    #[test]
    fn node_affinity_needs_a_node_in_the_cluster() {
        let p = problems(
            "  - {kind: fan_out, tasks: 1, strategy: {kind: NODE_AFFINITY}}\n  \
             - {kind: fan_out, tasks: 1, strategy: {kind: NODE_AFFINITY, node: 10.9.0.1}}\n  \
             - {kind: fan_out, tasks: 1, strategy: {kind: SPREAD, node: 10.0.0.1}}\n  \
             - {kind: fan_out, tasks: 1, num_gpus: 1, strategy: {kind: NODE_AFFINITY, node: 10.0.1.3}}\n  \
             - {kind: fan_out, tasks: 1, num_gpus: 1, strategy: {kind: NODE_AFFINITY, node: 10.0.1.3, soft: true}}\n",
        );
        let f: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            f,
            [
                "workloads[0].strategy.node",
                "workloads[1].strategy.node",
                "workloads[2].strategy.node",
                "workloads[3].num_gpus"
            ]
        );
        assert!(p[1].1.contains("not in the cluster") && p[1].1.contains("`gpu` 10.0.2.0/24"), "{}", p[1].1);
        assert!(p[3].1.contains("node type `cpu`"), "{}", p[3].1);
    }

    #[test]
    fn job_mix_templates_are_checked_and_cannot_nest() {
        let p = problems(
            "  - kind: job_mix\n    arrivals_per_minute: 0\n    templates:\n      \
             - {weight: 0, workload: {kind: fan_out, tasks: 0}}\n      \
             - {workload: {kind: job_mix, arrivals_per_minute: 1, templates: []}}\n  \
             - {kind: job_mix, arrivals_per_minute: 1, templates: []}\n",
        );
        let f: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            f,
            [
                "workloads[0].arrivals_per_minute",
                "workloads[0].templates[0].weight",
                "workloads[0].templates[0].workload.tasks",
                "workloads[0].templates[1].workload.kind",
                "workloads[1].templates",
            ]
        );
    }

    #[test]
    fn strict_placement_groups_must_fit_together() {
        let p = problems(
            "  - {kind: training, workers: 3, bundle_cpu: 1, bundle_gpu: 1, placement_strategy: STRICT_PACK}\n",
        );
        assert_eq!(p.len(), 1);
        assert!(p[0].1.contains("STRICT_PACK") && p[0].1.ends_with("largest GPU is 2"), "{}", p[0].1);
        let p = problems(
            "  - {kind: training, workers: 3, bundle_cpu: 1, bundle_gpu: 1, placement_strategy: STRICT_SPREAD}\n",
        );
        assert_eq!(p[0].0, "workloads[0].workers");
        assert!(p[0].1.contains("at most 2"), "{}", p[0].1);
    }
}
