//! The jobs view: one [`JobView`] per job the model keeps.
//!
//! Owns: copying jobs (with their bounded driver logs) out of the model. Must never:
//! mutate the model.

use crate::model::{JobStatus, Model, VirtualTime};
use crate::snapshot::JobView;

/// Every job in the table, in job id order.
pub(super) fn jobs(m: &Model) -> Vec<JobView> {
    m.jobs()
        .values()
        .map(|j| JobView {
            id: j.id.hex(),
            submission_id: j.submission_id.clone(),
            name: j.name.clone(),
            entrypoint: j.entrypoint.clone(),
            status: j.status(),
            message: j.message.clone(),
            start_time_us: VirtualTime(j.start_time),
            end_time_us: j.end_time.map(VirtualTime),
            driver_node: j.driver_node.0,
            log: j.log.clone(),
            log_total: j.log_total,
        })
        .collect()
}

/// Jobs still running.
pub(super) fn running_jobs(m: &Model) -> u64 {
    m.jobs().values().filter(|j| j.status() == JobStatus::Running).count() as u64
}
