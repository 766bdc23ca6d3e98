//! Pull: read a live Ray cluster through its dashboard's State and Jobs APIs.
//!
//! Owns: the HTTP client (timeouts, a cap on each answer's bytes, the bearer token of
//! a cluster in token mode), one poll round, and what it asks. A round lists nodes,
//! jobs, actors, placement groups, objects and workers; tasks are listed per job, with Ray's
//! own filter (`job_id=`), for each job still running, and from [`SETTLE_MS`] after a
//! job ends until two reads agree (within [`SETTLE_GIVE_UP_MS`]; then never again:
//! Ray's last reports of an ended job land within seconds). Each
//! listing is asked again only when due: no sooner than [`DUTY`] times as long as Ray
//! took to answer it last, so a listing that costs Ray more is asked less often. Every
//! listing asks for Ray's maximum, 10,000 rows; a job with more is read by state as
//! well (its running and pending tasks first), and what Ray did not list is counted,
//! not guessed. See docs/observe.md for what a round costs Ray.
//! Must never: retry a request within a round (the next round is the retry), hold a
//! whole answer past [`PullOptions::max_answer_bytes`], or stop observing because one
//! listing failed (its error is logged and counted; the rest of the round goes on).

use super::publish::ClusterInfo;
use super::rows::{
    read_rows, FieldError, ObservedActor, ObservedJob, ObservedNode, ObservedObject, ObservedPg, ObservedTask, RowError,
};
use super::store::{is_terminal_job, job_number, Change, Store};
use super::workers::ObservedWorker;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Ray's State API answers at most this many rows per listing.
pub const RAY_LIST_LIMIT: usize = 10_000;

/// How to reach the cluster.
#[derive(Clone, Debug)]
pub struct PullOptions {
    /// The dashboard's address, `http://HEAD:8265`.
    pub base: String,
    /// The bearer token of a cluster in token mode.
    pub token: Option<String>,
    /// Each request's whole exchange must fit in this.
    pub timeout: Duration,
    /// An answer larger than this is refused (10,000 detailed task rows are ~20 MB).
    pub max_answer_bytes: u64,
}

impl PullOptions {
    pub fn new(base: &str) -> Result<PullOptions, RayUrlError> {
        let given = base.trim();
        let rest = given
            .strip_prefix("http://")
            .or_else(|| given.strip_prefix("https://"))
            .ok_or_else(|| RayUrlError::NotHttp(given.to_string()))?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(RayUrlError::NoHost(given.to_string()));
        }
        let base = given.trim_end_matches('/').to_string();
        Ok(PullOptions { base, token: None, timeout: Duration::from_secs(30), max_answer_bytes: 256 << 20 })
    }
}

/// Why `--ray` names no dashboard.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RayUrlError {
    #[error("--ray {0:?}: give the dashboard's URL, e.g. http://127.0.0.1:8265")]
    NotHttp(String),
    #[error("--ray {0:?}: the URL names no host")]
    NoHost(String),
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error("GET {path}: cannot reach Ray's dashboard: {why}")]
    Unreachable { path: String, why: String },
    #[error("GET {path}: Ray answered {status}: {body}")]
    Status { path: String, status: u16, body: String },
    #[error("GET {path}: the answer is not the JSON Ray's API writes: {why}")]
    Shape { path: String, why: String },
}

/// The dashboard's client.
pub struct RayClient {
    agent: ureq::Agent,
    opts: PullOptions,
}

impl RayClient {
    pub fn new(opts: PullOptions) -> RayClient {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(opts.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("rayscope/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        RayClient { agent, opts }
    }

    pub fn base(&self) -> &str {
        &self.opts.base
    }

    /// GET a JSON document.
    pub fn get(&self, path: &str) -> Result<Value, PullError> {
        let url = format!("{}{path}", self.opts.base);
        let mut req = self.agent.get(&url);
        if let Some(t) = &self.opts.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let unreachable = |e: ureq::Error| PullError::Unreachable { path: path.to_string(), why: e.to_string() };
        let mut resp = req.call().map_err(unreachable)?;
        let status = resp.status().as_u16();
        let body = resp.body_mut().with_config().limit(self.opts.max_answer_bytes).read_to_vec().map_err(|e| {
            PullError::Shape {
                path: path.to_string(),
                why: format!("{e} (at most {} bytes are read)", self.opts.max_answer_bytes),
            }
        })?;
        if status != 200 {
            let text = String::from_utf8_lossy(&body);
            let hint = match status {
                401 | 403 => " (a cluster in token mode needs --token)",
                404 => " (is this Ray's dashboard, 2.9 or newer?)",
                _ => "",
            };
            return Err(PullError::Status {
                path: path.to_string(),
                status,
                body: format!("{}{hint}", text.chars().take(300).collect::<String>()),
            });
        }
        serde_json::from_slice(&body).map_err(|e| PullError::Shape { path: path.to_string(), why: e.to_string() })
    }

    /// A State API listing: its rows, and how many Ray had in all.
    pub fn list(&self, table: &str, query: &str) -> Result<(Vec<Value>, u64), PullError> {
        let path = format!("/api/v0/{table}?limit={RAY_LIST_LIMIT}&detail=true{query}");
        let doc = self.get(&path)?;
        let result = doc.get("data").and_then(|d| d.get("result")).unwrap_or(&doc);
        let rows = match result.get("result") {
            Some(Value::Array(rows)) => rows.clone(),
            _ => return Err(PullError::Shape { path, why: "no `data.result.result` list".into() }),
        };
        let total = result.get("total").and_then(Value::as_u64).unwrap_or(rows.len() as u64);
        Ok((rows, total))
    }
}

/// What one round did.
#[derive(Clone, Debug, Default)]
pub struct RoundReport {
    pub requests: u64,
    pub failed_requests: u64,
    pub rows: u64,
    pub bad_rows: u64,
    /// Changes applied to the store (what a trace appends).
    pub changes: Vec<Change>,
    /// Tasks Ray had that no listing returned (past its 10,000 limit).
    pub unlisted_tasks: u64,
    /// Ended jobs whose listings had not agreed twice by [`SETTLE_GIVE_UP_MS`].
    pub unsettled_jobs: u64,
    pub took: Duration,
    pub errors: Vec<String>,
}

/// The puller's memory between rounds.
/// Ray is asked for a listing again no sooner than this many times as long as its
/// last answer took: the dashboard spends its own CPU on every row (about 0.3–0.6 ms a
/// task row, measured: scripts/ray-observe/FINDINGS.md), so a listing that grows is
/// asked for less often, and polling costs Ray at most about 1/20 of a core.
pub const DUTY: u32 = 20;

/// A job's tasks are read again from this long after it ended: Ray's workers send
/// their task events about once a second, and the last ones land after the end.
pub const SETTLE_MS: u64 = 5_000;

/// How far apart the reads of a settling job are: two reads that agree must span a
/// whole report interval of Ray's workers (1 s by default), twice over, so that a
/// report still on its way under load is not missed.
pub const SETTLE_REREAD: Duration = Duration::from_secs(2);

/// An ended job's tasks are read until two reads agree, but no longer than this after
/// its end: then its last read stands (`RoundReport::unsettled_jobs` counts it).
pub const SETTLE_GIVE_UP_MS: u64 = 60_000;

/// What of a task listing may still change after its job ended, digested: each row's
/// id, attempt, state and how many transitions and profile spans it holds, and Ray's
/// total. Two reads with the same digest agree.
pub fn listing_digest(rows: &[Value], total: u64) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut parts: Vec<(&str, u64, &str, usize, usize)> = rows
        .iter()
        .map(|v| {
            let len = |x: Option<&Value>| x.and_then(Value::as_array).map_or(0, Vec::len);
            (
                v.get("task_id").and_then(Value::as_str).unwrap_or(""),
                v.get("attempt_number").and_then(Value::as_u64).unwrap_or(0),
                v.get("state").and_then(Value::as_str).unwrap_or(""),
                len(v.get("events")),
                len(v.get("profiling_data").and_then(|p| p.get("events"))),
            )
        })
        .collect();
    parts.sort_unstable();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (parts, total).hash(&mut h);
    h.finish()
}

#[derive(Default)]
pub struct Puller {
    /// Jobs the store holds whose tasks were read after they settled: never asked again.
    settled: BTreeSet<u32>,
    /// Each job's last task listing, digested, to tell when two reads agree.
    last_read: std::collections::BTreeMap<u32, u64>,
    /// When each listing may be asked for again.
    due: std::collections::BTreeMap<String, Instant>,
    pub info: Option<ClusterInfo>,
}

impl Puller {
    /// One round: list everything, merge it into `store`.
    pub fn round(&mut self, client: &RayClient, store: &mut Store) -> RoundReport {
        let started = Instant::now();
        let mut r = RoundReport::default();
        store.pulled = true;
        if self.info.is_none() {
            r.requests += 1;
            match client.get("/api/version") {
                Ok(v) => {
                    self.info = Some(ClusterInfo {
                        session_name: v.get("session_name").and_then(Value::as_str).unwrap_or("").to_string(),
                        ray_version: v.get("ray_version").and_then(Value::as_str).unwrap_or("").to_string(),
                    })
                }
                Err(e) => {
                    r.failed_requests += 1;
                    r.errors.push(e.to_string());
                    r.took = started.elapsed();
                    // Nothing else will answer either.
                    return r;
                }
            }
        }
        self.table(client, store, &mut r, "nodes", "", |v| ObservedNode::from_row(v).map(Change::Node));
        self.node_ports(client, store, &mut r);
        if self.is_due("jobs") {
            r.requests += 1;
            let asked = Instant::now();
            let answer = client.get("/api/jobs/");
            self.answered("jobs", asked);
            match answer {
                Ok(Value::Array(rows)) => {
                    self.apply(store, &mut r, "jobs", &rows, |v| ObservedJob::from_row(v).map(Change::Job))
                }
                Ok(_) => {
                    r.failed_requests += 1;
                    r.errors.push("GET /api/jobs/: not a list of jobs".into());
                }
                Err(e) => {
                    r.failed_requests += 1;
                    r.errors.push(e.to_string());
                }
            }
        }
        self.table(client, store, &mut r, "actors", "", |v| ObservedActor::from_row(v).map(Change::Actor));
        self.table(client, store, &mut r, "placement_groups", "", |v| {
            ObservedPg::from_row(v).map(Change::PlacementGroup)
        });
        // Workers' starts: the only ones a job that ran on prestarted workers shows.
        self.table(client, store, &mut r, "workers", "", |v| ObservedWorker::from_row(v).map(Change::Worker));
        let objects = if self.is_due("objects") {
            r.requests += 1;
            let asked = Instant::now();
            let answer = client.list("objects", "");
            self.answered("objects", asked);
            Some(answer)
        } else {
            None
        };
        match objects {
            None => {}
            Some(Ok((rows, _))) => {
                let (good, bad) = read_rows("objects", &rows, ObservedObject::from_row);
                r.rows += rows.len() as u64;
                self.bad(&mut r, bad);
                r.changes.extend(store.set_objects(good, super::now_ms()));
            }
            Some(Err(e)) => {
                r.failed_requests += 1;
                r.errors.push(e.to_string());
            }
        }
        // What is kept per job goes with the job when the store forgets it (it does not
        // take back a job it forgot), so a long watch holds no more than the store does.
        self.settled.retain(|n| store.jobs.contains_key(n));
        self.last_read.retain(|n, _| store.jobs.contains_key(n));
        let held_hex: BTreeSet<&str> = store.jobs.values().map(|j| j.job_id.as_str()).collect();
        self.due.retain(|key, _| match key.split_once(':') {
            Some(("tasks" | "settle", hex)) => held_hex.contains(hex),
            _ => true,
        });
        // Tasks, job by job: the running ones as often as their listing's cost allows,
        // an ended one until it has settled.
        let now = super::now_ms();
        let jobs: Vec<(u32, String, bool, bool)> = store
            .jobs
            .iter()
            .map(|(&n, j)| {
                let after = |ms: u64| is_terminal_job(&j.status) && j.end_time.is_some_and(|e| now >= e + ms);
                (n, j.job_id.clone(), after(SETTLE_MS), after(SETTLE_GIVE_UP_MS))
            })
            .filter(|(n, _, _, _)| !self.settled.contains(n))
            .collect();
        for (num, hex, settling, give_up) in jobs {
            let key = format!("tasks:{hex}");
            // A settling job is read every SETTLE_REREAD whatever its listing cost: two
            // reads that far apart span a whole report interval of Ray's workers.
            let settle_key = format!("settle:{hex}");
            if (!settling && !self.is_due(&key)) || (settling && !self.is_due(&settle_key)) {
                continue;
            }
            let asked = Instant::now();
            let read = self.job_tasks(client, store, &mut r, &hex);
            self.answered(&key, asked);
            if settling {
                self.due.insert(settle_key.clone(), Instant::now() + SETTLE_REREAD);
            }
            let Some(digest) = read else { continue };
            let agrees = self.last_read.insert(num, digest) == Some(digest);
            if settling && (agrees || give_up) {
                if !agrees {
                    r.unsettled_jobs += 1;
                    tracing::warn!(job = %hex, "Ray's task listing of an ended job still changed a minute after its end; its last read stands");
                }
                self.settled.insert(num);
                store.mark_settled(num);
                self.last_read.remove(&num);
                self.due.remove(&key);
                self.due.remove(&settle_key);
            }
        }
        r.took = started.elapsed();
        r
    }

    /// At stop: each ended job not yet settled read once more, the latest ended first,
    /// while `budget` lasts. A recording stopped right after a job ended then keeps
    /// what Ray had of it by then (its last reports usually reach Ray within a second
    /// or two of the end), though nothing proves that all of it had arrived.
    pub fn last_reads(&mut self, client: &RayClient, store: &mut Store, budget: Duration) -> RoundReport {
        let started = Instant::now();
        let mut r = RoundReport::default();
        let mut ended: Vec<(u64, String)> = store
            .jobs
            .iter()
            .filter(|(n, j)| is_terminal_job(&j.status) && !self.settled.contains(n))
            .map(|(_, j)| (j.end_time.unwrap_or(0), j.job_id.clone()))
            .collect();
        ended.sort_unstable_by(|a, b| b.cmp(a));
        for (_, hex) in ended {
            if started.elapsed() >= budget {
                break;
            }
            self.job_tasks(client, store, &mut r, &hex);
        }
        r.took = started.elapsed();
        r
    }

    /// A job's tasks: one listing, and by state when Ray has more than one listing holds.
    /// The listing's digest (`listing_digest`), or `None` where it failed.
    fn job_tasks(&mut self, client: &RayClient, store: &mut Store, r: &mut RoundReport, hex: &str) -> Option<u64> {
        // Ray leaves the driver's own task out unless asked: it is the call graph's root.
        let filter = format!("&exclude_driver=false&filter_keys=job_id&filter_predicates=%3D&filter_values={hex}");
        r.requests += 1;
        let (rows, total) = match client.list("tasks", &filter) {
            Ok(x) => x,
            Err(e) => {
                r.failed_requests += 1;
                r.errors.push(e.to_string());
                return None;
            }
        };
        let digest = listing_digest(&rows, total);
        let mut listed = rows.len() as u64;
        self.apply(store, r, "tasks", &rows, |v| ObservedTask::from_row(v).map(Change::Task));
        if total > rows.len() as u64 {
            // More than one listing holds: what is still moving matters most.
            for state in ["RUNNING", "PENDING_NODE_ASSIGNMENT", "PENDING_ARGS_AVAIL", "SUBMITTED_TO_WORKER"] {
                let by_state = format!("{filter}&filter_keys=state&filter_predicates=%3D&filter_values={state}");
                r.requests += 1;
                match client.list("tasks", &by_state) {
                    Ok((rows, _)) => {
                        listed += rows.len() as u64;
                        self.apply(store, r, "tasks", &rows, |v| ObservedTask::from_row(v).map(Change::Task));
                    }
                    Err(e) => {
                        r.failed_requests += 1;
                        r.errors.push(e.to_string());
                    }
                }
            }
            r.unlisted_tasks += total.saturating_sub(listed);
        }
        job_number(hex).map(|_| digest)
    }

    /// The nodes' metrics ports (`/sd?targets=ray`), which only the dashboard's own
    /// node summary says; asked as rarely as its cost allows, like every listing.
    fn node_ports(&mut self, client: &RayClient, store: &mut Store, r: &mut RoundReport) {
        const KEY: &str = "node_ports";
        if !self.is_due(KEY) {
            return;
        }
        r.requests += 1;
        let asked = Instant::now();
        let answer = client.get("/nodes?view=summary");
        self.answered(KEY, asked);
        match answer {
            Ok(v) => match v.pointer("/data/summary").and_then(Value::as_array) {
                Some(rows) => self.apply(store, r, "nodes", rows, |v| ObservedNode::from_summary(v).map(Change::Node)),
                None => {
                    r.failed_requests += 1;
                    r.errors.push("GET /nodes?view=summary: no `data.summary` list of nodes".into());
                }
            },
            Err(e) => {
                r.failed_requests += 1;
                r.errors.push(e.to_string());
            }
        }
    }

    fn is_due(&self, key: &str) -> bool {
        self.due.get(key).is_none_or(|t| Instant::now() >= *t)
    }

    /// A listing asked at `asked` was answered now: it is due again [`DUTY`] times its
    /// answer's time from now.
    fn answered(&mut self, key: &str, asked: Instant) {
        self.due.insert(key.to_string(), Instant::now() + asked.elapsed() * DUTY);
    }

    fn table(
        &mut self,
        client: &RayClient,
        store: &mut Store,
        r: &mut RoundReport,
        table: &'static str,
        query: &str,
        read: impl Fn(&Value) -> Result<Change, FieldError>,
    ) {
        if !self.is_due(table) {
            return;
        }
        r.requests += 1;
        let asked = Instant::now();
        let answer = client.list(table, query);
        self.answered(table, asked);
        match answer {
            Ok((rows, _)) => self.apply(store, r, table, &rows, read),
            Err(e) => {
                r.failed_requests += 1;
                r.errors.push(e.to_string());
            }
        }
    }

    fn apply(
        &mut self,
        store: &mut Store,
        r: &mut RoundReport,
        table: &'static str,
        rows: &[Value],
        read: impl Fn(&Value) -> Result<Change, FieldError>,
    ) {
        r.rows += rows.len() as u64;
        let (good, bad) = read_rows(table, rows, read);
        self.bad(r, bad);
        for c in good {
            if let Some(merged) = store.apply(&c) {
                r.changes.push(merged);
            }
        }
    }

    fn bad(&mut self, r: &mut RoundReport, bad: Vec<RowError>) {
        r.bad_rows += bad.len() as u64;
        // A few are enough to say what is wrong; a round of 10,000 bad rows logs three.
        r.errors.extend(bad.into_iter().take(3).map(|e| e.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_reads_of_a_listing_agree_only_when_nothing_ray_still_reports_changed() {
        let row = |id: &str, state: &str, events: usize, spans: usize| {
            serde_json::json!({"task_id": id, "attempt_number": 0, "state": state,
                "events": vec![serde_json::json!({}); events],
                "profiling_data": {"events": vec![serde_json::json!({}); spans]}})
        };
        let first = [row("a", "FINISHED", 5, 3), row("b", "RUNNING", 4, 0)];
        let same_in_another_order = [row("b", "RUNNING", 4, 0), row("a", "FINISHED", 5, 3)];
        assert_eq!(listing_digest(&first, 2), listing_digest(&same_in_another_order, 2));
        // The executor's late report: a state, a transition, a span, or a row more.
        for later in [
            vec![row("a", "FINISHED", 5, 3), row("b", "FINISHED", 4, 0)],
            vec![row("a", "FINISHED", 5, 3), row("b", "RUNNING", 5, 0)],
            vec![row("a", "FINISHED", 5, 4), row("b", "RUNNING", 4, 0)],
            vec![row("a", "FINISHED", 5, 3), row("b", "RUNNING", 4, 0), row("c", "FINISHED", 5, 0)],
        ] {
            assert_ne!(listing_digest(&first, 2), listing_digest(&later, later.len() as u64), "{later:?}");
        }
        assert_ne!(listing_digest(&first, 2), listing_digest(&first, 3), "Ray's total moved");
    }

    #[test]
    fn a_url_must_be_http_and_name_a_host() {
        assert_eq!(PullOptions::new("http://127.0.0.1:8265/").unwrap().base, "http://127.0.0.1:8265");
        assert!(PullOptions::new("127.0.0.1:8265").unwrap_err().to_string().contains("give the dashboard's URL"));
        assert!(PullOptions::new("http://").unwrap_err().to_string().contains("names no host"));
    }

    #[test]
    fn an_unreachable_cluster_is_an_error_naming_the_request() {
        // A port nothing listens on: bind one, then free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut opts = PullOptions::new(&format!("http://127.0.0.1:{port}")).unwrap();
        opts.timeout = Duration::from_secs(2);
        let client = RayClient::new(opts);
        let mut store = Store::new(Default::default());
        let r = Puller::default().round(&client, &mut store);
        assert_eq!((r.requests, r.failed_requests), (1, 1));
        assert!(r.errors[0].starts_with("GET /api/version: cannot reach Ray's dashboard"), "{}", r.errors[0]);
    }
}
