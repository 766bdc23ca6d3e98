//! Ray's State API row shapes, read straight from a snapshot's rows.
//!
//! Each resource declares its columns as Ray's schemas do (`python/ray/util/state/
//! common.py`): a name, whether `detail=false` output includes it, whether it can be
//! filtered on, and its type. A cell is produced on demand from the snapshot's compact
//! rows, borrowing where it can, so filtering 100,000 tasks allocates little and a page
//! of 50 renders only 50 rows. Nothing is copied per request.
//!
//! Ids follow Ray's layouts, so tools that slice them keep working: an actor id is 12
//! unique bytes then the 4-byte job id (32 hex); a task id is 8 unique bytes then 16
//! bytes naming the actor or the job (48 hex; drivers start with 40 `f`s, as Ray's
//! `DRIVER_TASK_ID_PREFIX`); an object id is a task-id-shaped prefix and a 4-byte return
//! index (56 hex); a placement group id is 14 unique bytes then the job id (36 hex).
//! [`parse_actor_id`] reads an actor id back for the control API.

use crate::model::{JobId, TaskType};
use crate::snapshot::{JobView, Snapshot, Tables};
use serde_json::{json, Map, Value};
use std::borrow::Cow;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Str,
    Int,
    Bool,
    /// Objects and lists: not filterable.
    Json,
}

#[derive(Debug)]
pub(crate) struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub filterable: bool,
    /// Only in `detail=true` output.
    pub detail: bool,
}

pub(crate) const fn col(name: &'static str, kind: Kind, filterable: bool, detail: bool) -> Column {
    Column { name, kind, filterable, detail }
}

use Kind::*;

const NODE_COLUMNS: &[Column] = &[
    col("node_id", Str, true, false),
    col("node_ip", Str, true, false),
    col("is_head_node", Bool, true, false),
    col("state", Str, true, false),
    col("state_message", Str, false, false),
    col("node_name", Str, true, false),
    col("resources_total", Json, false, false),
    col("labels", Json, false, false),
    col("start_time_ms", Int, false, true),
    col("end_time_ms", Int, false, true),
];

const JOB_COLUMNS: &[Column] = &[
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

const ACTOR_COLUMNS: &[Column] = &[
    col("actor_id", Str, true, false),
    col("class_name", Str, true, false),
    col("state", Str, true, false),
    col("job_id", Str, true, false),
    col("name", Str, true, false),
    col("node_id", Str, true, false),
    col("pid", Int, true, false),
    col("ray_namespace", Str, true, false),
    col("serialized_runtime_env", Str, false, true),
    col("required_resources", Json, false, true),
    col("death_cause", Json, false, true),
    col("is_detached", Bool, false, true),
    col("placement_group_id", Str, true, true),
    col("repr_name", Str, true, true),
    // int64 fields, which Ray's protobuf-to-JSON conversion writes as strings.
    col("num_restarts", Str, false, true),
    col("num_restarts_due_to_lineage_reconstruction", Str, false, true),
    col("num_restarts_due_to_node_preemption", Str, false, true),
    col("call_site", Str, false, true),
    col("label_selector", Json, false, true),
    col("fallback_strategy", Json, false, true),
];

const TASK_COLUMNS: &[Column] = &[
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

const OBJECT_COLUMNS: &[Column] = &[
    col("object_id", Str, true, false),
    col("object_size", Int, true, false),
    col("task_status", Str, true, false),
    col("attempt_number", Int, true, false),
    col("reference_type", Str, true, false),
    col("call_site", Str, true, false),
    col("type", Str, true, false),
    col("pid", Int, true, false),
    col("ip", Str, true, false),
];

const PG_COLUMNS: &[Column] = &[
    col("placement_group_id", Str, true, false),
    col("name", Str, true, false),
    col("creator_job_id", Str, true, false),
    col("state", Str, true, false),
    col("bundles", Json, false, true),
    col("is_detached", Bool, true, true),
    col("stats", Json, false, true),
    col("topology_strategy", Json, false, true),
    col("topology_assignments", Json, false, true),
];

/// The resources `/api/v0/<name>` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resource {
    Nodes,
    Jobs,
    Actors,
    Tasks,
    Objects,
    PlacementGroups,
    /// Derived per request by `cluster_rows` (never read through [`Ctx::cell`]).
    Workers,
    ClusterEvents,
    RuntimeEnvs,
}

impl Resource {
    pub fn name(self) -> &'static str {
        match self {
            Resource::Nodes => "nodes",
            Resource::Jobs => "jobs",
            Resource::Actors => "actors",
            Resource::Tasks => "tasks",
            Resource::Objects => "objects",
            Resource::PlacementGroups => "placement_groups",
            Resource::Workers => "workers",
            Resource::ClusterEvents => "cluster_events",
            Resource::RuntimeEnvs => "runtime_envs",
        }
    }

    pub fn columns(self) -> &'static [Column] {
        match self {
            Resource::Nodes => NODE_COLUMNS,
            Resource::Jobs => JOB_COLUMNS,
            Resource::Actors => ACTOR_COLUMNS,
            Resource::Tasks => TASK_COLUMNS,
            Resource::Objects => OBJECT_COLUMNS,
            Resource::PlacementGroups => PG_COLUMNS,
            Resource::Workers => super::cluster_rows::WORKER_COLUMNS,
            Resource::ClusterEvents => super::cluster_events::CLUSTER_EVENT_COLUMNS,
            Resource::RuntimeEnvs => super::cluster_rows::RUNTIME_ENV_COLUMNS,
        }
    }

    /// Whether rows come from the engine's on-demand tables (rather than the snapshot proper).
    pub fn uses_tables(self) -> bool {
        matches!(
            self,
            Resource::Actors | Resource::Tasks | Resource::Objects | Resource::PlacementGroups | Resource::Workers
        )
    }

    pub fn column(self, name: &str) -> Option<usize> {
        self.columns().iter().position(|c| c.name == name)
    }
}

/// One cell, borrowed from the snapshot where possible.
#[derive(Debug, Clone)]
pub(crate) enum Cell<'a> {
    Null,
    Str(Cow<'a, str>),
    Int(i64),
    Bool(bool),
    Json(Value),
}

impl Cell<'_> {
    pub fn into_value(self) -> Value {
        match self {
            Cell::Null => Value::Null,
            Cell::Str(s) => Value::String(s.into_owned()),
            Cell::Int(i) => Value::from(i),
            Cell::Bool(b) => Value::Bool(b),
            Cell::Json(v) => v,
        }
    }
}

fn s(x: &str) -> Cell<'_> {
    Cell::Str(Cow::Borrowed(x))
}

fn owned<'a>(x: String) -> Cell<'a> {
    Cell::Str(Cow::Owned(x))
}

fn opt_int<'a>(x: Option<u64>) -> Cell<'a> {
    x.map_or(Cell::Null, |v| Cell::Int(v as i64))
}

pub(crate) fn job_hex(job: u32) -> String {
    JobId(job).hex()
}

pub(crate) fn actor_hex(actor: u64, job: u32) -> String {
    crate::model::actor_id_hex(actor, job)
}

pub(crate) fn task_hex(task: u64, job: u32, kind: TaskType) -> String {
    crate::model::task_id_hex(task, job, kind == TaskType::DriverTask)
}

pub(crate) fn object_hex(object: u64, job: u32) -> String {
    format!("{object:016x}{}{}01000000", "f".repeat(24), job_hex(job))
}

pub(crate) fn pg_hex(pg: u32, job: u32) -> String {
    format!("{pg:028x}{}", job_hex(job))
}

/// A worker id (28 bytes, 56 hex) for a worker process.
pub(crate) fn worker_hex(pid: u32) -> String {
    crate::model::worker_id_hex(pid)
}

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

/// An actor id as the State API shows it (32 hex) or as the event log does (short hex).
pub(crate) fn parse_actor_id(id: &str) -> Option<u64> {
    let id = id.trim();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    match id.len() {
        32 => u128::from_str_radix(&id[..24], 16).ok().and_then(|v| u64::try_from(v).ok()),
        1..=16 => u64::from_str_radix(id, 16).ok(),
        _ => None,
    }
}

/// Everything a cell may need besides its row.
pub(crate) struct Ctx<'a> {
    pub snap: &'a Snapshot,
    pub tables: &'a Tables,
    pub epoch_ms_at_zero: u64,
    /// Jobs' submission metadata (metadata, runtime_env), by submission id.
    pub job_extra: &'a dyn Fn(&JobView) -> (Value, Value),
}

impl Ctx<'_> {
    pub(crate) fn ms(&self, us: u64) -> i64 {
        (self.epoch_ms_at_zero + us / 1000) as i64
    }

    fn node_id(&self, node: Option<u32>) -> Cell<'_> {
        match node.and_then(|n| self.snap.node(n)) {
            Some(n) => s(&n.node_id),
            None => Cell::Null,
        }
    }

    pub(crate) fn actor_pid(&self, actor: u64) -> Option<u32> {
        let actors = &self.tables.actors;
        actors.binary_search_by_key(&actor, |a| a.id).ok().map(|i| actors[i].pid)
    }

    /// The worker process a task ran in: its actor's, its driver's, or (once leased to
    /// a node) the task worker's; `None` while it waits for a node.
    fn task_worker_pid(&self, t: &crate::snapshot::TaskRow) -> Option<u32> {
        match (t.kind, t.actor) {
            (TaskType::DriverTask, _) => Some(crate::model::driver_pid(t.job)),
            (_, Some(a)) => self.actor_pid(a),
            _ => t.node.map(|_| crate::model::worker_pid(t.id)),
        }
    }

    /// A call spec's resource request as Ray's `required_resources`.
    fn required_resources(&self, spec: u32) -> Cell<'_> {
        match self.tables.spec_requests.get(spec as usize) {
            Some(request) => Cell::Json(Value::Object(request.iter().map(|(r, q)| (r.clone(), json!(q))).collect())),
            None => Cell::Null,
        }
    }

    pub fn len(&self, r: Resource) -> usize {
        match r {
            Resource::Nodes => self.snap.nodes.len(),
            Resource::Jobs => self.snap.jobs.len(),
            Resource::Actors => self.tables.actors.len(),
            Resource::Tasks => self.tables.tasks.len(),
            Resource::Objects => self.tables.objects.len(),
            Resource::PlacementGroups => self.tables.placement_groups.len(),
            Resource::Workers | Resource::ClusterEvents | Resource::RuntimeEnvs => 0,
        }
    }

    /// Row `i`'s value of column `c` (an index into `r.columns()`).
    pub fn cell(&self, r: Resource, i: usize, c: usize) -> Cell<'_> {
        let name = r.columns()[c].name;
        match r {
            Resource::Nodes => self.node_cell(i, name),
            Resource::Jobs => self.job_cell(i, name),
            Resource::Actors => self.actor_cell(i, name),
            Resource::Tasks => self.task_cell(i, name),
            Resource::Objects => self.object_cell(i, name),
            Resource::PlacementGroups => self.pg_cell(i, name),
            Resource::Workers | Resource::ClusterEvents | Resource::RuntimeEnvs => Cell::Null,
        }
    }

    /// Row `i` as a JSON object with Ray's column set for `detail`.
    pub fn row(&self, r: Resource, i: usize, detail: bool) -> Value {
        let mut m = Map::new();
        for (c, column) in r.columns().iter().enumerate() {
            if detail || !column.detail {
                m.insert(column.name.to_string(), self.cell(r, i, c).into_value());
            }
        }
        Value::Object(m)
    }

    fn node_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let n = &self.snap.nodes[i];
        match name {
            "node_id" => s(&n.node_id),
            "node_ip" => s(&n.ip),
            "is_head_node" => Cell::Bool(n.is_head),
            "state" => s(n.state.as_str()),
            "state_message" => n.death_reason.map_or(Cell::Null, s),
            // Ray names a node by its IP unless told otherwise.
            "node_name" => s(&n.ip),
            "resources_total" => {
                let mut m = Map::new();
                for (r, total, _) in n.resources.iter() {
                    m.insert(r.to_string(), json!(total));
                }
                m.entry(format!("node:{}", n.ip)).or_insert(json!(1.0));
                if n.is_head {
                    m.entry("node:__internal_head__".to_string()).or_insert(json!(1.0));
                }
                Cell::Json(Value::Object(m))
            }
            "labels" => Cell::Json(json!({"ray.io/node-id": n.node_id, "ray.io/node-group": n.node_type})),
            "start_time_ms" => Cell::Int(self.ms(n.started_at_us)),
            // Ray reports 0 until the node dies.
            "end_time_ms" => Cell::Int(n.died_at_us.map_or(0, |t| self.ms(t))),
            _ => Cell::Null,
        }
    }

    fn job_cell(&self, i: usize, name: &str) -> Cell<'_> {
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

    fn actor_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let a = &self.tables.actors[i];
        match name {
            "actor_id" => owned(actor_hex(a.id, a.job)),
            "class_name" => s(self.snap.name(a.class)),
            "state" => s(a.state.as_str()),
            "job_id" => owned(job_hex(a.job)),
            "name" => s(""),
            "node_id" => self.node_id(a.node),
            "pid" => Cell::Int(a.pid as i64),
            "ray_namespace" => s("default"),
            "serialized_runtime_env" => s("{}"),
            "required_resources" => self.required_resources(a.creation_spec),
            "death_cause" => match &a.death_cause {
                Some(cause) => {
                    let node_ip = a.node.and_then(|n| self.snap.node(n)).map_or("", |n| &*n.ip);
                    Cell::Json(json!({"actor_died_error_context": {
                        "error_message": cause,
                        "owner_id": "",
                        "owner_ip_address": self.snap.node(self.snap.head).map_or("", |n| &*n.ip),
                        "node_ip_address": node_ip,
                        "pid": a.pid,
                        "name": "",
                        "ray_namespace": "default",
                        "class_name": self.snap.name(a.class),
                        "actor_id": actor_hex(a.id, a.job),
                        "never_started": a.node.is_none(),
                        "reason": crate::model::actor::death_reason(cause),
                    }}))
                }
                None => Cell::Null,
            },
            "is_detached" => Cell::Bool(false),
            "placement_group_id" => a.placement_group.map_or(Cell::Null, |p| owned(pg_hex(p, a.job))),
            "repr_name" => s(""),
            "num_restarts" => owned(a.num_restarts.to_string()),
            "num_restarts_due_to_lineage_reconstruction" | "num_restarts_due_to_node_preemption" => s("0"),
            // Ray records call sites only with RAY_record_task_actor_creation_sites=1.
            "call_site" => s(""),
            "label_selector" | "fallback_strategy" => Cell::Json(json!({})),
            _ => Cell::Null,
        }
    }

    fn task_cell(&self, i: usize, name: &str) -> Cell<'_> {
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

    fn object_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let o = &self.tables.objects[i];
        match name {
            "object_id" => owned(object_hex(o.id, o.job)),
            "object_size" => Cell::Int(o.size as i64),
            "task_status" => s(o.task_status.as_str()),
            "attempt_number" => Cell::Int(o.attempt as i64),
            "reference_type" => s(if o.refs > 1 { "USED_BY_PENDING_TASK" } else { "LOCAL_REFERENCE" }),
            // Ray records call sites only with RAY_record_ref_creation_sites=1.
            "call_site" => s("disabled"),
            "type" => s("WORKER"),
            // The owner's worker holds the reference Ray lists.
            "pid" => Cell::Int(o.owner_pid as i64),
            "ip" => self.snap.node(o.owner_node).map_or(s(""), |n| s(&n.ip)),
            _ => Cell::Null,
        }
    }

    fn pg_cell(&self, i: usize, name: &str) -> Cell<'_> {
        let p = &self.tables.placement_groups[i];
        match name {
            "placement_group_id" => owned(pg_hex(p.id, p.job)),
            "name" => s(&p.name),
            "creator_job_id" => owned(job_hex(p.job)),
            "state" => s(p.state.as_str()),
            "bundles" => Cell::Json(Value::Array(
                p.bundles
                    .iter()
                    .enumerate()
                    .map(|(index, (resources, node))| {
                        let unit: Map<String, Value> = resources.iter().map(|(r, q)| (r.clone(), json!(q))).collect();
                        json!({
                            "bundle_id": format!("{}:{index}", pg_hex(p.id, p.job)),
                            "node_id": self.node_id(*node).into_value(),
                            "unit_resources": unit,
                        })
                    })
                    .collect(),
            )),
            "is_detached" => Cell::Bool(false),
            "stats" => Cell::Json(json!({"scheduling_state": p.state.as_str(), "strategy": p.strategy.as_str()})),
            "topology_strategy" | "topology_assignments" => Cell::Null,
            _ => Cell::Null,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_rays_lengths_and_read_back() {
        assert_eq!(actor_hex(0xabc, 1).len(), 32);
        assert!(actor_hex(0xabc, 1).ends_with("01000000"));
        assert_eq!(parse_actor_id(&actor_hex(0xabc, 1)), Some(0xabc));
        assert_eq!(parse_actor_id("abc"), Some(0xabc));
        assert_eq!(parse_actor_id("xyz"), None);
        assert_eq!(parse_actor_id(""), None);
        assert_eq!(task_hex(5, 2, TaskType::NormalTask).len(), 48);
        assert!(task_hex(5, 2, TaskType::DriverTask).starts_with(&"f".repeat(40)));
        assert_eq!(object_hex(5, 2).len(), 56);
        assert_eq!(pg_hex(5, 2).len(), 36);
    }

    #[test]
    fn every_resource_has_unique_columns() {
        for r in [
            Resource::Nodes,
            Resource::Jobs,
            Resource::Actors,
            Resource::Tasks,
            Resource::Objects,
            Resource::PlacementGroups,
        ] {
            let cols = r.columns();
            for (i, c) in cols.iter().enumerate() {
                assert_eq!(r.column(c.name), Some(i), "{} {}", r.name(), c.name);
                assert!(!(c.filterable && c.kind == Kind::Json), "{} {}", r.name(), c.name);
            }
        }
    }
}
