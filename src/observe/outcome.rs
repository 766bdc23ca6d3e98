//! A call's outcome where its job's end cut Ray's reports short.
//!
//! When a driver exits, Ray force-exits its job's workers. Events still in their
//! buffers (sent about once a second) are lost, and the GCS marks the tasks those
//! workers were running FAILED (`WORKER_DIED`, "Worker force exited because its job
//! has finished"; 2.49 writes "force exits"). A call so marked, or left in a
//! non-terminal state, whose caller went on past waiting for it (the caller returned,
//! or it is the driver's and the job succeeded) did not fail: its outcome was not
//! reported. Flow Insight shows it as "ended with the job, outcome not reported",
//! with Ray's state beside it (scripts/ray-observe/FINDINGS.md, §2c).
//!
//! Owns: telling such calls from failed ones. Must never: hide a failure Ray reported
//! for a reason other than the job's end, or a call whose caller did not go on.

use super::rows::ObservedTask;

/// How a call's caller fared, for [`ended_with_job`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// It returned (FINISHED, or itself ended with the job while its own caller went
    /// on), or it is the driver of a job that succeeded.
    WentOn,
    /// It failed, is still running, or its job did not succeed.
    DidNot,
}

/// Whether `call`'s last attempt ended with its job rather than failing: the job has
/// ended, Ray marked the call FAILED only for its worker's killing at the job's end
/// (or left it unfinished), and its caller went on.
pub fn ended_with_job(job_ended: bool, call: &ObservedTask, caller: Caller) -> bool {
    if !job_ended || caller != Caller::WentOn {
        return false;
    }
    match call.state.as_str() {
        "FINISHED" => false,
        "FAILED" => call.killed_with_job,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::rows::killed_with_job;

    fn task(state: &str, killed: bool) -> ObservedTask {
        ObservedTask { state: state.into(), killed_with_job: killed, ..Default::default() }
    }

    #[test]
    fn rays_message_for_a_worker_killed_at_its_jobs_end_is_recognised_in_249_and_260() {
        let m260 = "Worker running the task (x) died with exit_type: 3 with error_message: Worker force exited because its job has finished";
        let m249 = "Worker running the task (x) died with exit_type: 1 with error_message: Worker force exits because its job has finished";
        assert!(killed_with_job(Some("WORKER_DIED"), Some(m260)));
        assert!(killed_with_job(Some("WORKER_DIED"), Some(m249)));
        assert!(!killed_with_job(Some("WORKER_DIED"), Some("The worker died unexpectedly (OOM)")));
        assert!(!killed_with_job(Some("TASK_EXECUTION_EXCEPTION"), Some(m260)));
    }

    #[test]
    fn only_a_call_whose_caller_went_on_after_its_job_ended_is_unreported() {
        assert!(ended_with_job(true, &task("FAILED", true), Caller::WentOn));
        assert!(ended_with_job(true, &task("RUNNING", false), Caller::WentOn));
        assert!(!ended_with_job(true, &task("FAILED", false), Caller::WentOn), "a real failure stays one");
        assert!(!ended_with_job(true, &task("FAILED", true), Caller::DidNot), "its caller did not go on");
        assert!(!ended_with_job(false, &task("RUNNING", false), Caller::WentOn), "the job still runs");
        assert!(!ended_with_job(true, &task("FINISHED", false), Caller::WentOn));
    }
}
