//! The `tasks` table: Ray's `TaskState` columns and their cells, one row per attempt,
//! from the engine's on-demand task rows (live tasks and the finished-attempt ring).

use super::ids::{actor_hex, job_hex, pg_hex, task_hex, worker_hex};
use super::{col, opt_int, owned, s, Cell, Column, Ctx, Kind::*};
use crate::model::TaskType;
use serde_json::{json, Value};

pub(super) const TASK_COLUMNS: &[Column] = &[
    col("task_id", Str, true, false),
    col("attempt_number", Int, true, false),
    col("name", Str, true, false),
    col("state", Str, true, false),
    col("job_id", Str, true, false),
    col("actor_id", Str, true, false),
    col("type", Str, true, false),
    col("func_or_class_name", Str, true, false),
    col("parent_task_id", Str, true, false),
    col("node_id", Str, true, false),
    col("worker_id", Str, true, false),
    col("worker_pid", Int, true, false),
    col("error_type", Str, true, false),
    col("language", Str, true, true),
    col("required_resources", Json, false, true),
    col("runtime_env_info", Json, false, true),
    col("placement_group_id", Str, true, true),
    col("events", Json, false, true),
    col("profiling_data", Json, false, true),
    col("creation_time_ms", Int, false, true),
    col("start_time_ms", Int, false, true),
    col("end_time_ms", Int, false, true),
    col("task_log_info", Json, false, true),
    col("error_message", Str, false, true),
    col("is_debugger_paused", Bool, true, true),
    col("call_site", Str, false, true),
    col("label_selector", Json, false, true),
    col("fallback_strategy", Json, false, true),
];

impl Ctx<'_> {
    /// The worker process a task ran in: its actor's, its driver's, or (once leased to
    /// a node) the task worker's; `None` while it waits for a node.
    fn task_worker_pid(&self, t: &crate::snapshot::TaskRow) -> Option<u32> {
        match (t.kind, t.actor) {
            (TaskType::DriverTask, _) => Some(crate::model::driver_pid(t.job)),
            (_, Some(a)) => self.actor_pid(a),
            _ => t.node.map(|_| crate::model::worker_pid(t.id)),
        }
    }

    pub(super) fn task_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let t = &self.tables.tasks[i];
        match name {
            "task_id" => owned(task_hex(t.id, t.job, t.kind)),
            "attempt_number" => Cell::Int(t.attempt as i64),
            "name" | "func_or_class_name" => s(self.snap.name(t.name)),
            "state" => s(t.state.as_str()),
            "job_id" => owned(job_hex(t.job)),
            "actor_id" => t.actor.map_or(Cell::Null, |a| owned(actor_hex(a, t.job))),
            "type" => s(t.kind.as_str()),
            // A parent runs in the same job; a driver's children have a driver parent.
            "parent_task_id" => match t.parent {
                Some(p) => owned(task_hex(p, t.job, TaskType::NormalTask)),
                None if t.kind == TaskType::DriverTask => Cell::Null,
                None => owned(task_hex(0, t.job, TaskType::DriverTask)),
            },
            "node_id" => self.node_id(t.node),
            "worker_id" => self.task_worker_pid(t).map_or(Cell::Null, |p| owned(worker_hex(p))),
            "worker_pid" => self.task_worker_pid(t).map_or(Cell::Null, |p| Cell::Int(p as i64)),
            "error_type" => t.error.map_or(Cell::Null, |e| s(e.as_str())),
            "language" => s("PYTHON"),
            "required_resources" => self.required_resources(t.spec),
            "runtime_env_info" | "profiling_data" | "task_log_info" => Cell::Null,
            "placement_group_id" => t.placement_group.map_or(Cell::Null, |p| owned(pg_hex(p, t.job))),
            // One entry per state this attempt entered, in Ray's order, with Ray's
            // float milliseconds (`int(ns) // 1e6`).
            "events" => Cell::Json(Value::Array(
                t.history
                    .events(t.state)
                    .map(|(state, ms)| json!({"state": state.as_str(), "created_ms": (self.epoch_ms_at_zero + ms) as f64}))
                    .collect(),
            )),
            "creation_time_ms" => Cell::Int(self.ms(t.submitted_at_us)),
            "start_time_ms" => opt_int(t.started_at_us.map(|v| self.ms(v) as u64)),
            "end_time_ms" => opt_int(t.ended_at_us.map(|v| self.ms(v) as u64)),
            "error_message" => match t.error {
                Some(e) => owned(format!("task failed with {}", e.as_str())),
                None => Cell::Null,
            },
            "is_debugger_paused" => Cell::Bool(false),
            "call_site" => s(""),
            "label_selector" | "fallback_strategy" => Cell::Json(json!({})),
            _ => Cell::Null,
        }
    }
}
