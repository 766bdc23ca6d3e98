//! The observer's thread: poll Ray (or read a trace once), take pushed events, record
//! what changed, publish snapshots.
//!
//! Owns: the loop and its pace (a poll every `poll_every`; pushed batches are applied
//! as they come and published at most every [`PUSH_PUBLISH_EVERY`]), the counters
//! behind `rayscope_observe_*`, and the handle readers hold
//! ([`EngineHandle::producer`]). Logs a failing poll once per change of its error, not
//! once per round. With `--record`, holds the trace directory's lock from start to
//! exit, and keeps recording through failed writes: each is said and counted, and a
//! new segment is tried until one takes the records again.
//! Must never: block a reader (snapshots go through the same `ArcSwap` the engine's
//! do), or hold more than the store's caps.

use super::cpu_times::CpuSampler;
use super::publish::{snapshot, ClusterInfo, FlowCache};
use super::pull::{PullOptions, Puller, RayClient};
use super::push::{PushCounters, Target};
use super::store::{Change, Store, StoreLimits};
use super::trace::{self, Header, TraceLimits, TraceLock, TraceWriter};
use crate::sim::runner::EngineHandle;
use crate::snapshot::{ObservedView, RayMetricsTarget, Snapshot};
use arc_swap::ArcSwap;
use rustc_hash::FxHashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// While the trace cannot be written, a new segment is tried at most this often.
pub const RECORD_RETRY_EVERY: Duration = Duration::from_secs(1);

/// Pushed batches are published at most this often.
pub const PUSH_PUBLISH_EVERY: Duration = Duration::from_millis(500);

/// How long a recording observer, stopping, may spend reading ended jobs that have not
/// settled once more (`Puller::last_reads`): inside the 1.5 s a stopping rayscope has.
pub const LAST_READS_BUDGET: Duration = Duration::from_secs(1);

/// Ended jobs not yet settled named one by one in the stop's warning.
const MAX_NAMED_AT_STOP: usize = 10;

/// Observer loops still running, so a stopping process can wait for their last reads.
#[derive(Debug, Default)]
pub struct Running {
    count: std::sync::Mutex<usize>,
    done: std::sync::Condvar,
}

/// One loop counted in [`Running`] until it is dropped (a panic included).
pub(crate) struct RunningGuard(Arc<Running>);

impl Running {
    pub(crate) fn enter(self: &Arc<Running>) -> RunningGuard {
        *self.count.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        RunningGuard(self.clone())
    }

    /// Wait until every loop has ended, at most `within`; whether they had.
    pub fn wait_all(&self, within: Duration) -> bool {
        let count = self.count.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (count, _) =
            self.done.wait_timeout_while(count, within, |n| *n > 0).unwrap_or_else(std::sync::PoisonError::into_inner);
        *count == 0
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        *self.0.count.lock().unwrap_or_else(std::sync::PoisonError::into_inner) -= 1;
        self.0.done.notify_all();
    }
}

/// Why every control request is refused in observe mode.
pub const REFUSAL: &str = "rayscope is observing a live Ray cluster (rayscope observe): it changes nothing there; \
     submit, stop and kill through Ray itself";

/// Where the records come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A live cluster's dashboard.
    Ray(PullOptions),
    /// A trace recorded earlier (`--record`), read once.
    Trace(PathBuf),
    /// Only what Ray's Event Export pushes (no polls).
    Push,
}

#[derive(Clone, Debug)]
pub struct ObserveOptions {
    /// The first cluster's source.
    pub source: Source,
    /// The first cluster's name; `None`: an unnamed source, the cluster
    /// [`DEFAULT_CLUSTER`], which takes the pushes that name no cluster and records into
    /// `--record`'s directory itself.
    pub name: Option<String>,
    /// Further named clusters (`--ray NAME=URL`), each observed apart.
    pub more: Vec<(String, Source)>,
    /// Clusters observed at most (those named on the command line and those pushes
    /// name); a push for one more is refused and counted.
    pub max_clusters: usize,
    pub poll_every: Duration,
    /// Each cluster's caps.
    pub limits: StoreLimits,
    /// `--record DIR`: append what changed to a trace there (a named cluster's in
    /// `DIR/NAME`).
    pub record: Option<(PathBuf, TraceLimits)>,
    /// How long a pushed body may take to arrive (`push::BODY_DEADLINE`).
    pub push_body_deadline: Duration,
    /// Node addresses that are this machine's though none of its interfaces shows
    /// them (`--local-node-ip`): their workers' CPU time is read while recording.
    pub local_node_ips: Vec<std::net::IpAddr>,
}

/// The name of the cluster an unnamed source observes.
pub const DEFAULT_CLUSTER: &str = "default";

/// Clusters observed at most unless `--max-clusters` says otherwise.
pub const MAX_CLUSTERS: usize = 8;

impl ObserveOptions {
    pub fn new(source: Source) -> ObserveOptions {
        ObserveOptions {
            source,
            name: None,
            more: Vec::new(),
            max_clusters: MAX_CLUSTERS,
            poll_every: Duration::from_secs(2),
            limits: StoreLimits::default(),
            record: None,
            push_body_deadline: super::push::BODY_DEADLINE,
            local_node_ips: Vec::new(),
        }
    }
}

/// One live cluster's observer, running.
pub(crate) struct Started {
    pub handle: EngineHandle,
    pub target: Target,
    /// Its Ray session's name, once known (a poll's `/api/version`, or the pushes that
    /// started it): pushes naming no cluster find it by this.
    pub session: Arc<Mutex<String>>,
}

/// Why a live cluster could not be observed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("a recorded trace is read, not observed live")]
    TraceIsNotLive,
    /// Its `--record` directory could not be held.
    #[error(transparent)]
    Record(#[from] trace::TraceError),
    #[error("cannot start the observer thread: {0}")]
    Thread(std::io::Error),
}

/// Start observing one live cluster (`source` is `Ray` or `Push`) on a thread of its
/// own. It is polled once before this returns, so the first snapshot has what Ray said
/// (or, if Ray did not answer, says nothing and the error is logged). `record`: its own
/// trace directory, held before anything is asked of Ray (a second recorder, or a path
/// that is no directory, fails the start).
pub(crate) fn start_live(
    name: &str,
    source: &Source,
    opts: &ObserveOptions,
    record: Option<(PathBuf, TraceLimits)>,
    server: Arc<PushCounters>,
    stop: Arc<AtomicBool>,
    running: &Arc<Running>,
) -> Result<Started, StartError> {
    let (client, mode, text) = match source {
        Source::Ray(pull) => (Some(RayClient::new(pull.clone())), "pull", pull.base.clone()),
        Source::Push => (None, "push", "Ray's Event Export".to_string()),
        Source::Trace(_) => return Err(StartError::TraceIsNotLive),
    };
    let lock = match &record {
        Some((dir, _)) => Some(TraceLock::acquire(dir)?),
        None => None,
    };
    let session = Arc::new(Mutex::new(String::new()));
    let mut state = Loop {
        lock,
        record_failure: None,
        client,
        store: Store::new(opts.limits),
        puller: Puller::default(),
        cache: FlowCache::default(),
        writer: None,
        record,
        view: ObservedView { cluster: name.to_string(), mode, source: text, ..Default::default() },
        last_error: None,
        seq: 0,
        push: Arc::new(PushCounters::default()),
        server,
        session: session.clone(),
        cpu: CpuSampler::with_local_node_ips(opts.local_node_ips.clone()),
        cpu_unrecorded: Vec::new(),
        cpu_recorded_at: Instant::now(),
        task_pids: FxHashMap::default(),
    };
    state.poll();
    let out = Arc::new(ArcSwap::from_pointee(state.publish()));
    let (tx, rx) = mpsc::sync_channel(super::push::QUEUED_BATCHES);
    let target = Target { tx, counters: state.push.clone() };
    let (out2, stop2) = (out.clone(), stop.clone());
    let every = opts.poll_every;
    std::thread::Builder::new()
        .name(format!("observe-{name}").chars().take(15).collect())
        .spawn({
            let counted = running.enter();
            move || {
                let _counted = counted;
                state.run(every, rx, out2, stop2)
            }
        })
        .map_err(StartError::Thread)?;
    // The thread is not joined at shutdown: a poll may be waiting on Ray for its whole
    // timeout, and every trace line is already written whole. A stopping process waits
    // a little for its last reads (`Running`).
    Ok(Started { handle: EngineHandle::producer(out, stop, None, REFUSAL), target, session })
}

/// The snapshot of a recorded trace: every job it holds, as of its newest record.
pub fn trace_snapshot(dir: &std::path::Path, limits: StoreLimits) -> Result<Snapshot, trace::TraceError> {
    trace_snapshot_and_store(dir, limits).map(|(snap, _)| snap)
}

/// [`trace_snapshot`], with the store it was built from, for a reader that also needs
/// what a snapshot does not carry (`calibrate::from_store` reads the workers' CPU
/// readings): one read of the trace serves both.
pub fn trace_snapshot_and_store(
    dir: &std::path::Path,
    limits: StoreLimits,
) -> Result<(Snapshot, Store), trace::TraceError> {
    let (store, read) = trace::read(dir, limits)?;
    for bad in &read.bad_lines {
        tracing::warn!(line = %bad, "trace line skipped");
    }
    tracing::info!(
        trace = %dir.display(),
        segments = read.segments,
        records = read.lines,
        jobs = store.jobs.len(),
        tasks = store.attempts(),
        "trace read"
    );
    let info =
        ClusterInfo { session_name: read.header.session_name.clone(), ray_version: read.header.ray_version.clone() };
    let mut snap = snapshot(&store, &info, &mut FlowCache::default(), 0, read.last_ms);
    let mut view = ObservedView {
        mode: "trace",
        source: dir.display().to_string(),
        rows_read: read.lines,
        bad_rows: read.bad_count,
        ..Default::default()
    };
    fill_store_counters(&store, &mut view);
    snap.observed = Some(Arc::new(view));
    Ok((snap, store))
}

/// What the store says of its caps and what it refused, into `v`.
fn fill_store_counters(store: &Store, v: &mut ObservedView) {
    v.zero_unix_ms = store.zero_ms;
    v.tasks_held = store.attempts() as u64;
    v.tasks_dropped = store.dropped_by_job.values().sum();
    v.tasks_forgotten = store.forgotten_tasks;
    v.transitions_dropped = store.transitions_dropped;
    v.bad_job_ids = store.bad_job_ids;
    v.jobs_held = store.jobs_held() as u64;
    v.max_jobs = store.limits.max_jobs as u64;
    v.jobs_refused = store.jobs_refused;
    v.late_records = store.late_records;
    v.implausible_times = store.implausible_times;
    v.jobs_full_of_running = store.jobs_full_of_running();
}

struct Loop {
    /// The trace directory's one-writer lock, held while recording.
    lock: Option<TraceLock>,
    /// While writes fail: why, and when to try a new segment next.
    record_failure: Option<(String, Instant)>,
    /// `None`: push only.
    client: Option<RayClient>,
    store: Store,
    puller: Puller,
    cache: FlowCache,
    writer: Option<TraceWriter>,
    record: Option<(PathBuf, TraceLimits)>,
    view: ObservedView,
    last_error: Option<String>,
    seq: u64,
    /// This cluster's push counters, and the server's (bytes queued, refusals).
    push: Arc<PushCounters>,
    server: Arc<PushCounters>,
    session: Arc<Mutex<String>>,
    /// Reads the workers' CPU time while recording (`cpu_times.rs`).
    cpu: CpuSampler,
    /// Readings taken and not yet written: written together at most every
    /// [`CPU_RECORD_EVERY`], not synced to disk ten times a second.
    cpu_unrecorded: Vec<Change>,
    cpu_recorded_at: Instant,
    /// Workers' pids named by pushed task events (a push-only observer has no worker
    /// table), each with its node's id, at most [`MAX_TASK_PIDS`].
    task_pids: FxHashMap<u32, String>,
}

/// The workers' CPU readings are written to the trace at most this often.
pub const CPU_RECORD_EVERY: Duration = Duration::from_secs(1);

/// Pushed workers' pids kept for reading their CPU time; past it, the set starts over.
const MAX_TASK_PIDS: usize = 4_096;

impl Loop {
    fn run(
        mut self,
        every: Duration,
        rx: mpsc::Receiver<super::push::Batch>,
        out: Arc<ArcSwap<Snapshot>>,
        stop: Arc<AtomicBool>,
    ) {
        let mut next_poll = Instant::now() + every;
        let mut dirty_since: Option<Instant> = None;
        while !stop.load(Ordering::Relaxed) {
            let wait = next_poll.saturating_duration_since(Instant::now()).min(Duration::from_millis(100));
            match rx.recv_timeout(wait) {
                Ok((batch, bytes)) => {
                    self.store.now_ms = super::now_ms();
                    let changed: Vec<_> = batch.iter().filter_map(|c| self.store.apply(c)).collect();
                    drop(batch);
                    self.note_task_pids(&changed);
                    self.server.queued_bytes.fetch_sub(bytes, std::sync::atomic::Ordering::AcqRel);
                    self.record(&changed);
                    if !changed.is_empty() {
                        dirty_since.get_or_insert_with(Instant::now);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // The server is gone (it is stopping): no more pushes, and no spinning.
                Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
            }
            self.read_cpu();
            // A snapshot that kept a big job's older records (rebuilt too recently for
            // its cost) is followed by another, or a push-only observer that hears
            // nothing more would show them for good.
            if Instant::now() >= next_poll {
                self.poll();
                out.store(Arc::new(self.publish()));
                dirty_since = self.cache.is_stale().then(Instant::now);
                next_poll = Instant::now() + every;
            } else if dirty_since.is_some_and(|t| t.elapsed() >= PUSH_PUBLISH_EVERY) {
                out.store(Arc::new(self.publish()));
                dirty_since = self.cache.is_stale().then(Instant::now);
            }
        }
        self.record_cpu();
        let unsettled = self.store.unsettled_ended_jobs();
        if self.record.is_none() || unsettled.is_empty() {
            return;
        }
        // Said first: a process stopping is killed soon after (`cli::serve`). A long
        // history (jobs that ended before the observer started) is named in part, newest first.
        let mut jobs = unsettled.iter().rev().take(MAX_NAMED_AT_STOP).cloned().collect::<Vec<_>>().join(",");
        if unsettled.len() > MAX_NAMED_AT_STOP {
            jobs.push_str(&format!(" and {} more", unsettled.len() - MAX_NAMED_AT_STOP));
        }
        tracing::warn!(
            jobs = %jobs,
            "stopping before these ended jobs settled: they are read once more, but the trace may lack the last \
             reports Ray had not received by now (wait for \"settled\": true in /api/flow/jobs before stopping a \
             recording)"
        );
        if let Some(client) = &self.client {
            let r = self.puller.last_reads(client, &mut self.store, LAST_READS_BUDGET);
            self.record(&r.changes);
        }
    }

    fn poll(&mut self) {
        let Some(client) = &self.client else {
            // Push only: nothing to ask, but open the trace at once when recording.
            self.record(&[]);
            return;
        };
        self.store.now_ms = super::now_ms();
        let r = self.puller.round(client, &mut self.store);
        self.view.polls += 1;
        self.view.requests += r.requests;
        self.view.failed_requests += r.failed_requests;
        self.view.rows_read += r.rows;
        self.view.bad_rows += r.bad_rows;
        self.view.unlisted_tasks = r.unlisted_tasks;
        self.view.last_poll_seconds = r.took.as_secs_f64();
        if r.failed_requests > 0 {
            self.view.poll_failures += 1;
        }
        let first = r.errors.first().cloned();
        if first != self.last_error {
            match &first {
                Some(e) => {
                    tracing::warn!(error = %e, more = r.errors.len() - 1, "observing Ray: a poll failed in part")
                }
                None if self.last_error.is_some() => tracing::info!("observing Ray: polls succeed again"),
                None => {}
            }
            self.last_error = first;
        }
        self.note_task_pids(&r.changes);
        self.record(&r.changes);
        self.record_cpu();
        if let Some(info) = &self.puller.info {
            let mut known = self.session.lock().unwrap_or_else(|e| e.into_inner());
            if *known != info.session_name {
                known.clone_from(&info.session_name);
            }
        }
    }

    fn note_task_pids(&mut self, changes: &[Change]) {
        if self.record.is_none() {
            return;
        }
        for c in changes {
            if let Change::Task(t) = c {
                if let Some(pid) = t.worker_pid.filter(|_| t.end_time_ms.is_none()) {
                    if self.task_pids.len() >= MAX_TASK_PIDS {
                        self.task_pids.clear();
                    }
                    // A later part of a task's events may not name its node again.
                    let node = self.task_pids.entry(pid).or_default();
                    if let Some(id) = &t.node_id {
                        node.clone_from(id);
                    }
                }
            }
        }
    }

    /// While recording, read the workers' CPU time when a round is due, and write the
    /// readings every [`CPU_RECORD_EVERY`].
    fn read_cpu(&mut self) {
        if self.record.is_none() || !self.cpu.due() {
            return;
        }
        self.cpu.refresh_local_ips();
        // Each pid with the node Ray lists it on: the worker table's where it has one.
        let mut workers: std::collections::BTreeMap<u32, String> =
            self.task_pids.iter().map(|(pid, node)| (*pid, node.clone())).collect();
        let table = self.store.workers.iter().filter(|w| w.worker_type == "WORKER");
        workers.extend(table.filter_map(|w| Some((w.pid?, w.node_id.clone()))));
        // A worker on a node at another host's address is no process here: it is not
        // read, and takes no place in a round's cap from this machine's workers.
        let elsewhere: rustc_hash::FxHashSet<&str> = (self.store.nodes.iter())
            .filter(|n| !self.cpu.on_this_machine(&n.node_ip))
            .map(|n| n.node_id.as_str())
            .collect();
        if !elsewhere.is_empty() {
            workers.retain(|_, node| !elsewhere.contains(node.as_str()));
        }
        let now = super::now_ms();
        if let Some(round) = self.cpu.round(&workers, now) {
            self.store.now_ms = now;
            if let Some(c) = self.store.apply(&Change::WorkerCpu(round)) {
                self.cpu_unrecorded.push(c);
            }
        }
        if self.cpu_recorded_at.elapsed() >= CPU_RECORD_EVERY {
            self.record_cpu();
        }
    }

    fn record_cpu(&mut self) {
        self.cpu_recorded_at = Instant::now();
        if !self.cpu_unrecorded.is_empty() {
            let readings = std::mem::take(&mut self.cpu_unrecorded);
            self.record(&readings);
        }
    }

    /// Append what changed to the trace. A failed write (a full disk) never turns
    /// recording off: it is said (`/api/observe`, `/-/ready`, the page, a metric), what
    /// it could not write is counted, and a new segment is tried at most every
    /// [`RECORD_RETRY_EVERY`] until one takes the records again.
    fn record(&mut self, changes: &[super::store::Change]) {
        let Some((dir, limits)) = &self.record else { return };
        if self.lock.is_none() || (changes.is_empty() && self.writer.is_some()) {
            return;
        }
        if self.writer.is_none() {
            if self.record_failure.as_ref().is_some_and(|(_, at)| at.elapsed() < RECORD_RETRY_EVERY) {
                self.view.unrecorded_records += changes.len() as u64;
                return;
            }
            let info = self.puller.info.clone().unwrap_or_default();
            let header = Header {
                ray_version: info.ray_version,
                session_name: info.session_name,
                source: self.client.as_ref().map_or("Ray's Event Export", |c| c.base()).to_string(),
                ..Default::default()
            };
            match TraceWriter::open(dir, *limits, header) {
                Ok(w) => {
                    if self.record_failure.take().is_some() {
                        self.view.record_error = None;
                        tracing::info!(
                            unrecorded = self.view.unrecorded_records,
                            "recording resumes in a new segment; the records counted as unrecorded are not in the trace"
                        );
                    }
                    self.writer = Some(w);
                }
                Err(e) => {
                    self.view.unrecorded_records += changes.len() as u64;
                    self.failed_to_record(e.to_string());
                    return;
                }
            }
        }
        let Some(w) = self.writer.as_mut() else { return };
        let before = w.lines;
        if let Err(e) = w.append(changes).and_then(|()| w.sync()) {
            let written = w.lines - before;
            self.view.unrecorded_records += changes.len() as u64 - written;
            // The lines this writer did write stay counted.
            self.view.trace_lines += w.lines;
            self.view.trace_bytes = w.bytes();
            self.writer = None;
            self.failed_to_record(e.to_string());
        }
    }

    fn failed_to_record(&mut self, e: String) {
        self.view.record_failures += 1;
        // Logged once per failure spell, not once per retry.
        if self.view.record_error.is_none() {
            tracing::error!(error = %e, "cannot record: retrying every {RECORD_RETRY_EVERY:?}, counting what is not recorded");
        }
        self.view.record_error = Some(e.clone());
        self.record_failure = Some((e, Instant::now()));
    }

    fn publish(&mut self) -> Snapshot {
        self.seq += 1;
        let info = self.puller.info.clone().unwrap_or_default();
        let mut snap = snapshot(&self.store, &info, &mut self.cache, self.seq, super::now_ms());
        let mut view = self.view.clone();
        fill_store_counters(&self.store, &mut view);
        self.push.fill(&mut view);
        self.server.fill_server(&mut view);
        view.ray_metrics_targets = self
            .store
            .nodes
            .iter()
            .filter(|n| n.state == "ALIVE" && !n.node_ip.is_empty())
            .filter_map(|n| {
                Some(RayMetricsTarget {
                    node_id: n.node_id.clone(),
                    node_ip: n.node_ip.clone(),
                    port: n.metrics_export_port?,
                    is_head: n.is_head_node,
                })
            })
            .collect();
        if let Some(w) = &self.writer {
            view.trace_bytes = w.bytes();
            view.trace_lines += w.lines;
        }
        snap.observed = Some(Arc::new(view));
        snap
    }
}
