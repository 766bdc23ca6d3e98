//! Bad configs through the binary: `rayscope check` and `rayscope simulate` refuse each
//! class of mistake with exit status 2 and one `file:line:col: field: message` line,
//! and `simulate` starts nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rayscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rayscope")).args(args).output().expect("the rayscope binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Each class of mistake: (file name, text, line, column, field, words of the message).
const MISTAKES: &[(&str, &str, usize, usize, &str, &str)] = &[
    (
        "unknown_key.yaml",
        "cluster:\n  head:\n    cpus: 4\n",
        3,
        5,
        "cluster.head.cpus",
        "unknown key `cpus` (did you mean `cpu`?)",
    ),
    ("wrong_type.yaml", "cluster:\n  head:\n    cpu: lots\n", 3, 10, "cluster.head.cpu", "invalid type: string \"lots\", expected a number"),
    (
        "negative_resources.yaml",
        "cluster:\n  node_types:\n    - name: w\n      cpu: -2\n      memory: 8GiB\n      ip_range: 10.0.1.0/24\n",
        4,
        12,
        "cluster.node_types[0].cpu",
        "must be a finite number ≥ 0, got -2",
    ),
    (
        "unknown_kind.yaml",
        "workloads:\n  - kind: mapreduce\n    tasks: 1\n",
        2,
        11,
        "workloads[0].kind",
        "unknown workload kind `mapreduce`; valid workload kinds: flow_insight, fan_out, training, actor_pool, job_mix",
    ),
    (
        "undefined_node_type.yaml",
        "cluster:\n  node_types:\n    - {name: cpu, memory: 8GiB, ip_range: 10.0.1.0/24}\nfaults:\n  - kind: kill_node\n    at: 1s\n    node_type: gpu\n",
        7,
        16,
        "faults[0].node_type",
        "undefined node type `gpu` (did you mean `cpu`?); defined node types: ray.head.default, cpu",
    ),
];

/// A bad file and what its one error line must say: its location prefix and message.
struct Expected {
    prefix: String,
    message: &'static str,
}

impl Expected {
    #[track_caller]
    fn assert_is(&self, stderr: &[u8]) {
        let err = text(stderr);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "exactly one problem line:\n{err}");
        assert!(lines[0].starts_with(&self.prefix), "want `{}...`, got:\n{err}", self.prefix);
        assert!(
            lines[0][self.prefix.len()..].starts_with(self.message),
            "want message `{}`, got:\n{err}",
            self.message
        );
    }
}

fn write_mistakes(dir: &Path) -> Vec<(PathBuf, Expected)> {
    MISTAKES
        .iter()
        .map(|(name, body, line, col, field, message)| {
            let path = dir.join(name);
            std::fs::write(&path, body).unwrap();
            let prefix = format!("{}:{line}:{col}: {field}: ", path.display());
            (path, Expected { prefix, message })
        })
        .collect()
}

#[test]
fn check_rejects_each_class_of_mistake_with_status_2_and_its_location() {
    let dir = tempfile::tempdir().unwrap();
    for (path, expected) in write_mistakes(dir.path()) {
        let out = rayscope(&["check", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        expected.assert_is(&out.stderr);
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn check_accepts_every_example_and_reports_all_files() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<String> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let args: Vec<&str> = std::iter::once("check").chain(files.iter().map(String::as_str)).collect();
    let out = rayscope(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let want: String = files.iter().map(|f| format!("{f}: ok\n")).collect();
    assert_eq!(text(&out.stdout), want);

    // One bad file among good ones: status 2, the good ones still reported ok.
    let dir = tempfile::tempdir().unwrap();
    let (bad, expected) = write_mistakes(dir.path()).remove(0);
    let out = rayscope(&["check", &files[0], bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), format!("{}: ok\n", files[0]));
    expected.assert_is(&out.stderr);
}

#[test]
fn simulate_refuses_a_bad_config_with_the_same_message_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (path, expected) in write_mistakes(dir.path()) {
        let events = dir.path().join("events.log");
        let out = rayscope(&[
            "simulate",
            "--config",
            path.to_str().unwrap(),
            "--events",
            events.to_str().unwrap(),
            "--quiet",
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        expected.assert_is(&out.stderr);
        assert!(out.stdout.is_empty(), "no report: {}", text(&out.stdout));
        assert!(!events.exists(), "no events file: the simulation never started");
    }
}

#[test]
fn serve_refuses_a_ray_version_or_cardinality_level_it_does_not_imitate() {
    for (args, says) in [
        (&["serve", "--ray-version", "2.48.0"][..], "2.49 to 2.60"),
        (&["--ray-version", "3.0"][..], "outside what rayscope imitates"),
        (&["serve", "--ray-version", "latest"][..], "not a Ray version"),
        (&["serve", "--metric-cardinality-level", "high"][..], "legacy, recommended or low"),
    ] {
        let out = rayscope(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(says) && !err.contains("panicked"), "{args:?}: {err}");
    }
    // A config outside the range is refused by check too, naming the field.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.yaml");
    std::fs::write(&path, "cluster:\n  ray_version: '2.44.1'\n").unwrap();
    let out = rayscope(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cluster.ray_version"), "{}", text(&out.stderr));
}
