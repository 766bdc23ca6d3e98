//! A costs file given to `simulate --costs FILE`: the fragment `rayscope calibrate`
//! writes (a config's `scheduler:` and `object_store:` sections, costs only), or a fit's
//! record (`fit.json`, as `rayscope fidelity --costs` reads it).
//!
//! Owns: reading one into config overrides, with an error naming the file and the key.
//! Must never: accept a key that is not a calibrated cost (a costs file that moved a
//! cluster's shape or a workload would make a what-if nobody asked for).

use super::CalibrateError;
use crate::config::calibration::{CALIBRATED_OBJECT_STORE_COSTS, CALIBRATED_SCHEDULER_COSTS};
use crate::config::{self, Override};
use std::path::Path;

/// Whether `path` is a fit's record (`fit.json`: the suite's costs) rather than a
/// fragment `rayscope calibrate` wrote from a trace.
pub fn is_fit_record(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// The costs in `path`, as overrides in the file's order.
pub fn read(path: &Path) -> Result<Vec<Override>, CalibrateError> {
    let bad = |message: String| CalibrateError::CostsFile { path: path.to_path_buf(), message };
    if is_fit_record(path) {
        return crate::fidelity::fit::read(path).map(|fit| fit.costs).map_err(|e| bad(e.to_string()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let sections = match doc {
        serde_yaml::Value::Mapping(m) => m,
        serde_yaml::Value::Null => serde_yaml::Mapping::new(),
        _ => return Err(bad("must be a map of sections (scheduler:, object_store:)".into())),
    };
    let mut costs = Vec::new();
    for (section, fields) in sections {
        let section = section.as_str().unwrap_or_default().to_string();
        let known = match section.as_str() {
            "scheduler" => CALIBRATED_SCHEDULER_COSTS,
            "object_store" => CALIBRATED_OBJECT_STORE_COSTS,
            _ => {
                return Err(bad(format!(
                    "`{section}`: a costs file holds only `scheduler:` and `object_store:` costs (the cluster and the \
                     workloads are the config's)"
                )))
            }
        };
        let fields = match fields {
            serde_yaml::Value::Mapping(m) => m,
            serde_yaml::Value::Null => continue,
            _ => return Err(bad(format!("`{section}` must be a map of cost to value"))),
        };
        for (key, value) in fields {
            let key = key.as_str().unwrap_or_default();
            if !known.contains(&key) {
                return Err(bad(format!(
                    "`{section}.{key}` is not a calibrated cost (the costs: {})",
                    known.join(", ")
                )));
            }
            let value = match value {
                serde_yaml::Value::String(s) => s,
                serde_yaml::Value::Number(n) => n.to_string(),
                _ => return Err(bad(format!("`{section}.{key}` must be a duration, a size or a number"))),
            };
            costs.push(
                Override::parse(&format!("{section}.{key}={value}"))
                    .map_err(|e| bad(format!("`{section}.{key}`: {e}")))?,
            );
        }
    }
    // Each value must be one the config takes: a minimal config says which is not.
    config::load_str_with("workloads:\n  - {kind: fan_out, tasks: 1}\n", &path.display().to_string(), &costs)
        .map_err(|e| bad(e.to_string()))?;
    Ok(costs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("costs.yaml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn a_fragment_becomes_overrides_a_config_takes() {
        let (_d, path) =
            file("scheduler:\n  lease_latency: 1ms\n  # a comment\nobject_store:\n  transfer_bandwidth: 100MB\n");
        let costs = read(&path).unwrap();
        let cfg = config::load_str_with("workloads:\n  - {kind: fan_out, tasks: 1}\n", "t", &costs).unwrap();
        assert_eq!(cfg.scheduler.lease_latency.as_micros(), 1_000);
        assert_eq!(cfg.object_store.transfer_bandwidth.0, 100_000_000);
    }

    #[test]
    fn a_key_that_is_no_cost_or_a_bad_value_is_refused_naming_it() {
        let (_d, path) = file("cluster:\n  head: {cpu: 4}\n");
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("costs.yaml") && e.contains("`cluster`"), "{e}");
        let (_d, path) = file("scheduler:\n  worker_lease_timeout: 1s\n");
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("`scheduler.worker_lease_timeout` is not a calibrated cost"), "{e}");
        let (_d, path) = file("scheduler:\n  lease_latency: soon\n");
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("lease_latency"), "{e}");
    }
}
