//! Same config and seed, same run: identical event-log SHA-256 and identical `--events`
//! bytes; another seed, another run.

mod common;

use common::load;
use rayscope::config::Config;
use std::path::Path;

fn example(name: &str) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name)).unwrap();
    if name == "scale.yaml" {
        // 2,000 nodes and a million tasks are for release builds; keep the shape, not the size.
        let small = text
            .replace("count: 1999", "count: 19")
            .replace("tasks: 1000000", "tasks: 2000")
            .replace("reducers: 1000", "reducers: 20")
            .replace("actors: 20000", "actors: 200");
        assert_ne!(small, text, "scale.yaml changed shape; update the scaling here");
        return small;
    }
    text
}

fn with_seed(text: &str, seed: u64) -> Config {
    let mut cfg = load(text);
    cfg.sim.seed = seed;
    cfg
}

/// Run to the end (a job mix, which never ends: 20 virtual minutes), streaming the
/// event log to a file; (report digest, file bytes).
fn run(cfg: Config, dir: &Path, tag: &str) -> (String, Vec<u8>) {
    let path = dir.join(format!("{tag}.events"));
    let sink = Box::new(std::fs::File::create(&path).unwrap());
    let endless = cfg.workloads.iter().any(|w| matches!(w, rayscope::config::WorkloadConfig::JobMix(_)));
    let until = (endless && cfg.sim.until.is_none()).then_some(rayscope::model::VirtualTime(20 * 60 * 1_000_000));
    let (_, report) = rayscope::sim::simulate(cfg, until, Some(sink), |_| {}).expect("bounded run");
    assert!(report.events_file_error.is_none());
    (report.event_log_sha256, std::fs::read(&path).unwrap())
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs every example twice with its seed, and once with another.
#[test]
fn every_example_replays_identically_and_depends_on_its_seed() {
    let dir = tempfile::tempdir().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    for name in &names {
        let text = example(name);
        let seed = load(&text).sim.seed;
        let (sha_a, bytes_a) = run(with_seed(&text, seed), dir.path(), "a");
        let (sha_b, bytes_b) = run(with_seed(&text, seed), dir.path(), "b");
        assert_eq!(sha_a, sha_b, "{name}: same seed, same event log");
        assert!(bytes_a == bytes_b, "{name}: same seed, byte-identical --events file");
        assert_eq!(sha256_hex(&bytes_a), sha_a, "{name}: the digest is of exactly the streamed log");
        if load(&text).workloads.is_empty() || name == "flow-insight-explicit.yaml" {
            // An idle cluster's log (node joins) does not depend on the seed, nor does a
            // written-down tree on one node: nothing in them is drawn.
            continue;
        }
        let (sha_c, bytes_c) = run(with_seed(&text, seed + 1), dir.path(), "c");
        assert_ne!(sha_a, sha_c, "{name}: another seed, another run");
        assert!(bytes_a != bytes_c);
    }
}

/// Faults and the autoscaler draw from the same seeded RNG: still one run per seed, with
/// the workers sharing the cores alike or reniced (`scheduler.worker_niceness`).
#[test]
fn faults_and_autoscaling_replay_identically() {
    let text = "cluster:
  head: {cpu: 2, memory: 8GiB}
  node_types:
    - {name: w, count: 2, cpu: 4, memory: 4GiB, object_store_memory: 64MiB, ip_range: 10.0.1.0/24,
       autoscaler: {min_workers: 1, max_workers: 4, launch_delay: 10s, idle_timeout: 30s}}
workloads:
  - {kind: fan_out, tasks: 60, reducers: 3, output_size: 8MiB, task_duration: {min: 1s, max: 9s}, memory: 1GiB}
  - {kind: actor_pool, actors: 4, calls_per_actor: 5, max_restarts: 2, max_task_retries: -1}
  - {kind: flow_insight, depth: 2, calls_per_child: 2, sleep: 1s, bottleneck_sleep: 2s}
faults:
  - {kind: kill_node, at: 12s, node_type: w}
  - {kind: task_failures, at: 0s, until: 40s, probability: 0.1}
  - {kind: kill_actor, at: 5s, class: PoolActor}
  - {kind: memory_pressure, at: 8s, node_type: w, fraction: 0.7, duration: 20s}
  - {kind: restore_node, at: 30s, node: 10.0.1.1}
sim: {seed: 5}
";
    let dir = tempfile::tempdir().unwrap();
    let reniced = format!("{text}scheduler: {{worker_niceness: 15}}\n");
    let mut shas = Vec::new();
    for text in [text, reniced.as_str()] {
        let (sha_a, bytes_a) = run(load(text), dir.path(), "a");
        let (sha_b, bytes_b) = run(load(text), dir.path(), "b");
        assert_eq!(sha_a, sha_b);
        assert!(bytes_a == bytes_b);
        let (sha_c, _) = run(with_seed(text, 6), dir.path(), "c");
        assert_ne!(sha_a, sha_c);
        shas.push(sha_a);
    }
    assert_ne!(shas[0], shas[1], "reniced workers change when things happen");
}

/// The same through the binary's `simulate --events FILE --report json`.
#[test]
fn the_binary_writes_identical_events_files_for_one_seed() {
    let dir = tempfile::tempdir().unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/flow-insight.yaml");
    let run = |tag: &str, seed: &str| {
        let events = dir.path().join(format!("{tag}.events"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rayscope"))
            .args([
                "simulate",
                "--config",
                config.to_str().unwrap(),
                "--seed",
                seed,
                "--report",
                "json",
                "--quiet",
                "--events",
            ])
            .arg(&events)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (report["event_log_sha256"].as_str().unwrap().to_string(), std::fs::read(events).unwrap())
    };
    let (sha_a, bytes_a) = run("a", "42");
    let (sha_b, bytes_b) = run("b", "42");
    assert_eq!(sha_a, sha_b);
    assert!(!bytes_a.is_empty() && bytes_a == bytes_b);
    assert_eq!(sha256_hex(&bytes_a), sha_a);
    let (sha_c, _) = run("c", "43");
    assert_ne!(sha_a, sha_c);
}

/// `--events -` writes the same log to standard output, and the report to standard
/// error, so a pipe reads the log alone; no file named `-` appears.
#[test]
fn events_dash_writes_the_log_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/flow-insight.yaml");
    let file = dir.path().join("file.events");
    let simulate = |events: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rayscope"))
            .current_dir(dir.path())
            .args(["simulate", "--config", config.to_str().unwrap(), "--report", "json", "--quiet", "--events"])
            .arg(events)
            .output()
            .unwrap()
    };
    let to_file = simulate(&file);
    assert!(to_file.status.success(), "{}", String::from_utf8_lossy(&to_file.stderr));
    let to_stdout = simulate(Path::new("-"));
    assert!(to_stdout.status.success(), "{}", String::from_utf8_lossy(&to_stdout.stderr));
    let logged = std::fs::read(&file).unwrap();
    assert!(!logged.is_empty());
    assert!(to_stdout.stdout == logged, "standard output holds the event log, byte for byte");
    let report: serde_json::Value = serde_json::from_slice(&to_stdout.stderr).expect("the report on standard error");
    assert_eq!(report["event_log_sha256"].as_str().unwrap(), sha256_hex(&logged));
    assert!(!dir.path().join("-").exists(), "no file named -");
}
