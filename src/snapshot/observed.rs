//! What observe mode says of its own work, for `rayscope_observe_*` and the pages.
//!
//! Owns: [`ObservedView`]. Must never: import the engine, the observer or a reader; it
//! is plain numbers, copied into each snapshot the observer publishes (the model's
//! snapshots carry none).

use serde::Serialize;

/// Observe mode's own counters, as of one snapshot.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ObservedView {
    /// The observed cluster's name in rayscope (`default` for an unnamed source).
    pub cluster: String,
    /// `pull` (Ray's APIs, perhaps with push), `push`, or `trace` (a recorded history).
    pub mode: &'static str,
    /// The dashboard or trace directory it reads.
    pub source: String,
    /// The Unix ms that the snapshot's time 0 stands for (set by the first record).
    pub zero_unix_ms: Option<u64>,
    pub polls: u64,
    pub poll_failures: u64,
    pub requests: u64,
    pub failed_requests: u64,
    pub last_poll_seconds: f64,
    pub rows_read: u64,
    pub bad_rows: u64,
    /// Tasks Ray had that its listings did not return (past its 10,000 limit).
    pub unlisted_tasks: u64,
    pub events_received: u64,
    pub events_refused: u64,
    pub batches_refused: u64,
    /// Task attempts held in memory, and those refused or forgotten to stay under the cap.
    pub tasks_held: u64,
    pub tasks_dropped: u64,
    pub tasks_forgotten: u64,
    pub trace_bytes: u64,
    pub trace_lines: u64,
    /// State transitions dropped past the per-attempt cap.
    pub transitions_dropped: u64,
    /// Records refused because their job id was not Ray's 4 bytes.
    pub bad_job_ids: u64,
    /// Records refused because a time was outside the plausible window.
    pub implausible_times: u64,
    /// Pushed bodies refused before they were read: past the bytes in flight (503) or
    /// not sent whole within the body deadline (408).
    pub pushes_over_in_flight: u64,
    /// Bytes of pushed bodies being read now.
    pub push_in_flight_bytes: u64,
    pub push_body_timeouts: u64,
    /// Pushed bodies refused past the size limit (413).
    pub push_bodies_too_large: u64,
    /// Jobs held, the cap, and new jobs refused because the cap was full of jobs
    /// still running (none ended to forget).
    pub jobs_held: u64,
    pub max_jobs: u64,
    pub jobs_refused: u64,
    /// Task records refused because their job had ended and been forgotten.
    pub late_records: u64,
    /// The job cap is full and every job held still runs: new jobs are refused.
    pub jobs_full_of_running: bool,
    /// Why the `--record` trace cannot be written now (`None`: it is, or is off).
    pub record_error: Option<String>,
    /// Trace writes that failed, and the records they did not record.
    pub record_failures: u64,
    pub unrecorded_records: u64,
    /// Where Ray exports each alive node's own metrics, as far as observed (the
    /// dashboard's node summary says; Event Export does not).
    #[serde(skip)]
    pub ray_metrics_targets: Vec<RayMetricsTarget>,
}

/// One alive node's Ray metrics endpoint, for `/sd?targets=ray`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RayMetricsTarget {
    pub node_id: String,
    pub node_ip: String,
    pub port: u16,
    pub is_head: bool,
}
