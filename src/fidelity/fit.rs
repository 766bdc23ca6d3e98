//! A fit's record, as `scripts/ray-calibration/fit.py --out` writes it: the costs the fit
//! found (`values`, each in `units`), the settings it held fixed while it searched
//! (`fixed`, its `--set`s: the found costs hold only beside them) and the rows it fitted
//! them to (`fitted_on`).
//!
//! The shipped costs are `src/config/defaults.rs`, fitted on the runs in
//! `scripts/ray-calibration/runs/`; whoever records their own machine's runs fits their
//! own costs, and `rayscope fidelity --costs` puts the model to those runs with them.
//!
//! Owns: reading a record, with an error that names the file and the field, and turning
//! its costs into overrides that a config accepts. Must never: change a value (each is
//! given to the model as `--set KEY=VALUE` with its unit would give it).

use super::runs::{field, read_json, RunsError};
use crate::config::{self, Override};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A fit's costs and the rows they were fitted to.
#[derive(Clone, Debug)]
pub struct FitRecord {
    pub path: PathBuf,
    /// Rows as the report names them, e.g. `noop_tasks cpus=1 tasks=10000`.
    pub fitted_on: Vec<String>,
    /// Each found cost as `--set` would give it (by name: each names another), then each fixed
    /// setting (which, as in the fit, wins over a found value of the same name).
    pub costs: Vec<Override>,
}

/// The rows the costs in force were fitted to: `fit.json`'s `fitted_on` under `dir` (the
/// record of the fit the defaults came from, for the shipped runs), none without one.
pub fn fitted_on_in(dir: &Path) -> Result<Vec<String>, RunsError> {
    let path = dir.join("fit.json");
    if !path.exists() {
        return Ok(Vec::new());
    }
    rows_fitted(&path, &read_json(&path)?)
}

/// Read a fit's record: its rows and its costs, each checked to be a setting a config
/// takes, so a record from another version of the model fails here, naming the cost.
pub fn read(path: &Path) -> Result<FitRecord, RunsError> {
    let record = read_json(path)?;
    let fitted_on = rows_fitted(path, &record)?;
    let bad = |field: String, message: String| RunsError::Field { path: path.to_path_buf(), field, message };
    let values = field(path, &record, "values")?
        .as_object()
        .ok_or_else(|| bad("values".into(), "must be a map of setting to number".into()))?;
    let units = record.get("units").and_then(Value::as_object);
    let mut costs = Vec::with_capacity(values.len());
    for (key, value) in values {
        let number = value.as_f64().ok_or_else(|| bad(format!("values.{key}"), "must be a number".into()))?;
        let unit = match units.and_then(|u| u.get(key)) {
            None => "",
            Some(u) => u.as_str().ok_or_else(|| bad(format!("units.{key}"), "must be a string".into()))?,
        };
        let cost = Override::parse(&format!("{key}={number}{unit}"))
            .map_err(|e| bad(format!("values.{key}"), e.to_string()))?;
        costs.push(cost);
    }
    if costs.is_empty() {
        return Err(bad("values".into(), "names no cost".into()));
    }
    if let Some(fixed) = record.get("fixed") {
        let list = fixed.as_array().ok_or_else(|| bad("fixed".into(), "must be a list of KEY=VALUE".into()))?;
        for setting in list {
            let text = setting.as_str().ok_or_else(|| bad("fixed".into(), "each must be a KEY=VALUE string".into()))?;
            costs.push(Override::parse(text).map_err(|e| bad("fixed".into(), e.to_string()))?);
        }
    }
    // Every cost must be a setting the model has: a minimal config takes them all or
    // says which it does not.
    config::load_str_with("workloads:\n  - {kind: fan_out, tasks: 1}\n", &path.display().to_string(), &costs)
        .map_err(|e| bad("values".into(), e.to_string()))?;
    Ok(FitRecord { path: path.to_path_buf(), fitted_on, costs })
}

fn rows_fitted(path: &Path, record: &Value) -> Result<Vec<String>, RunsError> {
    let bad = |message: &str| RunsError::Field {
        path: path.to_path_buf(),
        field: "fitted_on".into(),
        message: message.into(),
    };
    let rows = field(path, record, "fitted_on")?.as_array().ok_or_else(|| bad("must be a list of rows"))?;
    rows.iter().map(|r| r.as_str().map(str::to_string).ok_or_else(|| bad("each row must be a string"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("fit.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_records_costs_become_overrides_with_their_units() {
        let dir = tempfile::tempdir().unwrap();
        let path = record(
            dir.path(),
            r#"{"fitted_on": ["noop_tasks cpus=1 tasks=10000"],
                "values": {"scheduler.dispatch_cost": 328, "scheduler.idle_worker_cpu": 0.0081,
                           "object_store.get_bandwidth": 16603318252},
                "units": {"scheduler.dispatch_cost": "us", "scheduler.idle_worker_cpu": "",
                          "object_store.get_bandwidth": "B"},
                "fixed": ["scheduler.call_submit_cost=56us", "scheduler.dispatch_cost=400us"]}"#,
        );
        let fit = read(&path).unwrap();
        assert_eq!(fit.fitted_on, vec!["noop_tasks cpus=1 tasks=10000"]);
        let set: Vec<String> = fit.costs.iter().map(ToString::to_string).collect();
        assert_eq!(
            set,
            [
                "--set object_store.get_bandwidth=16603318252B",
                "--set scheduler.dispatch_cost=328us",
                "--set scheduler.idle_worker_cpu=0.0081",
                "--set scheduler.call_submit_cost=56us",
                "--set scheduler.dispatch_cost=400us"
            ]
        );
        let cfg = config::load_str_with("workloads:\n  - {kind: fan_out, tasks: 1}\n", "t", &fit.costs).unwrap();
        // A fixed setting wins over a found value, as it did in the fit.
        assert_eq!(cfg.scheduler.dispatch_cost.as_micros(), 400);
        assert_eq!(cfg.scheduler.call_submit_cost.as_micros(), 56);
        assert_eq!(cfg.object_store.get_bandwidth.0, 16_603_318_252);
    }

    #[test]
    fn a_cost_the_model_does_not_have_is_an_error_naming_the_file_and_the_cost() {
        let dir = tempfile::tempdir().unwrap();
        let path = record(
            dir.path(),
            r#"{"fitted_on": [], "values": {"object_store.put_sqrt_cost": 527}, "units": {"object_store.put_sqrt_cost": "us"}}"#,
        );
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("fit.json") && e.contains("put_sqrt_cost"), "{e}");
    }

    #[test]
    fn a_record_without_costs_or_with_a_word_for_a_number_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let none = record(dir.path(), r#"{"fitted_on": [], "values": {}}"#);
        assert!(read(&none).unwrap_err().to_string().contains("names no cost"));
        let word = record(dir.path(), r#"{"fitted_on": [], "values": {"scheduler.dispatch_cost": "fast"}}"#);
        let e = read(&word).unwrap_err().to_string();
        assert!(e.contains("values.scheduler.dispatch_cost") && e.contains("must be a number"), "{e}");
        let missing = record(dir.path(), r#"{"values": {"scheduler.dispatch_cost": 1}}"#);
        assert!(read(&missing).unwrap_err().to_string().contains("`fitted_on`: missing"));
    }
}
