//! What an observed job's notes say, for the API and the pages: how its waits are
//! known, how many calls ended with the job without an outcome, and what Ray lost.
//!
//! Owns: the JSON of [`ObservedNotes`] and the Ray settings named with a loss.
//! Must never: read anything but the job's record (the model's jobs answer null).

use crate::snapshot::flow::JobRecord;
use crate::snapshot::flow_notes::Waits;
use serde_json::{json, Value};

/// How to have Ray measure a job's waits, as the page and the API say it.
pub const PROFILING_HOWTO: &str = "ray.init(runtime_env={\"env_vars\": {\"RAY_PROFILING\": \"1\"}}) and \
     RAY_PROFILING=1 in the driver's environment (or RAY_PROFILING=1 for every `ray start`); \
     Ray 2.60 pushes the spans with RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES=ALL, \
     Ray 2.49 gives them by pull only";

/// The Ray settings that keep a job's last task events from being lost.
pub const LOSS_PREVENTION: &str = "Ray's workers send task events every RAY_task_events_report_interval_ms \
     (1000 ms) and are killed with their driver: sleep a little over that interval before ray.shutdown() \
     (or let the driver linger), or lower RAY_task_events_report_interval_ms; raise \
     RAY_task_events_max_num_task_in_gcs where GCS drops events";

/// The most calls "ended with the job" listed one by one (all are counted).
const MAX_LISTED: usize = 100;

/// `{"waits", "profiling_howto"?, "ended_with_job", "ended_with_job_calls": [{"task_id",
/// "ray_state", "ray_error_type"}], "lost": [...], "loss_prevention"?, "settled"}`,
/// or null for a job of the model.
pub fn observed_json(job: &JobRecord) -> Value {
    let Some(n) = job.observed.as_deref() else { return Value::Null };
    // Each such call by its id (the State API's in observe mode), Ray's state beside it.
    let calls: Vec<Value> = n
        .ended_with_job
        .iter()
        .take(MAX_LISTED)
        .map(|(span, e)| json!({"task_id": span, "ray_state": e.ray_state, "ray_error_type": e.ray_error_type}))
        .collect();
    let mut v = json!({
        "waits": n.waits,
        "ended_with_job": n.ended_with_job.len(),
        "ended_with_job_calls": calls,
        "lost": n.lost,
        "settled": n.settled,
    });
    let m = v.as_object_mut().expect("an object");
    if n.waits != Waits::Measured {
        m.insert("profiling_howto".into(), json!(PROFILING_HOWTO));
    }
    if !n.lost.is_empty() {
        m.insert("loss_prevention".into(), json!(LOSS_PREVENTION));
    }
    v
}
