//! Jobs as readers see them (the Jobs API, job logs, `ray_jobs`).
//!
//! Owns: [`JobView`]. Must never: import the engine or mutate anything; the driver log
//! is a bounded copy made by `sim`.

use crate::model::{JobStatus, VirtualTime};
use serde::Serialize;

/// One job: its status, times and driver log.
#[derive(Clone, Debug, Serialize)]
pub struct JobView {
    pub id: String,
    pub submission_id: String,
    pub name: String,
    pub entrypoint: String,
    pub status: JobStatus,
    pub message: String,
    pub start_time_us: VirtualTime,
    pub end_time_us: Option<VirtualTime>,
    pub driver_node: u32,
    /// The job's driver log (bounded by the engine), for the Jobs API's `/logs`.
    pub log: Vec<String>,
    /// Lines ever written to the log; `log` holds the last `log.len()` of them.
    pub log_total: u64,
}
