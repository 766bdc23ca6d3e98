//! What-if from the command line: `simulate --set KEY=VALUE` changes a config without
//! editing it, with errors as located as a file's, and `--sweep KEY=V1,V2,...` runs one
//! simulation per value and compares them.

use serde_json::Value;
use std::process::{Command, Output};

fn rayscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rayscope")).args(args).output().expect("the rayscope binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A small map-reduce that needs more CPUs than one worker node has, so node count
/// decides how long it takes.
const CLUSTER: &str = "\
cluster:
  host_node: false
  head: {cpu: 0, memory: 8GiB}
  node_types:
    - name: cpu-worker
      count: 1
      cpu: 4
      memory: 16GiB
      ip_range: 10.0.1.0/24
      autoscaler: {min_workers: 1, max_workers: 8}
workloads:
  - kind: fan_out
    name: etl
    tasks: 64
    reducers: 2
    task_duration: 10s
sim: {seed: 3}
";

fn config_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("whatif.yaml");
    std::fs::write(&path, CLUSTER).unwrap();
    let p = path.display().to_string();
    (dir, p)
}

fn report(args: &[&str]) -> Value {
    let out = rayscope(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", text(&out.stdout)))
}

#[test]
fn set_changes_the_simulated_config() {
    let (_dir, cfg) = config_file();
    let base = report(&["simulate", "-c", &cfg, "--report", "json"]);
    let more = report(&["simulate", "-c", &cfg, "--report", "json", "--set", "workloads[0].tasks=128"]);
    let submitted = |r: &Value| r["tasks_submitted"].as_u64().unwrap();
    // One more map task per task asked for, one more reduce task per reducer.
    assert_eq!(submitted(&more) - submitted(&base), 64);
    let both = report(&[
        "simulate",
        "-c",
        &cfg,
        "--report",
        "json",
        "--set",
        "workloads[0].tasks=128",
        "--set",
        "workloads[0].reducers=4",
    ]);
    assert_eq!(submitted(&both) - submitted(&base), 64 + 2);
    // A YAML value: a uniform duration range instead of a fixed one changes the run.
    let ranged =
        report(&["simulate", "-c", &cfg, "--report", "json", "--set", "workloads[0].task_duration={min: 1s, max: 2s}"]);
    assert!(ranged["sim_seconds"].as_f64().unwrap() < base["sim_seconds"].as_f64().unwrap());
}

#[test]
fn bad_overrides_are_named_and_file_errors_keep_their_lines() {
    let (_dir, cfg) = config_file();
    let cases: &[(&str, &str)] = &[
        (
            "cluster.node_types[0].cpus=3",
            "--set cluster.node_types[0].cpus=3: cluster.node_types[0].cpus: unknown key `cpus` (did you mean `cpu`?)",
        ),
        (
            "cluster.node_types[0].cpu=-1",
            "--set cluster.node_types[0].cpu=-1: cluster.node_types[0].cpu: must be a finite number ≥ 0",
        ),
        ("cluster.node_types[9].count=1", "is a list of 1 item(s); index [9] does not exist"),
        ("workloads[0].tasks=lots", "--set workloads[0].tasks=lots: workloads[0].tasks: invalid type: string \"lots\""),
    ];
    for (set, expected) in cases {
        let out = rayscope(&["simulate", "-c", &cfg, "--set", set]);
        assert_eq!(out.status.code(), Some(2), "--set {set}");
        assert!(text(&out.stderr).contains(expected), "--set {set}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "--set {set}: a refused config must not run");
    }
    let out = rayscope(&["simulate", "-c", &cfg, "--set", "sim.speed"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("expected KEY=VALUE"), "{}", text(&out.stderr));

    // A problem in the file itself still points at its line, even with overrides given.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, CLUSTER.replace("    reducers: 2\n", "    reducers: -2\n")).unwrap();
    let out = rayscope(&["simulate", "-c", bad.to_str().unwrap(), "--set", "sim.seed=4"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.starts_with(&format!("{}:15:15: workloads[0].reducers:", bad.display())), "{err}");
}

#[test]
fn sweep_runs_each_value_in_order_and_matches_single_runs() {
    let (_dir, cfg) = config_file();
    let key = "cluster.node_types[0].count";
    let sweep = report(&["simulate", "-c", &cfg, "--report", "json", "--sweep", &format!("{key}=1,2,4")]);
    assert_eq!(sweep["key"], key);
    let runs = sweep["runs"].as_array().unwrap();
    let values: Vec<&str> = runs.iter().map(|r| r["value"].as_str().unwrap()).collect();
    assert_eq!(values, ["1", "2", "4"]);
    let makespan = |r: &Value| r["jobs"][0]["makespan"].as_f64().expect("the job finished");
    // More worker nodes at the start: the same job finishes sooner.
    assert!(makespan(&runs[0]) > makespan(&runs[1]), "{sweep}");
    assert!(makespan(&runs[1]) > makespan(&runs[2]), "{sweep}");
    // With too few CPUs for 64 tasks, work waits for a node.
    assert!(runs[0]["peak_pending_tasks"].as_u64().unwrap() > 0, "{sweep}");
    for key in ["spillbacks", "tasks_failed", "node_failures", "utilization", "event_log_sha256"] {
        assert!(runs[0].get(key).is_some(), "missing {key}");
    }
    // Each column is exactly the run `--set` gives on its own.
    for r in runs {
        let single = report(&[
            "simulate",
            "-c",
            &cfg,
            "--report",
            "json",
            "--set",
            &format!("{key}={}", r["value"].as_str().unwrap()),
        ]);
        assert_eq!(r["event_log_sha256"], single["event_log_sha256"]);
    }

    let out = rayscope(&["simulate", "-c", &cfg, "--sweep", &format!("{key}=1,2")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    for row in ["peak pending tasks", "spillbacks", "CPU util cpu-worker", "makespan 01000000 etl (s)"] {
        assert!(table.contains(row), "text table lacks `{row}`:\n{table}");
    }

    // Every value is validated before anything runs.
    let out = rayscope(&["simulate", "-c", &cfg, "--report", "json", "--sweep", &format!("{key}=1,-3")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains(&format!("--set {key}=-3")), "{}", text(&out.stderr));
}

#[test]
fn reports_name_their_calibration_and_warn_once_outside_it() {
    let (_dir, cfg) = config_file();
    let base = report(&["simulate", "-c", &cfg, "--report", "json"]);
    let calibration = base["calibration"].as_str().expect("the report names its calibration");
    assert!(calibration.contains("Ray 2.60.0") && calibration.contains("docs/fidelity.md"), "{calibration}");
    assert!(base.get("calibration_warning").is_none(), "nothing here is outside the calibration: {base}");

    // 64 cores a node is far more than the 2-core machine the costs were measured on.
    let big = ["simulate", "-c", &cfg, "--set", "cluster.node_types[0].cores=64"];
    let json = report(&[&big[..], &["--report", "json"]].concat());
    let warning = json["calibration_warning"].as_str().expect("a warning");
    assert!(warning.contains("nodes of more than 16 cores") && warning.contains(": cpu-worker"), "{warning}");
    let out = rayscope(&big);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let warnings: Vec<&str> = stdout.lines().filter(|l| l.trim_start().starts_with("WARNING: outside")).collect();
    assert_eq!(warnings.len(), 1, "one warning line:\n{stdout}");
    assert!(stdout.contains("costs calibrated  Ray 2.60.0"), "{stdout}");

    // A sweep warns once per reason, naming the values that asked for it.
    let out = rayscope(&["simulate", "-c", &cfg, "--sweep", "cluster.node_types[0].cores=2,64,128"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains("WARNING")).collect();
    assert_eq!(lines.len(), 1, "64 and 128 cores are one reason:\n{stdout}");
    assert!(lines[0].ends_with("(from cluster.node_types[0].cores=64, 128)"), "{stdout}");
    assert!(stdout.contains("costs calibrated: Ray 2.60.0"), "{stdout}");

    // A reason every value shares is said once, for every value; one that only some
    // values add gets its own line, naming them.
    let out = rayscope(&[
        "simulate",
        "-c",
        &cfg,
        "--set",
        "cluster.node_types[0].cores=64",
        "--sweep",
        "scheduler.worker_niceness=0,15,19",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains("WARNING")).collect();
    assert_eq!(lines.len(), 2, "the cores for all, the niceness for two:\n{stdout}");
    assert!(lines[0].contains(": cpu-worker") && lines[0].ends_with("(every value)"), "{stdout}");
    assert!(!lines[0].contains("worker_niceness above 0"), "{stdout}");
    assert!(lines[1].ends_with("(from scheduler.worker_niceness=15, 19)"), "{stdout}");
}

/// A report quotes how far the model was from Ray on the recorded workloads like its
/// config's (docs/fidelity.json): a fan-out's no-op and spillback runs, and the object
/// runs once its returns go into the store; a sweep quotes each once.
#[test]
fn reports_quote_the_models_error_on_workloads_like_theirs() {
    let (_dir, cfg) = config_file();
    let names = |r: &Value| -> Vec<String> {
        r["measured"]
            .as_array()
            .expect("measured")
            .iter()
            .map(|m| m["workload"].as_str().unwrap().to_string())
            .collect()
    };
    let base = report(&["simulate", "-c", &cfg, "--report", "json"]);
    assert_eq!(names(&base), ["noop_tasks", "noop_submit", "spillback"], "{base}");
    for m in base["measured"].as_array().unwrap() {
        let (low, high) = (m["error_low"].as_f64().unwrap(), m["error_high"].as_f64().unwrap());
        assert!(m["rows"].as_u64().unwrap() >= 1 && low <= high, "{m}");
    }
    let puts = report(&["simulate", "-c", &cfg, "--report", "json", "--set", "workloads[0].output_size=1MiB"]);
    assert!(names(&puts).iter().any(|w| w == "object_get"), "returns in the store: {puts}");

    let out = rayscope(&["simulate", "-c", &cfg]);
    let stdout = text(&out.stdout);
    let at = stdout.find("measured on Ray").unwrap_or_else(|| panic!("a heading:\n{stdout}"));
    let lines: Vec<&str> = stdout[at..].lines().skip(1).take_while(|l| l.starts_with("    ")).collect();
    assert_eq!(lines.len(), 3, "one line a workload:\n{stdout}");
    assert!(lines[0].trim_start().starts_with("noop_tasks") && lines[0].contains(" %"), "{stdout}");

    let out = rayscope(&["simulate", "-c", &cfg, "--sweep", "workloads[0].output_size=0,1MiB"]);
    let stdout = text(&out.stdout);
    assert_eq!(stdout.matches("measured on Ray").count(), 1, "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.trim_start().starts_with("object_get")).count(), 1, "{stdout}");
}

/// Two drivers on one head: a map whose owner pushes its calls slower than 64 nodes run
/// them, so its io thread's queue is long, and an actor pool.
const TWO_DRIVERS: &str = "\
cluster:
  head: {cpu: 16, memory: 64GiB}
  node_types:
    - {name: cpu-worker, count: 63, cpu: 16, memory: 64GiB, ip_range: 10.1.0.0/16}
workloads:
  - {kind: fan_out, name: map, tasks: 20000, task_duration: 10ms}
  - {kind: actor_pool, name: actors, actors: 500, calls_per_actor: 2, call_duration: 1s}
sim: {seed: 7}
";

#[test]
fn a_driver_does_not_wait_for_another_drivers_queued_pushes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two-drivers.yaml");
    std::fs::write(&path, TWO_DRIVERS).unwrap();
    let path = path.to_str().unwrap();
    let run = |niceness: &str| {
        let set = format!("scheduler.worker_niceness={niceness}");
        report(&["simulate", "-c", path, "--report", "json", "--set", &set])
    };
    let makespan = |r: &Value, name: &str| {
        let job = r["jobs"].as_array().unwrap().iter().find(|j| j["name"] == name).expect("the job ran");
        job["makespan"].as_f64().expect("it finished")
    };
    // The map's queued pushes hold the head's cores first come, first served at 0; the
    // actor pool's driver is time-sliced beside them (as Linux runs it), so it takes
    // about what it takes at 15, where the drivers also outrank the workers. When a
    // driver's own work queued with the rest, the pool took 2.3 times as long at 0.
    let (alike, ranked) = (run("0"), run("15"));
    let (at_0, at_15) = (makespan(&alike, "actors"), makespan(&ranked, "actors"));
    assert!(at_0 < 1.1 * at_15, "the actor pool: {at_0} s at 0, {at_15} s at 15");
    assert!(at_0 >= at_15, "at 15 the pool's driver outranks the map's workers: {at_0} s at 0, {at_15} s at 15");
    assert!(alike.get("model_warning").is_none(), "nothing left to warn of: {alike}");
}
