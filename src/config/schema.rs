//! The configuration schema: what a rayscope YAML file may say.
//!
//! Every struct denies unknown keys, so a typo is an error rather than a silently
//! ignored setting. Defaults follow Ray's own (see `shared/design/ray-facts.md`).

use super::defaults::*;
use super::scheduler::SchedulerConfig;
use super::units::DurationSpec;
use crate::model::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use super::workloads::*;

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
    /// The Ray release whose series the exporter imitates (2.49 to 2.60), reported in
    /// the `Version` label.
    #[serde(default = "default_ray_version")]
    pub ray_version: String,
    /// Ray's `RAY_metric_cardinality_level` for the exported series; absent: the
    /// default of `ray_version` (legacy before 2.53, recommended from 2.53).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_cardinality_level: Option<super::ray_series::MetricCardinality>,
    /// When true the head node's hardware readings come from this machine.
    #[serde(default = "yes")]
    pub host_node: bool,
    #[serde(default)]
    pub head: HeadNodeConfig,
    #[serde(default)]
    pub node_types: Vec<NodeTypeConfig>,
    /// Per-node network bandwidth used for object transfers.
    #[serde(default = "default_network_bandwidth")]
    pub network_bandwidth: Bytes,
    /// How much work a config or a submitted job may ask for (see `limits.rs`).
    #[serde(default)]
    pub limits: super::limits::LimitsConfig,
    /// How the GCS finds out that a node died (Ray's `health_check_*` settings).
    #[serde(default)]
    pub health_check: HealthCheckConfig,
}

/// The GCS's health checks of each raylet: a node that fails `failure_threshold`
/// checks in a row is marked dead. A killed raylet fails each check at once (its port
/// is closed), so a crash is noticed at the threshold-th check after it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthCheckConfig {
    /// Ray's `health_check_initial_delay_ms`: the first check, after a node registers.
    #[serde(default = "default_health_check_initial_delay")]
    pub initial_delay: DurationSpec,
    /// Ray's `health_check_period_ms`.
    #[serde(default = "default_health_check_period")]
    pub period: DurationSpec,
    /// Ray's `health_check_failure_threshold`.
    #[serde(default = "default_health_check_failure_threshold")]
    pub failure_threshold: u32,
}

impl Default for HealthCheckConfig {
    fn default() -> Self {
        HealthCheckConfig {
            initial_delay: default_health_check_initial_delay(),
            period: default_health_check_period(),
            failure_threshold: default_health_check_failure_threshold(),
        }
    }
}

impl HealthCheckConfig {
    /// When the GCS marks dead a node that registered at `registered` and crashed at
    /// `crashed`: at its `failure_threshold`-th check from the crash on.
    pub fn dead_at(&self, registered: u64, crashed: u64) -> u64 {
        let first = registered + self.initial_delay.as_micros();
        let period = self.period.as_micros().max(1);
        let first_failing = match crashed.checked_sub(first) {
            None => first,
            Some(since) => first + since.div_ceil(period) * period,
        };
        first_failing + u64::from(self.failure_threshold.max(1) - 1) * period
    }
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            session_name: None,
            ray_version: default_ray_version(),
            metric_cardinality_level: None,
            host_node: true,
            head: HeadNodeConfig::default(),
            node_types: Vec::new(),
            network_bandwidth: default_network_bandwidth(),
            limits: Default::default(),
            health_check: Default::default(),
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
    /// Physical cores of the machine, which Ray's own per-call work shares (default:
    /// `cpu`, rounded up). Logical CPUs (`cpu`) may be more, as `ray start --num-cpus`.
    #[serde(default)]
    pub cores: Option<u32>,
    #[serde(default)]
    pub gpu: f64,
    #[serde(default = "default_head_memory")]
    pub memory: Bytes,
    /// Defaults to 30% of `memory`, as Ray's.
    #[serde(default)]
    pub object_store_memory: Option<Bytes>,
    #[serde(default)]
    pub resources: BTreeMap<String, f64>,
    #[serde(default)]
    pub gpu_model: Option<String>,
    #[serde(default)]
    pub gpu_memory: Option<Bytes>,
}

impl ClusterConfig {
    /// A node's logical CPUs and physical cores: the head's (`None`) or a node type's.
    /// Cores default to the logical CPUs, rounded up, and are at least one; a node on
    /// the head's machine has the head's.
    pub fn machine_of(&self, node_type: Option<u16>) -> (f64, u32) {
        let head = (self.head.cpu, self.head.cores.unwrap_or(self.head.cpu.ceil() as u32));
        let (cpu, cores) = match node_type.and_then(|t| self.node_types.get(t as usize)) {
            Some(t) if t.on_head_machine => (t.cpu, head.1),
            Some(t) => (t.cpu, t.cores.unwrap_or(t.cpu.ceil() as u32)),
            None => head,
        };
        (cpu, cores.max(1))
    }
}

impl Default for HeadNodeConfig {
    fn default() -> Self {
        HeadNodeConfig {
            name: default_head_name(),
            ip: default_head_ip(),
            cpu: default_head_cpu(),
            cores: None,
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
    /// Physical cores of each node's machine (default: `cpu`, rounded up; see the head's).
    #[serde(default)]
    pub cores: Option<u32>,
    /// Each node of this type runs on the head's machine, as a second raylet there
    /// (`ray.cluster_utils.Cluster`, or several Ray nodes on one host): its Ray work
    /// takes the head's cores, and its idle worker processes load them. `cores` is then
    /// the head's and must not be given.
    #[serde(default)]
    pub on_head_machine: bool,
    #[serde(default)]
    pub gpu: f64,
    pub memory: Bytes,
    #[serde(default)]
    pub object_store_memory: Option<Bytes>,
    #[serde(default)]
    pub resources: BTreeMap<String, f64>,
    /// Addresses for nodes of this type, `10.0.1.0/24` or `10.0.1.10-10.0.1.250`.
    pub ip_range: String,
    #[serde(default)]
    pub gpu_model: Option<String>,
    #[serde(default)]
    pub gpu_memory: Option<Bytes>,
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

// ---------------------------------------------------------------- stores (the scheduler: scheduler.rs)

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectStoreConfig {
    /// Ray's `object_spilling_threshold`.
    #[serde(default = "default_spill_threshold")]
    pub spill_threshold: f64,
    /// Disk bandwidth for spilling and restoring.
    #[serde(default = "default_spill_bandwidth")]
    pub spill_bandwidth: Bytes,
    /// Ray's `max_direct_call_object_size`: returns up to this size stay inline.
    #[serde(default = "default_inline_threshold")]
    pub inline_threshold: Bytes,
    /// What the object manager copies per second into one transfer: Ray pushes an
    /// object in gRPC chunks, work on both ends. A transfer runs at the lower of this and
    /// `cluster.network_bandwidth`.
    #[serde(default = "default_transfer_bandwidth")]
    pub transfer_bandwidth: Bytes,
    /// Per object copied to another node (a task's argument, or what a `ray.get` asks
    /// for), before its first byte moves: the owner's location lookup and the pull request.
    #[serde(default = "default_transfer_latency")]
    pub transfer_latency: DurationSpec,
    /// A put into the store (a `ray.put`, or a task return over `inline_threshold`),
    /// before its bytes: the create and seal round trips to the store. The writer's CPU
    /// work, with the copy's settings below (`sim::put_micros`).
    #[serde(default = "default_put_latency")]
    pub put_latency: DurationSpec,
    /// What a put of up to `put_parallel_threshold` copies per second into fresh pages
    /// of the store: one `memcpy` on the writer's thread.
    #[serde(default = "default_put_bandwidth")]
    pub put_bandwidth: Bytes,
    /// Ray's `kMemcopyDefaultThreshold` (1 MiB, fixed in Ray): a `bytes` value over it
    /// is copied into the store by `parallel_memcopy`, on threads started for that put.
    #[serde(default = "default_put_parallel_threshold")]
    pub put_parallel_threshold: Bytes,
    /// What a put over `put_parallel_threshold` works once to start and join its copy
    /// threads (`put_threshold.py`: the step across the threshold).
    #[serde(default = "default_put_parallel_start")]
    pub put_parallel_start: DurationSpec,
    /// What such a put copies per second into fresh pages, all its threads together.
    #[serde(default = "default_put_parallel_bandwidth")]
    pub put_parallel_bandwidth: Bytes,
    /// What a put copies per second into pages of the store that held objects before
    /// (measured, not fitted: `put_release.py`).
    #[serde(default = "default_put_reused_bandwidth")]
    pub put_reused_bandwidth: Bytes,
    /// A `ray.get` of an object in the getter's node's store (pulled there first when it
    /// is elsewhere), before its bytes: the store round trip and the deserializer's call.
    /// The getter's CPU work, with the next three (`sim::get_micros`); an object up to
    /// `inline_threshold` costs nothing.
    #[serde(default = "default_get_latency")]
    pub get_latency: DurationSpec,
    /// What a get copies per second out of the store into the getter's heap.
    #[serde(default = "default_get_bandwidth")]
    pub get_bandwidth: Bytes,
    /// What it copies per second when the object is over `get_fresh_threshold`: the
    /// copy lands in pages the process maps afresh, each faulted in.
    #[serde(default = "default_get_fresh_bandwidth")]
    pub get_fresh_bandwidth: Bytes,
    /// glibc's largest mmap threshold on 64-bit (32 MiB): an allocation above it is a
    /// fresh mapping, whatever the process freed before; at or below it, reused heap.
    #[serde(default = "default_get_fresh_threshold")]
    pub get_fresh_threshold: Bytes,
    /// A get of a value its workload gives as `value_type: numpy`, whatever its size:
    /// Ray hands the array back as a view of the store's memory, not a copy
    /// (`numpy_get.py`).
    #[serde(default = "default_zero_copy_get_latency")]
    pub zero_copy_get_latency: DurationSpec,
}

impl Default for ObjectStoreConfig {
    fn default() -> Self {
        ObjectStoreConfig {
            spill_threshold: default_spill_threshold(),
            spill_bandwidth: default_spill_bandwidth(),
            inline_threshold: default_inline_threshold(),
            transfer_bandwidth: default_transfer_bandwidth(),
            transfer_latency: default_transfer_latency(),
            put_latency: default_put_latency(),
            put_bandwidth: default_put_bandwidth(),
            put_parallel_threshold: default_put_parallel_threshold(),
            put_parallel_start: default_put_parallel_start(),
            put_parallel_bandwidth: default_put_parallel_bandwidth(),
            put_reused_bandwidth: default_put_reused_bandwidth(),
            get_latency: default_get_latency(),
            get_bandwidth: default_get_bandwidth(),
            get_fresh_bandwidth: default_get_fresh_bandwidth(),
            get_fresh_threshold: default_get_fresh_threshold(),
            zero_copy_get_latency: default_zero_copy_get_latency(),
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
    /// GCS event log entries kept in memory for the state API (`serve`; a batch run keeps
    /// none). The full log can be streamed to a file.
    #[serde(default = "default_event_capacity")]
    pub event_log_capacity: usize,
    /// Cluster events kept for the State API and the Events page (`serve`; a batch run
    /// keeps none): Ray's dashboard keeps 10,000 (`RAY_DASHBOARD_MAX_EVENTS_TO_CACHE`).
    #[serde(default = "default_cluster_event_capacity")]
    pub cluster_event_capacity: usize,
    /// Finished jobs kept in the job table.
    #[serde(default = "default_finished_jobs")]
    pub finished_job_capacity: usize,
    /// Dead nodes kept in the node table; the longest dead are forgotten past it (Ray's
    /// GCS: `maximum_gcs_dead_node_cached_count`, 1,000).
    #[serde(default = "default_dead_nodes")]
    pub dead_node_capacity: usize,
    /// Calls per job whose Flow Insight records are kept; past it calls count only in
    /// per-edge aggregates (class and method level), so memory stays bounded. 0 turns
    /// Flow Insight's recording (and its metrics) off.
    #[serde(default = "default_flow_calls_per_job")]
    pub flow_calls_per_job: u64,
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
            cluster_event_capacity: default_cluster_event_capacity(),
            finished_job_capacity: default_finished_jobs(),
            dead_node_capacity: default_dead_nodes(),
            flow_calls_per_job: default_flow_calls_per_job(),
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
    /// Open HTTP connections at most; more are answered 503 and closed.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// A request's headers must arrive within this; slower connections are closed.
    #[serde(default = "default_header_read_timeout")]
    pub header_read_timeout: DurationSpec,
    /// Origins (`scheme://host[:port]`, or `*`) whose pages may open `/ws/realtime`.
    /// Unset: any origin while the server listens on loopback only, else only pages
    /// the server itself served (the `Origin` names the `Host` asked for).
    #[serde(default)]
    pub allowed_origins: Option<Vec<String>>,
    /// Where the built-in pages link for Grafana dashboards (`<grafana_url>/d/<uid>`).
    /// Only ever a link target: rayscope sends Grafana nothing.
    #[serde(default = "default_grafana_url")]
    pub grafana_url: String,
    /// Byte limits on what clients make the server keep or build (see `ServerLimits`).
    #[serde(default)]
    pub limits: super::ServerLimits,
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
            max_connections: default_max_connections(),
            header_read_timeout: default_header_read_timeout(),
            allowed_origins: None,
            grafana_url: default_grafana_url(),
            limits: Default::default(),
        }
    }
}

/// The nodes a cluster may hold at once (see [`LimitsConfig::max_nodes`]).
pub fn cluster_nodes(c: &ClusterConfig) -> u64 {
    1 + c
        .node_types
        .iter()
        .map(|t| {
            let max = t.autoscaler.as_ref().map_or(0, |a| a.max_workers);
            u64::from(t.count.unwrap_or(0).max(max))
        })
        .sum::<u64>()
}
