//! The observed cluster's own costs, read from a recorded job's timestamps
//! (`rayscope calibrate --trace DIR`), and what a replay's prediction is worth
//! (`bands.rs`).
//!
//! The model's cost defaults are one reference machine's (`config::calibration`,
//! `docs/fidelity.md`); a user's cluster is another machine. Ray's task rows stamp each
//! state a call entered (whole ms), and between those stamps lie the costs the model
//! charges: a lease, the push to the worker and its start, the caller's `.remote()`, a
//! worker's start, an argument's transfer, a worker's first call beyond its body. Each
//! is a *figure* here (`figures.rs`): a sum of the model's cost fields, measured over
//! every call of the job that shows it cleanly. A figure sets its fields in the
//! reference machine's proportions (a stamp sees their sum, not their split). A cost no figure covers, or whose figure the job does not show, keeps
//! the reference machine's value, named as such.
//!
//! Owns: deriving the costs from a trace's store and its figures, the costs fragment it writes
//! (`scheduler:` and `object_store:`, as a config takes them), reading a costs file
//! (`costs_file.rs`), and the error bands of a replay's prediction (`bands.rs`).
//! Must never: touch the model's behaviour (costs reach it only as config overrides), or
//! report a cost it did not measure as measured.

pub mod bands;
pub mod bodies;
pub mod costs_file;
mod figures;

use crate::config::calibration::{CALIBRATED_OBJECT_STORE_COSTS, CALIBRATED_SCHEDULER_COSTS, CALIBRATION};
use crate::config::{ObjectStoreConfig, Override, SchedulerConfig};
use crate::observe::rows::ObservedTask;
use crate::observe::store::{Store, StoreLimits};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Why costs could not be read from a trace or a file.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error(transparent)]
    Trace(#[from] crate::observe::trace::TraceError),
    #[error("--trace {dir}: the trace holds no job (record one with `rayscope observe --record`)")]
    NoJob { dir: PathBuf },
    #[error("--trace {dir}: it holds several jobs: name one with --job (jobs: {jobs})")]
    NameJob { dir: PathBuf, jobs: String },
    #[error("--job {job}: the trace has no such job (jobs: {jobs})")]
    UnknownJob { job: String, jobs: String },
    #[error("--costs {path}: {message}")]
    CostsFile { path: PathBuf, message: String },
}

/// A statistic the trace measured: a sum of the model's cost fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// What it is, in words (`lease`, `worker start`, ...).
    pub name: &'static str,
    /// The stamps it is read between.
    pub how: &'static str,
    /// The config paths it sets, e.g. `scheduler.lease_latency`.
    pub fields: &'static [&'static str],
    /// The measured value: µs for a time, bytes a second for a rate.
    pub value: f64,
    /// Calls (or bursts, or transfers) it was measured over.
    pub samples: usize,
}

/// A cost the trace set.
#[derive(Clone, Debug, PartialEq)]
pub struct DerivedCost {
    /// Its config path, e.g. `scheduler.lease_latency`.
    pub key: String,
    /// Its value as a config takes it, e.g. `1118us`.
    pub value: String,
    /// The figure it comes from (index into [`TraceCosts::figures`]).
    pub figure: usize,
}

/// A cost the trace could not determine: it keeps the reference machine's value.
#[derive(Clone, Debug, PartialEq)]
pub struct Fallback {
    pub key: String,
    /// The reference machine's value, as a config takes it.
    pub value: String,
    pub why: String,
}

/// The costs read from one recorded job.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceCosts {
    /// `<trace dir> job <id>`.
    pub source: String,
    pub job: String,
    pub figures: Vec<Figure>,
    pub derived: Vec<DerivedCost>,
    pub fallbacks: Vec<Fallback>,
    /// Each function's CPU share of its held time, from the workers' CPU readings.
    pub bodies: bodies::Bodies,
}

const LEASE: &[&str] = &["scheduler.lease_latency", "scheduler.dispatch_cost"];
const PUSH_AND_START: &[&str] = &[
    "scheduler.owner_push_cost",
    "scheduler.task_push_latency",
    "scheduler.call_start_cost",
    "scheduler.task_worker_cost",
];
const SUBMIT: &[&str] = &["scheduler.call_submit_cost"];
const ACTOR_SUBMIT: &[&str] = &["scheduler.actor_call_submit_cost"];
const WORKER_START: &[&str] = &["scheduler.worker_start_cpu", "scheduler.worker_start_latency"];
const TRANSFER: &[&str] = &["object_store.transfer_bandwidth"];
const FIRST_CALL: &[&str] = &["scheduler.worker_first_call_latency"];
const ACTOR_FIRST_CALL: &[&str] = &["scheduler.actor_first_call_latency"];
/// Why a cost no figure covers cannot come from a trace.
fn never_why(key: &str) -> &'static str {
    match key {
        "scheduler.sleep_overshoot" => {
            "a trace does not say what a call asked to sleep (a replay holds each recorded stretch, overshoot \
             included, so it does not act there)"
        }
        "scheduler.first_submit_cost" => "a process's first `.remote()` is one call: no figure resolves it",
        "scheduler.task_reply_cost" | "scheduler.idle_worker_cpu" => {
            "CPU a worker burns off its calls' stamps: Ray's task rows do not show it"
        }
        "scheduler.driver_slowdown_per_busy_worker" => "the share of a core a driver loses is no stamp's",
        k if k.starts_with("object_store.put") || k.starts_with("object_store.get") || k.contains("zero_copy") => {
            "a put or a get is inside a call's body: Ray's task rows do not split it out"
        }
        "object_store.transfer_latency" => "a lookup under a ms: below what a stamp resolves",
        "scheduler.placement_group_commit_latency" | "scheduler.placement_group_node_latency" => {
            "placement groups' stamps are not in the trace's task rows"
        }
        _ => "no figure of Ray's task rows covers it",
    }
}

/// The job of `store` that `job` names (the only one without it), as its hex id.
pub fn pick_job(store: &Store, dir: &Path, job: Option<&str>) -> Result<String, CalibrateError> {
    let known: Vec<&str> = store.jobs.values().map(|j| j.job_id.as_str()).collect();
    match job {
        Some(j) if known.contains(&j) => Ok(j.to_string()),
        Some(j) => Err(CalibrateError::UnknownJob { job: j.to_string(), jobs: list_or_none(&known) }),
        None => match known.as_slice() {
            [only] => Ok(only.to_string()),
            [] => Err(CalibrateError::NoJob { dir: dir.to_path_buf() }),
            _ => Err(CalibrateError::NameJob { dir: dir.to_path_buf(), jobs: known.join(", ") }),
        },
    }
}

fn list_or_none(known: &[&str]) -> String {
    if known.is_empty() {
        "none".into()
    } else {
        known.join(", ")
    }
}

/// Read the trace in `dir` and derive the costs of its job `job` (its only job without).
pub fn from_trace(dir: &Path, job: Option<&str>) -> Result<(Store, TraceCosts), CalibrateError> {
    let (store, _) = crate::observe::trace::read(dir, StoreLimits::default()).map_err(CalibrateError::Trace)?;
    let job = pick_job(&store, dir, job)?;
    let costs = from_store(&store, &job, &format!("{} job {job}", dir.display()));
    Ok((store, costs))
}

/// The costs `store`'s job `job` shows.
pub fn from_store(store: &Store, job: &str, source: &str) -> TraceCosts {
    // Each call's last attempt (a retried call's earlier attempts ran elsewhere).
    let tasks: Vec<&ObservedTask> =
        store.tasks.values().map(|e| e.last()).filter(|t| t.job_id == job && t.kind != "DRIVER_TASK").collect();
    let figures = figures::read(store, &tasks);
    let mut costs = costs_of(source, job, figures);
    costs.bodies = bodies::read(store, &tasks);
    costs
}

/// The reference machine's costs, by config path, as a config takes them.
fn reference_values() -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    let sched = serde_json::to_value(SchedulerConfig::default()).unwrap_or_default();
    let store = serde_json::to_value(ObjectStoreConfig::default()).unwrap_or_default();
    for (section, keys, values) in
        [("scheduler", CALIBRATED_SCHEDULER_COSTS, &sched), ("object_store", CALIBRATED_OBJECT_STORE_COSTS, &store)]
    {
        for k in keys {
            if let Some(v) = values.get(k) {
                out.insert(format!("{section}.{k}"), v.clone());
            }
        }
    }
    out
}

/// How an optional cost left unset reads (`scheduler.actor_first_call_latency`, the one
/// calibrated cost that may be).
const UNSET_TEXT: &str = "unset (worker_first_call_latency's)";

/// A reference value in µs (a duration) or as a number (a rate, a share).
fn reference_number(key: &str) -> f64 {
    match reference_values().get(key) {
        Some(serde_json::Value::String(s)) => {
            crate::config::units::parse_duration(s).map(|d| d.as_micros() as f64).unwrap_or(0.0)
        }
        Some(v) => v.as_f64().unwrap_or(0.0),
        None => 0.0,
    }
}

fn reference_sum(fields: &[&str]) -> f64 {
    fields.iter().map(|k| reference_number(k)).sum()
}

/// A cost's value as a config writes it (an unset one says so).
pub fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => UNSET_TEXT.to_string(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The costs the figures set, in the reference's proportions, and every other
/// calibrated cost as a named fallback.
fn costs_of(source: &str, job: &str, figures: Vec<Figure>) -> TraceCosts {
    let mut derived = Vec::new();
    for (i, f) in figures.iter().enumerate() {
        let reference = reference_sum(f.fields);
        for key in f.fields {
            let share = if reference > 0.0 { reference_number(key) / reference } else { 1.0 / f.fields.len() as f64 };
            let value = if key.ends_with("bandwidth") {
                format!("{}B", (f.value * share).round() as u64)
            } else {
                format!("{}us", (f.value * share).round().max(0.0) as u64)
            };
            derived.push(DerivedCost { key: key.to_string(), value, figure: i });
        }
    }
    let covered: BTreeMap<&str, usize> =
        figures.iter().enumerate().flat_map(|(i, f)| f.fields.iter().map(move |k| (*k, i))).collect();
    let fallbacks = reference_values()
        .into_iter()
        .filter(|(k, _)| !derived.iter().any(|d| d.key == *k))
        .map(|(key, v)| {
            let why = match covered.get(key.as_str()) {
                Some(_) => "its figure was not measured".to_string(),
                None => match figure_of(&key) {
                    Some((name, need)) => format!("the job shows no {name}: it needs {need}"),
                    None => never_why(&key).to_string(),
                },
            };
            Fallback { value: value_text(&v), key, why }
        })
        .collect();
    TraceCosts {
        source: source.to_string(),
        job: job.to_string(),
        figures,
        derived,
        fallbacks,
        bodies: bodies::Bodies::default(),
    }
}

/// The figure a cost would come from, and what the job must hold for it.
fn figure_of(key: &str) -> Option<(&'static str, &'static str)> {
    let needs: [(&[&str], &str, &str); 8] = [
        (LEASE, "lease", "10 normal tasks leased to a worker already up and idle"),
        (PUSH_AND_START, "push and start", "10 normal tasks on a worker's second call or later"),
        (SUBMIT, "submit loop", "a caller's loop of 20 task `.remote()`s"),
        (ACTOR_SUBMIT, "actor call submit loop", "a caller's loop of 20 actor-call `.remote()`s"),
        (
            WORKER_START,
            "worker start",
            "3 actor creations or first calls that started a process, or a worker's launch in Ray's worker table \
             (recorded by polling Ray, not by Event Export alone)",
        ),
        (TRANSFER, "transfer", "a call taking a return of 1 MB or more made on another node"),
        (FIRST_CALL, "first call", "2 task workers' first calls of a function that also ran later on a warm worker"),
        (ACTOR_FIRST_CALL, "actor's first call", "2 actors whose first call was submitted before their creation ended"),
    ];
    needs.iter().find(|(fields, _, _)| fields.contains(&key)).map(|(_, name, need)| (*name, *need))
}

impl TraceCosts {
    /// Each derived cost as `--set` would give it: the config takes them in order.
    pub fn overrides(&self) -> Vec<Override> {
        self.derived
            .iter()
            .map(|d| Override::parse(&format!("{}={}", d.key, d.value)).expect("a derived cost is a config path"))
            .collect()
    }

    /// The costs fragment `rayscope calibrate --out` writes: a config's `scheduler:` and
    /// `object_store:` sections with the costs the trace set, and each cost it could not
    /// determine as a comment naming the reference value it keeps.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Costs of the Ray cluster recorded in {} (rayscope calibrate).", self.source);
        let _ = writeln!(
            out,
            "# Use: rayscope simulate --replay DIR --costs THIS_FILE, or merge the sections into a config."
        );
        let _ = writeln!(out, "# Each figure is read between Ray's state stamps; its costs keep the reference");
        let _ = writeln!(out, "# machine's proportions ({}).", CALIBRATION.machine);
        for f in &self.figures {
            let _ = writeln!(out, "#   {}: {} over {} ({})", f.name, figure_text(f), f.samples, f.how);
        }
        for line in self.bodies.text() {
            let _ = writeln!(out, "# {line}");
        }
        for section in ["scheduler", "object_store"] {
            let derived: Vec<&DerivedCost> =
                self.derived.iter().filter(|d| d.key.starts_with(&format!("{section}."))).collect();
            let fallbacks: Vec<&Fallback> =
                self.fallbacks.iter().filter(|d| d.key.starts_with(&format!("{section}."))).collect();
            let _ = writeln!(out, "{section}:{}", if derived.is_empty() { " {}" } else { "" });
            for d in &derived {
                let field = &d.key[section.len() + 1..];
                let _ = writeln!(out, "  {field}: {}   # {}", d.value, self.figures[d.figure].name);
            }
            if !fallbacks.is_empty() {
                let _ = writeln!(out, "  # Not determined by this trace: the reference machine's value is kept.");
                for f in fallbacks {
                    let field = &f.key[section.len() + 1..];
                    let _ = writeln!(out, "  # {field}: {}   ({})", f.value, f.why);
                }
            }
        }
        out
    }

    /// A short account for the terminal: each figure, then the costs not determined.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "costs of {}:", self.source);
        if self.figures.is_empty() {
            let _ = writeln!(out, "  no figure: the job shows none of the costs cleanly");
        }
        for f in &self.figures {
            let set: Vec<String> = self
                .derived
                .iter()
                .filter(|d| f.fields.contains(&d.key.as_str()))
                .map(|d| format!("{} {}", d.key, d.value))
                .collect();
            let _ = writeln!(out, "  {} {} over {}: {}", f.name, figure_text(f), f.samples, set.join(", "));
        }
        for line in self.bodies.text() {
            let _ = writeln!(out, "  {line}");
        }
        let _ = writeln!(
            out,
            "  not determined ({}), kept at the reference machine's ({}):",
            self.fallbacks.len(),
            CALIBRATION.machine
        );
        for f in &self.fallbacks {
            let _ = writeln!(out, "    {} {}: {}", f.key, f.value, f.why);
        }
        out
    }
}

fn figure_text(f: &Figure) -> String {
    if f.fields.iter().any(|k| k.ends_with("bandwidth")) {
        format!("{:.1} MB/s", f.value / 1e6)
    } else {
        format!("{:.3} ms", f.value / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::rows::ObservedJob;
    use crate::observe::store::Change;

    fn store(jobs: &[&str]) -> Store {
        let mut s = Store::new(StoreLimits::default());
        for j in jobs {
            s.apply(&Change::Job(ObservedJob {
                job_id: (*j).into(),
                status: "SUCCEEDED".into(),
                ..Default::default()
            }));
        }
        s
    }

    #[test]
    fn the_job_is_the_only_one_or_the_one_named_and_an_error_lists_those_there_are() {
        let dir = Path::new("trace");
        assert_eq!(pick_job(&store(&["01000000"]), dir, None).unwrap(), "01000000");
        let two = store(&["01000000", "02000000"]);
        assert_eq!(pick_job(&two, dir, Some("02000000")).unwrap(), "02000000");
        let e = pick_job(&two, dir, None).unwrap_err().to_string();
        assert_eq!(e, "--trace trace: it holds several jobs: name one with --job (jobs: 01000000, 02000000)");
        let e = pick_job(&two, dir, Some("03000000")).unwrap_err().to_string();
        assert_eq!(e, "--job 03000000: the trace has no such job (jobs: 01000000, 02000000)");
        let e = pick_job(&store(&[]), dir, None).unwrap_err().to_string();
        assert!(e.contains("holds no job"), "{e}");
    }
}
