//! The worker-start figure: how long Ray took to start a worker process, read from the
//! job's calls that waited for one, else from Ray's worker table, each start as it would
//! take with no task worker busy beside it (the model slows a start by those itself).
//!
//! Owns: which starts are read and how they are summarised. Must never: read anything
//! but the job's rows and the worker table (as `super`).

use super::{previous_end_on_worker, us, Call};
use crate::calibrate::{Figure, WORKER_START};
use crate::config::DRIVER_SLOWDOWN_PER_BUSY_WORKER;
use crate::observe::rows::ObservedTask;
use crate::observe::store::Store;

/// Starts a job must show in its calls before the figure is read from them.
const MIN_STARTS: usize = 3;
/// No worker process starts faster than this (µs): a wait shorter than it found a worker
/// already up.
const MIN_START_US: f64 = 100_000.0;

/// A worker process's start: an actor's creation (PENDING_NODE_ASSIGNMENT to RUNNING)
/// or a task worker's first call (to SUBMITTED_TO_WORKER) that took longer than a
/// lease on a worker already up, less the lease (and a creation's push and start), as
/// it would have taken beside no busy task worker ([`alone`]). The lower quartile: a
/// lone start, as the model shares a node's cores among starts itself.
pub(super) fn start_figure(calls: &[Call], lease_us: f64, push_us: f64) -> Option<Figure> {
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
            let busy = c.task.node_id.as_deref().map_or(0, |node| busy_on(calls.iter().map(|c| c.task), node, asked));
            values.push(alone(w, busy));
        }
    }
    if values.len() < MIN_STARTS {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let value = values[(values.len() - 1) / 4];
    Some(Figure {
        name: "worker start",
        how: "actor creations and task workers' first calls that started a process, less the lease, each as it \
              would take beside no busy task worker: the lower quartile (a lone start)",
        fields: WORKER_START,
        value,
        samples: values.len(),
    })
}

/// How many of `tasks` (normal tasks) ran on `node` at `at_ms`, from SUBMITTED_TO_WORKER
/// to their end: the task workers busy beside a start launched then.
pub(super) fn busy_on<'a>(tasks: impl Iterator<Item = &'a ObservedTask>, node: &str, at_ms: u64) -> u32 {
    let ran = |t: &ObservedTask| Some((t.event_ms("SUBMITTED_TO_WORKER")?, t.ended_ms()?));
    tasks
        .filter(|t| t.kind == "NORMAL_TASK" && t.node_id.as_deref() == Some(node))
        .filter_map(ran)
        .filter(|&(from, to)| from <= at_ms && at_ms < to)
        .count() as u32
}

/// A start that took `took` µs beside `busy` busy task workers, as it would take alone:
/// the model slows a start by `scheduler.driver_slowdown_per_busy_worker` (the reference
/// machine's, which a costs fragment leaves as it is) for each
/// (`sim/raylet/node_cpu/processes.rs`), so a figure read beside them would be slowed
/// twice.
pub(super) fn alone(took: f64, busy: u32) -> f64 {
    took / (1.0 + DRIVER_SLOWDOWN_PER_BUSY_WORKER * f64::from(busy))
}

/// A worker process's start as Ray's worker table has it, where the task rows show
/// none (every call ran on a prestarted worker, which no call waited for): launch to
/// registration of the task and actor workers on the nodes the job's calls ran on: the
/// median. The prestarted ones start together, no more of them than the node's cores,
/// so each is a lone start in the model's terms, and the lower quartile of a pair would
/// keep only the luckier one: on a 2-core VM (Ray 2.60, six recordings of
/// 2026-12-02) the pairs took 399 and 618, 583 and 727, 851 and 883 ms, where starts
/// during the job on 6 CPUs took 510–820 ms.
pub(super) fn worker_table_start(store: &Store, tasks: &[&ObservedTask]) -> Option<Figure> {
    let nodes: std::collections::BTreeSet<&str> = tasks.iter().filter_map(|t| t.node_id.as_deref()).collect();
    let mut values: Vec<f64> = store
        .workers
        .iter()
        .filter(|w| nodes.contains(w.node_id.as_str()))
        .filter_map(|w| {
            let took = w.start_ms()? as f64 * 1000.0;
            let busy = w.launch_ms.map_or(0, |at| busy_on(tasks.iter().copied(), &w.node_id, at));
            Some(alone(took, busy))
        })
        .filter(|us| *us >= MIN_START_US)
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(Figure {
        name: "worker start",
        how: "Ray's worker table: task and actor workers' launch to registration, on the job's nodes (its calls \
              waited for no start), each as it would take beside no busy task worker: the median",
        fields: WORKER_START,
        value: crate::fidelity::median(&values),
        samples: values.len(),
    })
}
