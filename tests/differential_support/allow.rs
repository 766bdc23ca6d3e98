//! Every difference between rayscope's exports and real Ray 2.60's that the differential
//! test accepts, each with its reason. docs/ray-differential.md lists the same.

/// One accepted difference for the families `pattern` names (`*` ends a prefix).
#[derive(Clone, Copy, Debug)]
pub struct Diff {
    pub pattern: &'static str,
    /// Ray exports it, rayscope does not.
    pub ray_only: bool,
    /// rayscope exports it, Ray does not (at that step).
    pub ours_only: bool,
    /// Served by other kinds of node.
    pub kinds: bool,
    /// Other label keys.
    pub label_keys: bool,
    pub reason: &'static str,
}

impl Diff {
    pub fn matches(&self, family: &str) -> bool {
        super::matches_pattern(self.pattern, family)
    }
}

const fn ray_only(pattern: &'static str, reason: &'static str) -> Diff {
    Diff { pattern, ray_only: true, ours_only: false, kinds: false, label_keys: false, reason }
}

const fn ours_only(pattern: &'static str, reason: &'static str) -> Diff {
    Diff { pattern, ray_only: false, ours_only: true, kinds: false, label_keys: false, reason }
}

const fn served_elsewhere(pattern: &'static str, reason: &'static str) -> Diff {
    Diff { pattern, ray_only: false, ours_only: false, kinds: true, label_keys: false, reason }
}

const fn other_keys(pattern: &'static str, reason: &'static str) -> Diff {
    Diff { pattern, ray_only: false, ours_only: false, kinds: false, label_keys: true, reason }
}

const NOT_MODELLED: &str =
    "internals of Ray's processes the model does not have (no dashboard or rule of Ray's or the bundle reads them)";

pub fn differences() -> Vec<Diff> {
    vec![
        // Python processes' own exporters (prometheus_client), on every Ray target.
        ray_only("process_*", "prometheus_client's default process collector of Ray's Python agents"),
        ray_only("python_*", "prometheus_client's default Python collectors of Ray's agents"),
        ray_only("target_info", "OpenTelemetry's resource series, written by Ray 2.60's OTel exporter"),
        ray_only("*_created", "prometheus_client's `_created` series beside Python counters and histograms"),
        // Ray internals rayscope does not model.
        ray_only("ray_grpc_*", NOT_MODELLED),
        ray_only("ray_io_context_*", NOT_MODELLED),
        ray_only("ray_operation_*", NOT_MODELLED),
        ray_only("ray_object_directory_*", NOT_MODELLED),
        ray_only("ray_pull_manager_*", NOT_MODELLED),
        ray_only("ray_push_manager_*", NOT_MODELLED),
        ray_only("ray_object_manager_num_pull_requests", NOT_MODELLED),
        ray_only("ray_object_manager_received_chunks", NOT_MODELLED),
        ray_only("ray_object_store_dist", NOT_MODELLED),
        ray_only("ray_health_check_rpc_latency_ms", NOT_MODELLED),
        ray_only("ray_worker_register_time_ms", NOT_MODELLED),
        ray_only("ray_total_lineage_bytes", NOT_MODELLED),
        ray_only("ray_internal_num_infeasible_scheduling_classes", NOT_MODELLED),
        ray_only("ray_internal_num_processes_started_from_cache", NOT_MODELLED),
        ray_only("ray_scheduler_failed_worker_startup_total", NOT_MODELLED),
        ray_only("ray_gcs_storage_operation_*", NOT_MODELLED),
        ray_only("ray_gcs_task_manager_task_events_*", NOT_MODELLED),
        ray_only(
            "ray_gcs_actors_count",
            "the GCS's own actor-table gauge; rayscope serves the same counts as ray_actors{Source=\"gcs\"}",
        ),
        ray_only(
            "ray_gcs_placement_group_count",
            "the GCS's own placement-group gauge; rayscope serves ray_placement_groups",
        ),
        ray_only(
            "ray_owned_objects*",
            "a core worker's owned-object gauges; the model keeps no per-owner object counts",
        ),
        ray_only("ray_node_mem_shared_bytes", "host shared memory; the model does not split memory this way"),
        ray_only(
            "ray_unintentional_worker_failures_total",
            "the GCS's count of unintentional worker exits; rayscope counts them per node \
             (ray_node_manager_unexpected_worker_failure_total), which is what Ray's dashboards plot",
        ),
        ray_only(
            "ray_job_duration_s",
            "exported by Ray's GCS only in some steps (it comes and goes with the driver's job); not modelled",
        ),
        ray_only(
            "ray_scheduler_placement_time_ms_*",
            "Ray 2.60 also writes placement time as _max/_mean/_p50/_p95/_p99 gauges; rayscope only the histogram",
        ),
        ours_only(
            "ray_scheduler_placement_time_ms",
            "Ray 2.60's GCS wrote placement time as _max/_mean/_p50/_p95/_p99 gauges while tasks were placed; \
             rayscope writes the histogram Ray's dashboards query",
        ),
        // The dashboard's and autoscaler's own Python metrics.
        ray_only(
            "ray_dashboard_*",
            "the dashboard's own HTTP metrics (its own target); rayscope serves no dashboard target",
        ),
        ray_only("autoscaler_pending_resources", "not modelled (Ray's autoscaler v1 status)"),
        ray_only(
            "autoscaler_*_time_seconds",
            "the autoscaler's update-loop timings; rayscope's autoscaler has no loop",
        ),
        ours_only(
            "autoscaler_recently_failed_nodes",
            "Ray's autoscaler writes it only for node types it launches; \
             cluster_utils' nodes are of no autoscaler type",
        ),
        ours_only(
            "ray_cluster_failed_nodes",
            "written by Ray's autoscaler for its node types; cluster_utils' nodes are of no autoscaler type",
        ),
        ours_only("ray_cluster_idle_nodes", "as ray_cluster_failed_nodes"),
        ours_only("ray_cluster_pending_nodes", "as ray_cluster_failed_nodes"),
        ours_only("rayscope_*", "rayscope's own families"),
        // Attribution: which process reports.
        served_elsewhere(
            "ray_component_*",
            "on one machine every node's reporter agent sees the same processes, and Ray 2.60 reported components \
             only from the head's agent; rayscope reports each node's components from that node",
        ),
        served_elsewhere(
            "ray_tasks",
            "Ray's executor-side series (Source=executor) vanish with the task; rayscope keeps a worker's series at 0 \
             after its last task (the owner-side counts on the head agree)",
        ),
        served_elsewhere(
            "ray_actors",
            "Ray's restarted actor also reports from its own core worker (Source=executor) on its node; rayscope \
             reports actor states from the GCS only",
        ),
    ]
}
/// Families whose serving nodes differ between two runs of the scenario on real Ray: a
/// task's executor-side series exist only while its worker reports during the step's
/// window (the OOM-killed task on worker-1 is sometimes seen before its kill, sometimes
/// not). Their presence and label keys are still compared.
pub fn volatile_kinds() -> Vec<(&'static str, &'static str)> {
    vec![
        ("ray_tasks", "executor-side series of the short-lived OOM-killed task on worker-1"),
        ("ray_total_lineage_bytes", "reported by the OOM-killed task's worker only while it lives"),
    ]
}

/// Families whose presence at a step differs between two runs on real Ray: Ray writes
/// them only for report periods in which their event happened, so whether a step's
/// window holds one depends on timing. Their label keys are still compared where both
/// runs have them.
pub fn volatile_presence() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "ray_scheduler_placement_time_ms_*",
            "the GCS writes the placement-time gauges only for periods with placements: recorded through \
             task_retried, seen again at oom_kill in a later run (the OOM hog's placement)",
        ),
        (
            "ray_grpc_client_req_failed_total",
            "Ray creates the counter at a process's first failed gRPC request: one live run on a loaded \
             machine (2026-11-27) had it from the first step on, the recording and the next run had none; \
             on 2.49 the recording has it on the head and a worker, a CI run (2026-12-02) on the head only",
        ),
    ]
}

/// [`differences`] plus what differs only on Ray `version` (the oldest supported).
pub fn differences_for(version: &str) -> Vec<Diff> {
    let mut all = differences();
    if version == super::OLDEST {
        all.extend(OLDEST_ONLY);
    }
    all
}

/// Accepted differences from Ray 2.49 beyond those from 2.60.
const OLDEST_ONLY: &[Diff] = &[
    ray_only(
        "ray_event_aggregator_agent_events_*",
        "Ray 2.49's dashboard agents count their event aggregator's events (Python counters); not modelled",
    ),
    ray_only(
        "ray_internal_num_processes_started*_total",
        "Ray 2.49's OpenCensus exporter also writes a cumulative counter twin of the worker-pool gauges; \
         rayscope writes the gauge, which both versions have and the bundle reads",
    ),
    served_elsewhere(
        "ray_internal_num_processes_started",
        "at the idle step Ray 2.49's recording served it from worker-2 alone and the head from the first tasks \
         on; rayscope serves it from the head at start, where its prestarted workers are, as 2.60's recording does",
    ),
    served_elsewhere(
        "ray_scheduler_placement_time_s",
        "Ray 2.49's raylets write their own task placements; rayscope reports every placement from the head",
    ),
    served_elsewhere(
        "ray_spill_manager_throughput_mb",
        "in the 2.49 recording only worker-1 spilled; the model's head spills too (as the head did in 2.60's)",
    ),
];

/// On Ray 2.49 (OpenCensus), a surviving worker's agent keeps serving its raylet's and
/// workers' last reports after the head's death; 2.60's drops them. Accepted at the
/// head_killed step only, for families only workers serve.
pub const STALE_AFTER_HEAD_DEATH: &str =
    "Ray 2.49's worker agents keep serving their last raylet and worker reports once the head is gone";
