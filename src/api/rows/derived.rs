//! The columns of the resources whose rows are built outside this folder: the workers
//! and runtime envs Ray derives (`cluster_rows.rs`) and the cluster events
//! (`cluster_events.rs`). Declared here, with every other table's, so that the
//! machinery in `mod.rs` names them without importing the files that build the rows.

use super::{col, Column, Kind::*};

pub(crate) const WORKER_COLUMNS: &[Column] = &[
    col("worker_id", Str, true, false),
    col("is_alive", Bool, true, false),
    col("worker_type", Str, true, false),
    col("exit_type", Str, true, false),
    col("node_id", Str, true, false),
    col("ip", Str, true, false),
    col("pid", Int, true, false),
    col("exit_detail", Str, false, true),
    col("worker_launch_time_ms", Int, false, true),
    col("worker_launched_time_ms", Int, false, true),
    col("start_time_ms", Int, false, true),
    col("end_time_ms", Int, false, true),
    col("debugger_port", Int, true, true),
    col("num_paused_threads", Int, true, true),
];

pub(crate) const RUNTIME_ENV_COLUMNS: &[Column] = &[
    // Ray marks `runtime_env` filterable though it is a dict; equality on it never
    // matches a string, so rayscope leaves it out of filters.
    col("runtime_env", Json, false, false),
    col("success", Bool, true, false),
    col("creation_time_ms", Int, false, false),
    col("node_id", Str, true, false),
    col("ref_cnt", Int, false, true),
    col("error", Str, true, true),
];

pub(crate) const CLUSTER_EVENT_COLUMNS: &[Column] = &[
    col("severity", Str, true, false),
    col("time", Str, false, false),
    col("source_type", Str, true, false),
    col("message", Str, false, false),
    col("event_id", Str, true, false),
    col("custom_fields", Json, false, true),
];
