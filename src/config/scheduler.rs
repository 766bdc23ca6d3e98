//! The scheduler's part of the schema (`scheduler:`): Ray's placement settings and the
//! per-call costs the calibration suite measured (`scripts/ray-calibration/`).
//!
//! Owns: those fields, their units and which default each takes. Must never: hold a
//! cost's value itself (`defaults.rs` does, so `tests/calibration.rs` can check each one).

use super::defaults::*;
use super::units::DurationSpec;
use serde::{Deserialize, Serialize};

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
    /// What a worker process's start waits on beside its CPU work (`worker_start_cpu`),
    /// until it answers its first call.
    #[serde(default = "default_worker_start_latency")]
    pub worker_start_latency: DurationSpec,
    /// CPU work of starting a worker process for an actor, on the node's cores (so
    /// starts slow each other down on a small machine).
    #[serde(default = "default_worker_start_cpu")]
    pub worker_start_cpu: DurationSpec,
    /// Share of a core each live actor's worker process uses while idle: a node holding
    /// many actors is slower at everything else (fitted to actor starts on real Ray).
    #[serde(default = "default_idle_worker_cpu")]
    pub idle_worker_cpu: f64,
    /// Ray's `worker_niceness`: the niceness Ray gives each worker process once it is up
    /// (task workers and actors; Ray's default is 15). Above 0, the raylet, the drivers
    /// and the starting workers take a loaded node's cores first, sharing them among
    /// themselves, and the workers' own work gets what is left. 0, the default: only a
    /// driver's own work and the starts share the cores (time-sliced); all other work
    /// takes them first come, first served, as the costs were fitted.
    #[serde(default = "default_worker_niceness")]
    pub worker_niceness: u8,
    /// The part of a core a driver's own work (its submit loop) loses to each task worker
    /// busy on its node: that work takes `1 + this × busy workers` times as long, a
    /// submit loop counting the idle workers its own calls lease from its start. Ray's
    /// driver loop waits runnable while its reniced workers run. Measured, not fitted:
    /// loop_wait.py's 100,000-call loops. A worker process's start, at the same
    /// priority, loses as much to each task lease on its node whose worker is up when
    /// it is launched.
    #[serde(default = "default_driver_slowdown_per_busy_worker")]
    pub driver_slowdown_per_busy_worker: f64,
    /// Worker processes a raylet starts at once (Ray's `maximum_startup_concurrency`;
    /// default: the fewer of the node's logical CPUs and its cores, as Ray 2.60's
    /// raylet ran here: 1, 2 and 2 at 1, 2 and 4 CPUs on 2 cores, prestart.py).
    #[serde(default)]
    pub maximum_startup_concurrency: Option<u32>,
    /// Ray's `prestart_worker_first_driver`: the head (where drivers run) has as many
    /// idle task workers up as it starts at once (no more than its CPUs) before the first
    /// call, so the first leases there start no worker; an actor's creation takes an idle
    /// worker first, as Ray's pool hands it one. Other nodes' raylets prestart none: a
    /// raylet prestarts when a driver registers with it.
    #[serde(default = "yes")]
    pub prestart_worker_first_driver: bool,
    /// Ray's `enable_worker_prestart` (on in Ray 2.60): each normal task's lease request
    /// first has its raylet start processes for the owner's backlog behind it (the fewer
    /// of the CPUs available and that backlog, less the workers idle or starting), in
    /// free start slots only. With a lease's own request for a worker, this leaves one
    /// process over after a burst (`sim/raylet/node_cpu/worker_pool.rs`). Off by
    /// default, as the reference machine's costs were fitted: there the model's start
    /// takes a core from the calls' work for its whole CPU, and charges that spare start
    /// more than the suite's runs show (docs/benchmarks-history.md, "Ray's worker pool,
    /// read from its own log"). On in a replay whose worker start was measured (its
    /// trace's, or a `calibrate` fragment's), fitted around nothing (`cli/costs.rs`).
    #[serde(default)]
    pub worker_prestart: bool,
    /// How late a task worker's first call's reply reaches its owner (the lease is held
    /// meanwhile); later calls on that worker do not pay it. Measured, not fitted:
    /// lease_traces.py.
    #[serde(default = "default_worker_first_call_latency")]
    pub worker_first_call_latency: DurationSpec,
    /// How long after a new actor's creation began it answers no call (its process's
    /// first work). Unset: `worker_first_call_latency`, as the reference machine's
    /// suite has it. `rayscope calibrate` sets it from a trace: the gap Ray showed between
    /// an actor's creation ending and its first call beginning, since a replay holds the
    /// recorded creation's own time.
    #[serde(default)]
    pub actor_first_call_latency: Option<DurationSpec>,
    /// CPU work of a `.remote()` on the caller's node (submitting a task or an actor
    /// creation): the core worker builds the spec and hands it off to its io thread; the
    /// caller is busy meanwhile. Measured, not fitted: the slope of the 1-CPU no-op
    /// runs' submit loops against their task counts.
    #[serde(default = "default_call_submit_cost")]
    pub call_submit_cost: DurationSpec,
    /// CPU work of a driver's or an actor's first `.remote()` of a task or an actor,
    /// once per process, before that call returns: Ray sets up the process's submitting
    /// then (the first function it exports costs most of it). Measured, not fitted, as
    /// `call_submit_cost` is; an actor pays what a driver does (`worker_first_submit.py`).
    #[serde(default = "default_first_submit_cost")]
    pub first_submit_cost: DurationSpec,
    /// CPU work of the owner's io thread (one per driver or worker process, on the
    /// owner's node) for each normal task it pushes to a leased worker: the push and
    /// the handling of its reply. An owner's pushes wait for each other, so this bounds
    /// how many tasks one owner runs a second, however many workers it leases.
    #[serde(default = "default_owner_push_cost")]
    pub owner_push_cost: DurationSpec,
    /// CPU work of a `.remote()` on an actor handle, on the caller's node: Ray's owner
    /// pushes an actor call straight to the actor's worker, with no lease to ask for.
    #[serde(default = "default_actor_call_submit_cost")]
    pub actor_call_submit_cost: DurationSpec,
    /// CPU work of the raylet granting a lease (its one thread, on its node's cores).
    #[serde(default = "default_dispatch_cost")]
    pub dispatch_cost: DurationSpec,
    /// CPU work on the worker's node from a call being pushed to it (SUBMITTED_TO_WORKER)
    /// to its body running (RUNNING), the worker's per-call overhead.
    #[serde(default = "default_call_start_cost")]
    pub call_start_cost: DurationSpec,
    /// More CPU work of a task worker before a normal task's body, beside
    /// `call_start_cost` (which actor calls pay too).
    #[serde(default = "default_task_worker_cost")]
    pub task_worker_cost: DurationSpec,
    /// CPU work of a task worker after it replied to a normal task (its cleanup): the
    /// owner does not wait for it, but the worker runs no next task before it ends.
    #[serde(default = "default_task_reply_cost")]
    pub task_reply_cost: DurationSpec,
    /// CPU work on the worker's node when a call raises, before its error reaches the
    /// caller: Ray's worker formats the traceback and stores the pickled error.
    #[serde(default = "default_task_error_cost")]
    pub task_error_cost: DurationSpec,
    /// CPU work an async actor's event loop (one thread) does per call beyond
    /// `call_start_cost`: calls to one async actor run it one at a time.
    #[serde(default = "default_async_call_cost")]
    pub async_call_cost: DurationSpec,
    /// The GCS placing a placement group: its two-phase commit of the bundles with their
    /// raylets (prepare, then commit), from creation to ready.
    #[serde(default = "default_placement_group_commit_latency")]
    pub placement_group_commit_latency: DurationSpec,
    /// More of that for each node beyond the first a group's bundles span: the GCS
    /// prepares and commits with each of their raylets.
    #[serde(default = "default_placement_group_node_latency")]
    pub placement_group_node_latency: DurationSpec,
    /// How late a worker's `time.sleep()` returns (Python's timer slack), paid by every
    /// sleep in a workload.
    #[serde(default = "default_sleep_overshoot")]
    pub sleep_overshoot: DurationSpec,
    /// Ray's `core_worker_internal_heartbeat_ms`: an owner resubmits the tasks it retries
    /// on this period's tick, not at once (ticks counted from its job's start).
    #[serde(default = "default_core_worker_internal_heartbeat")]
    pub core_worker_internal_heartbeat: DurationSpec,
    /// Ray's `worker_lease_timeout_milliseconds`: an owner keeps a worker it leased and
    /// pushes it its next queued task of the same kind (same call, same owner, same
    /// arguments) with no new lease, until the lease is this old; then it returns the
    /// worker. Zero: every task asks for its own lease.
    #[serde(default = "default_worker_lease_timeout")]
    pub worker_lease_timeout: DurationSpec,
    /// The owner pushing a normal task to its leased worker, a round trip: from the
    /// lease (or, on a kept lease, the previous task's reply) reaching the owner to the
    /// task at the worker. Ray keeps one task in flight per leased worker, so a kept
    /// lease runs its tasks one push apart.
    #[serde(default = "default_task_push_latency")]
    pub task_push_latency: DurationSpec,
    /// Ray's `raylet_report_resources_period_milliseconds`: resources freed on a node
    /// reach the other raylets at its next report, so a task queued by an owner on
    /// another node spills there no sooner (ticks counted from the node's join).
    #[serde(default = "default_resource_report_period")]
    pub resource_report_period: DurationSpec,
    /// Ray's `debug_dump_period_milliseconds`: how often a raylet looks for leases
    /// waiting on resources while no worker shows progress (holds a normal task's lease
    /// outside `ray.get`, or is up and creating its actor); from its second such look in
    /// a row it has every process on its node collect garbage. Zero: it never looks.
    #[serde(default = "default_debug_dump_period")]
    pub debug_dump_period: DurationSpec,
    /// Ray's `local_gc_min_interval_s`: a node's workers collect garbage at most this
    /// often.
    #[serde(default = "default_local_gc_min_interval")]
    pub local_gc_min_interval: DurationSpec,
    /// CPU work of one worker process's (or driver's) `gc.collect()` when its raylet
    /// asks, on the node's cores. Zero: the rounds cost nothing and are not simulated.
    #[serde(default = "default_worker_gc_cpu")]
    pub worker_gc_cpu: DurationSpec,
    /// How long a raylet's look sees an actor's creation as progress: Ray's does from
    /// the creation's worker registering to the creation's end. The model's creation
    /// ends as its worker comes up, so a look sees progress where a creation began its
    /// run less than this long before. Zero: a creation is never seen so.
    #[serde(default = "default_actor_creation_window")]
    pub actor_creation_window: DurationSpec,
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
            worker_start_cpu: default_worker_start_cpu(),
            idle_worker_cpu: default_idle_worker_cpu(),
            worker_niceness: default_worker_niceness(),
            driver_slowdown_per_busy_worker: default_driver_slowdown_per_busy_worker(),
            maximum_startup_concurrency: None,
            prestart_worker_first_driver: true,
            worker_prestart: false,
            worker_first_call_latency: default_worker_first_call_latency(),
            actor_first_call_latency: None,
            debug_dump_period: default_debug_dump_period(),
            local_gc_min_interval: default_local_gc_min_interval(),
            worker_gc_cpu: default_worker_gc_cpu(),
            actor_creation_window: default_actor_creation_window(),
            call_submit_cost: default_call_submit_cost(),
            first_submit_cost: default_first_submit_cost(),
            owner_push_cost: default_owner_push_cost(),
            actor_call_submit_cost: default_actor_call_submit_cost(),
            dispatch_cost: default_dispatch_cost(),
            call_start_cost: default_call_start_cost(),
            task_worker_cost: default_task_worker_cost(),
            task_reply_cost: default_task_reply_cost(),
            task_error_cost: default_task_error_cost(),
            async_call_cost: default_async_call_cost(),
            placement_group_commit_latency: default_placement_group_commit_latency(),
            placement_group_node_latency: default_placement_group_node_latency(),
            sleep_overshoot: default_sleep_overshoot(),
            core_worker_internal_heartbeat: default_core_worker_internal_heartbeat(),
            worker_lease_timeout: default_worker_lease_timeout(),
            task_push_latency: default_task_push_latency(),
            resource_report_period: default_resource_report_period(),
        }
    }
}
