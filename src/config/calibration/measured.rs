//! How far the model was from real Ray on the recorded workloads like a config's: the
//! error a what-if answer carries, quoted from `docs/fidelity.json`.
//!
//! `rayscope fidelity --format json --out docs/fidelity.json` writes the rows of the
//! fidelity report (the model against the runs in `scripts/ray-calibration/runs/`), and
//! `tests/fidelity.rs` fails when the file is not what the command writes now; the
//! binary carries the file as it was built. A config's workloads name the recorded
//! workloads that measured the same mechanisms (a `fan_out`: the no-op task runs and
//! spillback; returns put into the store: the object runs; a node-killing fault: node
//! death), and the report gives their errors.
//!
//! Owns: which recorded workloads stand for a config, and the summary of their rows.
//! Must never: compute a model figure (it reads the shipped rows), or hide a workload
//! whose rows are outside their bound.

use super::super::replay::ReplayKind;
use super::super::schema::{Config, WorkloadConfig};
use super::super::workloads::FaultConfig;
use serde::{Deserialize, Serialize};

/// The fidelity report's rows, as built.
const ROWS_JSON: &str = include_str!("../../../docs/fidelity.json");

/// One recorded workload's rows, against a config: how far the model was from Ray.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    /// The suite's name for it (`docs/fidelity.md`), e.g. `noop_tasks`.
    pub workload: &'static str,
    /// Its rows (sizes or shapes) with a figure to compare.
    pub rows: usize,
    /// The model's lowest and highest error against Ray's median, as shares.
    pub error_low: f64,
    pub error_high: f64,
    /// Of its rows, how many are outside their bound, and that bound (a share).
    pub outside: usize,
    pub bound: f64,
}

impl Measured {
    /// One line of a report: the workload, its rows, the errors' span and those outside.
    pub fn line(&self) -> String {
        let rows = if self.rows == 1 { "row " } else { "rows" };
        let span = if self.rows == 1 {
            format!("{:+.1} %", self.error_high * 100.0)
        } else {
            format!("{:+.1} to {:+.1} %", self.error_low * 100.0, self.error_high * 100.0)
        };
        let outside = match self.outside {
            0 => String::new(),
            n => format!(", {n} outside their {:.1} % bound", self.bound * 100.0),
        };
        format!("{:<16} {:>2} {rows}  {span}{outside}", self.workload, self.rows)
    }
}

/// What the lines of [`Measured::line`] are, for the line above them.
pub const MEASURED_HEADING: &str =
    "the model against Ray's median, on the recorded workloads like this run's (docs/fidelity.md)";

/// A row of `docs/fidelity.json`: only what the summary reads.
#[derive(Deserialize)]
struct Row {
    workload: String,
    error: Option<f64>,
    within_bound: bool,
    bound: f64,
}

/// The suite's workloads, in the report's order, that measured what `cfg` runs (see
/// the module note), each with its rows' errors. Empty where the shipped rows cannot be
/// read, which `tests/fidelity.rs` rules out for a released build.
pub fn measured_for(cfg: &Config) -> Vec<Measured> {
    let Ok(rows) = serde_json::from_str::<Vec<Row>>(ROWS_JSON) else {
        return Vec::new();
    };
    let wanted = workloads_like(cfg);
    let mut out: Vec<Measured> = Vec::new();
    for row in &rows {
        let (Some(workload), Some(error)) = (wanted.iter().find(|w| **w == row.workload), row.error) else {
            continue;
        };
        let i = match out.iter().position(|m| m.workload == *workload) {
            Some(i) => i,
            None => {
                out.push(Measured {
                    workload,
                    rows: 0,
                    error_low: error,
                    error_high: error,
                    outside: 0,
                    bound: row.bound,
                });
                out.len() - 1
            }
        };
        let m = &mut out[i];
        m.rows += 1;
        m.error_low = m.error_low.min(error);
        m.error_high = m.error_high.max(error);
        m.outside += usize::from(!row.within_bound);
        m.bound = m.bound.max(row.bound);
    }
    out
}

/// The recorded workloads that measured what `cfg`'s workloads and faults do.
fn workloads_like(cfg: &Config) -> Vec<&'static str> {
    let mut out = Vec::new();
    for w in &cfg.workloads {
        like_workload(w, &mut out);
    }
    if super::largest_put(cfg) > cfg.object_store.inline_threshold.0 {
        out.extend(["object_local", "object_get", "object_transfer"]);
    }
    for fault in &cfg.faults {
        match fault {
            FaultConfig::KillNode { .. } => out.push("node_death"),
            FaultConfig::KillActor { .. } => out.push("actor_restart"),
            FaultConfig::TaskFailures { .. } => out.push("task_retries"),
            _ => {}
        }
    }
    out
}

fn like_workload(w: &WorkloadConfig, out: &mut Vec<&'static str>) {
    const TASKS: [&str; 3] = ["noop_tasks", "noop_submit", "spillback"];
    const ACTORS: [&str; 2] = ["actor_creation", "actor_calls"];
    match w {
        WorkloadConfig::FlowInsight(_) => out.push("seed_tree"),
        WorkloadConfig::FanOut(_) => out.extend(TASKS),
        WorkloadConfig::ActorPool(_) => out.extend(ACTORS),
        WorkloadConfig::Training(_) => out.extend(["placement_group"].into_iter().chain(ACTORS)),
        WorkloadConfig::Replay(r) => {
            out.extend(TASKS);
            if r.job.calls.iter().any(|c| c.kind == ReplayKind::ActorCreation) {
                out.extend(ACTORS);
            }
        }
        WorkloadConfig::JobMix(m) => m.templates.iter().for_each(|t| like_workload(&t.workload, out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(yaml: &str) -> Config {
        crate::config::load_str(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn names(m: &[Measured]) -> Vec<&'static str> {
        m.iter().map(|m| m.workload).collect()
    }

    #[test]
    fn the_shipped_rows_are_read() {
        let rows: Vec<Row> = serde_json::from_str(ROWS_JSON).expect("docs/fidelity.json is the rows' JSON");
        assert!(rows.len() > 40, "{} rows", rows.len());
        // Every recorded workload is quoted for some config.
        let c = cfg("workloads:\n  - {kind: flow_insight}\n  - {kind: fan_out, tasks: 1, output_size: 1MiB}\n  \
             - {kind: training, workers: 1, bundle_gpu: 0}\nfaults:\n  - {kind: kill_node, at: 1s, node_type: ray.head.default}\n  \
             - {kind: kill_actor, at: 1s, class: TrainWorker}\n  - {kind: task_failures, at: 1s, probability: 0.1}\n");
        let quoted = names(&measured_for(&c));
        for r in &rows {
            assert!(quoted.contains(&r.workload.as_str()), "{} is quoted for no config", r.workload);
        }
    }

    #[test]
    fn a_config_is_quoted_the_workloads_that_measured_what_it_runs() {
        let c = cfg("workloads:\n  - {kind: fan_out, tasks: 10}\n");
        assert_eq!(names(&measured_for(&c)), ["noop_tasks", "noop_submit", "spillback"]);
        let c =
            cfg("workloads:\n  - {kind: fan_out, tasks: 10, output_size: 1MiB}\n  - {kind: actor_pool, actors: 2}\n\
             faults:\n  - {kind: kill_node, at: 5s, node_type: ray.head.default}\n");
        assert_eq!(
            names(&measured_for(&c)),
            [
                "noop_tasks",
                "noop_submit",
                "actor_creation",
                "actor_calls",
                "object_local",
                "object_get",
                "object_transfer",
                "node_death",
                "spillback",
            ]
        );
        let c = cfg("workloads:\n  - kind: job_mix\n    arrivals_per_minute: 1\n    until: 1m\n    templates:\n\
             \x20     - workload: {kind: actor_pool, actors: 1}\n");
        assert_eq!(names(&measured_for(&c)), ["actor_creation", "actor_calls"], "a template's kind counts");
    }

    #[test]
    fn each_summary_spans_its_rows_errors_and_counts_those_outside() {
        let rows: Vec<Row> = serde_json::from_str(ROWS_JSON).expect("the rows");
        let c = cfg("workloads:\n  - {kind: fan_out, tasks: 10}\n");
        for m in measured_for(&c) {
            let mine: Vec<&Row> = rows.iter().filter(|r| r.workload == m.workload && r.error.is_some()).collect();
            assert_eq!(m.rows, mine.len(), "{}", m.workload);
            assert!(mine.iter().any(|r| r.error == Some(m.error_low)), "{}: its lowest error", m.workload);
            assert!(mine.iter().any(|r| r.error == Some(m.error_high)), "{}: its highest error", m.workload);
            assert!(m.error_low <= m.error_high);
            let outside = mine.iter().filter(|r| r.error.is_some_and(|e| e.abs() > r.bound)).count();
            assert_eq!(m.outside, outside, "{}", m.workload);
        }
    }
}
