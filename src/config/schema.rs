//! The configuration schema: what a rayscope YAML file may say.
//!
//! Every struct denies unknown keys, so a typo is an error rather than a silently
//! ignored setting. Defaults follow Ray's own (see `shared/design/ray-facts.md`).

use super::units::{ByteSize, DurationSpec};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub cluster: ClusterConfig,
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    #[serde(default)]
    pub object_store: ObjectStoreConfig,
    #[serde(default)]
    pub memory_monitor: MemoryMonitorConfig,
    #[serde(default)]
    pub workloads: Vec<WorkloadConfig>,
    #[serde(default)]
    pub faults: Vec<FaultConfig>,
    #[serde(default)]
    pub sim: SimConfig,
    #[serde(default)]
    pub server: ServerConfig,
}

// ---------------------------------------------------------------- cluster

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// Ray's `SessionName` label; derived from the seed when absent.
    #[serde(default)]
    pub session_name: Option<String>,
    /// Ray version reported in the `Version` label.
    #[serde(default = "default_ray_version")]
    pub ray_version: String,
    /// When true the head node's hardware readings come from this machine.
    #[serde(default = "yes")]
    pub host_node: bool,
    #[serde(default)]
    pub head: HeadNodeConfig,
    #[serde(default)]
    pub node_types: Vec<NodeTypeConfig>,
    /// Per-node network bandwidth used for object transfers.
    #[serde(default = "default_network_bandwidth")]
    pub network_bandwidth: ByteSize,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            session_name: None,
            ray_version: default_ray_version(),
            host_node: true,
            head: HeadNodeConfig::default(),
            node_types: Vec::new(),
            network_bandwidth: default_network_bandwidth(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadNodeConfig {
    #[serde(default = "default_head_name")]
    pub name: String,
    #[serde(default = "default_head_ip")]
    pub ip: String,
    #[serde(default = "default_head_cpu")]
    pub cpu: f64,
    #[serde(default)]
    pub gpu: f64,
    #[serde(default = "default_head_memory")]
    pub memory: ByteSize,
    /// Defaults to 30% of `memory`, as Ray's.
    #[serde(default)]
    pub object_store_memory: Option<ByteSize>,
    #[serde(default)]
    pub resources: BTreeMap<String, f64>,
    #[serde(default)]
    pub gpu_model: Option<String>,
    #[serde(default)]
    pub gpu_memory: Option<ByteSize>,
}

impl Default for HeadNodeConfig {
    fn default() -> Self {
        HeadNodeConfig {
            name: default_head_name(),
            ip: default_head_ip(),
            cpu: default_head_cpu(),
            gpu: 0.0,
            memory: default_head_memory(),
            object_store_memory: None,
            resources: BTreeMap::new(),
            gpu_model: None,
            gpu_memory: None,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeTypeConfig {
    pub name: String,
    /// Nodes of this type at start (defaults to the autoscaler's `min_workers`, else 0).
    #[serde(default)]
    pub count: Option<u32>,
    #[serde(default)]
    pub cpu: f64,
    #[serde(default)]
    pub gpu: f64,
    pub memory: ByteSize,
    #[serde(default)]
    pub object_store_memory: Option<ByteSize>,
    #[serde(default)]
    pub resources: BTreeMap<String, f64>,
    /// Addresses for nodes of this type, `10.0.1.0/24` or `10.0.1.10-10.0.1.250`.
    pub ip_range: String,
    #[serde(default)]
    pub gpu_model: Option<String>,
    #[serde(default)]
    pub gpu_memory: Option<ByteSize>,
    #[serde(default)]
    pub autoscaler: Option<AutoscalerConfig>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoscalerConfig {
    #[serde(default)]
    pub min_workers: u32,
    pub max_workers: u32,
    /// Time from the launch decision until the node joins the cluster.
    #[serde(default = "default_launch_delay")]
    pub launch_delay: DurationSpec,
    /// A worker idle this long is terminated (down to `min_workers`).
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: DurationSpec,
}

// ---------------------------------------------------------------- scheduler and stores

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    /// Ray's `scheduler_spread_threshold`.
    #[serde(default = "default_spread_threshold")]
    pub spread_threshold: f64,
    /// Ray's `scheduler_top_k_fraction`.
    #[serde(default = "default_top_k_fraction")]
    pub top_k_fraction: f64,
    /// Ray's `scheduler_top_k_absolute`.
    #[serde(default = "one_u32")]
    pub top_k_absolute: u32,
    /// Ray's `scheduler_avoid_gpu_nodes`: keep CPU-only work off GPU nodes when possible.
    #[serde(default = "yes")]
    pub avoid_gpu_nodes: bool,
    /// Prefer the node holding the most argument bytes (DEFAULT strategy, tasks only).
    #[serde(default = "yes")]
    pub locality_aware: bool,
    /// Lease request round trip to a raylet; paid again on each spillback.
    #[serde(default = "default_lease_latency")]
    pub lease_latency: DurationSpec,
    /// Time to start a worker process for a task or actor.
    #[serde(default = "default_worker_start_latency")]
    pub worker_start_latency: DurationSpec,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            spread_threshold: default_spread_threshold(),
            top_k_fraction: default_top_k_fraction(),
            top_k_absolute: 1,
            avoid_gpu_nodes: true,
            locality_aware: true,
            lease_latency: default_lease_latency(),
            worker_start_latency: default_worker_start_latency(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectStoreConfig {
    /// Ray's `object_spilling_threshold`.
    #[serde(default = "default_spill_threshold")]
    pub spill_threshold: f64,
    /// Disk bandwidth for spilling and restoring.
    #[serde(default = "default_spill_bandwidth")]
    pub spill_bandwidth: ByteSize,
    /// Ray's `max_direct_call_object_size`: returns up to this size stay inline.
    #[serde(default = "default_inline_threshold")]
    pub inline_threshold: ByteSize,
}

impl Default for ObjectStoreConfig {
    fn default() -> Self {
        ObjectStoreConfig {
            spill_threshold: default_spill_threshold(),
            spill_bandwidth: default_spill_bandwidth(),
            inline_threshold: default_inline_threshold(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryMonitorConfig {
    /// Ray's `memory_usage_threshold`; 0 disables the monitor.
    #[serde(default = "default_memory_threshold")]
    pub usage_threshold: f64,
    /// Base of the exponential backoff before an OOM-killed task is retried.
    #[serde(default = "default_oom_retry_delay")]
    pub oom_retry_delay: DurationSpec,
}

impl Default for MemoryMonitorConfig {
    fn default() -> Self {
        MemoryMonitorConfig { usage_threshold: default_memory_threshold(), oom_retry_delay: default_oom_retry_delay() }
    }
}

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
}

impl WorkloadConfig {
    pub fn name(&self) -> &str {
        match self {
            WorkloadConfig::FlowInsight(c) => &c.name,
            WorkloadConfig::FanOut(c) => &c.name,
            WorkloadConfig::Training(c) => &c.name,
            WorkloadConfig::ActorPool(c) => &c.name,
            WorkloadConfig::JobMix(c) => &c.name,
        }
    }
    pub fn start(&self) -> DurationSpec {
        match self {
            WorkloadConfig::FlowInsight(c) => c.start,
            WorkloadConfig::FanOut(c) => c.start,
            WorkloadConfig::Training(c) => c.start,
            WorkloadConfig::ActorPool(c) => c.start,
            WorkloadConfig::JobMix(c) => c.start,
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
    /// Depth of the root worker (the seed uses 3).
    #[serde(default = "default_flow_depth")]
    pub depth: u32,
    #[serde(default = "one_u32")]
    pub min_children: u32,
    #[serde(default = "two_u32")]
    pub max_children: u32,
    #[serde(default = "ten_u32")]
    pub calls_per_child: u32,
    /// `time.sleep(5)` before each submit.
    #[serde(default = "default_flow_sleep")]
    pub sleep: DurationSpec,
    /// Extra `time.sleep(30)` for bottleneck workers whose children are leaves.
    #[serde(default = "default_flow_bottleneck_sleep")]
    pub bottleneck_sleep: DurationSpec,
    #[serde(default = "half")]
    pub bottleneck_probability: f64,
    #[serde(default)]
    pub root_bottleneck: bool,
    #[serde(default = "one_u32")]
    pub max_concurrency: u32,
    /// CPUs each worker actor holds; unset means Ray's default (1 to schedule, 0 to run).
    #[serde(default)]
    pub num_cpus: Option<f64>,
    /// Size of each `process()` return value.
    #[serde(default)]
    pub return_size: ByteSize,
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
    pub output_size: ByteSize,
    #[serde(default = "one_f64")]
    pub num_cpus: f64,
    #[serde(default)]
    pub num_gpus: f64,
    /// Heap memory each task uses while running (counts toward the memory monitor).
    #[serde(default)]
    pub memory: ByteSize,
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
    pub bundle_memory: ByteSize,
    #[serde(default)]
    pub placement_strategy: PgStrategyConfig,
    #[serde(default = "default_steps")]
    pub steps: u32,
    #[serde(default = "default_step_duration")]
    pub step_duration: DurationDist,
    /// Bytes each worker returns per step (gradients).
    #[serde(default)]
    pub gradient_size: ByteSize,
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
    pub memory: ByteSize,
    #[serde(default)]
    pub return_size: ByteSize,
    #[serde(default)]
    pub max_restarts: i32,
    #[serde(default)]
    pub max_task_retries: i32,
    #[serde(default = "one_u32")]
    pub max_concurrency: u32,
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

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PgStrategyConfig {
    #[default]
    Pack,
    Spread,
    StrictPack,
    StrictSpread,
}

/// A duration, fixed (`2s`) or uniform over a range (`{min: 1s, max: 3s}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DurationDist {
    pub min: DurationSpec,
    pub max: DurationSpec,
}

impl DurationDist {
    pub fn fixed(d: DurationSpec) -> DurationDist {
        DurationDist { min: d, max: d }
    }
}

impl<'de> Deserialize<'de> for DurationDist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DurationDist;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration (e.g. 2s) or a range {min: 1s, max: 3s}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DurationDist, E> {
                super::units::parse_duration(v).map(DurationDist::fixed).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<DurationDist, E> {
                Ok(DurationDist::fixed(DurationSpec::secs(v as f64)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DurationDist, E> {
                if v < 0 {
                    return Err(E::custom(format!("invalid duration {v}: must be zero or positive")));
                }
                Ok(DurationDist::fixed(DurationSpec::secs(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<DurationDist, E> {
                if v < 0.0 || !v.is_finite() {
                    return Err(E::custom(format!("invalid duration {v}: must be zero or positive")));
                }
                Ok(DurationDist::fixed(DurationSpec::secs(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DurationDist, A::Error> {
                let (mut min, mut max) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "min" => min = Some(map.next_value::<DurationSpec>()?),
                        "max" => max = Some(map.next_value::<DurationSpec>()?),
                        other => return Err(de::Error::unknown_field(other, &["min", "max"])),
                    }
                }
                let min = min.ok_or_else(|| de::Error::missing_field("min"))?;
                let max = max.ok_or_else(|| de::Error::missing_field("max"))?;
                if max < min {
                    return Err(de::Error::custom(format!("range max {max} is below min {min}")));
                }
                Ok(DurationDist { min, max })
            }
        }
        d.deserialize_any(V)
    }
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

// ---------------------------------------------------------------- engine and server

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    #[serde(default = "one_u64")]
    pub seed: u64,
    /// Virtual seconds per wall second in `serve` mode.
    #[serde(default = "one_f64")]
    pub speed: f64,
    /// Stop after this much virtual time (default: when all workloads finish, or never for serve).
    #[serde(default)]
    pub until: Option<DurationSpec>,
    /// Finished tasks kept for the state API (older ones only count in aggregates).
    #[serde(default = "default_finished_tasks")]
    pub finished_task_capacity: usize,
    /// Dead actors kept (Ray's dashboard keeps 1,000).
    #[serde(default = "default_dead_actors")]
    pub dead_actor_capacity: usize,
    /// GCS event log entries kept in memory (the full log can be streamed to a file).
    #[serde(default = "default_event_capacity")]
    pub event_log_capacity: usize,
    /// Finished jobs kept in the job table.
    #[serde(default = "default_finished_jobs")]
    pub finished_job_capacity: usize,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            speed: 1.0,
            until: None,
            finished_task_capacity: default_finished_tasks(),
            dead_actor_capacity: default_dead_actors(),
            event_log_capacity: default_event_capacity(),
            finished_job_capacity: default_finished_jobs(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to serve on (overridden by `--listen` / `RAYSCOPE_LISTEN`).
    #[serde(default = "default_listen")]
    pub listen: String,
    /// Bearer token enabling state-changing endpoints (overridden by `RAYSCOPE_TOKEN`).
    #[serde(default)]
    pub token: Option<String>,
    /// Separate token accepted by `POST /api/alerts` (Alertmanager webhook).
    #[serde(default)]
    pub alert_token: Option<String>,
    /// Live stream push period.
    #[serde(default = "default_stream_interval")]
    pub stream_interval: DurationSpec,
    /// Maximum concurrent live-stream clients.
    #[serde(default = "default_stream_clients")]
    pub max_stream_clients: usize,
    /// Port shown in each node's `instance` label (`<ip>:<port>`).
    #[serde(default = "default_metrics_export_port")]
    pub metrics_export_port: u16,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: default_listen(),
            token: None,
            alert_token: None,
            stream_interval: default_stream_interval(),
            max_stream_clients: default_stream_clients(),
            metrics_export_port: default_metrics_export_port(),
        }
    }
}

// ---------------------------------------------------------------- defaults

fn yes() -> bool {
    true
}
fn half() -> f64 {
    0.5
}
fn one_f64() -> f64 {
    1.0
}
fn one_u32() -> u32 {
    1
}
fn two_u32() -> u32 {
    2
}
fn four_u32() -> u32 {
    4
}
fn ten_u32() -> u32 {
    10
}
fn one_u64() -> u64 {
    1
}
fn default_ray_version() -> String {
    "2.60.0".into()
}
fn default_network_bandwidth() -> ByteSize {
    ByteSize(1_250_000_000) // 10 Gbit/s
}
fn default_head_name() -> String {
    "ray.head.default".into()
}
fn default_head_ip() -> String {
    "10.0.0.1".into()
}
fn default_head_cpu() -> f64 {
    8.0
}
fn default_head_memory() -> ByteSize {
    ByteSize(32 * 1024 * 1024 * 1024)
}
fn default_launch_delay() -> DurationSpec {
    DurationSpec::secs(30.0)
}
fn default_idle_timeout() -> DurationSpec {
    DurationSpec::secs(60.0)
}
fn default_spread_threshold() -> f64 {
    0.5
}
fn default_top_k_fraction() -> f64 {
    0.2
}
fn default_lease_latency() -> DurationSpec {
    DurationSpec::secs(0.001)
}
fn default_worker_start_latency() -> DurationSpec {
    DurationSpec::secs(0.0)
}
fn default_spill_threshold() -> f64 {
    0.8
}
fn default_spill_bandwidth() -> ByteSize {
    ByteSize(1024 * 1024 * 1024)
}
fn default_inline_threshold() -> ByteSize {
    ByteSize(100 * 1024)
}
fn default_memory_threshold() -> f64 {
    0.95
}
fn default_oom_retry_delay() -> DurationSpec {
    DurationSpec::secs(1.0)
}
fn default_flow_name() -> String {
    "flow-insight".into()
}
fn default_flow_depth() -> u32 {
    3
}
fn default_flow_sleep() -> DurationSpec {
    DurationSpec::secs(5.0)
}
fn default_flow_bottleneck_sleep() -> DurationSpec {
    DurationSpec::secs(30.0)
}
fn default_fan_out_name() -> String {
    "fan-out".into()
}
fn default_task_duration() -> DurationDist {
    DurationDist::fixed(DurationSpec::secs(1.0))
}
fn default_max_retries() -> i32 {
    3
}
fn default_map_fn() -> String {
    "map".into()
}
fn default_training_name() -> String {
    "training".into()
}
fn default_bundle_cpu() -> f64 {
    4.0
}
fn default_steps() -> u32 {
    100
}
fn default_step_duration() -> DurationDist {
    DurationDist::fixed(DurationSpec::secs(2.0))
}
fn default_actor_pool_name() -> String {
    "actor-pool".into()
}
fn default_actor_class() -> String {
    "PoolActor".into()
}
fn default_job_mix_name() -> String {
    "job-mix".into()
}
fn default_max_concurrent_jobs() -> u32 {
    4
}
fn default_finished_tasks() -> usize {
    100_000
}
fn default_dead_actors() -> usize {
    1_000
}
fn default_event_capacity() -> usize {
    10_000
}
fn default_finished_jobs() -> usize {
    100
}
fn default_listen() -> String {
    "127.0.0.1:8080".into()
}
fn default_stream_interval() -> DurationSpec {
    DurationSpec::secs(2.0)
}
fn default_stream_clients() -> usize {
    64
}
fn default_metrics_export_port() -> u16 {
    8080
}
