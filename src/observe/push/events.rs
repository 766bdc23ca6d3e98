//! Reading Ray's Event Export: a batch (a JSON array of events, ids in base64, times in
//! RFC 3339) into the records a poll makes, grouped by the events' session.
//!
//! Owns: each event type's reading and the reasons a batch or an event is refused.
//! Must never: stop at a bad event (it is counted, the rest are read), or take more than
//! [`MAX_EVENTS`] events of one batch.

use super::super::rows::{
    cut, ObservedActor, ObservedJob, ObservedNode, ObservedTask, MAX_STATE_NAME, MAX_TRANSITIONS,
};
use super::super::store::Change;
use super::{Accepted, MAX_EVENTS};
use base64::Engine as _;
use serde_json::Value;

/// `key` in camelCase (Ray's default) or snake_case (its
/// `RAY_DASHBOARD_AGGREGATOR_AGENT_PRESERVE_PROTO_FIELD_NAME=1`).
fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).or_else(|| {
        let mut snake = String::with_capacity(key.len() + 4);
        for c in key.chars() {
            if c.is_ascii_uppercase() {
                snake.push('_');
                snake.push(c.to_ascii_lowercase());
            } else {
                snake.push(c);
            }
        }
        v.get(&snake)
    })
}

/// A Ray id as Event Export writes it (base64 of its bytes), as hex; Ray's nil id (all
/// `0xff` or all 0) and an empty one are `None`.
fn id(v: &Value, key: &str) -> Option<String> {
    let s = field(v, key)?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
    let nil = bytes.is_empty() || bytes.iter().all(|b| *b == 0xff) || bytes.iter().all(|b| *b == 0) || bytes.len() > 32;
    (!nil).then(|| bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Why a batch is refused whole (400).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// The parser's words.
    #[error("the body is not JSON: {0}")]
    NotJson(String),
    #[error("the body must be a JSON array of events, as Ray's Event Export posts")]
    NotAnArray,
    #[error("{0} events in one batch; at most {MAX_EVENTS} are taken")]
    TooManyEvents(usize),
    /// The index of the event naming one session too many.
    #[error(
        "event {0}: a batch carries at most {MAX_SESSIONS_A_BATCH} sessions (`sessionName`); Ray's agent sends one"
    )]
    TooManySessions(usize),
}

/// Why one event is refused (and counted) while the rest of its batch is taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("`eventType` is missing")]
    NoType,
    /// The event type's own part (`taskDefinitionEvent`, ...) is missing.
    #[error("{kind}: `{part}` is missing")]
    NoPart { kind: String, part: &'static str },
    #[error("`{0}` is missing or not a base64 Ray id")]
    NoId(&'static str),
    #[error("`{key}` is {bytes} bytes; Ray's job ids are 4")]
    JobIdLength { key: &'static str, bytes: usize },
    /// A task event naming no job, whose task id is too short to hold one.
    #[error("`taskId` is {0} bytes, too short to hold a job id")]
    TaskIdTooShort(usize),
}

fn need_id(v: &Value, key: &'static str) -> Result<String, EventError> {
    id(v, key).ok_or(EventError::NoId(key))
}

/// A job id: Ray's are 4 bytes; one of any other length names no job, and the event is
/// refused (and counted) rather than taken and silently dropped.
fn need_job_id(v: &Value, key: &'static str) -> Result<String, EventError> {
    let hex = need_id(v, key)?;
    if hex.len() != 8 {
        return Err(EventError::JobIdLength { key, bytes: hex.len() / 2 });
    }
    Ok(hex)
}

/// A task's state transitions, from one process's report, as one partial record.
fn lifecycle(d: &Value, events: Vec<(String, u64)>, job_id: String) -> Result<Change, EventError> {
    let state = super::super::merge::latest_state(&events).unwrap_or("").to_string();
    let at = |s: &str| events.iter().find(|e| e.0 == s).map(|e| e.1);
    Ok(Change::Task(ObservedTask {
        task_id: need_id(d, "taskId")?,
        attempt_number: attempt(d),
        job_id,
        node_id: id(d, "nodeId"),
        worker_pid: field(d, "workerPid").and_then(Value::as_u64).filter(|p| *p > 0).map(|p| p as u32),
        error_type: field(d, "rayErrorInfo").and_then(|r| field(r, "errorType")).and_then(Value::as_str).map(cut),
        start_time_ms: at("RUNNING"),
        end_time_ms: at("FINISHED").or_else(|| at("FAILED")),
        state,
        events,
        ..Default::default()
    }))
}

/// A state's name from its number in Ray's `common.proto` `TaskStatus` (as Ray 2.49's
/// `TASK_EXECUTION_EVENT` writes it).
fn task_status(n: u32) -> Option<&'static str> {
    Some(match n {
        1 => "PENDING_ARGS_AVAIL",
        2 => "PENDING_NODE_ASSIGNMENT",
        3 => "PENDING_OBJ_STORE_MEM_AVAIL",
        4 => "PENDING_ARGS_FETCH",
        5 => "SUBMITTED_TO_WORKER",
        6 => "PENDING_ACTOR_TASK_ARGS_FETCH",
        7 => "PENDING_ACTOR_TASK_ORDERING_OR_CONCURRENCY",
        8 => "RUNNING",
        9 => "RUNNING_IN_RAY_GET",
        10 => "RUNNING_IN_RAY_WAIT",
        11 => "FINISHED",
        12 => "FAILED",
        _ => return None,
    })
}

/// An RFC 3339 instant as Unix ms.
fn time_ms(v: &Value, key: &str) -> Option<u64> {
    time_ms_of(field(v, key)?)
}

fn time_ms_of(v: &Value) -> Option<u64> {
    let s = v.as_str()?;
    let t = humantime::parse_rfc3339_weak(s).ok()?;
    t.duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_millis() as u64).filter(|ms| *ms > 0)
}

fn text(v: &Value, key: &str) -> String {
    field(v, key).and_then(Value::as_str).map(cut).unwrap_or_default()
}

fn resources(v: &Value, key: &str) -> Vec<(String, f64)> {
    let Some(map) = field(v, key).and_then(Value::as_object) else { return Vec::new() };
    map.iter().filter_map(|(k, n)| n.as_f64().filter(|f| f.is_finite()).map(|f| (cut(k), f))).take(64).collect()
}

/// An event's state transitions, as many as a task attempt keeps, with names no longer
/// than Ray's.
fn transitions<'a>(v: &'a Value) -> impl Iterator<Item = &'a Value> + 'a {
    field(v, "stateTransitions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| field(t, "state").and_then(Value::as_str).is_none_or(|s| s.len() <= MAX_STATE_NAME))
        .take(MAX_TRANSITIONS)
}

fn attempt(v: &Value) -> u32 {
    field(v, "taskAttempt").and_then(Value::as_u64).unwrap_or(0).min(u64::from(u32::MAX)) as u32
}

/// One event, as a record part; `Ok(None)` for a type rayscope does not use.
pub fn read_event(e: &Value) -> Result<Option<Change>, EventError> {
    let kind = field(e, "eventType").and_then(Value::as_str).ok_or(EventError::NoType)?;
    let part = |part: &'static str| field(e, part).ok_or_else(|| EventError::NoPart { kind: kind.to_string(), part });
    Ok(Some(match kind {
        "TASK_DEFINITION_EVENT" | "ACTOR_TASK_DEFINITION_EVENT" => {
            let actor_task = kind == "ACTOR_TASK_DEFINITION_EVENT";
            let d = part(if actor_task { "actorTaskDefinitionEvent" } else { "taskDefinitionEvent" })?;
            let name = text(d, if actor_task { "actorTaskName" } else { "taskName" });
            Change::Task(ObservedTask {
                task_id: need_id(d, "taskId")?,
                attempt_number: attempt(d),
                job_id: need_job_id(d, "jobId")?,
                func_or_class_name: name.clone(),
                name,
                kind: if actor_task { "ACTOR_TASK".into() } else { text(d, "taskType") },
                parent_task_id: id(d, "parentTaskId"),
                actor_id: id(d, "actorId"),
                placement_group_id: id(d, "placementGroupId"),
                required_resources: resources(d, "requiredResources"),
                ..Default::default()
            })
        }
        "TASK_LIFECYCLE_EVENT" => {
            let d = part("taskLifecycleEvent")?;
            let events: Vec<(String, u64)> =
                transitions(d).filter_map(|t| Some((text(t, "state"), time_ms(t, "timestamp")?))).collect();
            lifecycle(d, events, need_job_id(d, "jobId")?)?
        }
        // Ray 2.49's shape of the same: `taskState` maps each state's number to its time,
        // and no job id is sent (it is the task id's last 4 bytes).
        "TASK_EXECUTION_EVENT" | "ACTOR_TASK_EXECUTION_EVENT" => {
            let d =
                part(if kind == "TASK_EXECUTION_EVENT" { "taskExecutionEvent" } else { "actorTaskExecutionEvent" })?;
            let events: Vec<(String, u64)> = field(d, "taskState")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .take(64)
                .filter_map(|(n, t)| Some((task_status(n.parse().ok()?)?.to_string(), time_ms_of(t)?)))
                .collect();
            let task = need_id(d, "taskId")?;
            let job = match id(d, "jobId") {
                Some(_) => need_job_id(d, "jobId")?,
                None if task.len() >= 8 => task[task.len() - 8..].to_string(),
                None => return Err(EventError::TaskIdTooShort(task.len() / 2)),
            };
            lifecycle(d, events, job)?
        }
        "TASK_PROFILE_EVENT" => {
            let d = part("taskProfileEvents")?;
            let events = field(d, "profileEvents")
                .and_then(|p| field(p, "events"))
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            Change::Task(ObservedTask {
                task_id: need_id(d, "taskId")?,
                attempt_number: field(d, "attemptNumber").and_then(Value::as_u64).unwrap_or(0).min(u64::from(u32::MAX))
                    as u32,
                job_id: need_job_id(d, "jobId")?,
                profiled: !events.is_empty(),
                execution_cut: super::super::profile::execution_cut(
                    events.iter().filter_map(|e| field(e, "eventName").and_then(Value::as_str)),
                ),
                ray_profiling: events.iter().any(|e| {
                    field(e, "eventName").and_then(Value::as_str).is_some_and(super::super::profile::marks_profiling)
                }),
                profile: super::super::profile::from_push(events, field),
                ..Default::default()
            })
        }
        "ACTOR_DEFINITION_EVENT" => {
            let d = part("actorDefinitionEvent")?;
            Change::Actor(ObservedActor {
                actor_id: need_id(d, "actorId")?,
                job_id: need_job_id(d, "jobId")?,
                class_name: text(d, "className"),
                name: text(d, "name"),
                placement_group_id: id(d, "placementGroupId"),
                required_resources: resources(d, "requiredResources"),
                ..Default::default()
            })
        }
        "ACTOR_LIFECYCLE_EVENT" => {
            let d = part("actorLifecycleEvent")?;
            let actor_id = need_id(d, "actorId")?;
            // An actor id ends with its job's 4 bytes.
            let job_id = actor_id.get(actor_id.len().saturating_sub(8)..).unwrap_or("").to_string();
            let list: Vec<&Value> = transitions(d).collect();
            let last = list.iter().max_by_key(|t| time_ms(t, "timestamp").unwrap_or(0));
            let alive_at =
                list.iter().filter(|t| text(t, "state") == "ALIVE").filter_map(|t| time_ms(t, "timestamp")).min();
            let dead_at =
                list.iter().filter(|t| text(t, "state") == "DEAD").filter_map(|t| time_ms(t, "timestamp")).max();
            Change::Actor(ObservedActor {
                actor_id,
                job_id,
                state: last.map(|t| text(t, "state")).unwrap_or_default(),
                node_id: last.and_then(|t| id(t, "nodeId")),
                pid: last.and_then(|t| t.get("pid")).and_then(Value::as_u64).filter(|p| *p > 0).map(|p| p as u32),
                death_cause: dead_at.and(last.and_then(|t| field(t, "deathCause")).map(|c| cut(&c.to_string()))),
                start_time_ms: alive_at,
                end_time_ms: dead_at,
                ..Default::default()
            })
        }
        "DRIVER_JOB_DEFINITION_EVENT" => {
            let d = part("driverJobDefinitionEvent")?;
            Change::Job(ObservedJob {
                job_id: need_job_id(d, "jobId")?,
                entrypoint: text(d, "entrypoint"),
                driver_node_id: id(d, "driverNodeId"),
                ..Default::default()
            })
        }
        "DRIVER_JOB_LIFECYCLE_EVENT" => {
            let d = part("driverJobLifecycleEvent")?;
            let list: Vec<(String, u64)> =
                transitions(d).filter_map(|t| Some((text(t, "state"), time_ms(t, "timestamp")?))).collect();
            let at = |s: &str| list.iter().find(|e| e.0 == s).map(|e| e.1);
            let finished = at("FINISHED");
            Change::Job(ObservedJob {
                job_id: need_job_id(d, "jobId")?,
                // Ray's driver jobs go CREATED -> FINISHED; the Jobs API calls them
                // RUNNING and SUCCEEDED.
                status: if finished.is_some() { "SUCCEEDED" } else { "RUNNING" }.into(),
                start_time: at("CREATED"),
                end_time: finished,
                ..Default::default()
            })
        }
        "NODE_DEFINITION_EVENT" => {
            let d = part("nodeDefinitionEvent")?;
            Change::Node(ObservedNode {
                node_id: need_id(d, "nodeId")?,
                node_ip: text(d, "nodeIpAddress"),
                node_name: text(d, "nodeName"),
                start_time_ms: time_ms(d, "startTimestamp"),
                ..Default::default()
            })
        }
        "NODE_LIFECYCLE_EVENT" => {
            let d = part("nodeLifecycleEvent")?;
            let list: Vec<&Value> = transitions(d).collect();
            let last = list.iter().max_by_key(|t| time_ms(t, "timestamp").unwrap_or(0));
            let resources_total = last.map(|t| resources(t, "resources")).unwrap_or_default();
            let state = last.map(|t| text(t, "state")).unwrap_or_default();
            Change::Node(ObservedNode {
                node_id: need_id(d, "nodeId")?,
                is_head_node: resources_total.iter().any(|(r, _)| r == "node:__internal_head__"),
                end_time_ms: (state == "DEAD").then(|| last.and_then(|t| time_ms(t, "timestamp"))).flatten(),
                state_message: last.and_then(|t| field(t, "deathInfo")).map(|d| cut(&d.to_string())),
                state,
                resources_total,
                ..Default::default()
            })
        }
        _ => return Ok(None),
    }))
}

/// Read a whole batch: a JSON array of events.
pub fn parse_batch(body: &[u8]) -> Result<(Vec<Change>, Accepted), BatchError> {
    let (groups, out) = parse_batch_by_session(body)?;
    Ok((groups.into_iter().flat_map(|(_, c)| c).collect(), out))
}

/// A session's name and the records of its events.
pub type SessionRecords = (String, Vec<Change>);

/// Sessions one batch may carry: Ray's agent sends one node's events, of one session.
pub const MAX_SESSIONS_A_BATCH: usize = 4;

/// Read a whole batch, its records grouped by the events' `sessionName` (in the order
/// each first appears; `""` where an event names none). A batch of more than
/// [`MAX_SESSIONS_A_BATCH`] sessions is refused.
pub fn parse_batch_by_session(body: &[u8]) -> Result<(Vec<SessionRecords>, Accepted), BatchError> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| BatchError::NotJson(e.to_string()))?;
    let Value::Array(events) = doc else {
        return Err(BatchError::NotAnArray);
    };
    if events.len() > MAX_EVENTS {
        return Err(BatchError::TooManyEvents(events.len()));
    }
    let mut out = Accepted { events: events.len(), ..Default::default() };
    let mut groups: Vec<SessionRecords> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match read_event(e) {
            Ok(Some(c)) => {
                let session = field(e, "sessionName").and_then(Value::as_str).unwrap_or("");
                match groups.iter().position(|(s, _)| s == session) {
                    Some(at) => groups[at].1.push(c),
                    None if groups.len() < MAX_SESSIONS_A_BATCH => groups.push((cut(session), vec![c])),
                    None => return Err(BatchError::TooManySessions(i)),
                }
            }
            Ok(None) => out.ignored += 1,
            Err(why) => {
                out.refused += 1;
                if out.errors.len() < 3 {
                    out.errors.push(format!("event {i}: {why}"));
                }
            }
        }
    }
    out.records = groups.iter().map(|(_, c)| c.len()).sum();
    Ok((groups, out))
}
