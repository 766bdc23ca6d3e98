//! Fidelity: the model against what real Ray did on this kind of machine.
//!
//! `scripts/ray-calibration/suite.py` runs workloads on real Ray and records each run;
//! this module puts every recorded workload to the model (`cases.rs`) and writes the
//! report `docs/fidelity.md` (`rayscope fidelity`): for each workload real Ray's
//! figure, the model's, the error against its bound, and what the model leaves out.
//!
//! Owns: reading the runs (`runs.rs`) and a fit's record (`fit.rs`), the
//! workload-to-model mapping and the bounds (`cases.rs`), the report, and its section
//! on what-ifs over a recorded job (`whatif.rs`: replays against Ray's runs on other
//! cluster shapes, recorded by `scripts/ray-whatif/whatif.py`). Sits above
//! `sim` (it runs the model), below `cli`.
//! Must never: tune a cost to a run (a fitted run is named in `runs/fit.json`'s
//! `fitted_on` and reported as such), or leave a measured workload out of the report.

pub mod cases;
pub mod fit;
pub mod runs;
pub mod whatif;

use crate::config::Override;
use cases::Prediction;
pub use fit::FitRecord;
pub use runs::{Run, RunsError};
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// One workload with one set of parameters: its runs on real Ray and the model's figure.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub workload: String,
    pub params: String,
    /// Runs of it on real Ray, and the median of their figures (seconds; of an even
    /// count, the mean of the middle two).
    pub runs: usize,
    pub real: f64,
    /// The lowest and highest of those figures: how far Ray's own runs disagree, which
    /// a model's error can be read against.
    pub real_low: f64,
    pub real_high: f64,
    /// The model's figure (None: the model has no part for it).
    pub model: Option<f64>,
    pub bound: f64,
    /// The smallest figure its runs can tell from nothing, where that is known
    /// (`cases::resolution`); a smaller real figure is not compared.
    pub resolution: Option<f64>,
    /// Whether a cost default was fitted to this row (else it is a hold-out).
    pub fitted: bool,
}

impl Row {
    /// (model − real) / real; none where real Ray measured nothing it can resolve (a
    /// transfer too small to tell from the call carrying it).
    pub fn error(&self) -> Option<f64> {
        if self.real <= self.resolution.unwrap_or(0.0) {
            return None;
        }
        self.model.map(|m| (m - self.real) / self.real)
    }
    pub fn within_bound(&self) -> bool {
        self.error().is_some_and(|e| e.abs() <= self.bound)
    }
    /// Ray's lowest and highest run against its median, (low, high) as shares; none of
    /// one run.
    pub fn spread(&self) -> Option<(f64, f64)> {
        (self.runs > 1 && self.real > 0.0)
            .then(|| ((self.real_low - self.real) / self.real, (self.real_high - self.real) / self.real))
    }
    /// Where real Ray's figure is below what its runs resolve: whether the model's is
    /// within that resolution of it too (Ray and the model cannot be told apart), which
    /// says nothing of a relative error.
    pub fn unresolved_alike(&self) -> bool {
        match (self.error(), self.model, self.resolution) {
            (None, Some(m), Some(res)) => (m - self.real).abs() <= res,
            _ => false,
        }
    }
    /// Whether the model's figure lies between Ray's lowest and highest run.
    pub fn within_spread(&self) -> bool {
        self.error().is_some() && self.model.is_some_and(|m| self.runs > 1 && self.real_low <= m && m <= self.real_high)
    }
}

/// The rows as JSON (`rayscope fidelity --format json`, shipped as `docs/fidelity.json`):
/// each row's fields with its error and whether that is within its bound, so a reader
/// (`fit.py`, `simulate`'s report through `config::calibration`) need not redo either.
pub fn rows_json(rows: &[Row]) -> String {
    #[derive(Serialize)]
    struct Judged<'a> {
        #[serde(flatten)]
        row: &'a Row,
        error: Option<f64>,
        within_bound: bool,
    }
    let judged: Vec<Judged> =
        rows.iter().map(|row| Judged { row, error: row.error(), within_bound: row.within_bound() }).collect();
    serde_json::to_string_pretty(&judged).expect("rows serialize") + "\n"
}

/// The median of `sorted` (ascending, not empty): of an even count, the mean of the
/// middle two. How a row's real figure is taken from its runs.
pub fn median(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

/// Why the report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum FidelityError {
    #[error(transparent)]
    Runs(#[from] RunsError),
    #[error("{0}")]
    Model(String),
    /// The model's figure for a run.
    #[error(transparent)]
    Predict(#[from] cases::PredictError),
    #[error("{0}: no recorded runs (run scripts/ray-calibration/suite.py all)")]
    Empty(String),
}

/// The costs the model runs with where they are not its defaults: a fit's record
/// (`--costs`, the costs someone fitted to their own machine's runs) and single settings
/// (`--set`, which win over the record's).
#[derive(Clone, Debug, Default)]
pub struct Costs {
    pub fit: Option<FitRecord>,
    pub set: Vec<Override>,
}

impl Costs {
    /// Every setting given to each model run, the record's first so a `--set` wins.
    pub fn overrides(&self) -> Vec<Override> {
        self.fit.iter().flat_map(|f| f.costs.iter().cloned()).chain(self.set.iter().cloned()).collect()
    }

    fn is_default(&self) -> bool {
        self.fit.is_none() && self.set.is_empty()
    }

    /// The command's flags that give these costs, each with a leading space.
    fn flags(&self) -> String {
        let mut out = String::new();
        if let Some(f) = &self.fit {
            let _ = write!(out, " --costs {}", f.path.display());
        }
        for o in &self.set {
            let _ = write!(out, " {o}");
        }
        out
    }

    /// What differs from the defaults, for the report's prose.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(f) = &self.fit {
            parts.push(format!(
                "the costs of the fit recorded in `{}` (those it found and held fixed)",
                f.path.display()
            ));
        }
        if !self.set.is_empty() {
            parts.push(self.set.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", "));
        }
        parts.join(" and ")
    }
}

/// Every recorded workload of `dir` put to the model (its config with `costs`), in the
/// suite's order. The rows marked fitted are the fit record's, or else those of
/// `dir/fit.json` (the record of the fit the defaults came from).
pub fn rows(dir: &Path, costs: &Costs) -> Result<(Vec<Run>, Vec<Row>), FidelityError> {
    let runs = runs::load(dir)?;
    let fitted_on = match &costs.fit {
        Some(f) => f.fitted_on.clone(),
        None => fit::fitted_on_in(dir)?,
    };
    let overrides = costs.overrides();
    let overrides = overrides.as_slice();
    if runs.is_empty() {
        return Err(FidelityError::Empty(dir.display().to_string()));
    }
    // Group repeated runs of the same workload and parameters, keeping first-seen order
    // within a workload and the suite's workload order overall. A run begun on a busy
    // machine is set aside (`busy`).
    // A run gives a figure to each of its rows (`cases::row_workloads`).
    let mut groups: Vec<(String, String, Vec<&Run>)> = Vec::new();
    for run in runs.iter().filter(|r| !busy(r)) {
        let label = run.params_label();
        for workload in cases::row_workloads(run) {
            match groups.iter_mut().find(|(w, p, _)| *w == workload && *p == label) {
                Some(g) => g.2.push(run),
                None => groups.push((workload, label.clone(), vec![run])),
            }
        }
    }
    groups.sort_by_key(|(w, _, members)| (workload_rank(w), sort_key(members[0])));
    let mut rows = Vec::new();
    // Each group's first run stands for it; a run that gives several rows is put to the
    // model once for all of them.
    let mut predicted: std::collections::HashMap<&str, Vec<(String, Prediction)>> = Default::default();
    for (workload, params, members) in groups {
        let mut figures = Vec::new();
        for run in &members {
            let figure = cases::real_figure(&workload, run)
                .ok_or_else(|| FidelityError::Model(format!("{}: the result has no figure to compare", run.file)))?;
            figures.push(figure);
        }
        figures.sort_by(f64::total_cmp);
        let real = median(&figures);
        let (real_low, real_high) = (figures[0], figures[figures.len() - 1]);
        let first = members[0];
        if !predicted.contains_key(first.file.as_str()) {
            let figures = cases::predict_rows(first, overrides)?;
            predicted.insert(&first.file, figures);
        }
        let prediction = predicted[first.file.as_str()].iter().find(|(w, _)| *w == workload).map(|(_, p)| *p);
        let model = match prediction {
            Some(Prediction::Model(s)) => Some(s),
            Some(Prediction::NotModeled) => None,
            None => return Err(FidelityError::Model(format!("{}: the model gave no {workload} figure", first.file))),
        };
        let key = format!("{workload} {params}");
        // Of several runs, the coarsest resolution.
        let resolution = members.iter().filter_map(|r| cases::resolution(r)).reduce(f64::max);
        rows.push(Row {
            resolution,
            fitted: fitted_on.contains(&key),
            bound: cases::bound(&workload),
            workload,
            params,
            runs: members.len(),
            real,
            real_low,
            real_high,
            model,
        });
    }
    Ok((runs, rows))
}

/// Whether `run` began while the machine was busy with other work: a 1-minute load
/// average above its cores (the suite waits for a quiet machine, but only so long).
/// Its figure is not used, and the report counts it.
pub fn busy(run: &Run) -> bool {
    run.load_before.is_some_and(|load| load > run.cores as f64)
}

const ORDER: &[&str] = &[
    "noop_tasks",
    "noop_submit",
    "actor_creation",
    "actor_calls",
    "object_local",
    "object_get",
    "object_transfer",
    "task_retries",
    "actor_restart",
    "node_death",
    "placement_group",
    "spillback",
    "seed_tree",
];

fn workload_rank(w: &str) -> usize {
    ORDER.iter().position(|o| *o == w).unwrap_or(ORDER.len())
}

/// Within a workload: by each numeric parameter, then the text ones.
fn sort_key(run: &Run) -> (Vec<String>, Vec<u64>) {
    let words = run.params.values().filter_map(|v| v.as_str().map(str::to_string)).collect();
    let numbers = run.params.values().filter_map(|v| v.as_f64().map(|f| (f * 1000.0) as u64)).collect();
    (words, numbers)
}

fn seconds(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.1} s")
    } else if s >= 1.0 {
        format!("{s:.3} s")
    } else {
        format!("{:.2} ms", s * 1000.0)
    }
}

/// The report, as Markdown: `docs/fidelity.md`.
pub fn report(dir_label: &str, costs: &Costs, runs: &[Run], rows: &[Row]) -> String {
    let mut out = String::new();
    let within = rows.iter().filter(|r| r.within_bound()).count();
    let modeled = rows.iter().filter(|r| r.error().is_some()).count();
    let unresolved = rows.iter().filter(|r| r.model.is_some() && r.error().is_none()).count();
    let versions: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.ray_version.as_str()).collect();
    let cores: std::collections::BTreeSet<u64> = runs.iter().map(|r| r.cores).collect();
    let cpus: std::collections::BTreeSet<&str> = runs.iter().filter_map(|r| r.cpu_model.as_deref()).collect();
    let first = runs.iter().map(|r| r.measured_at.as_str()).min().unwrap_or("");
    let last = runs.iter().map(|r| r.measured_at.as_str()).max().unwrap_or("");
    let _ = writeln!(out, "# Fidelity: the model against real Ray\n");
    if costs.is_default() {
        let _ = writeln!(
            out,
            "Generated by `rayscope fidelity --runs {dir_label} --out docs/fidelity.md` from the runs recorded \
             there; do not edit by hand (`tests/fidelity.rs` fails when this file is not what the command writes). \
             The same rows with their errors are `docs/fidelity.json` (`--format json --out docs/fidelity.json`): \
             `simulate`'s report quotes them for the workloads a config runs."
        );
    } else {
        let _ = writeln!(
            out,
            "Generated by `rayscope fidelity --runs {dir_label}{}` from the runs recorded there.",
            costs.flags()
        );
    }
    // The rows are one machine's: said before any figure, with the machine named.
    let _ = writeln!(
        out,
        "\n**One reference machine's record.** Every row below was measured on the machine its runs were made on \
         ({}{} cores), and the model ran with {}. Ray's own figures move from one machine to the next, even between \
         VMs of one kind, by more than these bounds (`scripts/ray-calibration/README.md`), so the rows hold the model \
         to this machine and promise nothing for another. A what-if on your own cluster takes its costs from a job \
         recorded there (`rayscope calibrate`, `rayscope simulate --replay`: docs/observe.md, \"What-ifs on a \
         recorded job\").",
        if cpus.is_empty() {
            String::new()
        } else {
            format!("{}, ", cpus.iter().copied().collect::<Vec<_>>().join(", "))
        },
        cores.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
        if costs.is_default() {
            format!(
                "the reference machine's costs (the shipped defaults: {})",
                crate::config::calibration::CALIBRATION.machine
            )
        } else {
            costs.describe()
        },
    );
    let set_aside = runs.iter().filter(|r| busy(r)).count();
    let _ = writeln!(
        out,
        "\nReal Ray {} on a machine of {} cores{}; {} runs, {first} to {last} (UTC). How the runs are made: \
         `scripts/ray-calibration/suite.py` and `seed_tree.py` (each run's JSON has the machine, the load \
         average and the command). {set_aside} runs began while the machine was busy (a 1-minute load average \
         above its cores) and are set aside. The model runs each workload on the same cluster shape with every \
         cost at its default{} (where Ray's one driver warmed up before it timed, the model's timed job, a \
         driver of its own, is taken as set up: `first_submit_cost` 0).\n",
        versions.into_iter().collect::<Vec<_>>().join(", "),
        cores.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
        // Figures from different CPUs are not comparable: a mixed set says so here.
        if cpus.is_empty() { String::new() } else { format!(" ({})", cpus.into_iter().collect::<Vec<_>>().join(", ")) },
        runs.len(),
        if costs.is_default() { String::new() } else { format!(" but {}", costs.describe()) },
    );
    let mut counts = vec![
        format!("{within} of {} workloads are within their bound", rows.len()),
        match modeled - within {
            1 => "1 is outside it".to_string(),
            n => format!("{n} are outside it"),
        },
    ];
    let unmodeled = rows.len() - modeled - unresolved;
    if unmodeled > 0 {
        counts.push(format!("{unmodeled} have no model yet"));
    }
    if unresolved > 0 {
        let alike = rows.iter().filter(|r| r.unresolved_alike()).count();
        counts.push(format!(
            "{unresolved} measured less than their runs resolve ({alike} with the model's figure within that \
             resolution of Ray's)"
        ));
    }
    let fitted = match &costs.fit {
        None => "a cost default was fitted to or measured from".to_string(),
        Some(f) => format!("the costs of `{}` were fitted to", f.path.display()),
    };
    let _ = writeln!(
        out,
        "**{}.** Bounds: 5 % for a hold-out workload, 0.5 % for a seed tree. `fit` marks a row {fitted}; every \
         other row is a hold-out.\n",
        counts.join("; ")
    );
    let outside: Vec<&Row> = rows.iter().filter(|r| r.error().is_some() && !r.within_bound()).collect();
    let in_spread = outside.iter().filter(|r| r.within_spread()).count();
    let _ = writeln!(
        out,
        "`runs' range` is real Ray's lowest and highest run against their median: how far Ray disagrees with \
         itself. {} outside {} bound, {in_spread} {} the model's figure within that range.\n",
        if outside.len() == 1 { "Of the 1 row".to_string() } else { format!("Of the {} rows", outside.len()) },
        if outside.len() == 1 { "its" } else { "their" },
        if in_spread == 1 { "has" } else { "have" },
    );
    let _ = writeln!(
        out,
        "| workload | parameters | what was measured | runs | real Ray | runs' range | model | error | bound | |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|---:|---|");
    for r in rows {
        let (model, error, verdict) = match (r.model, r.error()) {
            (Some(m), Some(e)) => (
                seconds(m),
                format!("{:+.1} %", e * 100.0),
                if r.within_bound() { "within" } else { "**outside**" }.to_string(),
            ),
            (Some(m), None) if r.unresolved_alike() => {
                (seconds(m), "—".into(), "below what the run resolves; the model within it".into())
            }
            (Some(m), None) => (seconds(m), "—".into(), "below what the run resolves".into()),
            _ => ("—".into(), "—".into(), "not modeled".into()),
        };
        let role = if r.fitted { " (fit)" } else { "" };
        let range = match r.spread() {
            Some((low, high)) => format!("{:+.1} … {:+.1} %", low * 100.0, high * 100.0),
            None => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {}{role} | {} | {} | {} | {} | {range} | {model} | {error} | {:.1} % | {verdict} |",
            r.workload,
            if r.params.is_empty() { "—" } else { &r.params },
            cases::measured(&r.workload),
            r.runs,
            seconds(r.real),
            r.bound * 100.0,
        );
    }
    let _ = writeln!(out, "\n## What the model leaves out\n");
    let mut seen = Vec::new();
    for r in rows {
        if !seen.contains(&r.workload) {
            seen.push(r.workload.clone());
            let _ = writeln!(out, "* `{}`: {}.", r.workload, cases::leaves_out(&r.workload));
        }
    }
    out
}
