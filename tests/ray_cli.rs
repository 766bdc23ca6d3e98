//! Ray's own CLI reads rayscope: `ray list`, `ray summary` and `ray job` pointed at a
//! running `rayscope serve`, as a user with Ray installed would try it.
//!
//! Needs the `ray` executable: `RAYSCOPE_RAY_CLI` names it (scripts/test installs Ray's
//! CLI into `target/ray-cli`). Without it the test says so and passes, unless
//! `RAYSCOPE_REQUIRE_TOOLS` is set (and `RAYSCOPE_SKIP_RAY_CLI` does not say why not).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "ray-cli-test-token";

/// Three nodes (12 CPUs); 8 one-hour tasks so the task table has rows to list while
/// CPUs stay free for the job submitted through the CLI.
const CONFIG: &str = "
cluster:
  host_node: false
  head: {cpu: 4, memory: 16GiB}
  node_types:
    - {name: worker, count: 2, cpu: 4, memory: 16GiB, ip_range: 10.0.1.0/24}
workloads:
  - {kind: fan_out, name: long, tasks: 8, task_duration: 1h, function: long_task}
sim: {seed: 3}
";

fn ray_cli() -> Option<String> {
    if let Ok(p) = std::env::var("RAYSCOPE_RAY_CLI") {
        if std::path::Path::new(&p).exists() {
            return Some(p);
        }
    }
    let why = std::env::var("RAYSCOPE_SKIP_RAY_CLI").ok();
    if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some() && why.is_none() {
        panic!("Ray's CLI is required (RAYSCOPE_REQUIRE_TOOLS is set) but RAYSCOPE_RAY_CLI does not name it; run scripts/test");
    }
    eprintln!("skipping: Ray's CLI is not available ({})", why.unwrap_or_else(|| "RAYSCOPE_RAY_CLI unset".into()));
    None
}

struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cli.yaml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["serve", "--config", cfg.to_str().unwrap(), "--listen", "127.0.0.1:0", "--log-format", "json"])
        .env("RAYSCOPE_TOKEN", TOKEN)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("rayscope starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let address = loop {
        assert!(Instant::now() < deadline, "rayscope did not report its address within 30 s");
        let line = lines.next().expect("rayscope exited before serving").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if v["fields"]["message"] == "serving" {
            break v["fields"]["address"].as_str().unwrap().to_string();
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, url: format!("http://{address}"), _dir: dir }
}

/// Run the Ray CLI (`args` start with a two-word command such as `list nodes`); returns
/// stdout, failing the test (with stderr) on a non-zero exit.
fn ray(cli: &str, server: &Server, args: &[&str]) -> String {
    let out = Command::new(cli)
        .args(&args[..2])
        .args(["--address", &server.url])
        .args(&args[2..])
        .env("RAY_JOB_HEADERS", format!("{{\"Authorization\": \"Bearer {TOKEN}\"}}"))
        .env_remove("RAY_ADDRESS")
        .output()
        .expect("the ray CLI runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ray {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn json_of(stdout: &str) -> serde_json::Value {
    let start = stdout.find('[').unwrap_or_else(|| panic!("no JSON list in: {stdout}"));
    serde_json::from_str(stdout[start..].trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn rays_own_cli_lists_summarizes_and_submits_jobs() {
    let Some(cli) = ray_cli() else { return };
    let s = start();

    let nodes = json_of(&ray(&cli, &s, &["list", "nodes", "--format", "json"]));
    let nodes = nodes.as_array().unwrap();
    assert_eq!(nodes.len(), 3, "{nodes:?}");
    assert_eq!(nodes.iter().filter(|n| n["is_head_node"] == true).count(), 1);
    assert!(nodes.iter().all(|n| n["state"] == "ALIVE" && n["node_id"].as_str().unwrap().len() == 56));

    // The fan-out's tasks show up as soon as the driver has submitted them.
    let deadline = Instant::now() + Duration::from_secs(30);
    let tasks = loop {
        let t = json_of(&ray(&cli, &s, &["list", "tasks", "--format", "json", "--filter", "name=long_task", "--limit", "5"]));
        if t.as_array().unwrap().len() == 5 {
            break t;
        }
        assert!(Instant::now() < deadline, "no long_task rows within 30 s: {t}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(tasks.as_array().unwrap().iter().all(|t| t["name"] == "long_task" && t["type"] == "NORMAL_TASK"));

    let summary = ray(&cli, &s, &["summary", "tasks"]);
    assert!(summary.contains("long_task"), "{summary}");

    let submitted = ray(&cli, &s, &["job", "submit", "--no-wait", "--submission-id", "cli-job-1", "--", "fan-out", "--tasks", "5"]);
    assert!(submitted.contains("cli-job-1") || submitted.is_empty(), "{submitted}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = Command::new(&cli)
            .args(["job", "status", "cli-job-1", "--address", &s.url])
            .output()
            .expect("the ray CLI runs");
        let text = format!("{}{}", String::from_utf8_lossy(&status.stdout), String::from_utf8_lossy(&status.stderr));
        // "Job 'cli-job-1' succeeded" (Ray's words for SUCCEEDED).
        let lower = text.to_lowercase();
        if lower.contains("succeeded") {
            break;
        }
        assert!(!lower.contains("failed") && !lower.contains("stopped"), "{text}");
        assert!(Instant::now() < deadline, "cli-job-1 did not succeed within 60 s: {text}");
        std::thread::sleep(Duration::from_millis(300));
    }
}
