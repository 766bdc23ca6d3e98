//! `simulate --sweep KEY=V1,V2,...`: one run per value of one setting, side by side.
//!
//! Owns: the comparison a capacity planner reads (makespan per job, CPU utilization per
//! node type, spillbacks, failures, peak pending work), as a text table and as JSON with
//! stable keys. Must never: run anything itself beyond handing each config to
//! [`super::simulate`], or reorder runs (the table follows the order of the values).

use super::report::Report;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One column of the table: the value that was set, and what came of it.
#[derive(Clone, Debug, Serialize)]
pub struct SweepRun {
    pub value: String,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    pub tasks_finished: u64,
    pub tasks_failed: u64,
    pub tasks_retried: u64,
    pub spillbacks: u64,
    pub oom_kills: u64,
    pub node_failures: u64,
    pub peak_pending_tasks: u64,
    pub jobs: Vec<super::report::JobReport>,
    pub utilization: Vec<super::report::NodeTypeUtilization>,
    pub event_log_sha256: String,
    /// What this run's config asks beyond the calibration, one reason each; in JSON the
    /// one line they make (see [`Report`]).
    #[serde(
        rename = "calibration_warning",
        serialize_with = "crate::config::calibration::serialize_warning",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub calibration_beyond: Vec<String>,
}

impl SweepRun {
    pub fn new(value: &str, r: &Report) -> SweepRun {
        SweepRun {
            value: value.to_string(),
            sim_seconds: r.sim_seconds,
            wall_seconds: r.wall_seconds,
            tasks_finished: r.tasks_finished,
            tasks_failed: r.tasks_failed,
            tasks_retried: r.tasks_retried,
            spillbacks: r.spillbacks,
            oom_kills: r.oom_kills,
            node_failures: r.node_failures,
            peak_pending_tasks: r.peak_pending_tasks,
            jobs: r.jobs.clone(),
            utilization: r.utilization.clone(),
            event_log_sha256: r.event_log_sha256.clone(),
            calibration_beyond: r.calibration_beyond.clone(),
        }
    }
}

/// Every run of one sweep.
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    /// The dotted config path that was varied.
    pub key: String,
    pub seed: u64,
    /// Where the cost defaults come from (see [`Report`]).
    pub calibration: String,
    /// How far the model was from real Ray on the recorded workloads like the runs'
    /// (each workload once, from the first run that has it; see [`Report`]).
    pub measured: Vec<crate::config::calibration::Measured>,
    pub runs: Vec<SweepRun>,
}

impl Sweep {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("sweep serializes")
    }

    /// Metrics down, values across.
    pub fn to_text(&self) -> String {
        let mut rows: Vec<(String, Vec<String>)> = Vec::new();
        let mut row = |label: String, cell: &dyn Fn(&SweepRun) -> String| {
            rows.push((label, self.runs.iter().map(cell).collect()));
        };
        row("virtual time (s)".into(), &|r| format!("{:.1}", r.sim_seconds));
        row("tasks finished".into(), &|r| r.tasks_finished.to_string());
        row("tasks failed".into(), &|r| r.tasks_failed.to_string());
        row("tasks retried".into(), &|r| r.tasks_retried.to_string());
        row("spillbacks".into(), &|r| r.spillbacks.to_string());
        row("OOM kills".into(), &|r| r.oom_kills.to_string());
        row("node failures".into(), &|r| r.node_failures.to_string());
        row("peak pending tasks".into(), &|r| r.peak_pending_tasks.to_string());
        let node_types: BTreeSet<String> =
            self.runs.iter().flat_map(|r| r.utilization.iter().map(|u| u.node_type.clone())).collect();
        for t in node_types {
            let label = format!("CPU util {t}");
            row(label, &|r| {
                r.utilization
                    .iter()
                    .find(|u| u.node_type == t)
                    .map_or("-".into(), |u| format!("{:.1}% of {}", u.cpu_utilization * 100.0, u.nodes))
            });
        }
        // Job ids are assigned in submission order, so the same id names the same job
        // in every run of one config.
        let jobs: BTreeSet<(String, String)> =
            self.runs.iter().flat_map(|r| r.jobs.iter().map(|j| (j.id.clone(), j.name.clone()))).collect();
        for (id, name) in jobs {
            row(format!("makespan {id} {name} (s)"), &|r| {
                r.jobs.iter().find(|j| j.id == id).map_or("-".into(), |j| match j.makespan {
                    Some(m) => format!("{m:.1}"),
                    None => j.status.to_lowercase(),
                })
            });
        }

        let label_width = rows.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0).max(self.key.len());
        let widths: Vec<usize> = (0..self.runs.len())
            .map(|i| {
                rows.iter()
                    .map(|(_, cells)| cells[i].chars().count())
                    .chain([self.runs[i].value.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut s = String::new();
        let _ = writeln!(s, "rayscope sweep over {} (seed {})", self.key, self.seed);
        let _ = writeln!(s, "  costs calibrated: {}", self.calibration);
        if !self.measured.is_empty() {
            let _ = writeln!(s, "  measured on Ray: {}:", crate::config::calibration::MEASURED_HEADING);
            for m in &self.measured {
                let _ = writeln!(s, "    {}", m.line());
            }
        }
        // One line per reason, saying which values ask for it: a reason every run shares
        // (the cluster's size, when the sweep is over something else) is said once.
        let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
        for r in &self.runs {
            for reason in &r.calibration_beyond {
                match reasons.iter_mut().find(|(text, _)| *text == reason.as_str()) {
                    Some((_, values)) => values.push(r.value.as_str()),
                    None => reasons.push((reason.as_str(), vec![r.value.as_str()])),
                }
            }
        }
        for (reason, values) in reasons {
            let line = crate::config::calibration::warning_of(&[reason.to_string()]).unwrap_or_default();
            let which = if values.len() == self.runs.len() {
                "every value".to_string()
            } else {
                format!("from {}={}", self.key, values.join(", "))
            };
            let _ = writeln!(s, "  WARNING: {line} ({which})");
        }
        let _ = write!(s, "  {:<label_width$}", self.key);
        for (run, w) in self.runs.iter().zip(&widths) {
            let _ = write!(s, "  {:>w$}", run.value);
        }
        s.push('\n');
        for (label, cells) in &rows {
            let _ = write!(s, "  {label:<label_width$}");
            for (cell, w) in cells.iter().zip(&widths) {
                let _ = write!(s, "  {cell:>w$}");
            }
            s.push('\n');
        }
        s
    }
}
