//! Observe mode on the oldest and the newest Ray it reads (2.49 and 2.60), by pull and
//! by push at once, on a suite of small programs whose call graph is fixed by their
//! source (scripts/ray-observe/suite.py): patterns (calls pipelined to a queue actor,
//! map-reduce, a tree of actors, nested calls, a value put once and passed by reference)
//! and Ray's documented anti-patterns (`ray.get` in a loop, on functions and on an
//! actor; results got in submission order; too fine-grained calls; calls queued for a
//! whole node; a large value passed by value to each call). They run back to
//! back on one head, as users run them (the driver exits right after its last
//! `ray.get`), without profiling and, most of them again, with `RAY_PROFILING=1`.
//!
//! For every run, both observers show each edge with the program's count, or fewer
//! with the loss said (`observed.lost`, naming the edge's callee or caller where Ray
//! left enough to name them, else the job's other losses): a lost call is never
//! missing silently; every call they show ended, none failed (a call Ray left without
//! an outcome at the job's end counts as ended with the job); no edge the program does
//! not make; and `/api/flow/findings` names each anti-pattern program's pattern and
//! finds nothing in a pattern program (its waits for the worker processes Ray starts
//! are not waits for resources). An anti-pattern is read from the calls' times, so
//! where Ray lost some of a run's calls or their ends (and the observer said so), that
//! observer is not asked for it (the other one is, where it kept them). Argument sizes
//! come from Ray's object listing, so the push-only observer is not asked for
//! `large_arg_by_value`. A failure keeps the observers' logs and the push observer's
//! trace.
//!
//! Needs both Rays: RAYSCOPE_RAY_CLI (2.60, the venv scripts/test makes) and
//! RAYSCOPE_RAY_OLDEST_CLI (2.49); without them it is skipped unless
//! RAYSCOPE_REQUIRE_TOOLS is set. One real Ray cluster at a time (cluster.py's lock).

mod bundle_support;

use bundle_support::{fetch_json as get, free_port, wait_for, Proc, ScriptDriver};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The suite's runs, in order: (program, with `RAY_PROFILING`, extra flags). Every
/// program runs unprofiled; the anti-patterns and two pattern programs run profiled
/// too, where Ray measures the waits the findings read. `fine_grained` lingers 1.5 s
/// before it exits, as docs/observe.md advises: its 60 calls end in its last second,
/// and Ray 2.49 loses their starts with the workers it kills at the driver's exit
/// (59 of 60 without a start, in a run without it), which leave no grain to judge.
const RUNS: [(&str, bool, &str); 18] = [
    ("get_in_loop", false, ""),
    ("pipelined", false, ""),
    ("mapreduce", false, ""),
    ("actor_tree", false, ""),
    ("nested", false, ""),
    ("actor_in_loop", false, ""),
    ("submission_order", false, ""),
    ("fine_grained", false, " --linger-s 1.5"),
    ("resource_bound", false, ""),
    ("large_arg", false, ""),
    ("put_once", false, ""),
    ("get_in_loop", true, ""),
    ("actor_in_loop", true, ""),
    ("submission_order", true, ""),
    ("fine_grained", true, " --linger-s 1.5"),
    ("resource_bound", true, ""),
    ("mapreduce", true, ""),
    ("actor_tree", true, ""),
];

/// `check` until it holds, up to `limit`; `Err` the last reason it did not. `check` is
/// told whether this is its last try (what Ray sent by then is all it sent).
fn try_wait_for(what: &str, limit: Duration, mut check: impl FnMut(bool) -> Result<(), String>) -> Result<(), String> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let last = std::time::Instant::now() >= deadline;
        match check(last) {
            Ok(()) => return Ok(()),
            Err(why) if last => return Err(format!("{what}: {why}")),
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

/// The Python of each Ray to run: (version, python), oldest first.
fn rays() -> Option<Vec<(&'static str, PathBuf)>> {
    let newest = bundle_support::ray_python()?;
    let oldest = std::env::var("RAYSCOPE_RAY_OLDEST_CLI")
        .ok()
        .map(|cli| PathBuf::from(cli).with_file_name("python"))
        .filter(|p| p.exists());
    match oldest {
        Some(o) => Some(vec![("oldest", o), ("newest", newest)]),
        None if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some()
            && std::env::var_os("RAYSCOPE_SKIP_RAY_OLDEST").is_none() =>
        {
            panic!("RAYSCOPE_RAY_OLDEST_CLI must name the `ray` of a Ray 2.49 venv (RAYSCOPE_REQUIRE_TOOLS is set)")
        }
        None => {
            eprintln!("skipped: RAYSCOPE_RAY_OLDEST_CLI names no Ray 2.49");
            None
        }
    }
}

/// What a run of the suite must show: its edges and its findings' kinds (a pattern
/// program: none at all), those of them that need Ray's measured waits, and those that
/// need the calls' argument sizes (the object listing, which only a polling observer
/// reads).
struct Want {
    edges: Vec<(String, String, u64)>,
    pattern: bool,
    findings: BTreeSet<String>,
    measured: BTreeSet<String>,
    listed: BTreeSet<String>,
}

/// Whether `base` shows `job` as the program says; `Err` says what it shows instead.
/// `profile_spans`: whether Ray sends this observer profile spans (not 2.49's push);
/// `lists_objects`: whether it polls Ray's object listing (not a push-only one).
/// `last`: this is the last look, so calls or ends still missing were lost.
fn check(
    base: &str,
    job: &str,
    want: &Want,
    profile_spans: bool,
    lists_objects: bool,
    last: bool,
) -> Result<(), String> {
    let jobs = get(base, "/api/flow/jobs")?;
    let j = jobs["jobs"].as_array().and_then(|l| l.iter().find(|j| j["job_id"] == job)).ok_or("not seen yet")?;
    if j["end_time_s"].is_null() {
        return Err("not ended yet".into());
    }
    // What the observer says was lost: by callee, and by caller whose calls are unknown.
    let lost: Vec<(String, String)> = j["observed"]["lost"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| (l["name"].as_str().unwrap_or("").to_string(), l["caller"].as_str().unwrap_or("").to_string()))
        .collect();
    // A lost call whose method Ray lost too is named `Class.?`.
    let said_lost = |caller: &str, callee: &str| {
        lost.iter().any(|(n, c)| {
            n == callee || c == caller || n.strip_suffix('?').is_some_and(|class| callee.starts_with(class))
        })
    };
    let graph = get(base, &format!("/api/flow/graph?job={job}&level=class"))?;
    let mut seen: BTreeMap<(String, String), &Value> = BTreeMap::new();
    for e in graph["edges"].as_array().ok_or("no edges")? {
        seen.insert((e["source"].as_str().unwrap_or("").into(), e["target"].as_str().unwrap_or("").into()), e);
    }
    // Whether Ray kept every call of the program and its end: what the findings read.
    let mut whole = true;
    for (caller, callee, n) in &want.edges {
        let e = seen.remove(&(caller.clone(), callee.clone()));
        let calls = e.and_then(|e| e["calls"].as_u64()).unwrap_or(0);
        whole &= calls == *n && e.is_some_and(|e| e["ended_with_job"].as_u64().unwrap_or(0) == 0);
        // Where Ray lost a call, the observer says so: naming the edge where it can, else
        // saying that the job lost calls (a caller's worker killed before it reported
        // its calls' definitions leaves nothing to name them by).
        if calls != *n && !(calls < *n && (said_lost(caller, callee) || !lost.is_empty())) {
            return Err(format!(
                "{caller} -> {callee}: {calls} calls for the program's {n}, lost {lost:?}; {}",
                callers_calls(base, job, caller, callee)
            ));
        }
        if let Some(e) = e {
            let ended = e["completed"].as_u64().unwrap_or(0) + e["ended_with_job"].as_u64().unwrap_or(0);
            if ended != calls {
                return Err(format!("{caller} -> {callee}: {calls} calls, {ended} ended well: {e}"));
            }
        }
    }
    if !seen.is_empty() {
        return Err(format!("edges the program does not make: {:?}", seen.keys().collect::<Vec<_>>()));
    }
    // An anti-pattern program gets its finding (and may get others its calls show too:
    // 20 calls that return at once are fine-grained as well as got in a loop); a
    // pattern program gets none.
    let findings = get(base, &format!("/api/flow/findings?job={job}"))?;
    let kinds: BTreeSet<String> = findings["findings"]
        .as_array()
        .ok_or("no findings list")?
        .iter()
        .filter_map(|f| f["kind"].as_str().map(str::to_string))
        .collect();
    let mut expected = want.findings.clone();
    if profile_spans {
        expected.extend(want.measured.iter().cloned());
    }
    if lists_objects {
        expected.extend(want.listed.iter().cloned());
    }
    // An anti-pattern is read from its calls' times: where Ray lost calls or their ends
    // (said above), it is not asked for; a pattern program gets no finding regardless.
    // Until the last look, what is missing may still come.
    if !want.pattern && !whole && !expected.is_subset(&kinds) {
        if !last {
            return Err(format!("calls or their ends missing so far; findings {kinds:?}"));
        }
        eprintln!("{job}: Ray lost calls or their ends, so its findings {expected:?} were not asked: {kinds:?}");
        return Ok(());
    }
    let wrong = if want.pattern { !kinds.is_empty() } else { !expected.is_subset(&kinds) };
    if wrong {
        // What the findings were read from: the calls each edge shows, and what was lost.
        let edges: Vec<String> = graph["edges"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| format!("{} -> {}: {}", e["source"], e["target"], e))
            .collect();
        return Err(format!(
            "findings {kinds:?} for the program's {expected:?}: {findings}; edges {edges:?}; observed {}",
            j["observed"]
        ));
    }
    Ok(())
}

/// For a failure's message: each call of `caller` in the job, as the observer's State
/// API lists it (state, whether Ray had its start, how many calls of `callee` it made),
/// and the calls of `callee` whose caller is none of them.
fn callers_calls(base: &str, job: &str, caller: &str, callee: &str) -> String {
    let path =
        format!("/api/v0/tasks?detail=true&limit=10000&filter_keys=job_id&filter_predicates=%3D&filter_values={job}");
    let rows = match get(base, &path) {
        Ok(v) => v["data"]["result"]["result"].as_array().cloned().unwrap_or_default(),
        Err(e) => return format!("(its calls not read: {e})"),
    };
    let name = |r: &Value| r["name"].as_str().unwrap_or("").to_string();
    let callers: Vec<&Value> = rows.iter().filter(|r| name(r) == caller).collect();
    let made = |id: &Value| rows.iter().filter(|r| name(r) == callee && r["parent_task_id"] == *id).count();
    let each: Vec<String> = callers
        .iter()
        .map(|c| {
            let id = c["task_id"].as_str().unwrap_or("");
            let started = if c["start_time_ms"].is_null() { "no start" } else { "started" };
            format!("{} {} {started}: {}", &id[..id.len().min(16)], c["state"], made(&c["task_id"]))
        })
        .collect();
    let ids: Vec<&Value> = callers.iter().map(|c| &c["task_id"]).collect();
    let elsewhere: Vec<String> = rows
        .iter()
        .filter(|r| name(r) == callee && !ids.contains(&&r["parent_task_id"]))
        .map(|r| format!("{} under {}", r["state"], r["parent_task_id"]))
        .collect();
    format!("calls of {callee} by each {caller}: {each:?}; elsewhere: {elsewhere:?}")
}

/// Runs the suite on one Ray; what did not show as the programs say.
fn run_on(version: &str, python: &Path, dir: &Path) -> Vec<String> {
    let (dashboard, pull_port, push_port) = (free_port(), free_port(), free_port());
    let (pull, push) = (format!("http://127.0.0.1:{pull_port}"), format!("http://127.0.0.1:{push_port}"));
    let bin = env!("CARGO_BIN_EXE_rayscope");
    let _pulling = Proc::spawn(
        "rayscope observe (pull)",
        Command::new(bin).args([
            "observe",
            "--ray",
            &format!("http://127.0.0.1:{dashboard}"),
            "--listen",
            &format!("127.0.0.1:{pull_port}"),
            "--poll-every",
            "500ms",
        ]),
        dir.join(format!("pull-{version}.log")),
    );
    let _pushed = Proc::spawn(
        "rayscope observe (push)",
        Command::new(bin).args([
            "observe",
            "--push-only",
            "--listen",
            &format!("127.0.0.1:{push_port}"),
            "--record",
            &dir.join(format!("push-{version}")).to_string_lossy(),
        ]),
        dir.join(format!("push-{version}.log")),
    );
    for base in [&pull, &push] {
        wait_for("rayscope to answer", Duration::from_secs(30), || get(base, "/api/observe"));
    }
    let _ = Command::new(python.with_file_name("ray")).args(["stop", "--force"]).output();
    let temp = dir.join(format!("ray-{version}"));
    std::fs::create_dir_all(&temp).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ray-observe/cluster.py");
    let mut cluster = ScriptDriver::spawn(
        Command::new(python)
            .arg(&script)
            .arg(&temp)
            .args(["--dashboard-port", &dashboard.to_string(), "--push-to", &format!("{push}/api/observe/events")])
            .stderr(Stdio::inherit()),
    );
    cluster.answer("ready", Duration::from_secs(600));
    let mut jobs = Vec::new();
    for (program, profiled, extra) in RUNS {
        let flag = if profiled { " --profile" } else { "" };
        let out = cluster.step(&format!("suite {program}{flag}{extra}"), Duration::from_secs(180));
        let edges = out["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e[0].as_str().unwrap().into(), e[1].as_str().unwrap().into(), e[2].as_u64().unwrap()))
            .collect();
        let kinds = |key: &str| out[key].as_array().unwrap().iter().map(|k| k.as_str().unwrap().into()).collect();
        let want = Want {
            edges,
            pattern: out["pattern"].as_bool().unwrap(),
            findings: kinds("findings"),
            measured: kinds("findings_measured"),
            listed: kinds("findings_listed"),
        };
        let mode = if profiled { "profiled" } else { "unprofiled" };
        jobs.push((program, mode, out["job_id"].as_str().unwrap().to_string(), want));
    }
    let mut failures = Vec::new();
    for (program, mode, job, want) in &jobs {
        for (base, how) in [(&pull, "pull"), (&push, "push")] {
            let what = format!("Ray {version} by {how}: {program}, {mode} (job {job}) as its source says");
            // Every run is checked, and what failed is told together at the end.
            let profile_spans = !(version == "oldest" && how == "push");
            let lists_objects = how == "pull";
            let checking = |last| check(base, job, want, profile_spans, lists_objects, last);
            if let Err(e) = try_wait_for(&what, Duration::from_secs(90), checking) {
                failures.push(e);
            }
        }
    }

    cluster.step("quit", Duration::from_secs(120));
    let _ = Command::new(python.with_file_name("ray")).args(["stop", "--force"]).output();
    failures
}

#[test]
fn the_oldest_and_newest_ray_observed_by_pull_and_push_show_each_programs_calls() {
    let Some(rays) = rays() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Both Rays run whatever the first showed: every failure is told at the end.
    let mut failures = Vec::new();
    for (version, python) in rays {
        failures.extend(run_on(version, &python, dir.path()));
    }
    if !failures.is_empty() {
        // The observers' logs and the push observer's trace, for `rayscope flow --trace`.
        let kept = dir.keep();
        panic!("{}\n(logs and the push trace kept in {})", failures.join("\n"), kept.display());
    }
}
