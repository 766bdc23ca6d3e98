//! The observed cluster's own costs, read from a recorded job's timestamps
//! (`rayscope calibrate --trace DIR`), and what a replay's prediction is worth
//! (`bands.rs`).
//!
//! The model's cost defaults are one reference machine's (`config::calibration`,
//! `docs/fidelity.md`); a user's cluster is another machine. Ray's task rows stamp each
//! state a call entered (whole ms), and between those stamps lie the costs the model
//! charges: a lease, the push to the worker and its start, the caller's `.remote()`, a
//! worker's start, an argument's transfer. Each is a *figure* here: a sum of the model's
//! cost fields, measured over every call of the job that shows it cleanly. A figure
//! sets its fields in the reference machine's proportions (a stamp sees their sum, not
//! their split). A cost no figure covers, or whose figure the job does not show, keeps
//! the reference machine's value, named as such.
//!
//! Owns: deriving the figures from a trace's store, the costs fragment it writes
//! (`scheduler:` and `object_store:`, as a config takes them), reading a costs file
//! (`costs_file.rs`), and the error bands of a replay's prediction (`bands.rs`).
//! Must never: touch the model's behaviour (costs reach it only as config overrides), or
//! report a cost it did not measure as measured.

pub mod bands;
pub mod costs_file;

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
}

/// What each figure needs at least before it is taken: a whole-ms stamp resolves a
/// sub-ms cost only on average.
const MIN_CALLS: usize = 10;
const MIN_BURST_CALLS: usize = 20;
const MIN_STARTS: usize = 3;
/// No worker process starts faster than this (µs): a wait shorter than it found a worker
/// already up.
const MIN_START_US: f64 = 100_000.0;
/// An argument smaller than this moves in under a stamp's resolution on any network.
const MIN_TRANSFER_BYTES: u64 = 1_000_000;
/// Two submits of one caller this close (ms) are one loop's.
const BURST_GAP_MS: u64 = 2;

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
/// Task workers whose first call is compared with later calls of its function.
const MIN_FIRST_CALLS: usize = 2;

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

/// One call's stamps, as the figures read them.
struct Call<'a> {
    task: &'a ObservedTask,
    /// The worker it ran on: (node, pid).
    worker: Option<(&'a str, u32)>,
}

/// The costs `store`'s job `job` shows.
pub fn from_store(store: &Store, job: &str, source: &str) -> TraceCosts {
    // Each call's last attempt (a retried call's earlier attempts ran elsewhere).
    let tasks: Vec<&ObservedTask> =
        store.tasks.values().map(|e| e.last()).filter(|t| t.job_id == job && t.kind != "DRIVER_TASK").collect();
    let calls = with_workers(&tasks);
    let mut figures = Vec::new();
    let lease = lease_figure(&calls);
    if let Some(f) = &lease {
        figures.push(f.clone());
    }
    let push = push_figure(&calls);
    if let Some(f) = &push {
        figures.push(f.clone());
    }
    figures.extend(submit_figure(&calls, "NORMAL_TASK", "submit", SUBMIT));
    figures.extend(submit_figure(&calls, "ACTOR_TASK", "actor call submit", ACTOR_SUBMIT));
    let lease_us = lease.as_ref().map_or_else(|| reference_sum(LEASE), |f| f.value);
    let push_us = push.as_ref().map_or_else(|| reference_sum(PUSH_AND_START), |f| f.value);
    figures.extend(start_figure(&calls, lease_us, push_us).or_else(|| worker_table_start(store, &tasks)));
    figures.extend(transfer_figure(&calls, lease_us));
    figures.extend(first_call_figure(&calls));
    costs_of(source, job, figures)
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

fn value_text(v: &serde_json::Value) -> String {
    match v {
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
    TraceCosts { source: source.to_string(), job: job.to_string(), figures, derived, fallbacks }
}

/// The figure a cost would come from, and what the job must hold for it.
fn figure_of(key: &str) -> Option<(&'static str, &'static str)> {
    let needs: [(&[&str], &str, &str); 7] = [
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
    ];
    needs.iter().find(|(fields, _, _)| fields.contains(&key)).map(|(_, name, need)| (*name, *need))
}

/// The mean of `values` without their outliers (above the upper quartile by three
/// interquartile ranges and 2 ms: a call queued behind others). Not a median: whole-ms
/// stamps resolve a sub-ms cost only as the mean of many.
fn robust_mean(mut values: Vec<f64>) -> Option<(f64, usize)> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let q = |p: f64| values[((values.len() - 1) as f64 * p).round() as usize];
    let limit = q(0.75) + 3.0 * (q(0.75) - q(0.25)) + 2_000.0;
    let kept: Vec<f64> = values.into_iter().filter(|v| *v <= limit).collect();
    Some((kept.iter().sum::<f64>() / kept.len() as f64, kept.len()))
}

fn us(from_ms: u64, to_ms: u64) -> Option<f64> {
    to_ms.checked_sub(from_ms).map(|d| d as f64 * 1000.0)
}

/// Each call with its worker. Ray's row of an actor's creation names its worker's pid
/// but no node (Ray 2.60): it takes the node the other calls of that pid ran on, where
/// they ran on one; without it a creation that started a process was never a start.
fn with_workers<'a>(tasks: &[&'a ObservedTask]) -> Vec<Call<'a>> {
    let mut node_of_pid: BTreeMap<u32, Option<&str>> = BTreeMap::new();
    for t in tasks {
        if let (Some(node), Some(pid)) = (t.node_id.as_deref(), t.worker_pid) {
            let seen = node_of_pid.entry(pid).or_insert(Some(node));
            if *seen != Some(node) {
                *seen = None; // two nodes' processes share the pid: no guess
            }
        }
    }
    tasks
        .iter()
        .map(|t| {
            let node = t.node_id.as_deref().or_else(|| node_of_pid.get(&t.worker_pid?).copied().flatten());
            Call { task: t, worker: node.zip(t.worker_pid) }
        })
        .collect()
}

/// For each call, when the call before it on its worker ended (None: its worker's
/// first call of the job).
fn previous_end_on_worker<'a>(calls: &'a [Call<'a>]) -> Vec<(&'a Call<'a>, Option<u64>)> {
    let mut by_worker: BTreeMap<(&str, u32), Vec<&Call>> = BTreeMap::new();
    for c in calls {
        if let Some(w) = c.worker {
            by_worker.entry(w).or_default().push(c);
        }
    }
    let mut out = Vec::new();
    for list in by_worker.values_mut() {
        list.sort_by_key(|c| c.task.started_ms());
        let mut prev_end = None;
        for c in list.iter() {
            out.push((*c, prev_end));
            prev_end = c.task.ended_ms().or(prev_end);
        }
    }
    out
}

/// A lease on a worker already up and idle: PENDING_NODE_ASSIGNMENT to
/// SUBMITTED_TO_WORKER of a normal task whose worker's previous call had ended by then.
fn lease_figure(calls: &[Call]) -> Option<Figure> {
    let values: Vec<f64> = previous_end_on_worker(calls)
        .into_iter()
        .filter(|(c, _)| c.task.kind == "NORMAL_TASK")
        .filter_map(|(c, prev)| {
            let asked = c.task.event_ms("PENDING_NODE_ASSIGNMENT")?;
            let pushed = c.task.event_ms("SUBMITTED_TO_WORKER")?;
            (prev? <= asked).then_some(())?;
            us(asked, pushed)
        })
        .collect();
    figure(
        "lease",
        "PENDING_NODE_ASSIGNMENT to SUBMITTED_TO_WORKER of normal tasks leased to a worker already up and idle",
        LEASE,
        values,
        MIN_CALLS,
    )
}

/// The push to a running worker and its start of the call: SUBMITTED_TO_WORKER to
/// RUNNING of a normal task that is not its worker's first.
fn push_figure(calls: &[Call]) -> Option<Figure> {
    let values: Vec<f64> = previous_end_on_worker(calls)
        .into_iter()
        .filter(|(c, prev)| c.task.kind == "NORMAL_TASK" && prev.is_some())
        .filter_map(|(c, _)| us(c.task.event_ms("SUBMITTED_TO_WORKER")?, c.task.event_ms("RUNNING")?))
        .collect();
    figure(
        "push and start",
        "SUBMITTED_TO_WORKER to RUNNING of normal tasks on a worker's second call or later",
        PUSH_AND_START,
        values,
        MIN_CALLS,
    )
}

fn figure(
    name: &'static str,
    how: &'static str,
    fields: &'static [&'static str],
    values: Vec<f64>,
    min: usize,
) -> Option<Figure> {
    if values.len() < min {
        return None;
    }
    let (value, samples) = robust_mean(values)?;
    Some(Figure { name, how, fields, value, samples })
}

/// A caller's `.remote()` loop: the time per call over each run of at least
/// `MIN_BURST_CALLS` submits of `kind` no more than `BURST_GAP_MS` apart, all runs
/// together.
fn submit_figure(calls: &[Call], kind: &str, name: &'static str, fields: &'static [&'static str]) -> Option<Figure> {
    let mut by_caller: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for c in calls.iter().filter(|c| c.task.kind == kind) {
        if let (Some(parent), Some(at)) = (c.task.parent_task_id.as_deref(), c.task.submitted_ms()) {
            by_caller.entry(parent).or_default().push(at);
        }
    }
    let (mut span_ms, mut gaps, mut bursts) = (0u64, 0usize, 0usize);
    for times in by_caller.values_mut() {
        times.sort_unstable();
        let mut start = 0;
        for i in 1..=times.len() {
            let broken = i == times.len() || times[i] - times[i - 1] > BURST_GAP_MS;
            if broken {
                let n = i - start;
                if n >= MIN_BURST_CALLS {
                    span_ms += times[i - 1] - times[start];
                    gaps += n - 1;
                    bursts += 1;
                }
                start = i;
            }
        }
    }
    (gaps > 0 && span_ms > 0).then(|| Figure {
        name,
        how: "a caller's submits (first state's stamp) in loops of 20 or more, their time over their calls",
        fields,
        value: span_ms as f64 * 1000.0 / gaps as f64,
        samples: bursts,
    })
}

/// A worker process's start: an actor's creation (PENDING_NODE_ASSIGNMENT to RUNNING)
/// or a task worker's first call (to SUBMITTED_TO_WORKER) that took longer than a
/// lease on a worker already up, less the lease (and a creation's push and start).
/// The lower quartile: a lone start, as the model shares a node's cores among starts
/// itself.
fn start_figure(calls: &[Call], lease_us: f64, push_us: f64) -> Option<Figure> {
    let mut values = Vec::new();
    for (c, prev) in previous_end_on_worker(calls) {
        let Some(asked) = c.task.event_ms("PENDING_NODE_ASSIGNMENT") else { continue };
        let waited = match c.task.kind.as_str() {
            "ACTOR_CREATION_TASK" => {
                us(asked, c.task.event_ms("RUNNING").or(c.task.started_ms())?).map(|w| w - lease_us - push_us)
            }
            "NORMAL_TASK" if prev.is_none() => us(asked, c.task.event_ms("SUBMITTED_TO_WORKER")?).map(|w| w - lease_us),
            _ => None,
        };
        // Shorter than this took a worker already up (a prestarted or idle one): the first
        // lease of a driver onto its prestarted workers took 20 ms on a loaded 2-core VM,
        // which is no process start (a Python worker importing Ray takes hundreds of ms).
        if let Some(w) = waited.filter(|w| *w > (2.0 * lease_us + 5_000.0).max(MIN_START_US)) {
            values.push(w);
        }
    }
    if values.len() < MIN_STARTS {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let value = values[(values.len() - 1) / 4];
    Some(Figure {
        name: "worker start",
        how: "actor creations and task workers' first calls that started a process, less the lease: the lower \
              quartile (a lone start)",
        fields: WORKER_START,
        value,
        samples: values.len(),
    })
}

/// What a task worker's first call costs beyond its body (Ray loads the function, and
/// imports what it needs, on a worker's first call of it): each task worker's first
/// call, RUNNING to FINISHED, less the median of that function's calls on workers that
/// had run before. The median over the first calls that took longer than that (one
/// that did not shows no cost to read: a trace without any keeps the reference's).
fn first_call_figure(calls: &[Call]) -> Option<Figure> {
    let held = |c: &Call| us(c.task.event_ms("RUNNING").or(c.task.started_ms())?, c.task.ended_ms()?);
    let mut later: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut firsts = Vec::new();
    for (c, prev) in previous_end_on_worker(calls) {
        if c.task.kind != "NORMAL_TASK" {
            continue;
        }
        let Some(h) = held(c) else { continue };
        match prev {
            None => firsts.push((c.task.func_or_class_name.as_str(), h)),
            Some(_) => later.entry(c.task.func_or_class_name.as_str()).or_default().push(h),
        }
    }
    let mut extras: Vec<f64> = firsts
        .into_iter()
        .filter_map(|(f, h)| {
            let mut l = later.get(f)?.clone();
            l.sort_by(f64::total_cmp);
            Some(h - crate::fidelity::median(&l)).filter(|extra| *extra > 0.0)
        })
        .collect();
    if extras.len() < MIN_FIRST_CALLS {
        return None;
    }
    extras.sort_by(f64::total_cmp);
    Some(Figure {
        name: "first call",
        how: "each task worker's first call, RUNNING to FINISHED, less the median of its function's later calls: \
              the median",
        fields: FIRST_CALL,
        value: crate::fidelity::median(&extras),
        samples: extras.len(),
    })
}

/// A worker process's start as Ray's worker table has it, where the task rows show
/// none (every call ran on a prestarted worker, which no call waited for): launch to
/// registration of the task and actor workers on the nodes the job's calls ran on. The
/// lower quartile, as above; the prestarted ones start together, no more of them than
/// the node's cores.
fn worker_table_start(store: &Store, tasks: &[&ObservedTask]) -> Option<Figure> {
    let nodes: std::collections::BTreeSet<&str> = tasks.iter().filter_map(|t| t.node_id.as_deref()).collect();
    let mut values: Vec<f64> = store
        .workers
        .iter()
        .filter(|w| nodes.contains(w.node_id.as_str()))
        .filter_map(|w| w.start_ms())
        .map(|ms| ms as f64 * 1000.0)
        .filter(|us| *us >= MIN_START_US)
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(Figure {
        name: "worker start",
        how: "Ray's worker table: task and actor workers' launch to registration, on the job's nodes (its calls \
              waited for no start): the lower quartile",
        fields: WORKER_START,
        value: values[(values.len() - 1) / 4],
        samples: values.len(),
    })
}

/// An argument's transfer: a normal task that waited for its arguments
/// (PENDING_ARGS_AVAIL) until a call of the same caller on another node ended with a
/// return of `MIN_TRANSFER_BYTES` or more, then ran on its own node: its
/// PENDING_NODE_ASSIGNMENT to SUBMITTED_TO_WORKER beyond a lease is the pull. The
/// median rate.
fn transfer_figure(calls: &[Call], lease_us: f64) -> Option<Figure> {
    let mut rates = Vec::new();
    for c in calls.iter().filter(|c| c.task.kind == "NORMAL_TASK") {
        let (Some(ready), Some(pushed), Some(node)) = (
            c.task.event_ms("PENDING_NODE_ASSIGNMENT"),
            c.task.event_ms("SUBMITTED_TO_WORKER"),
            c.task.node_id.as_deref(),
        ) else {
            continue;
        };
        if c.task.submitted_ms().is_none_or(|s| s >= ready) {
            continue; // it never waited for an argument
        }
        // The producer the docs' rule names: the same caller's call that ended last by then.
        let producer = calls
            .iter()
            .filter(|p| p.task.parent_task_id == c.task.parent_task_id && p.task.task_id != c.task.task_id)
            .filter(|p| p.task.ended_ms().is_some_and(|e| e <= ready && ready - e <= 2))
            .max_by_key(|p| p.task.ended_ms());
        let Some(p) = producer else { continue };
        let bytes = p.task.return_bytes.unwrap_or(0);
        if bytes < MIN_TRANSFER_BYTES || p.task.node_id.as_deref() == Some(node) {
            continue;
        }
        let pull_us = (pushed as f64 - ready as f64) * 1000.0 - lease_us;
        if pull_us > 0.0 {
            rates.push(bytes as f64 / (pull_us / 1e6));
        }
    }
    if rates.is_empty() {
        return None;
    }
    rates.sort_by(f64::total_cmp);
    let value = crate::fidelity::median(&rates);
    Some(Figure {
        name: "transfer",
        how: "PENDING_NODE_ASSIGNMENT to SUBMITTED_TO_WORKER, beyond a lease, of calls whose argument of 1 MB or \
              more was made on another node: the median rate",
        fields: TRANSFER,
        value,
        samples: rates.len(),
    })
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

    fn first_call(id: &str, pid: u32, asked: u64, pushed: u64) -> ObservedTask {
        ObservedTask {
            task_id: id.into(),
            job_id: "01000000".into(),
            kind: "NORMAL_TASK".into(),
            state: "FINISHED".into(),
            node_id: Some("n".into()),
            worker_pid: Some(pid),
            events: vec![
                ("PENDING_NODE_ASSIGNMENT".into(), asked),
                ("SUBMITTED_TO_WORKER".into(), pushed),
                ("RUNNING".into(), pushed + 1),
                ("FINISHED".into(), pushed + 150),
            ],
            start_time_ms: Some(pushed + 1),
            end_time_ms: Some(pushed + 150),
            ..Default::default()
        }
    }

    /// A job whose calls all ran on the two workers its node prestarted shows no start
    /// in its task rows; Ray's worker table still has those two workers' launches (0.89
    /// and 1.37 s on a loaded 2-core VM, Ray 2.60), and a third worker on a node the job
    /// never used is not read.
    #[test]
    fn a_job_on_prestarted_workers_reads_its_start_from_the_worker_table() {
        use crate::observe::workers::ObservedWorker;
        let mut store = Store::default();
        store.apply(&Change::Job(ObservedJob { job_id: "01000000".into(), ..Default::default() }));
        for (i, pid) in [(0u32, 1u32), (1, 2)] {
            let mut t = first_call(&format!("{i:x}"), pid, 100, 101);
            t.task_id = format!("{:08x}", i + 1);
            store.apply(&Change::Task(t));
        }
        let costs = from_store(&store, "01000000", "t");
        assert!(costs.figures.iter().all(|f| f.name != "worker start"), "no start without the table");
        let worker = |id: &str, node: &str, launch: u64, launched: u64| ObservedWorker {
            worker_id: id.into(),
            node_id: node.into(),
            worker_type: "WORKER".into(),
            launch_ms: Some(launch),
            launched_ms: Some(launched),
            ..Default::default()
        };
        for w in [worker("a1", "n", 1_000, 1_890), worker("a2", "n", 1_000, 2_372), worker("a3", "other", 0, 100_000)] {
            store.apply(&Change::Worker(w));
        }
        let costs = from_store(&store, "01000000", "t");
        let start = costs.figures.iter().find(|f| f.name == "worker start").expect("read from the table");
        assert_eq!((start.value, start.samples), (890_000.0, 2), "{start:?}");
        assert!(start.how.contains("worker table"), "{}", start.how);
    }

    /// A 6-CPU head on a loaded 2-core VM (Ray 2.60): the driver's first leases reached
    /// its two prestarted workers 20 and 23 ms after asking, and four workers started
    /// for it took 1.8 to 4.0 s. The prestarted ones are no starts: counted, the lower
    /// quartile made a worker start 22 ms.
    #[test]
    fn a_workers_first_call_costs_what_it_took_beyond_its_functions_later_calls() {
        // Two workers: each first call ran 226 and 260 ms, the later ones 150 ms.
        let mut tasks = Vec::new();
        for (pid, first_ms) in [(1u32, 226u64), (2, 260)] {
            let mut t = first_call(&format!("f{pid}"), pid, 100, 101);
            t.func_or_class_name = "leaf".into();
            t.events[3].1 = 102 + first_ms;
            t.end_time_ms = Some(102 + first_ms);
            tasks.push(t);
            for k in 0..3u64 {
                let mut later = first_call(&format!("l{pid}{k}"), pid, 100, 500 + 200 * k);
                later.func_or_class_name = "leaf".into();
                later.events[3].1 = 501 + 200 * k + 150;
                later.end_time_ms = Some(501 + 200 * k + 150);
                tasks.push(later);
            }
        }
        let calls: Vec<Call> =
            tasks.iter().map(|t| Call { task: t, worker: Some(("n", t.worker_pid.unwrap())) }).collect();
        let f = first_call_figure(&calls).expect("two first calls");
        assert_eq!((f.samples, f.fields), (2, FIRST_CALL), "{f:?}");
        assert!((f.value - 93_000.0).abs() < 1.0, "the median of 76 and 110 ms: {f:?}");
        // One worker's first call alone is not a figure.
        let one: Vec<Call> = calls.iter().filter(|c| c.task.worker_pid == Some(1)).map(|c| Call { ..*c }).collect();
        assert_eq!(first_call_figure(&one), None);
    }

    #[test]
    fn a_lease_onto_a_prestarted_worker_is_no_worker_start() {
        let tasks = [
            first_call("a", 1, 316, 336),
            first_call("b", 2, 316, 339),
            first_call("c", 3, 316, 2113),
            first_call("d", 4, 316, 2739),
            first_call("e", 5, 318, 3804),
            first_call("f", 6, 319, 4319),
        ];
        let calls: Vec<Call> =
            tasks.iter().map(|t| Call { task: t, worker: Some(("n", t.worker_pid.unwrap())) }).collect();
        let f = start_figure(&calls, 890.0, 800.0).expect("four starts");
        assert_eq!(f.samples, 4, "{f:?}");
        assert!((f.value - (1_797_000.0 - 890.0)).abs() < 1.0, "the lowest of four: {f:?}");
    }

    /// An actor tree on a loaded 2-core VM (Ray 2.60): the second child's creation waited
    /// 3.1 s for a process, and two task workers started for its calls 3.2 s each. Ray's
    /// row of the creation has no node: read by its node alone, the creation was no
    /// start and the job showed two, too few for the figure.
    #[test]
    fn an_actor_creation_without_a_node_is_read_on_its_pids_node() {
        let mut creation = first_call("c", 7, 1_119, 0);
        creation.kind = "ACTOR_CREATION_TASK".into();
        creation.node_id = None;
        creation.events =
            vec![("PENDING_NODE_ASSIGNMENT".into(), 1_119), ("RUNNING".into(), 4_218), ("FINISHED".into(), 4_473)];
        creation.start_time_ms = Some(4_218);
        creation.end_time_ms = Some(4_473);
        let mut method = first_call("m", 7, 4_473, 4_474);
        method.kind = "ACTOR_TASK".into();
        let tasks = [creation, method, first_call("s1", 8, 6_246, 9_488), first_call("s2", 9, 6_516, 9_754)];
        let refs: Vec<&ObservedTask> = tasks.iter().collect();
        let calls = with_workers(&refs);
        assert_eq!(calls[0].worker, Some(("n", 7)), "the creation's node is its pid's");
        let f = start_figure(&calls, 890.0, 800.0).expect("three starts");
        assert_eq!(f.samples, 3, "{f:?}");
    }

    #[test]
    fn a_mean_of_whole_ms_stamps_keeps_their_resolution_and_drops_a_queued_call() {
        // 0 and 1 ms stamps of a 0.25 ms cost, and one call queued 50 ms.
        let mut values = vec![0.0, 0.0, 0.0, 1_000.0, 0.0, 0.0, 0.0, 1_000.0];
        values.push(50_000.0);
        let (mean, kept) = robust_mean(values).unwrap();
        assert_eq!((mean, kept), (250.0, 8));
    }
}
