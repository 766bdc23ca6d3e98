//! The workload and fault parts of the config schema (re-exported by `schema`).

use super::defaults::*;
pub use super::units::DurationDist;
use super::units::DurationSpec;
use crate::model::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

// ---------------------------------------------------------------- workloads

/// One workload; each instance runs as its own Ray job with a driver on the head node.
///
/// Deserialize is written by hand in `tagged.rs` (same `kind` tag, unknown keys denied)
/// so that errors inside a variant keep their field path and position.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadConfig {
    /// The seed's Flow Insight actor tree.
    FlowInsight(FlowInsightConfig),
    /// Independent tasks, optionally reduced (map-reduce passing objects).
    FanOut(FanOutConfig),
    /// Data-parallel training: a placement group of GPU actors stepping in lockstep.
    Training(TrainingConfig),
    /// Many actors, each called a number of times.
    ActorPool(ActorPoolConfig),
    /// A steady Poisson stream of jobs drawn from weighted templates.
    JobMix(JobMixConfig),
    /// A job recorded from a real Ray cluster (`simulate --replay`; not a YAML kind).
    Replay(super::replay::ReplayConfig),
}

impl WorkloadConfig {
    pub fn name(&self) -> &str {
        match self {
            WorkloadConfig::FlowInsight(c) => &c.name,
            WorkloadConfig::FanOut(c) => &c.name,
            WorkloadConfig::Training(c) => &c.name,
            WorkloadConfig::ActorPool(c) => &c.name,
            WorkloadConfig::JobMix(c) => &c.name,
            WorkloadConfig::Replay(c) => &c.name,
        }
    }
    pub fn start(&self) -> DurationSpec {
        match self {
            WorkloadConfig::FlowInsight(c) => c.start,
            WorkloadConfig::FanOut(c) => c.start,
            WorkloadConfig::Training(c) => c.start,
            WorkloadConfig::ActorPool(c) => c.start,
            WorkloadConfig::JobMix(c) => c.start,
            WorkloadConfig::Replay(_) => DurationSpec::default(),
        }
    }
    /// The built-in workload kinds, for error messages and `POST /api/jobs/`.
    pub const KINDS: &'static [&'static str] = &["flow_insight", "fan_out", "training", "actor_pool", "job_mix"];
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowInsightConfig {
    #[serde(default = "default_flow_name")]
    pub name: String,
    #[serde(default)]
    pub start: DurationSpec,
    /// Depth of the root worker (the seed uses 3; default 3). With `tree`, the tree's height.
    #[serde(default)]
    pub depth: Option<u32>,
    /// Children per worker above the leaves, drawn uniformly (default 1 to 2).
    #[serde(default)]
    pub min_children: Option<u32>,
    #[serde(default)]
    pub max_children: Option<u32>,
    #[serde(default = "ten_u32")]
    pub calls_per_child: u32,
    /// `time.sleep(5)` before each submit.
    #[serde(default = "default_flow_sleep")]
    pub sleep: DurationSpec,
    /// Extra `time.sleep(30)` for bottleneck workers whose children are leaves.
    #[serde(default = "default_flow_bottleneck_sleep")]
    pub bottleneck_sleep: DurationSpec,
    /// Chance that a child is a bottleneck (default 0.5).
    #[serde(default)]
    pub bottleneck_probability: Option<f64>,
    #[serde(default)]
    pub root_bottleneck: bool,
    /// An explicit tree instead of the random draw: the root worker, then each worker's
    /// children in creation order with their bottleneck flags. Replays the tree a run of
    /// real Ray drew; `depth`, `min_children`, `max_children`, `bottleneck_probability`
    /// and `root_bottleneck` then come from it and must not be given.
    #[serde(default)]
    pub tree: Option<WorkerTree>,
    #[serde(default = "one_u32")]
    pub max_concurrency: u32,
    /// CPUs each worker actor holds; unset means Ray's default (1 to schedule, 0 to run).
    #[serde(default)]
    pub num_cpus: Option<f64>,
    /// Size of each `process()` return value.
    #[serde(default)]
    pub return_size: Bytes,
    /// What those values are (`bytes` or `numpy`), for what a get of one costs.
    #[serde(default)]
    pub value_type: ValueType,
}

impl FlowInsightConfig {
    /// The root worker's depth: the tree's height, or `depth` (default 3, as the seed).
    pub fn root_depth(&self) -> u32 {
        match &self.tree {
            Some(t) => t.height(),
            None => self.depth.unwrap_or_else(default_flow_depth),
        }
    }
    pub fn children_range(&self) -> (u32, u32) {
        (self.min_children.unwrap_or(1), self.max_children.unwrap_or(2))
    }
    pub fn bottleneck_chance(&self) -> f64 {
        self.bottleneck_probability.unwrap_or(0.5)
    }
}

/// One `Worker` of an explicit Flow Insight tree.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerTree {
    /// `is_bottleneck`: sleeps `bottleneck_sleep` more per call when its children are leaves.
    #[serde(default)]
    pub bottleneck: bool,
    /// The workers it creates, in creation order (none for a leaf).
    #[serde(default)]
    pub children: Vec<WorkerTree>,
}

impl WorkerTree {
    /// Edges on the longest path down to a leaf (a leaf has height 0).
    pub fn height(&self) -> u32 {
        self.children.iter().map(|c| c.height() + 1).max().unwrap_or(0)
    }
    /// Workers in the tree, this one included.
    pub fn size(&self) -> usize {
        1 + self.children.iter().map(WorkerTree::size).sum::<usize>()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FanOutConfig {
    #[serde(default = "default_fan_out_name")]
    pub name: String,
    #[serde(default)]
    pub start: DurationSpec,
    /// Number of map tasks.
    pub tasks: u64,
    /// Number of reduce tasks, each taking an equal share of map outputs (0: no reduce).
    #[serde(default)]
    pub reducers: u64,
    #[serde(default = "default_task_duration")]
    pub task_duration: DurationDist,
    #[serde(default = "default_task_duration")]
    pub reduce_duration: DurationDist,
    /// Size of each map output.
    #[serde(default)]
    pub output_size: Bytes,
    /// What the map and reduce outputs are (`bytes` or `numpy`), for what the driver's
    /// get of a reducer's costs.
    #[serde(default)]
    pub value_type: ValueType,
    /// Size of one object the driver `ray.put`s before it submits, which every map task
    /// takes as an argument (a model's weights, say); 0: none.
    #[serde(default)]
    pub shared_input: Bytes,
    #[serde(default = "one_f64")]
    pub num_cpus: f64,
    #[serde(default)]
    pub num_gpus: f64,
    /// Heap memory each task uses while running (counts toward the memory monitor).
    #[serde(default)]
    pub memory: Bytes,
    #[serde(default)]
    pub resources: BTreeMap<String, f64>,
    #[serde(default)]
    pub strategy: StrategyConfig,
    #[serde(default = "default_max_retries")]
    pub max_retries: i32,
    #[serde(default)]
    pub retry_exceptions: bool,
    /// Name of the remote function (the `Name` label).
    #[serde(default = "default_map_fn")]
    pub function: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingConfig {
    #[serde(default = "default_training_name")]
    pub name: String,
    #[serde(default)]
    pub start: DurationSpec,
    /// Number of training workers (one bundle and one actor each).
    #[serde(default = "four_u32")]
    pub workers: u32,
    #[serde(default = "default_bundle_cpu")]
    pub bundle_cpu: f64,
    #[serde(default = "one_f64")]
    pub bundle_gpu: f64,
    #[serde(default)]
    pub bundle_memory: Bytes,
    #[serde(default)]
    pub placement_strategy: PgStrategyConfig,
    #[serde(default = "default_steps")]
    pub steps: u32,
    #[serde(default = "default_step_duration")]
    pub step_duration: DurationDist,
    /// Bytes each worker returns per step (gradients).
    #[serde(default)]
    pub gradient_size: Bytes,
    /// What the gradients are (`bytes` or `numpy`), for what the driver's get costs.
    #[serde(default)]
    pub value_type: ValueType,
    #[serde(default)]
    pub max_restarts: i32,
    #[serde(default)]
    pub max_task_retries: i32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActorPoolConfig {
    #[serde(default = "default_actor_pool_name")]
    pub name: String,
    #[serde(default)]
    pub start: DurationSpec,
    pub actors: u32,
    #[serde(default = "one_u32")]
    pub calls_per_actor: u32,
    #[serde(default = "default_task_duration")]
    pub call_duration: DurationDist,
    #[serde(default)]
    pub num_cpus: Option<f64>,
    #[serde(default)]
    pub num_gpus: f64,
    #[serde(default)]
    pub memory: Bytes,
    #[serde(default)]
    pub return_size: Bytes,
    /// What the calls return (`bytes` or `numpy`), for what the driver's get costs.
    #[serde(default)]
    pub value_type: ValueType,
    #[serde(default)]
    pub max_restarts: i32,
    #[serde(default)]
    pub max_task_retries: i32,
    #[serde(default = "one_u32")]
    pub max_concurrency: u32,
    /// Each actor answers one call, awaited, before the `calls_per_actor` calls are
    /// sent (as a benchmark warms its actors up so that it times the calls alone).
    #[serde(default)]
    pub warm_up: bool,
    #[serde(default)]
    pub strategy: StrategyConfig,
    /// Actor class name (the `Name` label).
    #[serde(default = "default_actor_class")]
    pub class: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobMixConfig {
    #[serde(default = "default_job_mix_name")]
    pub name: String,
    #[serde(default)]
    pub start: DurationSpec,
    /// Mean job arrivals per minute (Poisson).
    pub arrivals_per_minute: f64,
    /// Arrivals beyond this many running jobs are dropped (and counted).
    #[serde(default = "default_max_concurrent_jobs")]
    pub max_concurrent_jobs: u32,
    /// Stop generating jobs after this time (default: never).
    #[serde(default)]
    pub until: Option<DurationSpec>,
    pub templates: Vec<JobTemplate>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobTemplate {
    #[serde(default = "one_f64")]
    pub weight: f64,
    pub workload: WorkloadConfig,
}

/// Ray's scheduling strategies for tasks and actors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrategyConfig {
    #[serde(default)]
    pub kind: StrategyKind,
    /// Target node IP for `NODE_AFFINITY`.
    #[serde(default)]
    pub node: Option<String>,
    /// `soft=True`: run elsewhere when the node is dead or infeasible.
    #[serde(default)]
    pub soft: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StrategyKind {
    #[default]
    Default,
    Spread,
    NodeAffinity,
}

/// What a workload's return values are, for what a `ray.get` of one costs: `bytes`
/// (the calibration's) are copied out of the store into the getter's heap; a `numpy`
/// array comes back as a read-only view of the store's memory (pickle 5 keeps its
/// buffer out of band), so its get costs `object_store.zero_copy_get_latency` whatever
/// its size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueType {
    #[default]
    Bytes,
    Numpy,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PgStrategyConfig {
    #[default]
    Pack,
    Spread,
    StrictPack,
    StrictSpread,
}

// ---------------------------------------------------------------- faults

/// Deserialize is written by hand in `tagged.rs`, as for [`WorkloadConfig`].
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FaultConfig {
    /// The node dies: its tasks fail or retry, its actors restart or die, its objects are lost.
    KillNode {
        at: DurationSpec,
        /// IP of the node to kill.
        #[serde(default)]
        node: Option<String>,
        /// Or: kill one alive node of this type (chosen by the seeded RNG).
        #[serde(default)]
        node_type: Option<String>,
    },
    /// A node at this IP rejoins (as a new node id, as a restarted raylet does).
    RestoreNode { at: DurationSpec, node: String },
    /// Kill one alive actor of this class (the oldest); it restarts if its budget allows.
    KillActor {
        at: DurationSpec,
        class: String,
        #[serde(default)]
        no_restart: bool,
    },
    /// From `at` until `until`, each task execution fails with this probability.
    TaskFailures {
        at: DurationSpec,
        #[serde(default)]
        until: Option<DurationSpec>,
        probability: f64,
        /// true: an application exception (retried only with `retry_exceptions`); false: a worker crash.
        #[serde(default)]
        application_error: bool,
    },
    /// Extra memory used on a node for a while, so the memory monitor starts killing workers.
    MemoryPressure {
        at: DurationSpec,
        #[serde(default)]
        node: Option<String>,
        #[serde(default)]
        node_type: Option<String>,
        /// Fraction of the node's memory to occupy.
        fraction: f64,
        duration: DurationSpec,
    },
}

impl FaultConfig {
    /// The fault kinds, for error messages.
    pub const KINDS: &'static [&'static str] =
        &["kill_node", "restore_node", "kill_actor", "task_failures", "memory_pressure"];
    pub fn at(&self) -> DurationSpec {
        match self {
            FaultConfig::KillNode { at, .. }
            | FaultConfig::RestoreNode { at, .. }
            | FaultConfig::KillActor { at, .. }
            | FaultConfig::TaskFailures { at, .. }
            | FaultConfig::MemoryPressure { at, .. } => *at,
        }
    }
}
