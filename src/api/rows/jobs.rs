//! The `jobs` table: Ray's `JobDetails` columns and their cells, from the snapshot's
//! job views and the API's own record of what each submission carried.

use super::{col, opt_int, owned, s, Cell, Column, Ctx, Kind::*};
use crate::snapshot::JobView;
use serde_json::json;

pub(super) const JOB_COLUMNS: &[Column] = &[
    col("job_id", Str, true, false),
    col("submission_id", Str, true, false),
    col("entrypoint", Str, false, false),
    col("type", Str, true, false),
    col("status", Str, true, false),
    col("message", Str, false, false),
    col("error_type", Str, false, false),
    col("driver_info", Json, false, false),
    col("start_time", Int, false, true),
    col("end_time", Int, false, true),
    col("metadata", Json, false, true),
    col("runtime_env", Json, false, true),
    col("driver_agent_http_address", Str, false, true),
    col("driver_node_id", Str, false, true),
    col("driver_exit_code", Int, false, true),
];

/// Ray's `JobDetails.message` wording for a job's status; the model's own reason is
/// kept in the failure message, as Ray puts the driver's last lines there.
fn job_message(j: &JobView) -> Cell<'_> {
    use crate::model::JobStatus::*;
    match j.status {
        Pending => s("Job has not started yet."),
        Running => s("Job is currently running."),
        Stopped => s("Job was intentionally stopped."),
        Succeeded => s("Job finished successfully."),
        Failed => owned(format!(
            "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\n{}",
            j.message
        )),
    }
}

impl Ctx<'_> {
    pub(super) fn job_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let j = &self.snap.jobs[i];
        match name {
            "job_id" => s(&j.id),
            "submission_id" => s(&j.submission_id),
            "entrypoint" => s(&j.entrypoint),
            "type" => s("SUBMISSION"),
            "status" => s(j.status.as_str()),
            "message" => job_message(j),
            "error_type" => match j.status {
                crate::model::JobStatus::Failed => s("JOB_ENTRYPOINT_COMMAND_ERROR"),
                _ => Cell::Null,
            },
            "driver_info" => Cell::Json(json!({
                "id": j.id,
                "node_ip_address": self.snap.node(j.driver_node).map(|n| &*n.ip).unwrap_or(""),
                "pid": "0",
            })),
            "start_time" => Cell::Int(self.ms(j.start_time_us)),
            "end_time" => opt_int(j.end_time_us.map(|t| self.ms(t) as u64)),
            "metadata" => Cell::Json((self.job_extra)(j).0),
            "runtime_env" => Cell::Json((self.job_extra)(j).1),
            "driver_agent_http_address" => Cell::Null,
            "driver_node_id" => self.node_id(Some(j.driver_node)),
            "driver_exit_code" => match j.status {
                crate::model::JobStatus::Succeeded => Cell::Int(0),
                crate::model::JobStatus::Failed => Cell::Int(1),
                _ => Cell::Null,
            },
            _ => Cell::Null,
        }
    }
}
