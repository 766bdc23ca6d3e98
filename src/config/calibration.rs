//! Where the model's cost defaults come from, and what a config asks of the model that
//! they were not measured for.
//!
//! The per-call costs (`scheduler:`) default to figures measured on real Ray on one
//! kind of machine (`scripts/ray-calibration/`, `docs/fidelity.md`). A what-if on a much
//! bigger machine, or with a kind of workload no recorded run covers, extrapolates:
//! `simulate` and `--sweep` name the calibration and print one warning line then. So
//! does a config whose task returns are bigger than the largest put and get measured
//! (`object_local`, `object_get`, 100 MB): their costs are extrapolated, one whose returns
//! are numpy arrays (their get comes from one probe, not the suite's runs), and one whose
//! cluster can grow far past the two nodes the suite ran: the GCS's own work (actor and
//! placement group scheduling, the resource broadcasts, the health checks), which grows
//! with the nodes it serves, is not charged at all. A config that sets a calibrated cost
//! to another value is named too: the errors the report quotes were the calibrated
//! costs'.
//!
//! Owns: the calibration's description and the checks of a config against it.
//! Must never: change a config (a warning informs; it neither refuses nor adjusts).

use super::scheduler::SchedulerConfig;
use super::schema::{Config, ObjectStoreConfig, ValueType, WorkloadConfig};
use crate::model::Bytes;
use serde::Serialize;

mod measured;
pub use measured::{measured_for, Measured, MEASURED_HEADING};

/// What the cost defaults were measured on.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Calibration {
    pub ray_version: &'static str,
    /// The machine, in words.
    pub machine: &'static str,
    /// Physical cores of that machine: a node with far more is an extrapolation.
    pub cores: u32,
    /// The most nodes a recorded run had (`object_transfer`, `spillback`, `node_death`):
    /// a cluster of far more is an extrapolation.
    pub nodes: u32,
    /// When the runs were recorded (UTC dates).
    pub measured: &'static str,
    /// Where each workload's figures are compared with the model's.
    pub report: &'static str,
}

/// The calibration the defaults come from (runs in `scripts/ray-calibration/runs/`).
/// One default was measured on the AMD EPYC VM of the same size the calibration ran on
/// before (its runs: `runs/epyc/`): `object_store.put_reused_bandwidth`
/// (`runs/put-release.json`).
pub const CALIBRATION: Calibration = Calibration {
    ray_version: "2.60.0",
    machine: "2-core x86-64 VM (Intel Xeon), 24 GiB, Python 3.11",
    cores: 2,
    nodes: 2,
    measured: "2026-11-28 to 2026-11-30",
    report: "docs/fidelity.md",
};

/// Cores, or nodes, beyond this many times the calibration's are named in the warning.
const FAR_MORE: u32 = 8;

/// The costs the calibration measured or fitted (`src/config/defaults.rs`; ARCHITECTURE.md,
/// "Calibration"), by section. Ray's own settings beside them (health checks, report
/// periods, thresholds) are not: setting one is a what-if the model runs as Ray would.
pub const CALIBRATED_SCHEDULER_COSTS: &[&str] = &[
    "lease_latency",
    "worker_start_latency",
    "worker_start_cpu",
    "idle_worker_cpu",
    "driver_slowdown_per_busy_worker",
    "worker_first_call_latency",
    "actor_first_call_latency",
    "call_submit_cost",
    "first_submit_cost",
    "owner_push_cost",
    "actor_call_submit_cost",
    "dispatch_cost",
    "call_start_cost",
    "task_worker_cost",
    "task_reply_cost",
    "task_error_cost",
    "async_call_cost",
    "placement_group_commit_latency",
    "placement_group_node_latency",
    "sleep_overshoot",
    "task_push_latency",
    "worker_gc_cpu",
    "actor_creation_window",
];
pub const CALIBRATED_OBJECT_STORE_COSTS: &[&str] = &[
    "transfer_latency",
    "transfer_bandwidth",
    "put_latency",
    "put_bandwidth",
    "put_parallel_start",
    "put_parallel_bandwidth",
    "put_reused_bandwidth",
    "get_latency",
    "get_bandwidth",
    "get_fresh_bandwidth",
    "zero_copy_get_latency",
];

/// Workload kinds that recorded runs cover (see `docs/fidelity.md`): the seed tree,
/// no-op and sleeping tasks, actor starts and calls. Others extrapolate.
const CALIBRATED_KINDS: &[&str] = &["flow_insight", "fan_out", "actor_pool"];

impl Calibration {
    /// One line for a report: where the costs come from.
    pub fn line(&self) -> String {
        format!("Ray {} on a {} (measured {}; {})", self.ray_version, self.machine, self.measured, self.report)
    }
}

/// What `cfg` asks of the model beyond its calibration, as one warning line (None when
/// nothing does).
pub fn warning(cfg: &Config) -> Option<String> {
    warning_of(&beyond(cfg))
}

/// The warning line for `reasons` ([`beyond`]'s, or some of them): None for none.
pub fn warning_of(reasons: &[String]) -> Option<String> {
    (!reasons.is_empty())
        .then(|| format!("outside the calibration (Ray {}): {}", CALIBRATION.ray_version, reasons.join("; ")))
}

/// `reasons` as their one warning line, for a report's JSON (`calibration_warning`),
/// which leaves the key out when there are none.
pub fn serialize_warning<S: serde::Serializer>(reasons: &[String], s: S) -> Result<S::Ok, S::Error> {
    warning_of(reasons).unwrap_or_default().serialize(s)
}

/// Each thing `cfg` asks of the model beyond its calibration, one reason each, in a
/// fixed order (empty when nothing does).
pub fn beyond(cfg: &Config) -> Vec<String> {
    let mut beyond = Vec::new();
    let limit = CALIBRATION.cores * FAR_MORE;
    let mut big = Vec::new();
    for node_type in std::iter::once(None).chain((0..cfg.cluster.node_types.len()).map(|i| Some(i as u16))) {
        let (_, cores) = cfg.cluster.machine_of(node_type);
        if cores > limit {
            let name = match node_type {
                Some(t) => cfg.cluster.node_types[t as usize].name.clone(),
                None => cfg.cluster.head.name.clone(),
            };
            big.push(name);
        }
    }
    // Worded without the counts, as the next one: a sweep over cores or nodes says the
    // reason once, naming the values that ask for it.
    if !big.is_empty() {
        beyond.push(format!(
            "nodes of more than {limit} cores, where the machine measured had {}: {}",
            CALIBRATION.cores,
            big.join(", ")
        ));
    }
    let most = CALIBRATION.nodes * FAR_MORE;
    if super::schema::cluster_nodes(&cfg.cluster) > u64::from(most) {
        beyond.push(format!(
            "a cluster that can hold more than {most} nodes, where the runs measured had at most {}: the GCS's own work, which \
             grows with the nodes (scheduling actors and placement groups, resource broadcasts, health checks), \
             is not charged",
            CALIBRATION.nodes
        ));
    }
    if cfg.scheduler.worker_niceness > 0 {
        beyond.push(
            "scheduler.worker_niceness above 0 (Ray's priorities on a node's cores), where every cost was fitted \
             with all work sharing the cores alike"
                .to_string(),
        );
    }
    beyond.extend(changed_costs_reason(&changed_costs(cfg)));
    let mut kinds: Vec<&'static str> = Vec::new();
    for w in &cfg.workloads {
        uncalibrated_kinds(w, &mut kinds);
    }
    if !kinds.is_empty() {
        beyond.push(format!("workload kinds with no recorded runs: {}", kinds.join(", ")));
    }
    if cfg.workloads.iter().any(numpy_values) {
        beyond.push(
            "numpy return values (value_type: numpy), whose get, a view of the store's memory, is no suite workload: \
             it is taken at one probe's ratio to a 1 KB bytes get (numpy_get.py)"
                .to_string(),
        );
    }
    let largest = largest_put(cfg);
    if largest > cfg.object_store.inline_threshold.0 && largest > LARGEST_PUT_MEASURED {
        beyond.push(format!(
            "task returns of up to {} are put into the object store and got from it, and the largest put and \
             get measured were {} MB (docs/fidelity.md: object_local, object_get)",
            Bytes(largest),
            LARGEST_PUT_MEASURED / 1_000_000
        ));
    }
    beyond
}

/// The reason [`beyond`] gives for calibrated costs set to other values (`keys`, as
/// config paths); None for none. A replay that takes its costs from its own trace
/// (`calibrate`) names only those the config set beside them.
pub fn changed_costs_reason(keys: &[String]) -> Option<String> {
    (!keys.is_empty()).then(|| {
        format!("{CHANGED_COSTS_REASON} ({}): the errors measured on Ray are the calibrated costs'", keys.join(", "))
    })
}

/// How [`changed_costs_reason`]'s line begins.
pub const CHANGED_COSTS_REASON: &str = "calibrated costs set to other values";

/// The calibrated costs `cfg` sets to other values than their defaults, as config paths.
pub fn changed_costs(cfg: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let sections = [
        ("scheduler", CALIBRATED_SCHEDULER_COSTS, to_value(&cfg.scheduler), to_value(&SchedulerConfig::default())),
        (
            "object_store",
            CALIBRATED_OBJECT_STORE_COSTS,
            to_value(&cfg.object_store),
            to_value(&ObjectStoreConfig::default()),
        ),
    ];
    for (section, costs, now, default) in sections {
        for cost in costs {
            if now.get(cost) != default.get(cost) {
                out.push(format!("{section}.{cost}"));
            }
        }
    }
    out
}

fn to_value(section: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(section).unwrap_or_default()
}

/// The largest object the suite put and got (`object_local`, `object_get`): their costs
/// beyond it are extrapolations of the fitted forms.
const LARGEST_PUT_MEASURED: u64 = 100_000_000;

/// The largest object any of `cfg`'s workloads returns or puts (bytes).
fn largest_put(cfg: &Config) -> u64 {
    cfg.workloads.iter().map(largest_return).max().unwrap_or(0)
}

/// The largest object a workload's calls return (bytes): above the inline threshold a
/// return is a put into the object store.
fn largest_return(w: &WorkloadConfig) -> u64 {
    match w {
        WorkloadConfig::FlowInsight(c) => c.return_size.0,
        // The driver's shared input is a put too.
        WorkloadConfig::FanOut(c) => c.output_size.0.max(c.shared_input.0),
        WorkloadConfig::Training(c) => c.gradient_size.0,
        WorkloadConfig::ActorPool(c) => c.return_size.0,
        WorkloadConfig::Replay(c) => c.job.calls.iter().map(|call| call.return_bytes).max().unwrap_or(0),
        WorkloadConfig::JobMix(m) => m.templates.iter().map(|t| largest_return(&t.workload)).max().unwrap_or(0),
    }
}

/// Whether a workload (or a job mix's template) returns numpy values.
fn numpy_values(w: &WorkloadConfig) -> bool {
    let value_type = match w {
        WorkloadConfig::FlowInsight(c) => c.value_type,
        WorkloadConfig::FanOut(c) => c.value_type,
        WorkloadConfig::Training(c) => c.value_type,
        WorkloadConfig::ActorPool(c) => c.value_type,
        WorkloadConfig::Replay(_) => ValueType::Bytes,
        WorkloadConfig::JobMix(m) => return m.templates.iter().any(|t| numpy_values(&t.workload)),
    };
    value_type == ValueType::Numpy
}

fn uncalibrated_kinds(w: &WorkloadConfig, out: &mut Vec<&'static str>) {
    let kind = match w {
        WorkloadConfig::FlowInsight(_) => "flow_insight",
        WorkloadConfig::FanOut(_) => "fan_out",
        WorkloadConfig::Training(_) => "training",
        WorkloadConfig::ActorPool(_) => "actor_pool",
        // A replay's work is as recorded on Ray; only the model's own costs are added.
        WorkloadConfig::Replay(_) => return,
        WorkloadConfig::JobMix(m) => {
            for t in &m.templates {
                uncalibrated_kinds(&t.workload, out);
            }
            return;
        }
    };
    if !CALIBRATED_KINDS.contains(&kind) && !out.contains(&kind) {
        out.push(kind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(yaml: &str) -> Config {
        crate::config::load_str(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_config_within_the_calibration_gets_no_warning() {
        let c = cfg("cluster:\n  head: {cpu: 2}\nworkloads:\n  - {kind: fan_out, tasks: 10}\n");
        assert_eq!(warning(&c), None);
    }

    #[test]
    fn reniced_workers_are_named_as_beyond_the_fit() {
        let c = cfg("cluster:\n  head: {cpu: 2}\nscheduler: {worker_niceness: 15}\nworkloads:\n  - {kind: fan_out, tasks: 10}\n");
        let w = warning(&c).expect("a warning");
        assert!(w.contains("scheduler.worker_niceness") && !w.contains('\n'), "{w}");
    }

    #[test]
    fn far_more_cores_and_an_unmeasured_kind_are_named_in_one_line() {
        let c = cfg("cluster:\n  head: {cpu: 64}\n\
             workloads:\n  - {kind: training, workers: 1, bundle_gpu: 0}\n");
        let w = warning(&c).expect("a warning");
        assert!(w.contains("more than 16 cores") && w.contains(": ray.head.default") && w.contains("training"), "{w}");
        assert!(!w.contains('\n'), "one line: {w}");
        // Cores given apart from logical CPUs count, not the CPUs.
        let c = cfg("cluster:\n  head: {cpu: 64, cores: 2}\nworkloads:\n  - {kind: fan_out, tasks: 10}\n");
        assert_eq!(warning(&c), None);
    }

    #[test]
    fn a_cluster_far_bigger_than_the_runs_measured_is_named_with_what_it_leaves_out() {
        let nodes = |count: &str, scaler: &str| {
            cfg(&format!(
                "cluster:\n  head: {{cpu: 2}}\n  node_types:\n    - {{name: w, cpu: 2, memory: 4GiB, \
                 ip_range: 10.1.0.0/16, {count}{scaler}}}\nworkloads:\n  - {{kind: fan_out, tasks: 10}}\n"
            ))
        };
        // The head and 15 workers: 16 nodes, eight times the two measured.
        assert_eq!(warning(&nodes("count: 15", "")), None);
        let w = warning(&nodes("count: 16", "")).expect("a warning");
        assert!(w.contains("more than 16 nodes") && w.contains("GCS"), "{w}");
        assert!(!w.contains('\n'), "one line: {w}");
        assert_eq!(warning(&nodes("count: 1999", "")).as_ref(), Some(&w), "the same line: a sweep warns once");
        // An autoscaler's ceiling counts, not only the nodes at start.
        assert_eq!(warning(&nodes("count: 1", "")), None);
        let scaled = nodes("count: 1", ", autoscaler: {min_workers: 1, max_workers: 40}");
        assert_eq!(warning(&scaled).as_ref(), Some(&w));
    }

    #[test]
    fn numpy_values_are_named_as_measured_apart() {
        let c = cfg("workloads:\n  - {kind: actor_pool, actors: 1, return_size: 1MB, value_type: numpy}\n");
        let w = warning(&c).expect("a warning");
        assert!(w.contains("value_type: numpy") && !w.contains('\n'), "{w}");
        let c = cfg("workloads:\n  - {kind: actor_pool, actors: 1, return_size: 1MB, value_type: bytes}\n");
        assert_eq!(warning(&c), None, "bytes are what the suite measured");
    }

    #[test]
    fn returns_bigger_than_the_largest_put_measured_are_named_and_smaller_ones_are_not() {
        let c = cfg("workloads:\n  - {kind: fan_out, tasks: 10, output_size: 200MiB}\n");
        let w = warning(&c).expect("a warning");
        assert!(w.contains("200") && w.contains("largest put and get measured"), "{w}");
        assert!(!w.contains('\n'), "one line: {w}");
        let c = cfg("workloads:\n  - {kind: fan_out, tasks: 10, output_size: 64MiB}\n");
        assert_eq!(warning(&c), None, "64 MiB puts are within the sizes measured");
        let c = cfg("workloads:\n  - {kind: fan_out, tasks: 10, shared_input: 200MiB}\n");
        assert!(warning(&c).expect("a warning").contains("200"), "the driver's shared input is a put too");
        let c = cfg("object_store: {inline_threshold: 256MiB}\nworkloads:\n  - {kind: fan_out, tasks: 10, output_size: 200MiB}\n");
        assert_eq!(warning(&c), None, "returns within the config's inline threshold are not put");
        let c = cfg("workloads:\n  - kind: job_mix\n    arrivals_per_minute: 1\n    until: 1m\n    templates:\n\
             \x20     - workload: {kind: actor_pool, actors: 1, return_size: 1GiB}\n");
        assert!(warning(&c).expect("a warning").contains("largest put and get measured"), "a template's returns count");
    }

    #[test]
    fn a_calibrated_cost_set_elsewhere_is_named_and_rays_own_settings_are_not() {
        let c = cfg("scheduler: {dispatch_cost: 900us}\nobject_store: {put_bandwidth: 10GB}\n\
             workloads:\n  - {kind: fan_out, tasks: 10}\n");
        let w = warning(&c).expect("a warning");
        assert!(w.contains("(scheduler.dispatch_cost, object_store.put_bandwidth)"), "{w}");
        assert!(!w.contains('\n'), "one line: {w}");
        // The default written out is no change; Ray's own settings are what-ifs it runs.
        let same = SchedulerConfig::default().dispatch_cost;
        let c = cfg(&format!(
            "scheduler: {{dispatch_cost: {}us, worker_lease_timeout: 2s}}\nworkloads:\n  - {{kind: fan_out, tasks: 10}}\n",
            same.as_micros()
        ));
        assert_eq!(warning(&c), None);
        // Every cost named is a field of its section (a renamed field would drop out silently).
        let (sched, store) = (to_value(&SchedulerConfig::default()), to_value(&ObjectStoreConfig::default()));
        for cost in CALIBRATED_SCHEDULER_COSTS {
            assert!(sched.get(cost).is_some(), "scheduler.{cost}");
        }
        for cost in CALIBRATED_OBJECT_STORE_COSTS {
            assert!(store.get(cost).is_some(), "object_store.{cost}");
        }
    }

    #[test]
    fn a_job_mix_is_judged_by_its_templates() {
        let c = cfg("workloads:\n  - kind: job_mix\n    arrivals_per_minute: 1\n    until: 1m\n    templates:\n\
             \x20     - workload: {kind: training, workers: 1, bundle_gpu: 0}\n");
        let w = warning(&c).expect("a warning");
        assert!(w.contains("training"), "{w}");
    }
}
