//! The what-if record (`scripts/ray-whatif/runs/whatif.json`, the section "What-ifs on a
//! recorded job" of docs/fidelity.md) against this build: for every series whose
//! recordings are kept under `scripts/ray-whatif/runs/traces/`, the model's figures in the
//! record (`calibrate`'s costs, the same-shape replay, each shape's prediction) are what
//! this build gives from those traces. A change to `calibrate` or the model that moves
//! them fails here until the record is repredicted (`whatif.py --repredict`, README
//! there), so the report never shows one build's predictions beside another's traces.
//!
//! Ray's runs are as recorded: this needs no Ray, only python3 (scripts/test installs it)
//! to run the script's `--repredict`, about a second. Ray's runs on the other shapes are
//! kept beside each recording (gzipped); their makespans are the record's.

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

/// A trace folder's segments (`*.jsonl`, or `*.jsonl.gz` for Ray's kept runs), in order.
fn segments(trace: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(trace)
        .unwrap_or_else(|e| panic!("{}: {e}", trace.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl") || p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    out.sort();
    out
}

/// The sessions of the recordings kept in `series` (each program's trace header).
fn sessions_in(series: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for program in std::fs::read_dir(series).unwrap() {
        let trace = program.unwrap().path().join("record/trace");
        let first = std::fs::read_to_string(&segments(&trace)[0]).unwrap();
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

/// A kept run of Ray's whole trace: its gzipped segments, in order, as one text.
fn gzipped_text(trace: &Path) -> String {
    use std::io::Read;
    let mut text = String::new();
    for gz in segments(trace) {
        flate2::read::GzDecoder::new(std::fs::File::open(gz).unwrap()).read_to_string(&mut text).unwrap();
    }
    text
}

/// The job's start to end, in ms, as the last job line of a trace lists it (what
/// whatif.py reads from Ray's Jobs API as a run's makespan).
fn job_makespan_ms(trace_text: &str) -> Option<i64> {
    let last =
        trace_text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).rfind(|r| r["kind"] == "job")?;
    Some(last["end_time"].as_i64()? - last["start_time"].as_i64()?)
}

#[test]
fn the_kept_runs_of_ray_are_the_records_runs() {
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(whatif_dir().join("runs/whatif.json")).unwrap()).unwrap();
    let mut checked = 0;
    for series in kept_series() {
        let sessions = sessions_in(&series);
        for program in record["programs"].as_array().unwrap() {
            if !sessions.iter().any(|s| program["session"] == s.as_str()) {
                continue;
            }
            let dir = series.join(program["program"].as_str().unwrap());
            let text: String =
                segments(&dir.join("record/trace")).iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
            let recorded = (program["recorded_s"].as_f64().unwrap() * 1000.0).round() as i64;
            assert_eq!(job_makespan_ms(&text), Some(recorded), "{}: the recording's job", dir.display());
            for shape in program["shapes"].as_array().unwrap() {
                for (i, run) in shape["runs_s"].as_array().unwrap().iter().enumerate() {
                    let trace = dir.join(format!("{}-{i}/trace", shape["shape"].as_str().unwrap()));
                    let text = gzipped_text(&trace);
                    let ms = (run.as_f64().unwrap() * 1000.0).round() as i64;
                    assert_eq!(job_makespan_ms(&text), Some(ms), "{}: Ray's run", trace.display());
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 0, "no run of Ray kept beside a recording");
}

/// `timeline.py` (the kept runs set beside a replay) lists every worker process a kept
/// run's trace holds, with its start's length and CPU, and the run's calls.
#[test]
fn the_timeline_script_reads_a_kept_runs_workers_and_calls() {
    let series = kept_series();
    let run = series
        .iter()
        .map(|s| s.join("sleep_reduce/head6-0/trace"))
        .find(|p| p.is_dir())
        .expect("a kept 6-CPU run of the sleep-bound program");
    let text = gzipped_text(&run);
    let rows: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    // pid -> (launched, registered), in ms.
    let workers: std::collections::BTreeMap<i64, (i64, i64)> = rows
        .iter()
        .filter(|r| r["kind"] == "worker")
        .filter_map(|r| Some((r["pid"].as_i64()?, (r["launch_ms"].as_i64()?, r["launched_ms"].as_i64()?))))
        .collect();
    assert!(workers.len() > 2, "the run started workers during its job: {workers:?}");

    let out = Command::new("python3")
        .arg(whatif_dir().join("timeline.py"))
        .arg(&run)
        .args(["--calls", "60"])
        .output()
        .expect("python3 runs timeline.py");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.starts_with(&format!("Ray: {} worker processes", workers.len())), "{said}");
    // Each worker's CPU by its first call: the observer's last reading between its
    // registration and its first call's start ("-" with none).
    let mut first_call = std::collections::BTreeMap::<i64, i64>::new();
    for r in rows.iter().filter(|r| r["kind"] == "task" && r["type"] != "DRIVER_TASK") {
        let Some(pid) = r["worker_pid"].as_i64() else { continue };
        let running =
            r["events"].as_array().into_iter().flatten().find(|e| e[0] == "RUNNING").and_then(|e| e[1].as_i64());
        if let Some(at) = running {
            let entry = first_call.entry(pid).or_insert(at);
            *entry = (*entry).min(at);
        }
    }
    let mut cpu = std::collections::BTreeMap::<i64, i64>::new();
    for r in rows.iter().filter(|r| r["kind"] == "worker_cpu") {
        let at = r["at_ms"].as_i64().unwrap();
        for reading in r["cpu_ms"].as_array().unwrap() {
            let (pid, used) = (reading[0].as_i64().unwrap(), reading[1].as_i64().unwrap());
            let after = workers.get(&pid).is_some_and(|(_, registered)| *registered <= at);
            if after && first_call.get(&pid).is_none_or(|first| at <= *first) {
                cpu.insert(pid, used);
            }
        }
    }
    assert!(!cpu.is_empty(), "no worker was read between its registration and its first call");
    for (pid, (launched, registered)) in &workers {
        let took = registered - launched;
        let used = cpu.get(pid).map_or("-".to_string(), |c| c.to_string());
        let listed = said.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.first() == Some(&pid.to_string().as_str())
                && f.get(3) == Some(&took.to_string().as_str())
                && f.get(4) == Some(&used.as_str())
        });
        assert!(listed, "worker {pid} (start {took} ms, {used} ms of CPU) is not listed:\n{said}");
    }
    // Every call of the job but the driver's, each once.
    let calls = said.lines().skip_while(|l| !l.trim_start().starts_with("ran")).skip(1).count();
    let tasks: std::collections::BTreeSet<&str> = rows
        .iter()
        .filter(|r| r["kind"] == "task" && r["type"] != "DRIVER_TASK")
        .filter_map(|r| r["task_id"].as_str())
        .collect();
    assert_eq!(calls, tasks.len(), "{said}");
}
