//! Many clusters, one rayscope: each observed Ray cluster has its own observer (its
//! store under its own caps, its thread, its snapshots, its trace), so nothing of one
//! cluster (job `01000000` is in every one) reaches another's tables.
//!
//! Owns: the registry of clusters ([`Clusters`]): those named on the command line,
//! started at once, and those pushes bring, started on their first batch, up to
//! [`ObserveOptions::max_clusters`] (one more is refused and counted); which cluster a
//! pushed batch belongs to ([`Route`]: the name its URL gives, else the cluster whose
//! Ray session its events carry, else the unnamed source's cluster, else a new cluster
//! named after the session); cluster names ([`check_name`]); each cluster's trace
//! directory (the unnamed source's is `--record`'s directory itself, a named
//! cluster's `DIR/NAME`); and [`spawn`], where observing starts.
//! Must never: let one cluster's records into another's store, start a cluster past
//! the cap, or forget a cluster once started (its snapshots stay readable; its caps
//! bound it).

use super::push::{Inbox, PushCounters, Refused, Route, Target};
use super::runner::{start_live, trace_snapshot, ObserveOptions, Source, DEFAULT_CLUSTER, REFUSAL};
use crate::sim::runner::EngineHandle;
use arc_swap::ArcSwap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// The longest cluster name.
pub const MAX_NAME: usize = 63;

/// A cluster name that is not one (its first 80 characters).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cluster name {0:?}: use 1 to {MAX_NAME} ASCII letters, digits, '_' or '-', starting with a letter or digit")]
pub struct NameError(pub String);

/// Why observing could not start.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error("cluster {0:?} is named twice")]
    NamedTwice(String),
    /// The `--trace` to read.
    #[error(transparent)]
    Trace(#[from] super::trace::TraceError),
    /// A live cluster named at start.
    #[error(transparent)]
    Start(#[from] super::runner::StartError),
}

/// A cluster's name: 1 to 63 ASCII letters, digits, `_` or `-`, starting with a letter
/// or digit (a RayCluster's or a Ray session's name fits; it names a directory).
pub fn check_name(name: &str) -> Result<(), NameError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(NameError(name.chars().take(80).collect()))
    }
}

/// A Ray session's name as a cluster's (Ray's are already fit: `session_2026-12-01_...`).
fn name_of_session(session: &str) -> Option<String> {
    let name: String = session
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' })
        .take(MAX_NAME)
        .collect();
    check_name(&name).ok().map(|()| name)
}

/// One observed cluster.
pub struct Cluster {
    pub name: String,
    pub handle: EngineHandle,
    /// Its push queue (`None`: a recorded trace, which takes none).
    target: Option<Target>,
    session: Arc<Mutex<String>>,
}

/// Every cluster observed, in the order each was started (the first answers requests
/// that name none).
pub struct Clusters {
    list: RwLock<Vec<Arc<Cluster>>>,
    /// Whether the first cluster is the unnamed source's.
    has_default: bool,
    /// Clusters a push would have started past the cap.
    refused: AtomicU64,
    opts: ObserveOptions,
    server: Arc<PushCounters>,
    stop: Arc<AtomicBool>,
    running: Arc<super::runner::Running>,
}

impl std::fmt::Debug for Clusters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clusters").field("names", &self.names()).field("max", &self.max()).finish()
    }
}

impl Clusters {
    /// After a stop: wait, at most `within`, for every cluster's loop to end (a
    /// recording one reads ended jobs that have not settled once more); whether all had.
    pub fn wait_stopped(&self, within: std::time::Duration) -> bool {
        self.running.wait_all(within)
    }

    /// The cluster named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Cluster>> {
        self.read().iter().find(|c| c.name == name).cloned()
    }

    /// The cluster that answers what names none: the first started.
    pub fn first(&self) -> Arc<Cluster> {
        self.read()[0].clone()
    }

    pub fn all(&self) -> Vec<Arc<Cluster>> {
        self.read().clone()
    }

    pub fn names(&self) -> Vec<String> {
        self.read().iter().map(|c| c.name.clone()).collect()
    }

    pub fn max(&self) -> usize {
        self.opts.max_clusters
    }

    /// New clusters refused past the cap.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Cluster>>> {
        self.list.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where a cluster records: the unnamed source's in `--record`'s directory itself,
    /// a named one's in a directory of its name there.
    fn record_dir(&self, name: &str, unnamed: bool) -> Option<(PathBuf, super::trace::TraceLimits)> {
        let (dir, limits) = self.opts.record.clone()?;
        Some((if unnamed { dir } else { dir.join(name) }, limits))
    }

    /// Start observing one more cluster; the caller holds the list's write lock.
    fn start(
        &self,
        list: &mut Vec<Arc<Cluster>>,
        name: &str,
        source: &Source,
        unnamed: bool,
    ) -> Result<Arc<Cluster>, super::runner::StartError> {
        let started = start_live(
            name,
            source,
            &self.opts,
            self.record_dir(name, unnamed),
            self.server.clone(),
            self.stop.clone(),
            &self.running,
        )?;
        let c = Arc::new(Cluster {
            name: name.to_string(),
            handle: started.handle,
            target: Some(started.target),
            session: started.session,
        });
        list.push(c.clone());
        Ok(c)
    }

    /// The cluster a push names, started on its first batch (under the cap).
    fn named(&self, name: &str, session: &str) -> Result<Arc<Cluster>, Refused> {
        check_name(name).map_err(|e| Refused::Cluster { status: 400, why: e.to_string() })?;
        if let Some(c) = self.get(name) {
            return Ok(c);
        }
        let mut list = self.list.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = list.iter().find(|c| c.name == name) {
            return Ok(c.clone());
        }
        if list.len() >= self.opts.max_clusters {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(Refused::Cluster {
                status: 409,
                why: format!(
                    "cluster {name:?} would be one more than the {} observed (--max-clusters); its events are refused",
                    self.opts.max_clusters
                ),
            });
        }
        let c = self
            .start(&mut list, name, &Source::Push, false)
            .map_err(|why| Refused::Cluster { status: 409, why: format!("cluster {name:?} cannot start: {why}") })?;
        tracing::info!(cluster = %name, session = %session, "observing a new cluster from its pushes");
        Ok(c)
    }
}

impl Route for Clusters {
    fn route(&self, named: Option<&str>, session: &str) -> Result<Target, Refused> {
        let found = match named {
            Some(name) => self.named(name, session)?,
            None => {
                let by_session = (!session.is_empty())
                    .then(|| {
                        self.read()
                            .iter()
                            .find(|c| *c.session.lock().unwrap_or_else(PoisonError::into_inner) == session)
                            .cloned()
                    })
                    .flatten();
                match by_session {
                    Some(c) => c,
                    None if self.has_default => self.first(),
                    None => {
                        let name = name_of_session(session).ok_or_else(|| Refused::Cluster {
                            status: 400,
                            why: "these events name no cluster: no `sessionName`, and rayscope observes no unnamed \
                                  cluster; post them to /api/observe/events/NAME"
                                .to_string(),
                        })?;
                        self.named(&name, session)?
                    }
                }
            }
        };
        if !session.is_empty() {
            let mut known = found.session.lock().unwrap_or_else(PoisonError::into_inner);
            if known.is_empty() {
                *known = session.to_string();
            }
        }
        found.target.clone().ok_or_else(|| Refused::Cluster {
            status: 409,
            why: "rayscope is showing a recorded trace (rayscope observe --trace): it takes no events".into(),
        })
    }
}

/// A running observer.
pub struct Observer {
    /// The first cluster's snapshots (what requests naming no cluster read).
    pub handle: EngineHandle,
    /// Where pushed events go (live clusters only).
    pub inbox: Option<Inbox>,
    /// Every cluster observed.
    pub clusters: Arc<Clusters>,
}

/// Start observing. A trace is read before this returns (its errors are returned);
/// each cluster named at start is polled once before it returns (see `start_live`).
pub fn spawn(opts: ObserveOptions) -> Result<Observer, SpawnError> {
    let stop = Arc::new(AtomicBool::new(false));
    let server = Arc::new(PushCounters::default());
    if let Some(name) = &opts.name {
        check_name(name)?;
    }
    for (name, _) in &opts.more {
        check_name(name)?;
        if opts.name.as_deref() == Some(name.as_str()) || opts.more.iter().filter(|(n, _)| n == name).count() > 1 {
            return Err(SpawnError::NamedTwice(name.clone()));
        }
    }
    let mut clusters = Clusters {
        list: RwLock::new(Vec::new()),
        has_default: opts.name.is_none(),
        refused: AtomicU64::new(0),
        opts: opts.clone(),
        server: server.clone(),
        stop: stop.clone(),
        running: Arc::default(),
    };
    clusters.opts.max_clusters = opts.max_clusters.max(1 + opts.more.len());
    let first_name = opts.name.clone().unwrap_or_else(|| DEFAULT_CLUSTER.to_string());
    if let Source::Trace(dir) = &opts.source {
        let traces = traces_in(dir, &first_name);
        clusters.opts.max_clusters = clusters.opts.max_clusters.max(traces.len());
        let list = clusters.list.get_mut().unwrap_or_else(PoisonError::into_inner);
        for (name, dir) in traces {
            let mut snap = trace_snapshot(&dir, opts.limits)?;
            if let Some(view) = snap.observed.as_mut() {
                Arc::make_mut(view).cluster.clone_from(&name);
            }
            let out = Arc::new(ArcSwap::from_pointee(snap));
            let handle = EngineHandle::producer(out, stop.clone(), None, REFUSAL);
            list.push(Arc::new(Cluster { name, handle, target: None, session: Arc::default() }));
        }
        let clusters = Arc::new(clusters);
        return Ok(Observer { handle: clusters.first().handle.clone(), inbox: None, clusters });
    }
    {
        let mut list = Vec::new();
        clusters.start(&mut list, &first_name, &opts.source, opts.name.is_none())?;
        for (name, source) in &opts.more {
            clusters.start(&mut list, name, source, false)?;
        }
        *clusters.list.get_mut().unwrap_or_else(PoisonError::into_inner) = list;
    }
    let clusters = Arc::new(clusters);
    let mut inbox = Inbox::new(clusters.clone(), server);
    inbox.body_deadline = opts.push_body_deadline;
    Ok(Observer { handle: clusters.first().handle.clone(), inbox: Some(inbox), clusters })
}

/// The traces `--trace DIR` shows, each a cluster: `DIR`'s own (named `first`), then
/// each cluster's that `--record` with several clusters wrote in `DIR/NAME` (a
/// directory name that is no cluster name is not one). With none at all, `DIR` alone,
/// so that reading it says what is missing.
fn traces_in(dir: &std::path::Path, first: &str) -> Vec<(String, PathBuf)> {
    let named: Vec<String> =
        super::trace::cluster_traces(dir).into_iter().filter(|n| check_name(n).is_ok() && n != first).collect();
    let own = super::trace::holds_segments(dir) || named.is_empty();
    let mut out: Vec<(String, PathBuf)> = own.then(|| (first.to_string(), dir.to_path_buf())).into_iter().collect();
    out.extend(named.into_iter().map(|n| (n.clone(), dir.join(n))));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_name_is_a_plain_word() {
        for good in ["a", "prod-eu", "session_2026-12-01_23-48-20_406201_1", "RayCluster1"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-x", "_x", "a/b", "..", "a.b", "a b", &"x".repeat(64)] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.contains("ASCII letters, digits"), "{bad}: {err}");
        }
        assert_eq!(name_of_session("session_2026-12-01_23-48-20").as_deref(), Some("session_2026-12-01_23-48-20"));
        assert_eq!(name_of_session(""), None);
    }

    fn batch(session: &str, job: &str) -> Vec<u8> {
        serde_json::json!([{"eventType": "DRIVER_JOB_LIFECYCLE_EVENT", "sessionName": session,
            "driverJobLifecycleEvent": {"jobId": job, "stateTransitions": [
                {"state": "CREATED", "timestamp": humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()}]}}])
        .to_string()
        .into_bytes()
    }

    fn wait_for_jobs(c: &Cluster, n: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while c.handle.snapshot().jobs.len() < n {
            assert!(std::time::Instant::now() < deadline, "cluster {} never showed {n} jobs", c.name);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    #[test]
    fn pushes_are_kept_apart_by_name_and_by_session_under_the_cap() {
        let mut opts = ObserveOptions::new(Source::Push);
        opts.name = Some("a".into());
        opts.max_clusters = 2;
        opts.poll_every = std::time::Duration::from_millis(100);
        let observer = spawn(opts).unwrap();
        let inbox = observer.inbox.clone().unwrap();
        // The same job id in two clusters: one named by the URL, one by its session.
        inbox.accept(&batch("session_one", "AQAAAA=="), Some("a")).unwrap();
        inbox.accept(&batch("session_two", "AQAAAA=="), None).unwrap();
        inbox.accept(&batch("session_two", "AgAAAA=="), None).unwrap();
        // Session one is cluster a's now: unnamed pushes of it go there.
        inbox.accept(&batch("session_one", "AwAAAA=="), None).unwrap();
        assert_eq!(observer.clusters.names(), ["a", "session_two"]);
        let (a, two) = (observer.clusters.get("a").unwrap(), observer.clusters.get("session_two").unwrap());
        wait_for_jobs(&a, 2);
        wait_for_jobs(&two, 2);
        let ids = |c: &Cluster| c.handle.snapshot().jobs.iter().map(|j| j.id.to_string()).collect::<Vec<_>>();
        assert_eq!(ids(&a), ["01000000", "03000000"]);
        assert_eq!(ids(&two), ["01000000", "02000000"]);
        // A third is past the cap; a bad name is refused before anything is started.
        let Err(Refused::Cluster { status: 409, why }) = inbox.accept(&batch("s3", "AQAAAA=="), None) else {
            panic!("a third cluster is refused")
        };
        assert!(why.contains("--max-clusters"), "{why}");
        assert_eq!(observer.clusters.refused(), 1);
        let Err(Refused::Cluster { status: 400, .. }) = inbox.accept(&batch("s", "AQAAAA=="), Some("../x")) else {
            panic!("a bad name is refused")
        };
        assert_eq!(observer.clusters.names().len(), 2);
        observer.handle.shutdown();
    }
}
