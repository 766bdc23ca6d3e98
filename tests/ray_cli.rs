//! Ray's own CLI and SDK (Ray 2.60) read and drive rayscope: every `ray list`,
//! `ray get`, `ray summary` and `ray job` command that needs no GCS gRPC connection,
//! pointed at a running `rayscope serve` with `--address http://...`, as a user with
//! Ray installed would try them, plus the SDK calls that validate rows against Ray's
//! schemas (`list_objects()`, `tail_job_logs()`, ...).
//!
//! Needs the `ray` executable of a venv with `ray[default]`: `RAYSCOPE_RAY_CLI` names
//! it (scripts/test installs Ray into `target/ray-cli`); the SDK checks run the venv's
//! `python` beside it. Without it the test says so and passes, unless
//! `RAYSCOPE_REQUIRE_TOOLS` is set (and `RAYSCOPE_SKIP_RAY_CLI` does not say why not).

mod common;
mod ray_env;

use ray_env::ray_cli;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "ray-cli-test-token";

/// Four nodes (16 CPUs): 8 one-hour tasks so the task table has rows to list, two
/// actors with one-hour calls, a one-bundle placement group for a training worker, a
/// flaky fan-out whose tasks crash and retry early on (the crashes may hit the actors'
/// constructors too: they restart), and CPUs left free for the jobs submitted through
/// the CLI.
const CONFIG: &str = "
cluster:
  host_node: false
  head: {cpu: 4, memory: 16GiB}
  node_types:
    - {name: worker, count: 3, cpu: 4, memory: 16GiB, ip_range: 10.0.1.0/24}
workloads:
  - {kind: fan_out, name: long, tasks: 8, task_duration: 1h, function: long_task}
  - {kind: actor_pool, name: pool, actors: 2, calls_per_actor: 1, call_duration: 1h, num_cpus: 1, class: Replica, max_restarts: 5, max_task_retries: 5}
  - {kind: training, name: train, workers: 1, bundle_cpu: 1, bundle_gpu: 0, steps: 5, step_duration: 1h, max_restarts: 5, max_task_retries: 5}
  - {kind: fan_out, name: flaky, tasks: 20, reducers: 0, task_duration: 1s, max_retries: 10, function: flaky_task}
faults:
  - {kind: task_failures, at: 0s, until: 15s, probability: 0.4}
sim: {seed: 3}
";

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
    start_with(CONFIG)
}

/// The config's random task crashes (until 15 s) are for the retried-task listing; a
/// job submitted meanwhile could fail, so the job tests run without them.
fn start_without_faults() -> Server {
    let faults = "faults:\n  - {kind: task_failures, at: 0s, until: 15s, probability: 0.4}\n";
    assert!(CONFIG.contains(faults), "the faults section is where start_without_faults expects it");
    start_with(&CONFIG.replace(faults, ""))
}

fn start_with(config: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cli.yaml");
    std::fs::write(&cfg, config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["serve", "--config", cfg.to_str().unwrap(), "--listen", "127.0.0.1:0", "--log-format", "json"])
        .env("RAYSCOPE_TOKEN", TOKEN)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("rayscope starts");
    let (address, lines) = common::serving_address(&mut child);
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, url: format!("http://{address}"), _dir: dir }
}

/// How a command authenticates to rayscope's state-changing endpoints.
#[derive(Clone, Copy)]
enum Auth {
    /// `RAY_JOB_HEADERS` with an `Authorization` header.
    Header,
    /// Ray's token authentication: `RAY_AUTH_MODE=token`, `RAY_AUTH_TOKEN`.
    RayToken,
}

/// Run the Ray CLI (`args` start with a two-word command such as `list nodes`).
fn run(cli: &str, server: &Server, args: &[&str], auth: Auth) -> Output {
    let mut c = Command::new(cli);
    c.args(&args[..2]).args(["--address", &server.url]).args(&args[2..]).env_remove("RAY_ADDRESS");
    match auth {
        Auth::Header => c.env("RAY_JOB_HEADERS", format!("{{\"Authorization\": \"Bearer {TOKEN}\"}}")),
        Auth::RayToken => c.env("RAY_AUTH_MODE", "token").env("RAY_AUTH_TOKEN", TOKEN),
    };
    c.output().expect("the ray CLI runs")
}

/// As [`run`], failing the test (with stderr) on a non-zero exit; returns stdout.
fn ray(cli: &str, server: &Server, args: &[&str]) -> String {
    ray_as(cli, server, args, Auth::Header)
}

fn ray_as(cli: &str, server: &Server, args: &[&str], auth: Auth) -> String {
    let out = run(cli, server, args, auth);
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
    let start = stdout.find(['[', '{']).unwrap_or_else(|| panic!("no JSON in: {stdout}"));
    serde_json::from_str(stdout[start..].trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// `ray list <what> --format json` with extra arguments.
fn list(cli: &str, s: &Server, what: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["list", what, "--format", "json"];
    args.extend_from_slice(extra);
    let out = ray(cli, s, &args);
    // Ray's CLI prints this instead of `[]` for an empty list.
    if out.contains("No resource in the cluster") {
        return Vec::new();
    }
    json_of(&out).as_array().unwrap_or_else(|| panic!("ray list {what} is not a list")).clone()
}

/// Poll `f` until it returns `Some`, at most `within`.
fn eventually<T>(what: &str, within: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} within {within:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn python(cli: &str) -> PathBuf {
    let py = PathBuf::from(cli).with_file_name("python");
    assert!(py.exists(), "{} (Ray's venv python) exists beside the ray executable", py.display());
    py
}

/// Ray's SDK, in the venv's python: each call's rows go through Ray's own dataclass
/// validation (a missing or mistyped field raises).
const SDK_PY: &str = r#"
import json, sys, asyncio
from ray.util.state import (list_objects, list_workers, list_cluster_events, list_runtime_envs,
    list_actors, list_tasks, list_nodes, list_placement_groups, list_jobs, summarize_objects,
    summarize_tasks, summarize_actors, get_actor, get_node, get_task)
from ray.job_submission import JobSubmissionClient
address, token = sys.argv[1], sys.argv[2]
out = {}
out["objects"] = [o.__dict__ if hasattr(o, "__dict__") else dict(o) for o in list_objects(address=address, limit=50, raise_on_missing_output=False)]
out["workers"] = len(list_workers(address=address, limit=1000, raise_on_missing_output=False))
out["cluster_events"] = len(list_cluster_events(address=address, limit=1000, raise_on_missing_output=False))
out["runtime_envs"] = len(list_runtime_envs(address=address, raise_on_missing_output=False))
actors = list_actors(address=address, detail=True, raise_on_missing_output=False)
out["actor"] = get_actor(actors[0].actor_id, address=address).__dict__
out["tasks_detail"] = len(list_tasks(address=address, detail=True, limit=100, raise_on_missing_output=False))
nodes = list_nodes(address=address, detail=True, raise_on_missing_output=False)
out["node"] = get_node(nodes[0].node_id, address=address).__dict__
out["pgs"] = len(list_placement_groups(address=address, detail=True, raise_on_missing_output=False))
out["jobs"] = len(list_jobs(address=address, raise_on_missing_output=False))
out["object_summary"] = summarize_objects(address=address, raise_on_missing_output=False)
summarize_tasks(address=address, raise_on_missing_output=False)
summarize_actors(address=address, raise_on_missing_output=False)
client = JobSubmissionClient(address, headers={"Authorization": "Bearer " + token})
sid = client.submit_job(entrypoint="fan-out --tasks 3 --task-duration 1s")
async def tail():
    return "".join([chunk async for chunk in client.tail_job_logs(sid)])
out["tail"] = asyncio.run(tail())
out["tail_status"] = str(client.get_job_status(sid))
print(json.dumps(out, default=str))
"#;

#[test]
fn rays_own_cli_lists_gets_and_summarizes_every_resource() {
    let Some(cli) = ray_cli() else { return };
    let s = start();

    let nodes = list(&cli, &s, "nodes", &["--detail"]);
    assert_eq!(nodes.len(), 4, "{nodes:?}");
    assert_eq!(nodes.iter().filter(|n| n["is_head_node"] == true).count(), 1);
    for n in &nodes {
        assert!(n["state"] == "ALIVE" && n["node_id"].as_str().unwrap().len() == 56, "{n}");
        assert_eq!(n["labels"]["ray.io/node-id"], n["node_id"], "Ray's node-id label: {n}");
    }
    let node = ray(&cli, &s, &["get", "nodes", nodes[0]["node_id"].as_str().unwrap()]);
    assert!(node.contains(nodes[0]["node_id"].as_str().unwrap()), "{node}");

    // The fan-out's tasks show up as soon as the driver has submitted them.
    let tasks = eventually("five long_task rows", Duration::from_secs(30), || {
        let t = list(&cli, &s, "tasks", &["--filter", "name=long_task", "--limit", "5", "--detail"]);
        (t.len() == 5 && t.iter().all(|t| t["state"] == "RUNNING")).then_some(t)
    });
    for t in &tasks {
        assert_eq!((t["name"].as_str(), t["type"].as_str()), (Some("long_task"), Some("NORMAL_TASK")));
        assert_eq!(t["worker_id"].as_str().map(str::len), Some(56), "{t}");
        assert_eq!(t["required_resources"]["CPU"], 1.0, "{t}");
        let states: Vec<&str> = t["events"].as_array().unwrap().iter().map(|e| e["state"].as_str().unwrap()).collect();
        assert_eq!(states, ["PENDING_ARGS_AVAIL", "PENDING_NODE_ASSIGNMENT", "SUBMITTED_TO_WORKER", "RUNNING"], "{t}");
    }
    let one = ray(&cli, &s, &["get", "tasks", tasks[0]["task_id"].as_str().unwrap()]);
    assert!(one.contains("long_task"), "{one}");

    // A retried task is listed once per attempt: the failed one FAILED with its error,
    // and a later attempt of the same task (after one retry or several) FINISHED.
    let retried = eventually("a flaky_task attempt that failed and one that finished", Duration::from_secs(60), || {
        let t = list(&cli, &s, "tasks", &["--filter", "name=flaky_task", "--limit", "1000", "--detail"]);
        t.iter().filter(|f| f["state"] == "FAILED" && f["attempt_number"] == 0).find_map(|failed| {
            let later = t.iter().find(|l| {
                l["task_id"] == failed["task_id"] && l["attempt_number"].as_u64() >= Some(1) && l["state"] == "FINISHED"
            })?;
            Some((failed.clone(), later.clone()))
        })
    });
    assert_eq!(retried.0["error_type"], "WORKER_DIED", "{}", retried.0);
    let last = retried.0["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["state"], "FAILED", "{}", retried.0);
    let states: Vec<&str> =
        retried.1["events"].as_array().unwrap().iter().map(|e| e["state"].as_str().unwrap()).collect();
    assert_eq!(states.last(), Some(&"FINISHED"), "{}", retried.1);

    let actors = eventually("two alive Replica actors", Duration::from_secs(30), || {
        let a = list(&cli, &s, "actors", &["--filter", "class_name=Replica", "--detail"]);
        (a.len() == 2 && a.iter().all(|a| a["state"] == "ALIVE")).then_some(a)
    });
    for a in &actors {
        // Sent as a string (an int64 in Ray's JSON); Ray's schema reads it back as an int.
        assert_eq!(a["num_restarts"], 0, "{a}");
        assert_eq!(a["required_resources"]["CPU"], 1.0, "{a}");
        for key in ["label_selector", "call_site", "fallback_strategy", "num_restarts_due_to_node_preemption"] {
            assert!(a.get(key).is_some(), "actor lacks {key}: {a}");
        }
    }
    let got = ray(&cli, &s, &["get", "actors", actors[0]["actor_id"].as_str().unwrap()]);
    assert!(got.contains("Replica"), "{got}");

    let pgs = eventually("a created placement group", Duration::from_secs(30), || {
        let p = list(&cli, &s, "placement-groups", &["--detail"]);
        p.iter().any(|p| p["state"] == "CREATED").then_some(p)
    });
    let pg_id = pgs[0]["placement_group_id"].as_str().unwrap().to_string();
    let in_pg = list(&cli, &s, "actors", &["--filter", &format!("placement_group_id={pg_id}"), "--detail"]);
    assert_eq!(in_pg.len(), 1, "the training worker is in its placement group: {in_pg:?}");
    ray(&cli, &s, &["get", "placement-groups", &pg_id]);

    let objects = list(&cli, &s, "objects", &["--limit", "50"]);
    assert!(!objects.is_empty());
    for o in &objects {
        assert!(o["attempt_number"].is_i64() && o["pid"].is_i64() && o["ip"].is_string(), "{o}");
        assert_ne!(o["task_status"], "NIL", "the producer's state: {o}");
    }

    let workers = list(&cli, &s, "workers", &["--limit", "1000", "--detail"]);
    assert!(workers.iter().filter(|w| w["worker_type"] == "DRIVER").count() == 4, "one driver per job: {workers:?}");
    let actor_pids: Vec<&serde_json::Value> = actors.iter().map(|a| &a["pid"]).collect();
    assert!(actor_pids.iter().all(|p| workers.iter().any(|w| &&w["pid"] == p)), "actors' workers are listed");
    let events = list(&cli, &s, "cluster-events", &["--limit", "1000"]);
    // Ray's own cluster events: nodes joining, jobs started; never a task transition.
    let said = |source: &str, text: &str| {
        events.iter().any(|e| e["source_type"] == source && e["message"].as_str().unwrap().contains(text))
    };
    assert!(said("GCS", "has joined the cluster") && said("JOBS", "Started a ray job"), "{events:?}");
    let severities = ["INFO", "WARNING", "ERROR"];
    assert!(events.iter().all(|e| severities.contains(&e["severity"].as_str().unwrap())), "{events:?}");
    assert!(!events.iter().any(|e| e["message"].as_str().unwrap().contains("SUBMITTED_TO_WORKER")), "{events:?}");
    assert!(list(&cli, &s, "runtime-envs", &[]).is_empty(), "no job asked for a runtime env yet");
    assert_eq!(list(&cli, &s, "jobs", &[]).len(), 4);

    let summary = ray(&cli, &s, &["summary", "tasks"]);
    assert!(summary.contains("long_task") && summary.contains("flaky_task"), "{summary}");
    let summary = ray(&cli, &s, &["summary", "actors"]);
    assert!(summary.contains("Replica"), "{summary}");
    let summary = ray(&cli, &s, &["summary", "objects"]);
    assert!(summary.contains("total_objects") && summary.contains("disabled"), "{summary}");

    // The SDK's typed rows (Ray validates each against its schema) and log tailing.
    let sdk = Command::new(python(&cli)).args(["-c", SDK_PY, &s.url, TOKEN]).output().expect("python runs");
    assert!(sdk.status.success(), "Ray's SDK failed:\n{}", String::from_utf8_lossy(&sdk.stderr));
    let sdk = json_of(&String::from_utf8_lossy(&sdk.stdout));
    assert!(sdk["objects"].as_array().is_some_and(|o| !o.is_empty()), "{sdk}");
    assert!(sdk["workers"].as_u64() > Some(4) && sdk["cluster_events"].as_u64() > Some(0), "{sdk}");
    assert_eq!(sdk["actor"]["class_name"], actors[0]["class_name"], "{sdk}");
    assert!(sdk["tail"].as_str().unwrap().contains("SUCCEEDED"), "the tail ends with the job: {sdk}");
    assert!(sdk["tail_status"].as_str().unwrap().contains("SUCCEEDED"), "{sdk}");
    assert!(sdk["object_summary"].to_string().contains("total_objects"), "{sdk}");
}

#[test]
fn rays_own_cli_submits_follows_stops_and_deletes_jobs() {
    let Some(cli) = ray_cli() else { return };
    let s = start_without_faults();

    // Waiting (the default): tails the log until the job ends, then exits 0.
    let out = ray(
        &cli,
        &s,
        &["job", "submit", "--submission-id", "waited", "--", "fan-out", "--tasks", "5", "--task-duration", "1s"],
    );
    assert!(out.contains("SUCCEEDED"), "the tailed log reaches the end: {out}");
    let status = ray(&cli, &s, &["job", "status", "waited"]);
    assert!(status.to_lowercase().contains("succeeded"), "{status}");

    // A command quoted whole, as a shell user writes it, and a flag value with a space.
    ray(&cli, &s, &["job", "submit", "--submission-id", "quoted", "--", "fan-out --tasks 5 --task-duration 1s"]);
    ray(&cli, &s, &["job", "submit", "--submission-id", "spaced", "--", "fan-out", "--tasks", "2", "--name", "my job"]);
    let jobs = list(&cli, &s, "jobs", &["--limit", "100"]);
    assert!(jobs.iter().any(|j| j["submission_id"] == "quoted" && j["status"] == "SUCCEEDED"), "{jobs:?}");
    let logs = ray(&cli, &s, &["job", "logs", "spaced"]);
    assert!(logs.contains("SUCCEEDED"), "{logs}");

    // --working-dir uploads its package first; the job then runs as usual.
    let wd = tempfile::tempdir().unwrap();
    std::fs::write(wd.path().join("main.py"), "print('hello')\n").unwrap();
    let out = ray(
        &cli,
        &s,
        &[
            "job",
            "submit",
            "--submission-id",
            "with-dir",
            "--working-dir",
            wd.path().to_str().unwrap(),
            "--runtime-env-json",
            r#"{"env_vars": {"A": "1"}}"#,
            "--",
            "fan-out",
            "--tasks",
            "1",
        ],
    );
    assert!(out.contains("SUCCEEDED"), "{out}");
    let envs = list(&cli, &s, "runtime-envs", &["--detail"]);
    assert!(envs.iter().any(|e| e["runtime_env"]["env_vars"]["A"] == "1" && e["success"] == true), "{envs:?}");

    // --no-wait, then follow the log while it runs, stop it with Ray's token auth.
    let out = ray(
        &cli,
        &s,
        &[
            "job",
            "submit",
            "--no-wait",
            "--submission-id",
            "long",
            "--",
            "fan-out",
            "--tasks",
            "2",
            "--task-duration",
            "1h",
        ],
    );
    assert!(out.contains("long"), "{out}");
    let follower = {
        let (cli, url) = (cli.clone(), s.url.clone());
        std::thread::spawn(move || {
            Command::new(&cli)
                .args(["job", "logs", "--follow", "long", "--address", &url])
                .env_remove("RAY_ADDRESS")
                .output()
                .unwrap()
        })
    };
    eventually("job long running", Duration::from_secs(30), || {
        ray(&cli, &s, &["job", "status", "long"]).to_lowercase().contains("running").then_some(())
    });
    let out = run(&cli, &s, &["job", "delete", "long"], Auth::Header);
    assert!(!out.status.success(), "a running job cannot be deleted");
    ray_as(&cli, &s, &["job", "stop", "long"], Auth::RayToken);
    let followed = follower.join().unwrap();
    assert!(
        followed.status.success(),
        "logs --follow ends with the job: {}",
        String::from_utf8_lossy(&followed.stderr)
    );
    assert!(String::from_utf8_lossy(&followed.stdout).contains("STOPPED"), "{followed:?}");
    let status = ray(&cli, &s, &["job", "status", "long"]);
    assert!(status.to_lowercase().contains("stopped"), "{status}");

    // Delete an ended job: it leaves the list; deleting it again is an error.
    ray(&cli, &s, &["job", "delete", "waited"]);
    let listed = ray(&cli, &s, &["job", "list"]);
    assert!(!listed.contains("submission_id='waited'") && listed.contains("submission_id='quoted'"), "{listed}");
    assert!(!run(&cli, &s, &["job", "delete", "waited"], Auth::Header).status.success());

    // Without the token, state changes are refused.
    let mut c = Command::new(&cli);
    let out = c.args(["job", "stop", "quoted", "--address", &s.url]).env_remove("RAY_ADDRESS").output().unwrap();
    assert!(!out.status.success(), "stop without a token is refused");
}
