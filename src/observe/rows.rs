//! What rayscope keeps of a live Ray cluster's records, read from Ray's State and Jobs
//! APIs (pull) or its Event Export (push), and written as they are to a trace.
//!
//! Owns: the observed record types (a task attempt, an actor, a node, a job, a
//! placement group, an object) and reading them from Ray's JSON rows. Each type holds
//! only the fields a view or the replay uses, under Ray's own names, so a trace line is
//! a trimmed State API row. Times are Unix milliseconds, as Ray writes them.
//! Must never: trust a row (a missing id is an error naming the field; a missing time
//! or count is absent, not zero), or keep a string it was not asked to (a row's
//! unbounded fields, such as error messages, are cut to [`MAX_TEXT`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest free text kept of one field (error messages, entrypoints, death causes).
pub const MAX_TEXT: usize = 2_000;
/// State transitions kept of one task attempt. Ray's attempts pass through at most a
/// dozen states; a merge never holds (or copies) more than this.
pub const MAX_TRANSITIONS: usize = 32;
/// The longest state name taken (Ray's longest,
/// `PENDING_ACTOR_TASK_ORDERING_OR_CONCURRENCY`, has 42 bytes); a longer one is no
/// Ray state and its transition is dropped.
pub const MAX_STATE_NAME: usize = 64;
/// Argument objects kept of one task attempt: a call takes few from the object store
/// (small arguments travel inline and are never listed).
pub const MAX_ARG_OBJECTS: usize = 16;
/// The longest argument call site kept (`(deserialize task arg) module.Class.method`):
/// 10,000 objects listed must not hold 10,000 long strings.
pub const MAX_CALL_SITE: usize = 256;
/// Object ids' indices above this are puts (see [`ObservedObject::is_put`]).
pub const PUT_INDEX_FLOOR: u32 = 100_000_000;

/// One attempt of one task, as `GET /api/v0/tasks?detail=true` lists it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedTask {
    pub task_id: String,
    #[serde(default)]
    pub attempt_number: u32,
    pub job_id: String,
    /// `Class.method`, the function's name, or a name the program gave it.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub func_or_class_name: String,
    /// NORMAL_TASK, ACTOR_CREATION_TASK, ACTOR_TASK or DRIVER_TASK.
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_resources: Vec<(String, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_time_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time_ms: Option<u64>,
    /// Each state the attempt entered, with when: Ray's `events`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<(String, u64)>,
    /// Ray marked it FAILED because its worker was killed at its job's end
    /// ([`killed_with_job`], read from `error_message`, which is not kept).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub killed_with_job: bool,
    /// Ray filed profile events for it (its own phases, `task:execute`, ..., at least):
    /// its worker's report reached Ray.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub profiled: bool,
    /// Its phases stop before its execution ended (`profile::execution_cut`): its
    /// worker's report of the rest, and of the calls it made meanwhile, was lost.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub execution_cut: bool,
    /// It ran with `RAY_PROFILING` (a span only that writes): its waits are `profile`,
    /// complete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ray_profiling: bool,
    /// Its `ray.get`, `ray.wait` and `ray.put` spans (`profile`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile: Vec<super::profile::ProfiledCall>,
    /// Bytes of its returns, as the object listing showed them while they lived (not a
    /// field of Ray's task rows: `Store::set_objects` fills it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_bytes: Option<u64>,
    /// The object-store arguments its worker held while it ran, as the object listing
    /// showed them (not a field of Ray's task rows: `Store::set_objects` fills it). At
    /// most [`MAX_ARG_OBJECTS`]; an argument passed inline (under Ray's 100 KiB) is not
    /// in the store and not here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<ArgObject>,
}

/// One argument of a call, held in the object store: two calls given the same
/// `ObjectRef` hold the same object id, two given the same value by value hold two.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgObject {
    pub object_id: String,
    pub bytes: u64,
}

/// One actor, as `GET /api/v0/actors?detail=true` lists it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedActor {
    pub actor_id: String,
    pub job_id: String,
    #[serde(default)]
    pub class_name: String,
    #[serde(default)]
    pub state: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_group_id: Option<String>,
    #[serde(default)]
    pub num_restarts: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_resources: Vec<(String, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub death_cause: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time_ms: Option<u64>,
}

/// One node, as `GET /api/v0/nodes?detail=true` lists it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedNode {
    pub node_id: String,
    #[serde(default)]
    pub node_ip: String,
    #[serde(default)]
    pub is_head_node: bool,
    #[serde(default)]
    pub state: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources_total: Vec<(String, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_message: Option<String>,
    /// Where Ray's own metrics of this node are (its `metrics_export_port`), from the
    /// dashboard's `/nodes?view=summary`: the State API and Event Export leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_export_port: Option<u16>,
}

/// One job, as the Jobs API (`GET /api/jobs/`) lists it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedJob {
    pub job_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission_id: Option<String>,
    #[serde(default)]
    pub entrypoint: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_node_id: Option<String>,
    /// The driver's node by address, where Ray names no node id (`driver_info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_ip: Option<String>,
}

/// A bundle's resources, and the node it is placed on.
pub type ObservedBundle = (Vec<(String, f64)>, Option<String>);

/// One placement group, as `GET /api/v0/placement_groups?detail=true` lists it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedPg {
    pub placement_group_id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub creator_job_id: String,
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub strategy: String,
    /// Each bundle's resources and the node it is placed on.
    #[serde(default)]
    pub bundles: Vec<ObservedBundle>,
}

/// One object, as `GET /api/v0/objects?detail=true` lists it (the latest listing only:
/// objects are not traced).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedObject {
    pub object_id: String,
    #[serde(default)]
    pub object_size: Option<u64>,
    #[serde(default)]
    pub task_status: String,
    #[serde(default)]
    pub ip: String,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub reference_type: String,
    /// Where the reference was made, kept only when it is Ray's mark of a running
    /// call's argument, `(deserialize task arg) module.fn`, which Ray writes even with
    /// call sites off (a user's call site, which is `disabled` by default, is dropped).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub call_site: String,
}

/// Whether the object id `object_id` names a `ray.put` (the caller's own, or Ray's for
/// an argument passed by value) rather than a call's return: Ray numbers puts from
/// 100,000,001 in the id's last 4 bytes (little-endian), returns from 1 (2.49 and 2.60
/// alike).
pub fn is_put_id(object_id: &str) -> bool {
    object_id
        .get(48..56)
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .is_some_and(|i| i.swap_bytes() > PUT_INDEX_FLOOR)
}

/// Why a row could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{table} row {index}: {problem}")]
pub struct RowError {
    pub table: &'static str,
    pub index: usize,
    pub problem: FieldError,
}

/// What is wrong with one field of a row, named as Ray's State API names it.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum FieldError {
    #[error("`{0}` is missing")]
    Missing(&'static str),
    #[error("`{key}` must be a string, got {kind}")]
    NotAString { key: &'static str, kind: &'static str },
    /// The id as given, cut to 80 characters.
    #[error("`{key}` is not a Ray id: {given:?}")]
    NotAnId { key: &'static str, given: String },
    #[error("`{key}` is {bytes} bytes; Ray's job ids are 4")]
    JobIdLength { key: &'static str, bytes: usize },
    #[error("`raylet.metricsExportPort` is missing or not a port")]
    NoMetricsPort,
}

pub(super) fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(cut(s)),
        Value::Null => None,
        other => Some(cut(&other.to_string())),
    }
}

/// `s` cut to [`MAX_TEXT`] bytes, on a character boundary.
pub fn cut(s: &str) -> String {
    cut_at(s, MAX_TEXT)
}

/// `s` cut to `max` bytes, on a character boundary.
fn cut_at(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// A required id: present, a non-empty string of hex digits no longer than Ray's longest.
pub(super) fn id(v: &Value, key: &'static str) -> Result<String, FieldError> {
    match v.get(key) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(s.to_ascii_lowercase())
        }
        Some(Value::String(s)) => Err(FieldError::NotAnId { key, given: cut(s).chars().take(80).collect() }),
        Some(other) => Err(FieldError::NotAString { key, kind: kind_of(other) }),
        None => Err(FieldError::Missing(key)),
    }
}

/// A job id: Ray's are 4 bytes (8 hex digits); any other length names no job.
fn job_id(v: &Value, key: &'static str) -> Result<String, FieldError> {
    let s = id(v, key)?;
    if s.len() != 8 {
        return Err(FieldError::JobIdLength { key, bytes: s.len().div_ceil(2) });
    }
    Ok(s)
}

/// An optional id: absent, null, empty or Ray's nil (all `f`s or all `0`s) is `None`.
pub(super) fn opt_id(v: &Value, key: &str) -> Option<String> {
    let s = v.get(key)?.as_str()?;
    let nil = s.is_empty() || s.bytes().all(|b| b == b'f' || b == b'F') || s.bytes().all(|b| b == b'0');
    (!nil && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| s.to_ascii_lowercase())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A non-negative whole number (Ray writes times in ms as integers, sizes as integers,
/// some as floats).
pub(super) fn num(v: &Value, key: &str) -> Option<u64> {
    let n = v.get(key)?;
    n.as_u64().or_else(|| n.as_f64().filter(|f| f.is_finite() && *f >= 0.0).map(|f| f as u64)).filter(|n| *n > 0)
}

fn resources(v: &Value, key: &str) -> Vec<(String, f64)> {
    let Some(map) = v.get(key).and_then(Value::as_object) else { return Vec::new() };
    map.iter().filter_map(|(k, n)| n.as_f64().filter(|f| f.is_finite()).map(|f| (cut(k), f))).take(64).collect()
}

/// The attempt's state transitions: Ray's `events`, `[{"state": .., "created_ms": ..}]`.
fn events(v: &Value) -> Vec<(String, u64)> {
    let Some(list) = v.get("events").and_then(Value::as_array) else { return Vec::new() };
    list.iter()
        .filter_map(|e| Some((text(e, "state").filter(|s| s.len() <= MAX_STATE_NAME)?, num(e, "created_ms")?)))
        .take(MAX_TRANSITIONS)
        .collect()
}

impl ObservedTask {
    pub fn from_row(v: &Value) -> Result<ObservedTask, FieldError> {
        let (profiled, ray_profiling, execution_cut, profile) = super::profile::from_row(v);
        Ok(ObservedTask {
            task_id: id(v, "task_id")?,
            attempt_number: num(v, "attempt_number").unwrap_or(0).min(u64::from(u32::MAX)) as u32,
            job_id: job_id(v, "job_id")?,
            name: text(v, "name").unwrap_or_default(),
            func_or_class_name: text(v, "func_or_class_name").unwrap_or_default(),
            kind: text(v, "type").unwrap_or_default(),
            state: text(v, "state").unwrap_or_default(),
            parent_task_id: opt_id(v, "parent_task_id"),
            actor_id: opt_id(v, "actor_id"),
            node_id: opt_id(v, "node_id"),
            worker_pid: num(v, "worker_pid").map(|p| p.min(u64::from(u32::MAX)) as u32),
            placement_group_id: opt_id(v, "placement_group_id"),
            required_resources: resources(v, "required_resources"),
            error_type: text(v, "error_type"),
            creation_time_ms: num(v, "creation_time_ms"),
            start_time_ms: num(v, "start_time_ms"),
            end_time_ms: num(v, "end_time_ms"),
            events: events(v),
            killed_with_job: killed_with_job(
                v.get("error_type").and_then(Value::as_str),
                v.get("error_message").and_then(Value::as_str),
            ),
            return_bytes: None,
            args: Vec::new(),
            profiled,
            execution_cut,
            ray_profiling,
            profile,
        })
    }

    /// When it was submitted: its first state's time, else its creation time.
    pub fn submitted_ms(&self) -> Option<u64> {
        self.events.iter().map(|e| e.1).min().or(self.creation_time_ms).or(self.start_time_ms)
    }

    /// When it started running: Ray's `start_time_ms`, else its RUNNING event.
    pub fn started_ms(&self) -> Option<u64> {
        self.start_time_ms.or_else(|| self.event_ms("RUNNING"))
    }

    /// When it ended: Ray's `end_time_ms`, else its FINISHED or FAILED event.
    pub fn ended_ms(&self) -> Option<u64> {
        if !self.is_terminal() {
            return None;
        }
        self.end_time_ms.or_else(|| self.event_ms("FINISHED")).or_else(|| self.event_ms("FAILED"))
    }

    pub fn event_ms(&self, state: &str) -> Option<u64> {
        self.events.iter().find(|e| e.0 == state).map(|e| e.1)
    }

    pub fn is_terminal(&self) -> bool {
        self.state == "FINISHED" || self.state == "FAILED"
    }

    pub fn is_driver(&self) -> bool {
        self.kind == "DRIVER_TASK"
    }
}

impl ObservedActor {
    pub fn from_row(v: &Value) -> Result<ObservedActor, FieldError> {
        Ok(ObservedActor {
            actor_id: id(v, "actor_id")?,
            job_id: job_id(v, "job_id")?,
            class_name: text(v, "class_name").unwrap_or_default(),
            state: text(v, "state").unwrap_or_default(),
            name: text(v, "name").unwrap_or_default(),
            node_id: opt_id(v, "node_id").or_else(|| v.get("address").and_then(|a| opt_id(a, "raylet_id"))),
            pid: num(v, "pid").map(|p| p.min(u64::from(u32::MAX)) as u32),
            placement_group_id: opt_id(v, "placement_group_id"),
            num_restarts: num(v, "num_restarts").unwrap_or(0).min(u64::from(u32::MAX)) as u32,
            required_resources: resources(v, "required_resources"),
            death_cause: v.get("death_cause").filter(|d| !d.is_null()).map(|d| cut(&d.to_string())),
            start_time_ms: num(v, "start_time"),
            end_time_ms: num(v, "end_time"),
        })
    }
}

impl ObservedNode {
    pub fn from_row(v: &Value) -> Result<ObservedNode, FieldError> {
        Ok(ObservedNode {
            node_id: id(v, "node_id")?,
            node_ip: text(v, "node_ip").unwrap_or_default(),
            is_head_node: v.get("is_head_node").and_then(Value::as_bool).unwrap_or(false),
            state: text(v, "state").unwrap_or_default(),
            node_name: text(v, "node_name").unwrap_or_default(),
            resources_total: resources(v, "resources_total"),
            start_time_ms: num(v, "start_time_ms"),
            end_time_ms: num(v, "end_time_ms"),
            state_message: text(v, "state_message"),
            metrics_export_port: None,
        })
    }

    /// A node's metrics port from one entry of the dashboard's `GET
    /// /nodes?view=summary` (`{"raylet": {"nodeId": HEX, "nodeManagerAddress": IP,
    /// "metricsExportPort": N}}`), as a part of the node's record.
    pub fn from_summary(v: &Value) -> Result<ObservedNode, FieldError> {
        let raylet = v.get("raylet").ok_or(FieldError::Missing("raylet"))?;
        let port = raylet
            .get("metricsExportPort")
            .and_then(Value::as_u64)
            .filter(|p| (1..=u64::from(u16::MAX)).contains(p))
            .ok_or(FieldError::NoMetricsPort)?;
        Ok(ObservedNode {
            node_id: id(raylet, "nodeId")?,
            node_ip: text(raylet, "nodeManagerAddress").unwrap_or_default(),
            metrics_export_port: Some(port as u16),
            ..Default::default()
        })
    }
}

impl ObservedJob {
    pub fn from_row(v: &Value) -> Result<ObservedJob, FieldError> {
        Ok(ObservedJob {
            job_id: job_id(v, "job_id")?,
            submission_id: text(v, "submission_id"),
            entrypoint: text(v, "entrypoint").unwrap_or_default(),
            status: text(v, "status").unwrap_or_default(),
            message: text(v, "message").unwrap_or_default(),
            start_time: num(v, "start_time"),
            end_time: num(v, "end_time"),
            driver_node_id: opt_id(v, "driver_node_id")
                .or_else(|| v.get("driver_info").and_then(|d| opt_id(d, "node_id"))),
            driver_ip: v.get("driver_info").and_then(|d| text(d, "node_ip_address")),
        })
    }
}

impl ObservedPg {
    pub fn from_row(v: &Value) -> Result<ObservedPg, FieldError> {
        let bundles = v
            .get("bundles")
            .and_then(Value::as_array)
            .map(|bs| bs.iter().take(1024).map(|b| (resources(b, "unit_resources"), opt_id(b, "node_id"))).collect())
            .unwrap_or_default();
        Ok(ObservedPg {
            placement_group_id: id(v, "placement_group_id")?,
            name: text(v, "name").unwrap_or_default(),
            creator_job_id: opt_id(v, "creator_job_id").unwrap_or_default(),
            state: text(v, "state").unwrap_or_default(),
            strategy: text(v, "strategy").unwrap_or_default(),
            bundles,
        })
    }
}

impl ObservedObject {
    /// The pid of the worker holding it as a running call's argument, and the call's
    /// function as the call site names it (`module.fn`, `module.Class.method`).
    pub fn as_call_argument(&self) -> Option<(u32, &str)> {
        if self.reference_type != "PINNED_IN_MEMORY" {
            return None;
        }
        let rest = self.call_site.strip_prefix("(deserialize ")?;
        let (what, function) = rest.split_once(") ")?;
        what.ends_with("arg").then_some(())?;
        Some((self.pid?, function))
    }

    /// Whether a `ray.put` made it rather than a call's return ([`is_put_id`]).
    pub fn is_put(&self) -> bool {
        is_put_id(&self.object_id)
    }

    pub fn from_row(v: &Value) -> Result<ObservedObject, FieldError> {
        Ok(ObservedObject {
            object_id: id(v, "object_id")?,
            object_size: num(v, "object_size"),
            task_status: text(v, "task_status").unwrap_or_default(),
            ip: text(v, "ip").unwrap_or_default(),
            pid: num(v, "pid").map(|p| p.min(u64::from(u32::MAX)) as u32),
            reference_type: text(v, "reference_type").unwrap_or_default(),
            call_site: text(v, "call_site")
                .filter(|c| c.starts_with("(deserialize"))
                .map(|c| cut_at(&c, MAX_CALL_SITE))
                .unwrap_or_default(),
        })
    }
}

/// Read every row of a table, keeping the good ones: a bad row is an error naming its
/// table, position and field, and the rest are still read.
pub fn read_rows<T>(
    table: &'static str,
    rows: &[Value],
    read: impl Fn(&Value) -> Result<T, FieldError>,
) -> (Vec<T>, Vec<RowError>) {
    let mut good = Vec::with_capacity(rows.len());
    let mut bad = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        match read(row) {
            Ok(r) => good.push(r),
            Err(problem) => bad.push(RowError { table, index, problem }),
        }
    }
    (good, bad)
}

/// What Ray writes in `error_message` of a task whose worker it killed at its job's end.
const KILLED_WITH_JOB: &str = "because its job has finished";

/// Whether Ray's row says its worker was killed because the job ended.
pub fn killed_with_job(error_type: Option<&str>, error_message: Option<&str>) -> bool {
    error_type == Some("WORKER_DIED") && error_message.is_some_and(|m| m.contains(KILLED_WITH_JOB))
}

#[cfg(test)]
mod tests;
