//! The what-if record (`scripts/ray-whatif/runs/whatif.json`, the section "What-ifs on a
//! recorded job" of docs/fidelity.md) against this build: for every series whose
//! recordings are kept under `scripts/ray-whatif/runs/traces/`, the model's figures in the
//! record (`calibrate`'s costs, the same-shape replay, each shape's prediction) are what
//! this build gives from those traces. A change to `calibrate` or the model that moves
//! them fails here until the record is repredicted (`whatif.py --repredict`, README
//! there), so the report never shows one build's predictions beside another's traces.
//!
//! Ray's runs are as recorded: this needs no Ray, only python3 (scripts/test installs it)
//! to run the script's `--repredict`, about two seconds.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn whatif_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ray-whatif")
}

/// Each kept series' folder under `runs/traces/`.
fn kept_series() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(whatif_dir().join("runs/traces"))
        .expect("scripts/ray-whatif/runs/traces is in the repo")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The sessions of the recordings kept in `series` (each program's trace header).
fn sessions_in(series: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for program in std::fs::read_dir(series).unwrap() {
        let trace = program.unwrap().path().join("record/trace");
        let mut segments: Vec<PathBuf> = std::fs::read_dir(&trace)
            .unwrap_or_else(|e| panic!("{}: {e}", trace.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        segments.sort();
        let first = std::fs::read_to_string(&segments[0]).unwrap();
        let header: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
        out.push(header["session_name"].as_str().expect("a trace header names its session").to_string());
    }
    out
}

/// What the model says of one program in a record: `calibrate`'s figures, the
/// same-shape replay and each shape's prediction.
fn model_figures(program: &Value) -> Value {
    let shapes: Vec<Value> = program["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| serde_json::json!({"shape": s["shape"], "model_s": s["model_s"], "error": s["error"]}))
        .collect();
    serde_json::json!({
        "figures": program["figures"],
        "same_shape": program["same_shape"],
        "shapes": shapes,
    })
}

#[test]
fn the_kept_series_are_what_this_build_predicts_from_their_traces() {
    let record_path = whatif_dir().join("runs/whatif.json");
    let series = kept_series();
    let kept: Vec<String> = series.iter().flat_map(|s| sessions_in(s)).collect();
    assert!(!kept.is_empty(), "no recording kept under scripts/ray-whatif/runs/traces");

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("repredicted.json");
    let done = Command::new("python3")
        .arg(whatif_dir().join("whatif.py"))
        .arg("--repredict")
        .arg(&record_path)
        .args(["--rayscope", env!("CARGO_BIN_EXE_rayscope")])
        .arg("--work")
        .args(&series)
        .arg("--out")
        .arg(&out)
        .arg("--skip-missing")
        .output()
        .expect("python3 runs whatif.py");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "whatif.py --repredict failed: {stderr}");

    let read = |p: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let (record, now) = (read(&record_path), read(&out));
    let programs = |v: &Value| v["programs"].as_array().unwrap().clone();
    let mut compared = 0;
    for (was, is) in programs(&record).iter().zip(programs(&now).iter()) {
        let session = was["session"].as_str().unwrap_or_default();
        if !kept.iter().any(|k| k == session) {
            assert_eq!(was, is, "a program with no kept recording is left as recorded");
            continue;
        }
        compared += 1;
        assert_eq!(
            model_figures(was),
            model_figures(is),
            "{} of {session}: the record's figures are not this build's; repredict it (scripts/ray-whatif/README.md)",
            was["program"]
        );
    }
    assert_eq!(compared, kept.len(), "every kept recording is a program of the record: {kept:?}");
}
