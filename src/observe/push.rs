//! Push: Ray's Event Export. Each node's aggregator agent POSTs batches of events as a
//! JSON array to the address in `RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR`;
//! pointed at `http://RAYSCOPE/api/observe/events`, rayscope receives them.
//!
//! Owns: reading a batch (Ray 2.60's event shapes: ids in base64, times in RFC 3339)
//! into the same records a poll makes, each a part of one (a definition, or some state
//! transitions) that the store merges (`merge.rs`); the bounded queue to the observer
//! thread ([`Inbox`]) and its counters. A task's profile events (with
//! `..._EXPOSABLE_EVENT_TYPES=ALL`) give its `ray.get`/`ray.wait`/`ray.put` spans
//! (`profile.rs`); event types rayscope does not use (workers) are counted and skipped.
//! The bounds that hold before a body is read are here too, for the server to apply:
//! [`IN_FLIGHT_BYTES`] across every connection reading a body ([`Inbox::reserve`]), and
//! [`BODY_DEADLINE`] for a body to arrive whole.
//! Must never: hold a batch the queue has no room for (it is refused, and Ray's agent
//! retries it), read more than [`PARSES`] batches at once, stop at a bad event (it is
//! counted, the rest are read), or take more than [`MAX_EVENTS`] events of one batch.

use super::rows::{cut, ObservedActor, ObservedJob, ObservedNode, ObservedTask, MAX_STATE_NAME, MAX_TRANSITIONS};
use super::store::Change;
use crate::snapshot::ObservedView;
use base64::Engine as _;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Batches waiting for the observer thread; past this a POST is answered 503.
pub const QUEUED_BATCHES: usize = 64;
/// Bytes of the batches waiting (as posted); past this a POST is answered 503.
pub const QUEUED_BYTES: u64 = 64 << 20;
/// Batches read at once (each a JSON document of up to 16 MiB); more are answered 503.
pub const PARSES: usize = 2;

/// Bytes of bodies being read, every connection together; a body that would pass it
/// is answered 503 before (or as soon as) its bytes would, so unfinished bodies hold
/// at most this much, however many connections send them.
pub const IN_FLIGHT_BYTES: u64 = 64 << 20;
/// A pushed body must arrive whole within this of its headers; a slower one is
/// answered 408 and its bytes let go. Ray's agent sends a few MB on a cluster's network.
pub const BODY_DEADLINE: Duration = Duration::from_secs(10);

/// What travels to the observer thread: a batch's records and its body's size.
pub type Batch = (Vec<Change>, u64);
/// Events read from one batch.
pub const MAX_EVENTS: usize = 100_000;

/// What the pushes did, shared by the server (which counts refusals) and the thread.
#[derive(Debug, Default)]
pub struct PushCounters {
    pub batches: AtomicU64,
    pub events: AtomicU64,
    pub refused_events: AtomicU64,
    pub refused_batches: AtomicU64,
    pub ignored_events: AtomicU64,
    /// Bytes of the batches queued and not yet applied (the thread takes them off).
    pub queued_bytes: AtomicU64,
    /// Bytes of bodies being read now ([`Reservation`]s).
    pub in_flight_bytes: AtomicU64,
    /// Bodies refused because [`IN_FLIGHT_BYTES`] were being read.
    pub over_in_flight: AtomicU64,
    /// Bodies not sent whole within the body deadline.
    pub body_timeouts: AtomicU64,
    /// Bodies past the size limit (declared, or counted as they came).
    pub too_large: AtomicU64,
}

impl PushCounters {
    /// A cluster's own counters: the events routed to it.
    pub fn fill(&self, v: &mut ObservedView) {
        v.events_received = self.events.load(Ordering::Relaxed);
        v.events_refused = self.refused_events.load(Ordering::Relaxed);
    }

    /// The server's counters: what was refused before (or as) a body named its
    /// cluster, and the bytes being read now, every cluster's together.
    pub fn fill_server(&self, v: &mut ObservedView) {
        v.batches_refused = self.refused_batches.load(Ordering::Relaxed);
        v.pushes_over_in_flight = self.over_in_flight.load(Ordering::Relaxed);
        v.push_body_timeouts = self.body_timeouts.load(Ordering::Relaxed);
        v.push_bodies_too_large = self.too_large.load(Ordering::Relaxed);
        v.push_in_flight_bytes = self.in_flight_bytes.load(Ordering::Relaxed);
    }
}

/// Bytes of one body being read, counted against [`IN_FLIGHT_BYTES`] until dropped.
#[derive(Debug)]
pub struct Reservation {
    counters: Arc<PushCounters>,
    bytes: u64,
}

impl Reservation {
    /// Count `more` bytes too; `false` (and nothing counted) past [`IN_FLIGHT_BYTES`].
    pub fn grow(&mut self, more: u64) -> bool {
        let held = &self.counters.in_flight_bytes;
        let taken = held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
            (now + more <= IN_FLIGHT_BYTES).then_some(now + more)
        });
        if taken.is_err() {
            self.counters.over_in_flight.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.bytes += more;
        true
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.counters.in_flight_bytes.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Where a pushed batch's records go: the queue of the cluster they belong to. The
/// observer's registry of clusters (`clusters.rs`) answers it.
pub trait Route: Send + Sync {
    /// The queue and counters of the cluster named `named` (a push's path or query)
    /// or, with none named, of the events' `session` (Ray's `sessionName`; may be
    /// empty); it may start a cluster. `Err` refuses the records, saying why.
    fn route(&self, named: Option<&str>, session: &str) -> Result<Target, Refused>;
}

/// A cluster's end of the push queue, and its own counters.
#[derive(Clone)]
pub struct Target {
    pub tx: mpsc::SyncSender<Batch>,
    pub counters: Arc<PushCounters>,
}

/// One queue for one cluster (what an observer of a single cluster routes to).
impl Route for Target {
    fn route(&self, _: Option<&str>, _: &str) -> Result<Target, Refused> {
        Ok(self.clone())
    }
}

/// The server's end of the queues.
#[derive(Clone)]
pub struct Inbox {
    router: Arc<dyn Route>,
    /// The server's own: bodies in flight, queued bytes across every cluster, refusals
    /// before a body names its cluster.
    pub counters: Arc<PushCounters>,
    parsing: Arc<std::sync::atomic::AtomicUsize>,
    /// How long a body may take to arrive ([`BODY_DEADLINE`] unless set).
    pub body_deadline: Duration,
}

/// What a batch came to.
#[derive(Debug, Default, PartialEq)]
pub struct Accepted {
    pub events: usize,
    pub records: usize,
    pub ignored: usize,
    pub refused: usize,
    /// The first few bad events, with why.
    pub errors: Vec<String>,
}

/// Why a batch was refused whole.
#[derive(Debug, PartialEq)]
pub enum Refused {
    /// Not a JSON array of events (400).
    Malformed(BatchError),
    /// The observer is behind (503).
    Busy,
    /// Its cluster cannot be taken: a bad name (400), or a new cluster past the cap on
    /// clusters (409); the registry counts it.
    Cluster { status: u16, why: String },
}

impl Inbox {
    pub fn new(router: Arc<dyn Route>, counters: Arc<PushCounters>) -> Inbox {
        Inbox { router, counters, parsing: Arc::default(), body_deadline: BODY_DEADLINE }
    }

    /// Count `bytes` of a body about to be read against [`IN_FLIGHT_BYTES`] (a body of
    /// unknown length reserves 0 and grows as its chunks come); `None` past the cap.
    pub fn reserve(&self, bytes: u64) -> Option<Reservation> {
        let mut r = Reservation { counters: self.counters.clone(), bytes: 0 };
        r.grow(bytes).then_some(r)
    }

    /// Read a batch and queue its records, each to its cluster's queue (`named`, or
    /// the events' session: [`Route`]). Memory stays bounded whatever is posted: at
    /// most [`PARSES`] batches are read at once, and at most [`QUEUED_BYTES`] (every
    /// cluster together; and [`QUEUED_BATCHES`] a cluster) wait for the observer; past
    /// either, the batch is refused as busy and Ray's agent sends it again. A batch is
    /// taken whole or not at all.
    pub fn accept(&self, body: &[u8], named: Option<&str>) -> Result<Accepted, Refused> {
        let size = body.len() as u64;
        let busy = || {
            self.counters.refused_batches.fetch_add(1, Ordering::Relaxed);
            Err(Refused::Busy)
        };
        if self.counters.queued_bytes.load(Ordering::Relaxed) + size > QUEUED_BYTES {
            return busy();
        }
        if self.parsing.fetch_add(1, Ordering::AcqRel) >= PARSES {
            self.parsing.fetch_sub(1, Ordering::AcqRel);
            return busy();
        }
        let parsed = parse_batch_by_session(body);
        self.parsing.fetch_sub(1, Ordering::AcqRel);
        let (groups, accepted) = match parsed {
            Ok(x) => x,
            Err(why) => {
                self.counters.refused_batches.fetch_add(1, Ordering::Relaxed);
                return Err(Refused::Malformed(why));
            }
        };
        let mut groups = groups;
        if groups.is_empty() {
            // Nothing to take, but a full queue still says so, as for any batch.
            groups.push((String::new(), Vec::new()));
        }
        // Every group's cluster first, so a refusal leaves nothing half-queued.
        let mut targets = Vec::with_capacity(groups.len());
        for (session, _) in &groups {
            match self.router.route(named, session) {
                Ok(t) => targets.push(t),
                Err(e) => {
                    self.counters.refused_batches.fetch_add(1, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        let records: usize = groups.iter().map(|(_, c)| c.len()).sum();
        let sent = groups.len();
        for (i, ((_, changes), t)) in groups.into_iter().zip(&targets).enumerate() {
            // The body's bytes are counted once, against the batch's first group.
            let bytes = if i == 0 { size } else { 0 };
            self.counters.queued_bytes.fetch_add(bytes, Ordering::AcqRel);
            let n = changes.len() as u64;
            if let Err(mpsc::TrySendError::Full(_) | mpsc::TrySendError::Disconnected(_)) =
                t.tx.try_send((changes, bytes))
            {
                self.counters.queued_bytes.fetch_sub(bytes, Ordering::AcqRel);
                // A batch of one session (as each Ray node's agent sends) is refused
                // whole; one mixing sessions keeps what its first clusters took.
                if i == 0 {
                    return busy();
                }
                t.counters.refused_events.fetch_add(n, Ordering::Relaxed);
                continue;
            }
            t.counters.batches.fetch_add(1, Ordering::Relaxed);
            t.counters.events.fetch_add(n, Ordering::Relaxed);
        }
        let c = &self.counters;
        c.batches.fetch_add(1, Ordering::Relaxed);
        c.events.fetch_add(accepted.events as u64, Ordering::Relaxed);
        c.refused_events.fetch_add(accepted.refused as u64, Ordering::Relaxed);
        c.ignored_events.fetch_add(accepted.ignored as u64, Ordering::Relaxed);
        if sent <= 1 {
            // One cluster: its counters say what the whole batch did, as before.
            if let Some(t) = targets.first() {
                t.counters.events.fetch_add((accepted.events - records) as u64, Ordering::Relaxed);
                t.counters.refused_events.fetch_add(accepted.refused as u64, Ordering::Relaxed);
                t.counters.ignored_events.fetch_add(accepted.ignored as u64, Ordering::Relaxed);
            }
        }
        Ok(accepted)
    }
}

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
    let state = super::merge::latest_state(&events).unwrap_or("").to_string();
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
                ray_profiling: events.iter().any(|e| {
                    field(e, "eventName").and_then(Value::as_str).is_some_and(super::profile::marks_profiling)
                }),
                profile: super::profile::from_push(events, field),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(hex: &str) -> String {
        let bytes: Vec<u8> =
            (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn rays_task_events_become_a_task_and_its_times() {
        let task = "00c58351c7aa5e6858382e03be3112972466a47501000000";
        let body = json!([
            {"eventType": "ACTOR_TASK_DEFINITION_EVENT", "actorTaskDefinitionEvent": {
                "taskId": b64(task), "actorTaskName": "Worker.process", "jobId": "AQAAAA==",
                "actorId": b64("58382e03be3112972466a47501000000"), "parentTaskId": b64("7b05265d191651022286b291fb5364cc7971fc8801000000"),
                "placementGroupId": "////////////////////////", "taskAttempt": 0, "requiredResources": {"CPU": 1.0}}},
            {"eventType": "TASK_LIFECYCLE_EVENT", "taskLifecycleEvent": {"taskId": b64(task), "jobId": "AQAAAA==",
                "taskAttempt": 0, "nodeId": "", "workerPid": 0, "stateTransitions": [
                {"state": "PENDING_ARGS_AVAIL", "timestamp": "2026-11-27T04:04:21.939432763Z"},
                {"state": "RUNNING", "timestamp": "2026-11-27T04:04:22.000000000Z"},
                {"state": "FINISHED", "timestamp": "2026-11-27T04:04:22.500Z"}]}},
            {"eventType": "TASK_PROFILE_EVENT", "taskProfileEvents": {"taskId": b64(task), "jobId": "AQAAAA==",
                "attemptNumber": 0, "profileEvents": {"componentType": "worker", "events": [
                {"startTime": "1795752261950000000", "endTime": "1795752262400000000", "extraData": "{}", "eventName": "ray.get"},
                {"startTime": "1795752261940000000", "endTime": "1795752262450000000", "extraData": "{}", "eventName": "task:execute"}]}}},
            {"eventType": "WORKER_LIFECYCLE_EVENT", "workerLifecycleEvent": {}},
            {"eventType": "TASK_LIFECYCLE_EVENT"},
        ]);
        let (changes, acc) = parse_batch(body.to_string().as_bytes()).unwrap();
        assert_eq!((acc.events, acc.records, acc.ignored, acc.refused), (5, 3, 1, 1));
        assert_eq!(acc.errors, ["event 4: TASK_LIFECYCLE_EVENT: `taskLifecycleEvent` is missing"]);
        let mut store = super::super::store::Store::new(Default::default());
        for c in &changes {
            store.apply(c);
        }
        let t = store.tasks.values().next().unwrap().last().clone();
        assert_eq!(t.task_id, task);
        assert_eq!(t.job_id, "01000000");
        assert_eq!(t.name, "Worker.process");
        assert_eq!(t.placement_group_id, None, "Ray's nil id");
        assert_eq!(t.state, "FINISHED");
        assert!(t.profiled && t.ray_profiling, "a ray.get span marks the task profiled");
        assert_eq!(
            t.profile,
            [super::super::profile::ProfiledCall {
                start_us: 1_795_752_261_950_000,
                end_us: 1_795_752_262_400_000,
                name: "ray.get".into()
            }],
            "its ray.get is kept, in Unix µs; its phases are not"
        );
        let base = 1_795_752_261_000u64; // 2026-11-27T04:04:21Z
        assert_eq!(
            (t.submitted_ms(), t.started_ms(), t.ended_ms()),
            (Some(base + 939), Some(base + 1000), Some(base + 1500))
        );
    }

    #[test]
    fn snake_case_fields_read_as_camel_case_ones() {
        let e = json!({"event_type": "DRIVER_JOB_DEFINITION_EVENT",
            "driver_job_definition_event": {"job_id": "AQAAAA==", "entrypoint": "python x.py"}});
        let Some(Change::Job(j)) = read_event(&e).unwrap() else { panic!("a job") };
        assert_eq!((j.job_id.as_str(), j.entrypoint.as_str()), ("01000000", "python x.py"));
    }

    #[test]
    fn job_ids_not_of_4_bytes_are_refused_and_counted() {
        let def =
            |job: &str| json!({"eventType": "DRIVER_JOB_DEFINITION_EVENT", "driverJobDefinitionEvent": {"jobId": job}});
        let body = json!([def(&b64("0100")), def(&b64("0100000000")), def("AQAAAA==")]);
        let (changes, acc) = parse_batch(body.to_string().as_bytes()).unwrap();
        assert_eq!((acc.records, acc.refused), (1, 2));
        assert_eq!(changes.len(), 1);
        assert!(acc.errors[0].contains("`jobId` is 2 bytes; Ray's job ids are 4"), "{:?}", acc.errors);
        assert!(acc.errors[1].contains("`jobId` is 5 bytes"), "{:?}", acc.errors);
    }

    #[test]
    fn a_batch_that_is_not_a_list_is_refused_whole() {
        assert!(parse_batch(b"{}").unwrap_err().to_string().contains("JSON array"));
        assert!(parse_batch(b"[{").unwrap_err().to_string().starts_with("the body is not JSON"));
    }

    fn one_cluster(tx: mpsc::SyncSender<Batch>) -> Inbox {
        Inbox::new(Arc::new(Target { tx, counters: Arc::default() }), Arc::new(PushCounters::default()))
    }

    #[test]
    fn a_batch_is_grouped_by_its_events_session() {
        let def = |session: &str, job: &str| {
            json!({"eventType": "DRIVER_JOB_LIFECYCLE_EVENT", "sessionName": session, "driverJobLifecycleEvent": {
                "jobId": job, "stateTransitions": [{"state": "CREATED", "timestamp": "2026-11-27T04:04:21Z"}]}})
        };
        let body = json!([def("session_a", "AQAAAA=="), def("session_b", "AQAAAA=="), def("session_a", "AgAAAA==")]);
        let (groups, acc) = parse_batch_by_session(body.to_string().as_bytes()).unwrap();
        assert_eq!(acc.records, 3);
        let sizes: Vec<(&str, usize)> = groups.iter().map(|(s, c)| (s.as_str(), c.len())).collect();
        assert_eq!(sizes, [("session_a", 2), ("session_b", 1)]);
        let many: Vec<Value> = (0..=MAX_SESSIONS_A_BATCH).map(|i| def(&format!("s{i}"), "AQAAAA==")).collect();
        let err = parse_batch_by_session(Value::Array(many).to_string().as_bytes()).unwrap_err().to_string();
        assert!(err.contains("at most 4 sessions"), "{err}");
    }

    #[test]
    fn a_full_queue_refuses_the_batch() {
        let (tx, _rx) = mpsc::sync_channel(1);
        let inbox = one_cluster(tx);
        assert!(inbox.accept(b"[]", None).is_ok());
        assert_eq!(inbox.accept(b"[]", None), Err(Refused::Busy));
        assert_eq!(inbox.counters.refused_batches.load(Ordering::Relaxed), 1);
        assert_eq!(
            inbox.counters.queued_bytes.load(Ordering::Relaxed),
            2,
            "the queued batch's bytes, the refused one's not"
        );
    }

    #[test]
    fn bodies_being_read_hold_at_most_the_in_flight_cap() {
        let (tx, _rx) = mpsc::sync_channel(1);
        let inbox = one_cluster(tx);
        let a = inbox.reserve(IN_FLIGHT_BYTES - 10).expect("under the cap");
        assert!(inbox.reserve(11).is_none(), "past the cap");
        let mut b = inbox.reserve(0).expect("a body of unknown length reserves nothing at first");
        assert!(b.grow(10) && !b.grow(1), "a chunked body grows to the cap and no further");
        assert_eq!(inbox.counters.over_in_flight.load(Ordering::Relaxed), 2);
        drop(a);
        assert_eq!(inbox.counters.in_flight_bytes.load(Ordering::Relaxed), 10, "a read body's bytes are let go");
        drop(b);
        assert_eq!(inbox.counters.in_flight_bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn queued_bytes_are_bounded() {
        let (tx, _rx) = mpsc::sync_channel(QUEUED_BATCHES);
        let inbox = one_cluster(tx);
        inbox.counters.queued_bytes.store(QUEUED_BYTES - 1, Ordering::Relaxed);
        assert_eq!(inbox.accept(b"[]", None), Err(Refused::Busy), "past the bytes waiting, even with batches free");
    }
}
