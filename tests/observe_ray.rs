//! Observe mode on a real Ray 2.60 cluster, as a user runs it: `rayscope observe`
//! started before the cluster, one instance polling Ray's dashboard and recording a
//! trace, another taking only what Ray's Event Export pushes. On the cluster
//! (scripts/ray-observe/cluster.py) run the Flow Insight seed program of
//! shared/seeds/003 (depth 2, sleeps cut 100x; the tree of seed 23 has two workers
//! above the leaves, the flagged one second and with two leaves, so neither creation
//! order nor a lone branch can name it) and a small map-reduce, each as its own job.
//!
//! Both instances must show, for each job:
//! * the call graph of the program: the seed's tree of `Worker`s, with 10 calls per
//!   edge per call of the caller; the map-reduce's driver calling 8 maps and 2 reduces;
//! * the first bottleneck of the seed job: `process` on the flagged worker whose
//!   children are leaves; the reduces' wait for their arguments given to the maps.
//!
//! Then every built-in page loads in Chromium in observe mode with no console error;
//! the cluster is shut down, and `rayscope observe --trace` and `rayscope flow
//! --trace` still show the recorded job; `rayscope simulate --replay` runs it in the
//! model on the same shape within 2 % of Ray's makespan, and with the flagged worker's
//! sleep removed by `--fix`, within 5 % of a real run of the program without that sleep
//! (on a fresh cluster, as its first driver, as the recorded job ran), the what-if held
//! by what the fix saves (see the test). The replay takes its costs from the trace
//! itself (`rayscope calibrate`'s), so no bound depends on the machine's CPU.
//!
//! The seed program's x10 law over 10 runs is a recorded series
//! (scripts/ray-observe/seed_series.py, its result committed beside it), which a test
//! here reads again; the live run is its sample.
//!
//! Needs Ray (RAYSCOPE_RAY_CLI, the venv scripts/test makes) and Chromium; without
//! them it is skipped unless RAYSCOPE_REQUIRE_TOOLS is set. Only one real Ray cluster
//! runs on the machine at a time: cluster.py holds /tmp/real-ray.lock.

mod browser;
mod bundle_support;

use bundle_support::{fetch_json as get, free_port, ray_python, wait_for, Proc, ScriptDriver};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How far the replay of the recorded seed job may be from Ray's makespan, on the same
/// shape (2 %), and what the flagged worker's sleep removed saves against what it saved
/// on Ray, with the median of real runs of the changed program (5 %): issue 20's
/// bounds, the second held by the saving (see the test). The replay runs at the costs
/// read from its own trace, so the same bounds hold on any machine (docs/observe.md).
const REPLAY_BOUND: f64 = 0.02;
const FIXED_BOUND: f64 = 0.05;
/// Runs of the changed program on real Ray, whose median the fix replay is held to.
const FASTER_RUNS: usize = 3;

/// The seed's tree draw for which the flagged worker above the leaves is told apart by
/// its shape alone (see the module docs).
const SEED: u64 = 23;

fn rayscope(name: &'static str, args: &[&str], log: &Path) -> Proc {
    Proc::spawn(
        name,
        Command::new(env!("CARGO_BIN_EXE_rayscope")).args(args).env("RUST_LOG", "info"),
        log.to_path_buf(),
    )
}

/// scripts/ray-observe/cluster.py, up: a head whose dashboard is on `dashboard_port`,
/// pushing its events to `push_to` if given.
fn start_cluster(python: &Path, temp: &Path, dashboard_port: u16, push_to: Option<&str>) -> ScriptDriver {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ray-observe/cluster.py");
    // A Ray left behind by an earlier run holds ports and /tmp/ray's discovery file.
    let _ = Command::new(python.with_file_name("ray")).args(["stop", "--force"]).output();
    std::fs::create_dir_all(temp).unwrap();
    let mut cmd = Command::new(python);
    cmd.arg(&script).arg(temp).args(["--dashboard-port", &dashboard_port.to_string()]).stderr(Stdio::inherit());
    if let Some(url) = push_to {
        cmd.args(["--push-to", url]);
    }
    let c = ScriptDriver::spawn(&mut cmd);
    // Waiting for the lock (another real Ray test) counts here too.
    c.answer("ready", Duration::from_secs(600));
    c
}

/// A tree's shape, children sorted: equal for equal trees whatever the child order.
fn shape(tree: &Value) -> String {
    let mut kids: Vec<String> = tree["children"].as_array().into_iter().flatten().map(shape).collect();
    kids.sort();
    format!("({})", kids.join(""))
}

/// The observed tree of actors: each `process` node's actor and the actors its calls went to,
/// with the calls per edge, from the instance-level graph.
struct Observed {
    root: String,
    children: BTreeMap<String, Vec<(String, u64)>>,
    process_calls: BTreeMap<String, u64>,
}

impl Observed {
    fn of(graph: &Value) -> Observed {
        assert_eq!(graph["level"], "instance", "an actor tree of one class is shown by instance: {graph}");
        let actor_of = |id: &str| id.strip_suffix(".process").map(|a| a.trim_start_matches("Worker:").to_string());
        let mut children: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
        let mut root = None;
        for e in graph["edges"].as_array().unwrap() {
            let (src, dst) = (e["source"].as_str().unwrap(), e["target"].as_str().unwrap());
            let Some(callee) = actor_of(dst) else { continue };
            match actor_of(src) {
                Some(caller) => children.entry(caller).or_default().push((callee, e["calls"].as_u64().unwrap())),
                None if src == "_main" => root = Some(callee),
                None => {}
            }
        }
        let process_calls = graph["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| Some((actor_of(n["id"].as_str()?)?, n["calls"].as_u64()?)))
            .collect();
        Observed { root: root.expect("the driver calls the root's process"), children, process_calls }
    }

    fn shape(&self, actor: &str) -> String {
        let mut kids: Vec<String> =
            self.children.get(actor).into_iter().flatten().map(|(c, _)| self.shape(c)).collect();
        kids.sort();
        format!("({})", kids.join(""))
    }
}

/// The seed job's graph is the program's tree with 10 calls per edge per call, and its
/// first bottleneck is `process` on the flagged worker whose children are leaves.
fn check_seed_job(base: &str, job: &str, tree: &Value) -> Result<String, String> {
    let graph = get(base, &format!("/api/flow/graph?job={job}"))?;
    let o = Observed::of(&graph);
    if o.shape(&o.root) != shape(tree) {
        return Err(format!("observed tree {} is not the program's {}", o.shape(&o.root), shape(tree)));
    }
    for (caller, kids) in &o.children {
        let per_call = o.process_calls[caller];
        for (callee, calls) in kids {
            if *calls != 10 * per_call {
                return Err(format!("{caller} -> {callee}: {calls} calls for {per_call} calls of the caller"));
            }
        }
    }
    // The flagged worker above the leaves, told by its subtree's shape among its siblings.
    let flagged =
        tree["children"].as_array().unwrap().iter().find(|c| c["bottleneck"] == true).expect("seed 23 flags one");
    let want_shape = shape(flagged);
    let matches: Vec<&String> =
        o.children[&o.root].iter().map(|(c, _)| c).filter(|c| o.shape(c) == want_shape).collect();
    assert_eq!(matches.len(), 1, "seed {SEED}'s flagged worker has a shape of its own");
    let b = get(base, &format!("/api/flow/bottlenecks?job={job}"))?;
    let first = &b["entries"][0];
    if first["name"] != "Worker.process" || first["actor_id"] != matches[0].as_str() {
        return Err(format!("first bottleneck {first}, not Worker.process on {}", matches[0]));
    }
    Ok(matches[0].clone())
}

/// The map-reduce: the driver calls 8 maps and 2 reduces, and the reduces' wait for
/// their arguments is the maps' on the critical path.
fn check_mapreduce_job(base: &str, job: &str) -> Result<(), String> {
    let graph = get(base, &format!("/api/flow/graph?job={job}"))?;
    let edges: BTreeMap<(String, String), u64> = graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            ((e["source"].as_str().unwrap().into(), e["target"].as_str().unwrap().into()), e["calls"].as_u64().unwrap())
        })
        .collect();
    let want: BTreeMap<(String, String), u64> =
        [(("_main".into(), "map_task".into()), 8), (("_main".into(), "reduce_task".into()), 2)].into();
    if edges != want {
        return Err(format!("map-reduce graph {edges:?}"));
    }
    let b = get(base, &format!("/api/flow/bottlenecks?job={job}"))?;
    let names: Vec<&str> = b["entries"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
    if !names.contains(&"map_task") {
        return Err(format!("no map on the critical path: {names:?}"));
    }
    Ok(())
}

/// Wait until `base` shows `job` ended, then check it.
fn expect_job(base: &str, who: &str, job: &str, check: impl Fn() -> Result<(), String>) {
    wait_for(&format!("{who}: job {job} ended and as the program says"), Duration::from_secs(90), || {
        let jobs = get(base, "/api/flow/jobs")?;
        let ended = jobs["jobs"].as_array().unwrap().iter().any(|j| j["job_id"] == job && !j["end_time_s"].is_null());
        if !ended {
            return Err(format!("not ended yet: {jobs}"));
        }
        check()
    });
}

async fn pages_load(base: &str, job: &str) {
    let Some(exe) = browser::chromium_or_skip("observe_ray pages") else { return };
    let b = browser::Browser::launch(&exe).await;
    let pages: [(&str, &str); 7] = [
        ("/", "document.body.innerText.length > 100"),
        ("/nodes", "document.querySelectorAll('tbody tr').length > 0"),
        ("/jobs", &format!("document.body.innerText.includes('{job}')")),
        ("/actors", "document.body.innerText.includes('Worker')"),
        ("/tasks", "document.body.innerText.includes('Worker.process')"),
        ("/events", "document.readyState === 'complete'"),
        ("/flow", "document.body.innerText.includes('Worker.process')"),
    ];
    for (path, ready) in pages {
        let page = b.page().await;
        let url = if path == "/flow" { format!("{base}/flow?job={job}") } else { format!("{base}{path}") };
        page.goto(&url).await;
        page.wait_for(&format!("{path} in observe mode"), ready, Duration::from_secs(20)).await;
        page.screenshot(&format!("observe{}", path.replace('/', "-"))).await;
        assert_eq!(page.errors(), Vec::<String>::new(), "{path}: console errors in observe mode");
    }
}

/// The recorded series of the seed program (scripts/ray-observe/seed_series.py: 10 runs
/// on one head, observed by pull and by push): in every run, by both, each edge
/// carries 10 calls per call of its caller. The law is read again from the recorded
/// edges, not from the series' own verdict; the live run below is its sample.
#[test]
fn the_recorded_seed_series_holds_the_x10_law_in_every_run() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ray-observe/seed-series-2.60.json");
    let series: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let runs = series["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 10, "the series is 10 runs");
    for run in runs {
        for how in ["pull", "push"] {
            let edges = run[how]["edges"].as_array().unwrap();
            // Depth 2: the root calls its children, a child above the leaves calls its own.
            assert!(edges.len() >= 2, "job {} by {how}: {edges:?}", run["job"]);
            for e in edges {
                let (calls, per) = (e[2].as_u64().unwrap(), e[3].as_u64().unwrap());
                assert!(per > 0 && calls == 10 * per, "job {} by {how}: {e} breaks the x10 law", run["job"]);
            }
        }
    }
}

#[test]
fn a_real_cluster_observed_by_pull_and_by_push_then_recorded() {
    let Some(python) = ray_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (dashboard, pull_port, push_port) = (free_port(), free_port(), free_port());
    let (pull, push) = (format!("http://127.0.0.1:{pull_port}"), format!("http://127.0.0.1:{push_port}"));
    let trace = dir.path().join("trace");
    let trace_arg = trace.to_str().unwrap().to_string();
    // Both start before the cluster: a cluster not yet up is a logged error, not a stop.
    let mut pulling = rayscope(
        "rayscope observe (pull)",
        &[
            "observe",
            "--ray",
            &format!("http://127.0.0.1:{dashboard}"),
            "--listen",
            &format!("127.0.0.1:{pull_port}"),
            "--poll-every",
            "500ms",
            "--record",
            &trace_arg,
        ],
        &dir.path().join("pull.log"),
    );
    let mut pushed = rayscope(
        "rayscope observe (push)",
        &["observe", "--push-only", "--listen", &format!("127.0.0.1:{push_port}")],
        &dir.path().join("push.log"),
    );
    for base in [&pull, &push] {
        wait_for("rayscope to answer", Duration::from_secs(30), || get(base, "/api/observe"));
    }
    let mut cluster =
        start_cluster(&python, &dir.path().join("ray"), dashboard, Some(&format!("{push}/api/observe/events")));
    let seed = cluster.step(&format!("seed --seed {SEED}"), Duration::from_secs(400));
    let mapreduce = cluster.step("mapreduce", Duration::from_secs(120));
    let (seed_job, mr_job) =
        (seed["job_id"].as_str().unwrap().to_string(), mapreduce["job_id"].as_str().unwrap().to_string());
    eprintln!("seed program: makespan {:.2} s on Ray; map-reduce {:.2} s", seed["makespan_s"], mapreduce["makespan_s"]);
    for (base, who) in [(&pull, "pull"), (&push, "push")] {
        pulling.assert_alive();
        pushed.assert_alive();
        expect_job(base, who, &seed_job, || check_seed_job(base, &seed_job, &seed["tree"]).map(|_| ()));
        expect_job(base, who, &mr_job, || check_mapreduce_job(base, &mr_job));
    }
    // The poller says when an ended job's record is final (its tasks read again after
    // the end until Ray's listing stopped changing); a push-only observer cannot tell.
    let settled = |base: &str, job: &str| -> Result<Value, String> {
        let jobs = get(base, "/api/flow/jobs")?;
        let j = jobs["jobs"].as_array().unwrap().iter().find(|j| j["job_id"] == job).cloned();
        Ok(j.map(|j| j["observed"]["settled"].clone()).unwrap_or(Value::Null))
    };
    wait_for("the poller settled both jobs", Duration::from_secs(60), || {
        for job in [&seed_job, &mr_job] {
            let s = settled(&pull, job)?;
            if s != Value::Bool(true) {
                return Err(format!("job {job}: settled {s}"));
            }
        }
        Ok(())
    });
    assert_eq!(settled(&push, &mr_job).unwrap(), Value::Null, "a push-only observer cannot say");
    let status = get(&push, "/api/observe").unwrap();
    assert!(status["events_received"].as_u64().unwrap() > 200, "Ray pushed its events: {status}");
    assert_eq!(status["batches_refused"], 0, "{status}");
    let status = get(&pull, "/api/observe").unwrap();
    assert!(status["trace_lines"].as_u64().unwrap() > 200, "the poller recorded: {status}");
    // Only rayscope's own families: Ray exports its own.
    let agent: ureq::Agent = ureq::Agent::new_with_defaults();
    let metrics = agent.get(&format!("{pull}/metrics")).call().unwrap().body_mut().read_to_string().unwrap();
    assert!(metrics.contains("rayscope_observe_polls_total"), "{metrics}");
    assert!(!metrics.lines().any(|l| l.starts_with("ray_")), "observe mode exports no ray_* series");

    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(pages_load(&pull, &seed_job));

    // The cluster goes; the record stays.
    cluster.step("quit", Duration::from_secs(120));
    drop(pulling);
    drop(pushed);
    // The same program with the flagged worker's extra sleep removed, for the replay's
    // fix: on a fresh cluster, as its first driver, as the recorded seed job ran. A later
    // driver on the same cluster would find no prestarted workers (Ray starts them for
    // the first driver only) and start every actor's process, about 0.4 s later in all.
    // Three runs, each on a cluster of its own, and their median: one run of it on an
    // Intel Xeon VM took 15.24 s where the next took 13.62 s (2026-11-28).
    let mut faster_runs: Vec<f64> = (0..FASTER_RUNS)
        .map(|i| {
            let mut fresh = start_cluster(&python, &dir.path().join(format!("ray-fresh-{i}")), free_port(), None);
            let faster = fresh.step(&format!("seed --seed {SEED} --no-bottleneck-sleep"), Duration::from_secs(200));
            fresh.step("quit", Duration::from_secs(120));
            assert_eq!(faster["job_id"], "01000000", "the changed program is the fresh cluster's first driver");
            // As an observer records a job: from its start to its end in Ray's Jobs API.
            (faster["recorded_end_ms"].as_u64().unwrap() - faster["recorded_start_ms"].as_u64().unwrap()) as f64 / 1e3
        })
        .collect();
    faster_runs.sort_by(f64::total_cmp);
    let ray_faster_s = faster_runs[FASTER_RUNS / 2];
    let replay_port = free_port();
    let replay = format!("http://127.0.0.1:{replay_port}");
    let _from_trace = rayscope(
        "rayscope observe --trace",
        &["observe", "--trace", &trace_arg, "--listen", &format!("127.0.0.1:{replay_port}")],
        &dir.path().join("trace.log"),
    );
    wait_for("rayscope --trace to answer", Duration::from_secs(30), || get(&replay, "/api/observe"));
    let flagged = check_seed_job(&replay, &seed_job, &seed["tree"]).unwrap();
    check_mapreduce_job(&replay, &mr_job).unwrap();
    let recorded_s = |job: &str| {
        let jobs = get(&replay, "/api/jobs/").unwrap();
        let j = jobs.as_array().unwrap().iter().find(|j| j["job_id"] == job).unwrap().clone();
        (j["end_time"].as_u64().unwrap() - j["start_time"].as_u64().unwrap()) as f64 / 1e3
    };
    let ray_seed_s = recorded_s(&seed_job);
    let listed_s =
        (seed["recorded_end_ms"].as_u64().unwrap() - seed["recorded_start_ms"].as_u64().unwrap()) as f64 / 1e3;
    assert!(
        (ray_seed_s - listed_s).abs() < 0.01,
        "the trace's seed job lasts {ray_seed_s} s, Ray's Jobs API {listed_s} s"
    );
    // The recorded job in the model on the cluster it ran on (one node, 2 CPUs), then
    // with the flagged worker's sleep taken out of the trace.
    let cluster_yaml = dir.path().join("cluster.yaml");
    std::fs::write(&cluster_yaml, "cluster:\n  host_node: false\n  head: {cpu: 2, memory: 8GiB}\n").unwrap();
    let replayed = |fix: Option<String>| {
        let mut args = vec![
            "simulate".to_string(),
            "--config".into(),
            cluster_yaml.to_str().unwrap().into(),
            "--replay".into(),
            trace_arg.clone(),
            "--job".into(),
            seed_job.clone(),
            "--report".into(),
            "json".into(),
        ];
        if let Some(f) = fix {
            args.extend(["--fix".into(), f]);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_rayscope")).args(&args).output().unwrap();
        assert!(out.status.success(), "simulate --replay: {}", String::from_utf8_lossy(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["jobs"][0]["makespan"].as_f64().expect("the replay ends")
    };
    let same = replayed(None);
    let sleep_s = seed["sleep_s"].as_f64().unwrap();
    let fixed = replayed(Some(format!("Worker.process@{flagged}={}ms", (sleep_s * 1e3).round())));
    let (e_same, e_fixed) = ((same - ray_seed_s) / ray_seed_s, (fixed - ray_faster_s) / ray_faster_s);
    // What the fix saves, on the model and on Ray.
    let e_saved = ((same - fixed) - (ray_seed_s - ray_faster_s)) / (ray_seed_s - ray_faster_s);
    eprintln!(
        "replay: Ray {ray_seed_s:.3} s, model {same:.3} s ({:+.1} %); flagged sleep removed: Ray {ray_faster_s:.3} s \
         (median of {faster_runs:.3?}), model {fixed:.3} s ({:+.1} %); the fix saves {:+.1} % of what it saved on \
         Ray",
        e_same * 100.0,
        e_fixed * 100.0,
        e_saved * 100.0
    );
    // The what-if is held by what the fix saves: the changed program's own time on Ray
    // moves with the machine's state where the model's does not (on one VM it took
    // 13.6-13.7 s with its test run alone and 15.2-15.7 s inside full test runs, the
    // model's saving within 1.1 % each time; docs/observe.md). The same shape replays the
    // recorded calls at the trace's own costs, on whatever CPU recorded them.
    let same_bound = REPLAY_BOUND;
    if e_same.abs() > same_bound || e_saved.abs() > FIXED_BOUND {
        // The trace is what tells why: keep it.
        panic!(
            "the replay is off by {:+.1} % on the same shape (bound {} %), {:+.1} % in the fix's saving \
             (bound {} %); the trace and logs are kept in {}",
            e_same * 100.0,
            same_bound * 100.0,
            e_saved * 100.0,
            FIXED_BOUND * 100.0,
            dir.keep().display()
        );
    }
    let out = dir.path().join("views");
    let flow = Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["flow", "--trace", &trace_arg, "--job", &seed_job, "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(flow.status.success(), "rayscope flow --trace: {}", String::from_utf8_lossy(&flow.stderr));
    let text = String::from_utf8_lossy(&flow.stdout);
    let first = text.lines().find(|l| l.trim_start().starts_with("1 ")).unwrap_or("");
    // Its name, then " (waits inferred)" where they were (this program runs unprofiled).
    assert!(
        first.trim_end_matches(" (waits inferred)").ends_with("Worker.process"),
        "flow --trace's first bottleneck: {text}"
    );
    assert!(out.join("graph.json").exists() && out.join("timeline.json").exists());
}
