//! The recorded runs of real Ray: `scripts/ray-calibration/runs/suite/*.json` (one run
//! of one workload each, written by `suite.py`) and `runs/seed-tree-*.json` (the seed's
//! program, written by `seed_tree.py`), read into one shape.
//!
//! Owns: parsing a run file, with an error that names the file and the field.
//! Must never: change or drop a figure (a run that cannot be read is an error, not a gap).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why the recorded runs cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    #[error("{path}: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("{path}: field `{field}`: {message}")]
    Field { path: PathBuf, field: String, message: String },
    /// Figures from different CPUs are not comparable (10,000 no-op tasks on 2 CPUs took
    /// 4.55 s on an AMD EPYC VM and 5.79 s on an Intel Xeon VM of the same size).
    #[error(
        "{path}: runs from {} CPUs, whose figures are not comparable: {}; keep each CPU's runs in a \
         folder of its own (as runs/epyc/)",
        cpus.len(),
        cpus.iter()
            .map(|(cpu, n, file)| format!("{cpu} ({n} run{}, as {file})", if *n == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join(", ")
    )]
    MixedCpus { path: PathBuf, cpus: Vec<(String, usize, String)> },
}

/// One run of one workload on real Ray.
#[derive(Clone, Debug)]
pub struct Run {
    /// The file it was read from, relative to the runs folder.
    pub file: String,
    pub workload: String,
    /// The workload's parameters (for a seed tree: its shape, the tree itself).
    pub params: BTreeMap<String, Value>,
    /// What was measured (figures in seconds unless their name says otherwise).
    pub result: Value,
    pub ray_version: String,
    /// When the run started, UTC.
    pub measured_at: String,
    /// Physical cores of the machine it ran on.
    pub cores: u64,
    /// That machine's CPU, as `/proc/cpuinfo` names it (None where the run did not say).
    pub cpu_model: Option<String>,
    /// The 1-minute load average as it started (None where the run did not record it).
    pub load_before: Option<f64>,
}

impl Run {
    /// A figure of the result, in its unit.
    pub fn figure(&self, key: &str) -> Option<f64> {
        self.result.get(key).and_then(Value::as_f64)
    }

    /// The parameters as `k=v` pairs, for the report and for grouping repeated runs.
    pub fn params_label(&self) -> String {
        let parts: Vec<String> = self
            .params
            .iter()
            // A seed tree is named by its shape; its tree, CPUs and sleeps are the run's.
            .filter(|(k, _)| if self.workload == "seed_tree" { k.as_str() == "shape" } else { k.as_str() != "tree" })
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        parts.join(" ")
    }
}

/// Every run under `dir`: the suite's (in `suite/`) and the seed trees', sorted by file.
pub fn load(dir: &Path) -> Result<Vec<Run>, RunsError> {
    let mut runs = Vec::new();
    for entry in list(dir)? {
        let name = entry.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with("seed-tree-") && name.ends_with(".json") {
            runs.push(seed_tree(&entry, name)?);
        }
    }
    let suite = dir.join("suite");
    if suite.is_dir() {
        for entry in list(&suite)? {
            let name = entry.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name.ends_with(".json") {
                runs.push(suite_run(&entry, format!("suite/{name}"))?);
            }
        }
    }
    runs.sort_by(|a, b| a.file.cmp(&b.file));
    one_cpu(dir, &runs)?;
    Ok(runs)
}

/// An error unless every run that names its CPU names the same one: each CPU, how many
/// runs it made and the first of them.
fn one_cpu(dir: &Path, runs: &[Run]) -> Result<(), RunsError> {
    let mut cpus: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for run in runs {
        if let Some(cpu) = run.cpu_model.as_deref() {
            cpus.entry(cpu).or_insert((0, run.file.as_str())).0 += 1;
        }
    }
    if cpus.len() <= 1 {
        return Ok(());
    }
    let cpus = cpus.into_iter().map(|(cpu, (n, file))| (cpu.to_string(), n, file.to_string())).collect();
    Err(RunsError::MixedCpus { path: dir.to_path_buf(), cpus })
}

fn list(dir: &Path) -> Result<Vec<PathBuf>, RunsError> {
    let unreadable = |e: std::io::Error| RunsError::Unreadable { path: dir.to_path_buf(), message: e.to_string() };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        paths.push(entry.map_err(unreadable)?.path());
    }
    paths.sort();
    Ok(paths)
}

pub(super) fn read_json(path: &Path) -> Result<Value, RunsError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| RunsError::Unreadable { path: path.to_path_buf(), message: e.to_string() })?;
    serde_json::from_str(&text)
        .map_err(|e| RunsError::Unreadable { path: path.to_path_buf(), message: format!("not JSON: {e}") })
}

pub(super) fn field<'a>(path: &Path, v: &'a Value, name: &str) -> Result<&'a Value, RunsError> {
    v.get(name).ok_or_else(|| RunsError::Field {
        path: path.to_path_buf(),
        field: name.to_string(),
        message: "missing".to_string(),
    })
}

fn text(path: &Path, v: &Value, name: &str) -> Result<String, RunsError> {
    field(path, v, name)?.as_str().map(str::to_string).ok_or_else(|| RunsError::Field {
        path: path.to_path_buf(),
        field: name.to_string(),
        message: "must be a string".to_string(),
    })
}

fn number(path: &Path, v: &Value, name: &str) -> Result<f64, RunsError> {
    field(path, v, name)?.as_f64().ok_or_else(|| RunsError::Field {
        path: path.to_path_buf(),
        field: name.to_string(),
        message: "must be a number".to_string(),
    })
}

fn suite_run(path: &Path, file: String) -> Result<Run, RunsError> {
    let v = read_json(path)?;
    let params = match field(path, &v, "params")? {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => {
            return Err(RunsError::Field {
                path: path.to_path_buf(),
                field: "params".into(),
                message: "must be an object".into(),
            })
        }
    };
    let result = field(path, &v, "result")?.clone();
    let Some(figures) = result.as_object() else {
        return Err(RunsError::Field {
            path: path.to_path_buf(),
            field: "result".into(),
            message: "must be an object".into(),
        });
    };
    // A figure is a time, a count or a size: never below zero.
    if let Some((key, n)) = figures.iter().find_map(|(k, f)| f.as_f64().filter(|n| *n < 0.0).map(|n| (k, n))) {
        return Err(RunsError::Field {
            path: path.to_path_buf(),
            field: format!("result.{key}"),
            message: format!("{n} is negative; a measured figure is at least 0"),
        });
    }
    let machine = field(path, &v, "machine")?;
    Ok(Run {
        file,
        workload: text(path, &v, "workload")?,
        params,
        result,
        ray_version: text(path, &v, "ray_version")?,
        measured_at: text(path, &v, "measured_at")?,
        cores: number(path, machine, "cores")? as u64,
        cpu_model: cpu_model(machine),
        load_before: v.get("load_average_before").and_then(|l| l.get(0)).and_then(Value::as_f64),
    })
}

/// The `cpu_model` an object records, if it names one.
fn cpu_model(v: &Value) -> Option<String> {
    v.get("cpu_model").and_then(Value::as_str).filter(|m| !m.is_empty()).map(str::to_string)
}

/// A seed-tree run (seed_tree.py's older format): the tree is the parameter, the
/// makespan the figure. `seed-tree-<shape>.json` or `seed-tree-<shape>-<anything>.json`:
/// a shape's later runs sit beside its first.
fn seed_tree(path: &Path, file: String) -> Result<Run, RunsError> {
    let v = read_json(path)?;
    let makespan = number(path, &v, "makespan_s")?;
    if makespan < 0.0 {
        return Err(RunsError::Field {
            path: path.to_path_buf(),
            field: "makespan_s".into(),
            message: format!("{makespan} is negative; a measured time is at least 0"),
        });
    }
    let mut params = BTreeMap::new();
    let stem = file.trim_start_matches("seed-tree-").trim_end_matches(".json");
    let shape = stem.split('-').next().unwrap_or(stem).to_string();
    params.insert("shape".to_string(), Value::String(shape));
    params.insert("tree".to_string(), field(path, &v, "tree")?.clone());
    params.insert("cpus".to_string(), field(path, field(path, &v, "ray_cluster_resources")?, "CPU")?.clone());
    params.insert("sleep_s".to_string(), Value::from(number(path, &v, "sleep_s")?));
    params.insert("bottleneck_sleep_s".to_string(), Value::from(number(path, &v, "bottleneck_sleep_s")?));
    Ok(Run {
        file,
        workload: "seed_tree".to_string(),
        params,
        result: serde_json::json!({ "seconds": makespan }),
        ray_version: text(path, &v, "ray_version")?,
        measured_at: text(path, &v, "measured_at")?,
        cores: number(path, &v, "cpus_on_machine")? as u64,
        // Recorded since 2026-11-28; the earlier runs do not say.
        cpu_model: cpu_model(&v),
        load_before: v.get("load_average_before").and_then(|l| l.get(0)).and_then(Value::as_f64),
    })
}
