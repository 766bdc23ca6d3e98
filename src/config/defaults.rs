//! Default values of the config schema (Ray's own defaults where Ray has one).

use super::units::{DurationDist, DurationSpec};
use crate::model::Bytes;

pub(super) fn yes() -> bool {
    true
}
pub(super) fn one_f64() -> f64 {
    1.0
}
pub(super) fn one_u32() -> u32 {
    1
}
pub(super) fn four_u32() -> u32 {
    4
}
pub(super) fn ten_u32() -> u32 {
    10
}
pub(super) fn one_u64() -> u64 {
    1
}
pub(super) fn default_ray_version() -> String {
    "2.60.0".into()
}
pub(super) fn default_network_bandwidth() -> Bytes {
    Bytes(1_250_000_000) // 10 Gbit/s
}
// Ray 2.60's `health_check_initial_delay_ms` (5000), `health_check_period_ms` (3000)
// and `health_check_failure_threshold` (5).
pub(super) fn default_health_check_initial_delay() -> DurationSpec {
    DurationSpec::secs(5.0)
}
pub(super) fn default_health_check_period() -> DurationSpec {
    DurationSpec::secs(3.0)
}
pub(super) fn default_health_check_failure_threshold() -> u32 {
    5
}
pub(super) fn default_head_name() -> String {
    "ray.head.default".into()
}
pub(super) fn default_head_ip() -> String {
    "10.0.0.1".into()
}
pub(super) fn default_head_cpu() -> f64 {
    8.0
}
pub(super) fn default_head_memory() -> Bytes {
    Bytes(32 * 1024 * 1024 * 1024)
}
pub(super) fn default_launch_delay() -> DurationSpec {
    DurationSpec::secs(30.0)
}
pub(super) fn default_idle_timeout() -> DurationSpec {
    DurationSpec::secs(60.0)
}
pub(super) fn default_spread_threshold() -> f64 {
    0.5
}
pub(super) fn default_top_k_fraction() -> f64 {
    0.2
}
// The per-call costs are fitted to runs of real Ray 2.60 on a 2-core Intel Xeon VM: the
// FIT rows of scripts/ray-calibration/fit.py (its result: runs/fit.json); every other
// recorded run is a hold-out (docs/fidelity.md; ARCHITECTURE.md, "Calibration").
// `sleep_overshoot` is call_costs.py's measured median.
pub(super) fn default_lease_latency() -> DurationSpec {
    DurationSpec::secs(LEASE_S)
}
pub(super) fn default_worker_start_latency() -> DurationSpec {
    DurationSpec::secs(WORKER_START_S)
}
pub(super) fn default_worker_start_cpu() -> DurationSpec {
    DurationSpec::secs(WORKER_START_CPU_S)
}
pub(super) fn default_idle_worker_cpu() -> f64 {
    IDLE_WORKER_CPU
}
// Ray 2.60 renices its workers to 15 (first_call.py read it from them), but the costs
// above were fitted with every piece of work sharing the cores alike: 0 keeps the model
// they were fitted in. 15 is a what-if until they are refitted with it (BENCHMARKS.md,
// "Two priorities on a node's cores").
pub(super) fn default_worker_niceness() -> u8 {
    0
}
// Measured, not fitted: loop_wait.py read the schedstat of Ray's driver loop thread over
// 100,000 no-op submits at 1, 2 and 4 CPUs (as many busy task workers): on a CPU 0.925,
// 0.857 and 0.775 of its time, the rest runnable, waiting. Each busy worker stretched
// the loop by (1 / on-CPU − 1) / workers: 0.081, 0.083 and 0.073; the median is kept
// (runs/loop-wait.json; tests/calibration.rs recomputes it).
pub(super) fn default_driver_slowdown_per_busy_worker() -> f64 {
    DRIVER_SLOWDOWN_PER_BUSY_WORKER
}
pub(super) fn default_dispatch_cost() -> DurationSpec {
    DurationSpec::secs(DISPATCH_S)
}
// `call_submit_cost` and `first_submit_cost` are measured, not fitted: the slope and
// the intercept of the 1-CPU no-op runs' submit loops (1,000, 10,000 and 100,000 tasks,
// the median of each size's runs) against their task counts, each size weighed alike
// (tests/calibration.rs recomputes them). The slope (57.7 µs) is a call's CPU stretched
// by the one busy task worker of a 1-CPU run: `call_submit_cost` is it over
// `1 + driver_slowdown_per_busy_worker`. The intercept is 66.7 ms (66 ms is kept: the
// fit ran with it, and the test allows 1 ms). first_submit.py put the one-time part on
// the driver's first `.remote()`, before it returns: 78-92 ms, then 2.5-3.7 ms for each
// later function's first (runs/first-submit.json).
pub(super) fn default_call_submit_cost() -> DurationSpec {
    DurationSpec::secs(CALL_SUBMIT_S)
}
pub(super) fn default_first_submit_cost() -> DurationSpec {
    DurationSpec::secs(FIRST_SUBMIT_S)
}
// `owner_push_cost` is tied, not searched: the owner's side of a no-op task
// (`call_submit_cost` + `owner_push_cost`) is the share of the worker's
// (`call_start_cost` + `task_worker_cost` + `task_reply_cost`) that Ray's driver burned
// of its task workers' CPU (cpu_by_process.py: the median, 0.598;
// runs/cpu-by-process.json), while fit.py moved the worker's costs
// (`fit.py --owner-ratio`).
pub(super) fn default_owner_push_cost() -> DurationSpec {
    DurationSpec::secs(OWNER_PUSH_S)
}
pub(super) fn default_actor_call_submit_cost() -> DurationSpec {
    DurationSpec::secs(ACTOR_CALL_SUBMIT_S)
}
pub(super) fn default_call_start_cost() -> DurationSpec {
    DurationSpec::secs(CALL_START_S)
}
pub(super) fn default_task_worker_cost() -> DurationSpec {
    DurationSpec::secs(TASK_WORKER_S)
}
pub(super) fn default_task_reply_cost() -> DurationSpec {
    DurationSpec::secs(TASK_REPLY_S)
}
pub(super) fn default_task_error_cost() -> DurationSpec {
    DurationSpec::secs(TASK_ERROR_S)
}
pub(super) fn default_async_call_cost() -> DurationSpec {
    DurationSpec::secs(ASYNC_CALL_S)
}
pub(super) fn default_placement_group_commit_latency() -> DurationSpec {
    DurationSpec::secs(PG_COMMIT_S)
}
// Measured, not fitted: in pg_nodes.py's cluster of four nodes of 2 CPUs
// (runs/pg-nodes.json), a group of two 1-CPU bundles over two nodes took 0.251 ms longer
// to be ready than the same group on one (medians of 20; tests/calibration.rs recomputes
// it). Each node beyond that added about 1 ms there (4.85 ms on three, 5.80 on four),
// where the raylets outnumber the machine's 2 cores: not taken.
pub(super) fn default_placement_group_node_latency() -> DurationSpec {
    DurationSpec::secs(PG_NODE_S)
}
/// Ray 2.60's `core_worker_internal_heartbeat_ms` (1000).
pub(super) fn default_core_worker_internal_heartbeat() -> DurationSpec {
    DurationSpec::secs(1.0)
}
/// Ray 2.60's `worker_lease_timeout_milliseconds` (500).
pub(super) fn default_worker_lease_timeout() -> DurationSpec {
    DurationSpec::secs(0.5)
}
pub(super) fn default_task_push_latency() -> DurationSpec {
    DurationSpec::secs(TASK_PUSH_S)
}
/// Ray 2.60's `raylet_report_resources_period_milliseconds` (100).
pub(super) fn default_resource_report_period() -> DurationSpec {
    DurationSpec::secs(0.1)
}
/// Measured, not fitted: the median of the CPU first_call.py's 21 task workers burned
/// between their first and second task (79-135 ms), in the suite's cold runs of 1,000
/// no-op tasks at 1, 2 and 4 CPUs on this Intel Xeon VM (runs/first-call.json;
/// tests/calibration.rs recomputes it). The model spends it on the node's cores after a
/// worker's first call, and an actor's first answer waits it. It was lease_traces.py's
/// 82 ms, the median of 21 first-call waits (9 task workers, 12 actors) on the AMD EPYC
/// VM the calibration ran on before (runs/lease-traces.json).
pub(super) fn default_worker_first_call_latency() -> DurationSpec {
    DurationSpec::secs(WORKER_FIRST_CALL_S)
}
/// Ray 2.60's `debug_dump_period_milliseconds` (10000).
pub(super) fn default_debug_dump_period() -> DurationSpec {
    DurationSpec::secs(10.0)
}
/// Ray 2.60's `local_gc_min_interval_s` (10).
pub(super) fn default_local_gc_min_interval() -> DurationSpec {
    DurationSpec::secs(10.0)
}
/// Measured, not fitted: gc_rounds.py's three global GCs of 40 idle actors
/// (runs/gc-rounds.json: 33-37 ms of CPU a process, 36 ms the median; an earlier run:
/// 36-39 ms).
pub(super) fn default_worker_gc_cpu() -> DurationSpec {
    DurationSpec::secs(WORKER_GC_S)
}
/// Measured, not fitted: the median of creation_window.py's 200 windows, from an actor
/// worker's `Initializing worker` to its `Actor creation task finished` in the suite's
/// 200-default-actor run (11 ms to 3.0 s; runs/creation-window.json; tests/calibration.rs
/// recomputes it).
pub(super) fn default_actor_creation_window() -> DurationSpec {
    DurationSpec::secs(ACTOR_CREATION_WINDOW_S)
}
pub(super) fn default_sleep_overshoot() -> DurationSpec {
    DurationSpec::secs(SLEEP_OVERSHOOT_S)
}
const LEASE_S: f64 = 0.000_398;
const WORKER_START_S: f64 = 0.002_093;
const WORKER_START_CPU_S: f64 = 0.465_425;
const CALL_SUBMIT_S: f64 = 0.000_053;
pub(crate) const DRIVER_SLOWDOWN_PER_BUSY_WORKER: f64 = 0.0815;
const FIRST_SUBMIT_S: f64 = 0.066;
const WORKER_FIRST_CALL_S: f64 = 0.090_8;
const ACTOR_CREATION_WINDOW_S: f64 = 0.135;
const OWNER_PUSH_S: f64 = 0.000_308;
const ACTOR_CALL_SUBMIT_S: f64 = 0.000_001;
const DISPATCH_S: f64 = 0.000_492;
const TASK_PUSH_S: f64 = 0.000_139;
const IDLE_WORKER_CPU: f64 = 0.008_06;
const CALL_START_S: f64 = 0.000_180;
const TASK_WORKER_S: f64 = 0.000_130;
const TASK_REPLY_S: f64 = 0.000_292;
const SLEEP_OVERSHOOT_S: f64 = 0.000_101;
const TASK_ERROR_S: f64 = 0.001_027;
const ASYNC_CALL_S: f64 = 0.000_132;
const PG_COMMIT_S: f64 = 0.002_998;
const PG_NODE_S: f64 = 0.000_251;
const WORKER_GC_S: f64 = 0.036;
pub(super) fn default_spill_threshold() -> f64 {
    0.8
}
pub(super) fn default_spill_bandwidth() -> Bytes {
    Bytes(1024 * 1024 * 1024)
}
pub(super) fn default_transfer_bandwidth() -> Bytes {
    Bytes(TRANSFER_BYTES_PER_S)
}
pub(super) fn default_transfer_latency() -> DurationSpec {
    DurationSpec::secs(TRANSFER_S)
}
const TRANSFER_BYTES_PER_S: u64 = 732_481_061;
const TRANSFER_S: f64 = 0.000_021;
pub(super) fn default_put_latency() -> DurationSpec {
    DurationSpec::secs(PUT_S)
}
pub(super) fn default_put_bandwidth() -> Bytes {
    Bytes(PUT_BYTES_PER_S)
}
// Ray's `kMemcopyDefaultThreshold` (serialization.pxi): a raw `bytes` value over it is
// copied by `parallel_memcopy` on `MEMCOPY_THREADS` (6) threads.
pub(super) fn default_put_parallel_threshold() -> Bytes {
    Bytes(1024 * 1024)
}
// `put_threshold.py` (runs/put-threshold.json): the intercept of the puts over the
// threshold (1.06 to 30 MB) less that of the puts under it (0.5 and 1.04 MB), each a line
// through its sizes' medians: 0.866 - 0.578 ms. Measured, not fitted.
pub(super) fn default_put_parallel_start() -> DurationSpec {
    DurationSpec::secs(0.000_289)
}
pub(super) fn default_put_parallel_bandwidth() -> Bytes {
    Bytes(PUT_PARALLEL_BYTES_PER_S)
}
// The slope of `put_release.py`'s held puts from 1 MB to 100 MB (0.69 to 9.53 ms), on the
// AMD EPYC VM the calibration ran on before (runs/put-release.json; not re-measured).
pub(super) fn default_put_reused_bandwidth() -> Bytes {
    Bytes(11_200_000_000)
}
pub(super) fn default_get_latency() -> DurationSpec {
    DurationSpec::secs(GET_S)
}
pub(super) fn default_get_bandwidth() -> Bytes {
    Bytes(GET_BYTES_PER_S)
}
pub(super) fn default_get_fresh_bandwidth() -> Bytes {
    Bytes(GET_FRESH_BYTES_PER_S)
}
// glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: 4 MiB × sizeof(long).
pub(super) fn default_get_fresh_threshold() -> Bytes {
    Bytes(32 * 1024 * 1024)
}
// A numpy array's get is a view of the store's memory, so its cost does not grow with
// its size; it costs more than a small `bytes` get (rebuilding the array around the
// buffer). `numpy_get.py` (runs/numpy-get.json) had a numpy get take 2.8 times a 1 KB
// `bytes` one (0.186 against 0.066 ms, 1 KB each): that ratio times `GET_S`, the fitted
// latency of a `bytes` get.
pub(super) fn default_zero_copy_get_latency() -> DurationSpec {
    DurationSpec::secs(GET_S * 2.8)
}
const GET_S: f64 = 0.000_057;
const GET_BYTES_PER_S: u64 = 8_958_333_334;
const GET_FRESH_BYTES_PER_S: u64 = 1_911_764_706;
const PUT_S: f64 = 0.000_507;
const PUT_BYTES_PER_S: u64 = 1_472_921_864;
const PUT_PARALLEL_BYTES_PER_S: u64 = 2_580_000_000;
pub(super) fn default_inline_threshold() -> Bytes {
    Bytes(100 * 1024)
}
pub(super) fn default_memory_threshold() -> f64 {
    0.95
}
pub(super) fn default_oom_retry_delay() -> DurationSpec {
    DurationSpec::secs(1.0)
}
pub(super) fn default_flow_name() -> String {
    "flow-insight".into()
}
pub(super) fn default_flow_depth() -> u32 {
    3
}
pub(super) fn default_flow_sleep() -> DurationSpec {
    DurationSpec::secs(5.0)
}
pub(super) fn default_flow_bottleneck_sleep() -> DurationSpec {
    DurationSpec::secs(30.0)
}
pub(super) fn default_fan_out_name() -> String {
    "fan-out".into()
}
pub(super) fn default_task_duration() -> DurationDist {
    DurationDist::fixed(DurationSpec::secs(1.0))
}
pub(super) fn default_max_retries() -> i32 {
    3
}
pub(super) fn default_map_fn() -> String {
    "map".into()
}
pub(super) fn default_training_name() -> String {
    "training".into()
}
pub(super) fn default_bundle_cpu() -> f64 {
    4.0
}
pub(super) fn default_steps() -> u32 {
    100
}
pub(super) fn default_step_duration() -> DurationDist {
    DurationDist::fixed(DurationSpec::secs(2.0))
}
pub(super) fn default_actor_pool_name() -> String {
    "actor-pool".into()
}
pub(super) fn default_actor_class() -> String {
    "PoolActor".into()
}
pub(super) fn default_job_mix_name() -> String {
    "job-mix".into()
}
pub(super) fn default_max_concurrent_jobs() -> u32 {
    4
}
pub(super) fn default_finished_tasks() -> usize {
    100_000
}
pub(super) fn default_flow_calls_per_job() -> u64 {
    100_000
}
pub(super) fn default_dead_actors() -> usize {
    1_000
}
/// Ray's `maximum_gcs_dead_node_cached_count` (src/ray/common/ray_config_def.h).
pub(super) fn default_dead_nodes() -> usize {
    1_000
}
pub(super) fn default_event_capacity() -> usize {
    10_000
}
/// Ray's dashboard: `RAY_DASHBOARD_MAX_EVENTS_TO_CACHE` (dashboard/modules/event/event_head.py).
pub(super) fn default_cluster_event_capacity() -> usize {
    10_000
}
pub(super) fn default_finished_jobs() -> usize {
    100
}
pub(super) fn default_listen() -> String {
    "127.0.0.1:8080".into()
}
pub(super) fn default_stream_interval() -> DurationSpec {
    DurationSpec::secs(2.0)
}
pub(super) fn default_stream_clients() -> usize {
    64
}
/// Far above what Prometheus, Grafana and a few dashboards open; far below the
/// descriptors a process usually gets (1,024 soft limit on many systems).
pub(super) fn default_max_connections() -> usize {
    512
}
/// Long enough for any real client on a slow link, short enough that a slow-header
/// client cannot hold connections (nginx's `client_header_timeout` is 60 s; hyper's 30 s).
pub(super) fn default_header_read_timeout() -> DurationSpec {
    DurationSpec::secs(10.0)
}
pub(super) fn default_metrics_export_port() -> u16 {
    8080
}
pub(super) fn default_grafana_url() -> String {
    "http://127.0.0.1:3000".into()
}
