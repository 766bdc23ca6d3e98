//! Push: Ray's Event Export. Each node's aggregator agent POSTs batches of events as a
//! JSON array to the address in `RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR`;
//! pointed at `http://RAYSCOPE/api/observe/events`, rayscope receives them.
//!
//! Owns: the bounded queue to the observer thread ([`Inbox`]) and its counters. A batch
//! is read (`push/events.rs`: Ray 2.60's event shapes, ids in base64, times in RFC 3339)
//! into the same records a poll makes, each a part of one (a definition, or some state
//! transitions) that the store merges (`merge.rs`). A task's profile events (with
//! `..._EXPOSABLE_EVENT_TYPES=ALL`) give its `ray.get`/`ray.wait`/`ray.put` spans
//! (`profile.rs`); event types rayscope does not use (workers) are counted and skipped.
//! The bounds that hold before a body is read are here too, for the server to apply:
//! [`IN_FLIGHT_BYTES`] across every connection reading a body ([`Inbox::reserve`]), and
//! [`BODY_DEADLINE`] for a body to arrive whole.
//! Must never: hold a batch the queue has no room for (it is refused, and Ray's agent
//! retries it), read more than [`PARSES`] batches at once, stop at a bad event (it is
//! counted, the rest are read), or take more than [`MAX_EVENTS`] events of one batch.

use super::store::Change;
use crate::snapshot::ObservedView;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

mod events;
pub use events::{
    parse_batch, parse_batch_by_session, read_event, BatchError, EventError, SessionRecords, MAX_SESSIONS_A_BATCH,
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use serde_json::{json, Value};

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
