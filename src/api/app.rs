//! What every handler shares: the engine handle, the running config, tokens, the
//! host monitor, and the few pieces of state the API itself keeps (received alerts,
//! the metrics history, live-stream clients, metadata of submitted jobs).
//!
//! Everything here is either immutable after start or behind its own small lock that
//! is never held across an `.await`.

use super::stores::alerts::AlertStore;
use super::stores::dashboard_history::DashboardHistory;
use super::stores::hub::Hub;
use crate::config::Config;
use crate::host::HostMonitor;
use crate::metrics::RenderContext;
use crate::sim::control::{Control, ControlError, ControlOutcome};
use crate::sim::runner::EngineHandle;
use crate::snapshot::{Snapshot, Tables, VirtualTime};
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How the server runs; build with [`ServeOptions::new`] and adjust fields.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The running config: `server.*` settings, and the cluster that submitted workloads
    /// are validated against.
    pub config: Arc<Config>,
    /// Enables state-changing endpoints (`RAYSCOPE_TOKEN` or `server.token`).
    pub token: Option<String>,
    /// Also accepted by `POST /api/alerts` (`RAYSCOPE_ALERT_TOKEN` or `server.alert_token`).
    pub alert_token: Option<String>,
    /// This machine's readings for the head node (only when `cluster.host_node`).
    pub host: Option<HostMonitor>,
    /// The seed aggregator's sampling period (5 s) and retention in samples (720 = 1 h).
    pub history_every: Duration,
    pub history_len: usize,
    /// How long in-flight requests may take to finish after the shutdown signal.
    pub shutdown_grace: Duration,
    /// `--state-dir`: received alerts and submitted jobs kept across restarts.
    pub state_dir: Option<super::state_dir::StateDir>,
    /// Observe mode: the snapshots are a live Ray cluster's, so `/metrics` carries only
    /// rayscope's own families (Ray exports its own), and pushed events go here.
    pub observe: Option<ObserveServe>,
    /// Observe mode: every cluster observed, for `?cluster=NAME` (`None`: one).
    pub clusters: Option<Arc<crate::observe::Clusters>>,
}

/// A request that named its cluster (`?cluster=NAME`), marked by the router for
/// handlers that otherwise answer for every cluster (`/sd?targets=ray`).
#[derive(Clone, Debug)]
pub(crate) struct NamedCluster;

/// What the server needs of an observer.
#[derive(Clone)]
pub struct ObserveServe {
    /// Where `POST /api/observe/events` queues Ray's pushed events (`None`: a trace).
    pub inbox: Option<crate::observe::push::Inbox>,
}

impl std::fmt::Debug for ObserveServe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObserveServe").field("push", &self.inbox.is_some()).finish()
    }
}

impl ServeOptions {
    /// Options from a config: its tokens, a [`HostMonitor`] when `cluster.host_node` is
    /// set (which takes one blocking reading of the machine now), the seed's 5 s / 1 h
    /// history, and a 1.5 s shutdown grace (so the whole stop stays under 2 s).
    pub fn new(config: Config) -> ServeOptions {
        let host = config.cluster.host_node.then(HostMonitor::new);
        ServeOptions {
            token: non_empty(config.server.token.clone()),
            alert_token: non_empty(config.server.alert_token.clone()),
            config: Arc::new(config),
            host,
            history_every: Duration::from_secs(5),
            history_len: 720,
            shutdown_grace: Duration::from_millis(1500),
            state_dir: None,
            observe: None,
            clusters: None,
        }
    }
}

/// An empty or blank token would let an empty `Bearer` header in: treat it as unset.
pub(crate) fn non_empty(token: Option<String>) -> Option<String> {
    token.filter(|t| !t.trim().is_empty())
}

/// Metadata Ray's Jobs API keeps per submission that the engine has no use for.
#[derive(Clone, Debug, Default)]
pub(crate) struct SubmissionMeta {
    pub submission_id: String,
    pub metadata: Value,
    pub runtime_env: Value,
    pub entrypoint_num_cpus: Value,
    pub entrypoint_num_gpus: Value,
    pub entrypoint_memory: Value,
    pub entrypoint_resources: Value,
}

impl SubmissionMeta {
    /// What keeping it costs, near enough: its JSON text plus a fixed overhead.
    pub fn size(&self) -> usize {
        let json = |v: &Value| serde_json::to_string(v).map_or(0, |s| s.len());
        256 + self.submission_id.len()
            + json(&self.metadata)
            + json(&self.runtime_env)
            + json(&self.entrypoint_resources)
    }
}

/// Workload YAML bodies parsed at once; more get 503 (each may take a core for a while).
pub(crate) const YAML_PARSES: usize = 2;

/// Snapshots kept for page tokens: each holds its tables alive, so keep few.
const MAX_PINNED: usize = 4;
pub(crate) const PIN_SECONDS: u64 = 60;

/// Submissions remembered; older ones lose their metadata (the engine keeps its own
/// bounded job table).
const MAX_SUBMISSIONS: usize = 1_000;

/// The cluster a request reads, and its name (observe mode).
#[derive(Clone)]
pub(crate) struct Picked {
    pub handle: EngineHandle,
    pub name: Arc<str>,
}

impl From<&crate::observe::Cluster> for Picked {
    fn from(c: &crate::observe::Cluster) -> Picked {
        Picked { handle: c.handle.clone(), name: c.name.as_str().into() }
    }
}

tokio::task_local! {
    /// The cluster a request names (`?cluster=NAME`, observe mode), set for the
    /// request's handler by `router::pick_cluster`.
    static PICKED: Picked;
}

/// Run `f` (a request's handler) with `picked` as the cluster it reads.
pub(crate) async fn with_cluster<F: std::future::Future>(picked: Picked, f: F) -> F::Output {
    PICKED.scope(picked, f).await
}

pub(crate) struct App {
    /// The engine, or the first observed cluster: what requests naming no cluster read.
    engine: EngineHandle,
    /// Observe mode: every cluster observed (requests pick one with `?cluster=NAME`).
    pub clusters: Option<Arc<crate::observe::Clusters>>,
    pub config: Arc<Config>,
    pub token: Option<String>,
    pub alert_token: Option<String>,
    pub host: Option<HostMonitor>,
    pub alerts: AlertStore,
    pub history: DashboardHistory,
    pub stream: Hub,
    pub submissions: Mutex<VecDeque<SubmissionMeta>>,
    /// Snapshots that page tokens point into, with when each was last used.
    pub pinned: Mutex<VecDeque<(Arc<Snapshot>, std::time::Instant)>>,
    /// Where the driver tasks sit in the latest task table (see `state_api`).
    pub drivers: Mutex<Option<DriverPositions>>,
    /// Unix ms that virtual time 0 maps to (the engine's clock runs at wall speed × `speed`).
    pub epoch_ms_at_zero: u64,
    pub local_addr: SocketAddr,
    pub history_every: Duration,
    /// Becomes true when the server shuts down; long-lived tasks watch it.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// Rate baselines of the exporter, kept for the server's life.
    pub rate_baselines: crate::metrics::RateBaselines,
    /// The latest `/metrics` render, shared by concurrent scrapes.
    pub exposition: super::stores::exposition::ExpositionCache,
    /// `--state-dir`, with the jobs of earlier sessions it held at start.
    pub state_dir: Option<Arc<super::state_dir::StateDir>>,
    /// Workload YAML parses in flight ([`YAML_PARSES`]).
    pub yaml_parses: tokio::sync::Semaphore,
    /// The memory large responses in flight may take together.
    pub budget: super::budget::ResponseBudget,
    /// The connection cap and header-read timeout, and what they refused.
    pub connections: Arc<super::server::ConnectionStats>,
    /// The last Flow Insight replays, shared by the answers about them.
    pub flow_cache: super::stores::flow_cache::FlowCache,
    /// Observe mode (see [`ServeOptions::observe`]).
    pub observing: bool,
    pub observe_inbox: Option<crate::observe::push::Inbox>,
}

pub(crate) type AppState = Arc<App>;

/// A task table and the positions of its driver tasks.
pub(crate) type DriverPositions = (Arc<Tables>, Arc<Vec<usize>>);

impl App {
    /// The snapshots a request reads: the cluster it names, or the first.
    pub fn handle(&self) -> EngineHandle {
        PICKED.try_with(|p| p.handle.clone()).unwrap_or_else(|_| self.engine.clone())
    }

    /// The cluster a request reads, with its name: the one it picked, else the first
    /// observed, else the model (named "").
    pub fn picked(&self) -> Picked {
        PICKED.try_with(Picked::clone).unwrap_or_else(|_| match &self.clusters {
            Some(c) => Picked::from(&*c.first()),
            None => self.model(),
        })
    }

    /// Every cluster there is to sample: each observed one by name, or the model.
    pub fn every_cluster(&self) -> Vec<Picked> {
        match &self.clusters {
            Some(c) => c.all().iter().map(|c| Picked::from(&**c)).collect(),
            None => vec![self.model()],
        }
    }

    /// The model as the cluster a request reads (named "", as it has no name).
    fn model(&self) -> Picked {
        Picked { handle: self.engine.clone(), name: "".into() }
    }

    pub fn new(
        handle: EngineHandle,
        opts: ServeOptions,
        local_addr: SocketAddr,
        stopping: tokio::sync::watch::Receiver<bool>,
    ) -> App {
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        let sim_ms = handle.snapshot().sim_time_us.as_millis();
        let server = &opts.config.server;
        let connections = Arc::new(super::server::ConnectionStats::new(
            server.max_connections,
            Duration::from_micros(server.header_read_timeout.as_micros()),
        ));
        let budget = super::budget::ResponseBudget::new(server.limits.response_budget.0);
        let alerts = AlertStore::new(&server.limits);
        if let Some(state) = &opts.state_dir {
            let kept = alerts.restore(state.alerts.clone());
            tracing::info!(alerts = kept, jobs = state.jobs.len(), "restored from the state directory");
        }
        App {
            stream: Hub::new(server.stream_interval.as_micros(), server.max_stream_clients),
            history: DashboardHistory::new(opts.history_len),
            alerts,
            state_dir: opts.state_dir.map(Arc::new),
            submissions: Mutex::new(VecDeque::new()),
            drivers: Mutex::new(None),
            pinned: Mutex::new(VecDeque::new()),
            epoch_ms_at_zero: now_ms.saturating_sub(sim_ms),
            token: non_empty(opts.token),
            alert_token: non_empty(opts.alert_token),
            host: opts.host,
            config: opts.config,
            history_every: opts.history_every,
            engine: handle,
            clusters: opts.clusters,
            local_addr,
            stopping,
            rate_baselines: crate::metrics::RateBaselines::default(),
            exposition: Default::default(),
            budget,
            yaml_parses: tokio::sync::Semaphore::new(YAML_PARSES),
            connections,
            flow_cache: Default::default(),
            observing: opts.observe.is_some(),
            observe_inbox: opts.observe.and_then(|o| o.inbox),
        }
    }

    /// Unix milliseconds of a virtual time.
    pub fn epoch_ms(&self, t: VirtualTime) -> u64 {
        self.epoch_zero() + t.as_millis()
    }

    /// The Unix ms that time 0 stands for: the engine's start (paced to wall time), or
    /// for an observed cluster the instant the observer anchored its records at.
    pub fn epoch_zero(&self) -> u64 {
        self.handle().snapshot().observed.as_ref().and_then(|o| o.zero_unix_ms).unwrap_or(self.epoch_ms_at_zero)
    }

    /// What the metrics module needs besides the snapshot.
    pub fn render_context(&self, snap: &Snapshot) -> RenderContext {
        RenderContext {
            metrics_export_port: self.config.server.metrics_export_port,
            alerts_received: self.alerts.counts(),
            collector_seconds: Vec::new(),
            snapshot_taken_at: snap.published_at,
            // An observed cluster exports Ray's families itself: only ours here.
            disabled_collectors: if self.observing {
                crate::metrics::COLLECTOR_NAMES
                    .iter()
                    .filter(|c| !matches!(**c, "flow" | "rayscope"))
                    .map(|c| c.to_string())
                    .collect()
            } else {
                Vec::new()
            },
            rate_baselines: self.rate_baselines.clone(),
            metric_cardinality: self.config.cluster.metric_cardinality_level,
            http: Some(crate::metrics::HttpServerStats {
                max_connections: self.connections.max_connections as u64,
                open_connections: self.connections.open() as u64,
                connections_accepted: self.connections.accepted(),
                connections_rejected: self.connections.rejected(),
                header_read_timeout_seconds: self.connections.header_read_timeout.as_secs_f64(),
                header_read_timeouts: self.connections.header_timeouts(),
                stream_message_limit_bytes: super::stores::hub::MAX_CLIENT_MESSAGE as u64,
                stream_clients_dropped: self.stream.dropped(),
            }),
            observed_clusters: self.observed_clusters(),
        }
    }

    /// With several clusters observed, each one's name and work (`rayscope_observe_*`
    /// labelled `cluster`); with one, none (its series stay unlabelled).
    fn observed_clusters(&self) -> Vec<(String, Arc<crate::snapshot::ObservedView>)> {
        let all = self.clusters.as_ref().map(|c| c.all()).unwrap_or_default();
        if all.len() < 2 {
            return Vec::new();
        }
        all.iter().filter_map(|c| Some((c.name.clone(), c.handle.snapshot().observed.clone()?))).collect()
    }

    /// Keep a submission's metadata: the newest [`MAX_SUBMISSIONS`] within
    /// `server.limits.submissions_bytes`.
    pub fn remember_submission(&self, meta: SubmissionMeta) {
        let size = meta.size();
        let budget = self.config.server.limits.submissions_bytes.0 as usize;
        let mut subs = self.submissions.lock().unwrap_or_else(PoisonError::into_inner);
        let mut kept: usize = subs.iter().map(SubmissionMeta::size).sum();
        while subs.len() >= MAX_SUBMISSIONS || (kept + size > budget && !subs.is_empty()) {
            let Some(old) = subs.pop_front() else { break };
            kept -= old.size();
        }
        subs.push_back(meta);
    }

    pub fn submission(&self, submission_id: &str) -> Option<SubmissionMeta> {
        let subs = self.submissions.lock().unwrap_or_else(PoisonError::into_inner);
        subs.iter().rev().find(|m| m.submission_id == submission_id).cloned()
    }

    /// 409 with the reason when the snapshots are an observed cluster's: nothing here
    /// can change it.
    pub fn refuse_if_observing(&self) -> Result<(), super::error::ApiError> {
        if self.handle().controllable() {
            return Ok(());
        }
        Err(super::error::ApiError::new(axum::http::StatusCode::CONFLICT, crate::observe::runner::REFUSAL))
    }

    /// Send a control request and, once it is applied, wait (briefly) for the next
    /// snapshot, so a client that reads right after a change sees it.
    pub async fn control(&self, c: Control) -> Result<ControlOutcome, ControlError> {
        let outcome = self.handle().control(c).await?;
        self.next_snapshot().await;
        Ok(outcome)
    }

    /// Change the pace, then wait (briefly) for the next snapshot, as [`Self::control`].
    pub async fn set_speed(&self, speed: f64) -> Result<(), ControlError> {
        self.handle().set_speed(speed).await?;
        self.next_snapshot().await;
        Ok(())
    }

    /// The engine publishes right after applying a request; any snapshot newer than
    /// the one current when the reply came includes the change.
    async fn next_snapshot(&self) {
        let seen = self.handle().snapshot().seq;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
        while self.handle().snapshot().seq <= seen && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Keep `snap` for page tokens (a few at a time, for [`PIN_SECONDS`] after last use).
    pub fn pin(&self, snap: Arc<Snapshot>) {
        let mut pinned = self.pinned.lock().unwrap_or_else(PoisonError::into_inner);
        let now = std::time::Instant::now();
        pinned.retain(|(s, used)| {
            now.duration_since(*used).as_secs() < PIN_SECONDS && (s.seq, cluster_of(s)) != (snap.seq, cluster_of(&snap))
        });
        if pinned.len() >= MAX_PINNED {
            pinned.pop_front();
        }
        pinned.push_back((snap, now));
    }

    /// A pinned snapshot by sequence number, if still kept (of the cluster the request
    /// reads: each observed cluster counts its own).
    pub fn pinned(&self, seq: u64) -> Option<Arc<Snapshot>> {
        let current = self.handle().snapshot();
        let cluster = cluster_of(&current);
        let mut pinned = self.pinned.lock().unwrap_or_else(PoisonError::into_inner);
        let now = std::time::Instant::now();
        pinned.retain(|(_, used)| now.duration_since(*used).as_secs() < PIN_SECONDS);
        let (s, used) = pinned.iter_mut().find(|(s, _)| s.seq == seq && cluster_of(s) == cluster)?;
        *used = now;
        Some(s.clone())
    }

    /// Positions of driver tasks in `tables.tasks`, computed once per table build so
    /// that the default listing (`exclude_driver=true`) needs no scan per request.
    pub fn driver_positions(&self, tables: &Arc<Tables>) -> Arc<Vec<usize>> {
        let mut cached = self.drivers.lock().unwrap_or_else(PoisonError::into_inner);
        // Holding the Arc keeps its address from being reused, so pointer equality is sound.
        if let Some((t, positions)) = cached.as_ref() {
            if Arc::ptr_eq(t, tables) {
                return positions.clone();
            }
        }
        let positions: Arc<Vec<usize>> = Arc::new(
            tables
                .tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| t.kind == crate::model::TaskType::DriverTask)
                .map(|(i, _)| i)
                .collect(),
        );
        *cached = Some((tables.clone(), positions.clone()));
        positions
    }

    /// The latest snapshot with State API tables at most [`FRESH_SECONDS`] of wall time old.
    ///
    /// Registers interest first (the engine rebuilds tables only while they are read),
    /// then waits up to a second for a rebuild if the tables it has are stale, e.g. on
    /// the first read after a quiet spell. Returns the freshest it saw either way.
    pub async fn snapshot_with_tables(&self) -> Arc<Snapshot> {
        self.handle().want_tables();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        loop {
            let snap = self.handle().snapshot();
            if tables_age_seconds(&snap) <= FRESH_SECONDS || tokio::time::Instant::now() >= deadline {
                return snap;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The observed cluster a snapshot is of (`""` for the model's).
fn cluster_of(s: &Snapshot) -> &str {
    s.observed.as_ref().map_or("", |o| o.cluster.as_str())
}

/// Tables this old (wall seconds) are served without waiting. The engine rebuilds them
/// every second while they are read, so only the first read after a quiet spell (when
/// the engine stopped rebuilding) finds them older and waits for a rebuild.
pub(crate) const FRESH_SECONDS: f64 = 3.0;

/// Wall seconds between the tables' build and the snapshot (infinite when absent).
pub(crate) fn tables_age_seconds(s: &Snapshot) -> f64 {
    match &s.tables {
        Some(t) if s.speed > 0.0 => s.sim_time_us.micros_since(t.built_at_us) as f64 / 1e6 / s.speed,
        Some(_) => 0.0,
        None => f64::INFINITY,
    }
}
