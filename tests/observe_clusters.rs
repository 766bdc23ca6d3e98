//! One rayscope observing many Ray clusters, each kept apart under its name. Every
//! cluster's first job is `01000000`: the tables, the State API, Flow Insight, the
//! pages' APIs and the recorded traces must never mix two clusters' jobs.
//!
//! Without Ray: pushes in Ray 2.60's Event Export shape from two clusters whose job ids
//! collide, one named by its URL (`/api/observe/events/NAME`, `?cluster=NAME`), one by
//! its events' session; requests pick a cluster with `?cluster=NAME`; a bad or unknown
//! name is a 4xx naming the problem; one cluster past `--max-clusters` is refused and
//! counted; each named cluster's trace is its own directory, which `rayscope flow`
//! reads with `--cluster`.
//!
//! With Ray (RAYSCOPE_RAY_CLI; skipped without it unless RAYSCOPE_REQUIRE_TOOLS is
//! set): two real Ray heads at once (scripts/ray-observe/two_clusters.py), one
//! `rayscope observe` polling the first (`--ray east=URL`) and taking the second's
//! Event Export pushes (`/api/observe/events/west`); a small job on each, and each
//! one's jobs and Flow Insight shown apart; `/sd?targets=ray` names the polled head's
//! own metrics endpoint. Both heads are stopped at the end, also on failure.

mod api_support;
mod browser;
mod bundle_support;
mod observe_support;

use bundle_support::fetch_json as get;
use observe_support::{at, b64, eventually, Observed};
use rayscope::observe::{ObserveOptions, Source};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// Job 01000000 of a cluster whose driver calls `name` three times, each call calling
/// `{name}_leaf` once; every event carries `session`.
fn batch(session: &str, name: &str) -> Vec<u8> {
    const JOB: &str = "AQAAAA==";
    let driver = format!("{}01000000", "f".repeat(40));
    let mut events = vec![json!({"eventType": "DRIVER_JOB_LIFECYCLE_EVENT", "driverJobLifecycleEvent": {"jobId": JOB,
            "stateTransitions": [{"state": "CREATED", "timestamp": at(0)}, {"state": "FINISHED", "timestamp": at(1_000)}]}})];
    let task = |id: &str, parent: &str, name: &str, from: u64, to: u64| {
        vec![
            json!({"eventType": "TASK_DEFINITION_EVENT", "taskDefinitionEvent": {"taskId": b64(id), "taskName": name,
                "taskType": "NORMAL_TASK", "jobId": JOB, "parentTaskId": b64(parent), "taskAttempt": 0}}),
            json!({"eventType": "TASK_LIFECYCLE_EVENT", "taskLifecycleEvent": {"taskId": b64(id), "jobId": JOB, "taskAttempt": 0,
                "stateTransitions": [{"state": "PENDING_ARGS_AVAIL", "timestamp": at(from)},
                    {"state": "RUNNING", "timestamp": at(from + 1)}, {"state": "FINISHED", "timestamp": at(to)}]}}),
        ]
    };
    for i in 0..3u64 {
        let f = format!("{:016x}{}01000000", i + 1, "0".repeat(24));
        let g = format!("{:016x}{}01000000", i + 100, "0".repeat(24));
        events.extend(task(&f, &driver, name, 10 + i * 100, 90 + i * 100));
        events.extend(task(&g, &f, &format!("{name}_leaf"), 20 + i * 100, 80 + i * 100));
    }
    for e in &mut events {
        e["sessionName"] = json!(session);
    }
    Value::Array(events).to_string().into_bytes()
}

/// The names of the calls in a cluster's job 01000000, as the State API lists them.
async fn task_names(s: &Observed, cluster: &str) -> Vec<String> {
    let r = s.get(&format!("/api/v0/tasks?cluster={cluster}&limit=100")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-rayscope-cluster"), Some(cluster));
    let mut names: Vec<String> = r.json()["data"]["result"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_from_two_clusters_with_the_same_job_id_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record");
    let mut opts = ObserveOptions::new(Source::Push);
    opts.name = Some("east".into());
    opts.max_clusters = 2;
    opts.poll_every = Duration::from_millis(100);
    opts.record = Some((record.clone(), Default::default()));
    let s = Observed::start(opts).await;

    // East named by its URL's path; west, which rayscope was not told of, by its
    // events' session.
    assert_eq!(s.push_to("/api/observe/events/east", &batch("session_east", "east_call")).await.status, 200);
    let history = async |cluster: &str| -> Vec<f64> {
        let h = s.get(&format!("/api/metrics/history?cluster={cluster}")).await.json();
        h["points"].as_array().into_iter().flatten().filter_map(|p| p["timestamp"].as_f64()).collect()
    };
    eventually("east's history", async || {
        let points = history("east").await;
        (points.len() >= 2).then_some(()).ok_or(format!("{points:?}"))
    })
    .await;
    let west_from = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let r = s.push_to("/api/observe/events", &batch("session_west", "west_call")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    // A second batch of east's session needs no name: east is known by its session now.
    assert_eq!(s.push_to("/api/observe/events?cluster=east", &batch("session_east", "east_call")).await.status, 200);

    for (cluster, call) in [("east", "east_call"), ("session_west", "west_call")] {
        let names = eventually(&format!("{cluster}'s tasks"), async || {
            let names = task_names(&s, cluster).await;
            (names.len() == 2).then_some(names.clone()).ok_or(format!("{names:?}"))
        })
        .await;
        assert_eq!(names, [call.to_string(), format!("{call}_leaf")], "{cluster} holds only its own job's calls");
        let jobs = s.get(&format!("/api/jobs/?cluster={cluster}")).await.json();
        let ids: Vec<&str> = jobs.as_array().unwrap().iter().map(|j| j["job_id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["01000000"], "{jobs}");
        let b = eventually(&format!("{cluster}'s bottlenecks"), async || {
            let r = s.get(&format!("/api/flow/bottlenecks?job=01000000&cluster={cluster}")).await;
            (r.status == 200 && r.json()["entries"].as_array().is_some_and(|e| !e.is_empty()))
                .then(|| r.json())
                .ok_or(r.text())
        })
        .await;
        let on_path: Vec<&str> = b["entries"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
        assert!(on_path.contains(&call) && on_path.iter().all(|n| n.starts_with(call)), "{cluster}: {on_path:?}");
        let graph = s.get(&format!("/get_call_graph_data?flow_id=01000000&cluster={cluster}")).await;
        assert_eq!(graph.status, 200, "{}", graph.text());
        assert!(graph.text().contains(call), "{cluster}'s call graph names {call}");
    }
    // Each cluster's seed-dashboard history is its own: west's begins once west was
    // first pushed to, while east's began before.
    let west = eventually("west's history", async || {
        let points = history("session_west").await;
        (!points.is_empty()).then_some(points.clone()).ok_or("none yet".to_string())
    })
    .await;
    assert!(west.iter().all(|&t| t >= west_from - 0.001), "west's samples from {west_from}: {west:?}");
    assert!(history("east").await.iter().any(|&t| t < west_from), "east's history began before west's");
    let latest = s.get("/api/metrics?cluster=session_west").await;
    assert_eq!((latest.status, latest.header("x-rayscope-cluster")), (200, Some("session_west")));

    // No cluster named: the first.
    assert_eq!(task_names(&s, "east").await, ["east_call", "east_call_leaf"]);
    let first = s.get("/api/v0/tasks").await;
    assert_eq!(first.header("x-rayscope-cluster"), Some("east"));

    let status = s.get("/api/observe?cluster=session_west").await.json();
    assert_eq!(status["cluster"], "session_west", "{status}");
    assert_eq!(status["mode"], "push");
    let names: Vec<&str> = status["clusters"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["east", "session_west"]);
    assert_eq!((status["max_clusters"].as_u64(), status["clusters_refused"].as_u64()), (Some(2), Some(0)));
    let cluster = s.get("/api/cluster?cluster=session_west").await.json();
    assert_eq!(
        (cluster["cluster"].as_str(), cluster["clusters"].as_array().map(Vec::len)),
        (Some("session_west"), Some(2))
    );

    // rayscope's own series about each cluster, told apart by a `cluster` label.
    let metrics = eventually("each cluster's rayscope_observe_* series", async || {
        let text = s.get("/metrics").await.text();
        let seen = ["east", "session_west"].iter().all(|c| {
            text.lines().any(|l| {
                l.starts_with("rayscope_observe_events_received_total{")
                    && l.contains(&format!("cluster=\"{c}\"}} "))
                    && !l.ends_with(" 0")
            })
        });
        seen.then_some(text.clone()).ok_or(text)
    })
    .await;
    assert!(metrics.contains("cluster=\"east\",mode=\"push\""), "{metrics}");
    assert!(
        metrics.lines().filter(|l| l.starts_with("rayscope_observe_polls_total{")).all(|l| l.contains("cluster=")),
        "every series labelled: {metrics}"
    );

    // A third cluster is past the cap: refused, counted, and nothing of it is kept.
    let r = s.push_to("/api/observe/events/third", &batch("session_third", "third_call")).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.json()["error"].as_str().unwrap().contains("--max-clusters"), "{}", r.text());
    let status = s.get("/api/observe").await.json();
    assert_eq!(status["clusters_refused"], 1, "{status}");
    assert_eq!(status["clusters"].as_array().unwrap().len(), 2);

    // Bad input: a 4xx naming the problem.
    let r = s.get("/api/jobs/?cluster=nowhere").await;
    assert_eq!(r.status, 404);
    let e = r.json()["error"].as_str().unwrap().to_string();
    assert!(e.contains("\"nowhere\"") && e.contains("east, session_west"), "{e}");
    let r = s.get("/api/v0/tasks?cluster=..%2Fx").await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("cluster name"), "{}", r.text());
    let r = s.push_to("/api/observe/events?cluster=a%20b", b"[]").await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.json()["error"].as_str().unwrap().contains("cluster name"), "{}", r.text());
    let r = s.get("/sd?targets=everything").await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("rayscope") && r.text().contains("ray"), "{}", r.text());
    // Ray's metrics ports come from the dashboard's node summary: pushes alone give none.
    assert_eq!(s.get("/sd?targets=ray").await.json(), json!([]));

    // Each named cluster's trace is its own directory; flow reads one with --cluster.
    for name in ["east", "session_west"] {
        let segments = std::fs::read_dir(record.join(name)).unwrap().flatten().count();
        assert!(segments >= 2, "{name}'s trace: a segment and the lock");
    }
    let whole = std::process::Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["flow", "--trace", record.to_str().unwrap(), "--out", dir.path().join("v0").to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&whole.stderr);
    assert_eq!(whole.status.code(), Some(2), "{err}");
    assert!(err.contains("several clusters (east, session_west)"), "{err}");
    let trace_written = async || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rayscope"))
            .args(["flow", "--trace", record.to_str().unwrap(), "--cluster", "session_west", "--job", "01000000"])
            .args(["--out", dir.path().join("v1").to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && text.contains("west_call"))
            .then_some(text.clone())
            .ok_or(format!("{text}{}", String::from_utf8_lossy(&out.stderr)))
    };
    let text = eventually("west's trace to show its job", trace_written).await;
    assert!(!text.contains("east_call"), "{text}");
    // `observe --trace` of the whole directory shows each cluster's trace, apart.
    let replayed = Observed::start(ObserveOptions::new(Source::Trace(record.clone()))).await;
    let status = replayed.get("/api/observe").await.json();
    let names: Vec<&str> = status["clusters"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["east", "session_west"], "{status}");
    for (cluster, call) in [("east", "east_call"), ("session_west", "west_call")] {
        assert_eq!(task_names(&replayed, cluster).await, [call.to_string(), format!("{call}_leaf")]);
    }

    // The pages: a picker of the clusters, and every request of a page carries its cluster.
    let Some(exe) = browser::chromium_or_skip("pushes_from_two_clusters_with_the_same_job_id_stay_apart") else {
        return;
    };
    let chrome = browser::Browser::launch(&exe).await;
    let page = chrome.page().await;
    page.goto(&format!("http://{}/flow?job=01000000&cluster=session_west", s.addr)).await;
    let note = page.loaded_text("#bottlenecks", Duration::from_secs(30)).await;
    assert!(note.contains("west_call") && !note.contains("east_call"), "{note}");
    let picker = page
        .wait_for(
            "the cluster picker",
            "(() => { const p = document.querySelector('#cluster-pick'); return p ? [p.value, p.options.length] : null; })()",
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(picker, json!(["session_west", 2]));
    let api: Vec<String> =
        page.requests().into_iter().map(|r| r.url).filter(|u| u.contains("/api/") || u.contains("/ws/")).collect();
    assert!(!api.is_empty() && api.iter().all(|u| u.contains("cluster=session_west")), "{api:#?}");
    assert_eq!(page.errors(), Vec::<String>::new());
}

// ------------------------------------------------------------------ real Ray

/// A cluster's job `job`, its calls' names once Ray's records of it are in, and its
/// call graph's function names.
fn job_calls(base: &str, cluster: &str, job: &str) -> Result<(Vec<String>, String), String> {
    let jobs = get(base, &format!("/api/jobs/?cluster={cluster}"))?;
    let listed = jobs.as_array().into_iter().flatten().find(|j| j["job_id"] == job);
    if listed.is_none_or(|j| j["end_time"].is_null()) {
        return Err(format!("{cluster}: job {job} not ended yet: {jobs}"));
    }
    let tasks = get(
        base,
        &format!(
            "/api/v0/tasks?cluster={cluster}&limit=1000&filter_keys=job_id&filter_predicates=%3D&filter_values={job}"
        ),
    )?;
    let mut names: Vec<String> = tasks["data"]["result"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["state"] == "FINISHED")
        .map(|t| t["name"].as_str().unwrap_or("").to_string())
        .collect();
    names.sort();
    names.dedup();
    let graph = get(base, &format!("/api/flow/graph?job={job}&cluster={cluster}"))?;
    Ok((names, graph.to_string()))
}

#[test]
fn two_real_ray_heads_observed_by_one_rayscope_stay_apart() {
    let Some(python) = bundle_support::ray_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = bundle_support::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let (east_dash, west_dash) = (bundle_support::free_port(), bundle_support::free_port());
    let trace = dir.path().join("trace");
    let _rayscope = bundle_support::Proc::spawn(
        "rayscope observe (two clusters)",
        std::process::Command::new(env!("CARGO_BIN_EXE_rayscope"))
            .args(["observe", "--ray", &format!("east=http://127.0.0.1:{east_dash}")])
            .args(["--listen", &format!("127.0.0.1:{port}"), "--poll-every", "500ms"])
            .args(["--record", trace.to_str().unwrap()])
            .env("RUST_LOG", "info"),
        dir.path().join("rayscope.log"),
    );
    bundle_support::wait_for("rayscope to answer", Duration::from_secs(30), || get(&base, "/api/observe"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ray-observe/two_clusters.py");
    let mut cmd = std::process::Command::new(&python);
    cmd.arg(&script)
        .arg(dir.path().join("ray"))
        .args(["--east-dashboard-port", &east_dash.to_string(), "--west-dashboard-port", &west_dash.to_string()])
        .args(["--west-push-to", &format!("{base}/api/observe/events/west")])
        .stderr(std::process::Stdio::inherit());
    // Dropping the driver closes its stdin: the script stops both heads, on failure too.
    let mut heads = bundle_support::ScriptDriver::spawn(&mut cmd);
    let ready = heads.answer("ready", Duration::from_secs(600));
    let east = heads.step("run east", Duration::from_secs(120));
    let west = heads.step("run west", Duration::from_secs(120));
    let (east_job, west_job) = (east["job_id"].as_str().unwrap(), west["job_id"].as_str().unwrap());
    assert_eq!((east_job, west_job), ("01000000", "01000000"), "each head's first driver is job 01000000");
    let seen = |cluster: &str, mine: &str, theirs: &str| {
        let (names, graph) =
            bundle_support::wait_for(&format!("{cluster}'s job and its calls"), Duration::from_secs(60), || {
                let (names, graph) = job_calls(&base, cluster, "01000000")?;
                let want = [format!("{mine}_leaf"), format!("{mine}_root")];
                if !want.iter().all(|w| names.iter().any(|n| n.contains(w.as_str()))) {
                    return Err(format!("{cluster}: calls {names:?}"));
                }
                Ok((names, graph))
            });
        let foreign = format!("{theirs}_");
        assert!(names.iter().all(|n| !n.contains(&foreign)), "{cluster} shows {theirs}'s calls: {names:?}");
        assert!(graph.contains(&format!("{mine}_root")) && !graph.contains(&foreign), "{cluster}'s graph: {graph}");
    };
    seen("east", "east", "west");
    seen("west", "west", "east");
    let status = get(&base, "/api/observe").unwrap();
    let names: Vec<&str> = status["clusters"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["east", "west"], "{status}");
    let west_status = get(&base, "/api/observe?cluster=west").unwrap();
    assert!(west_status["events_received"].as_u64().unwrap() > 10, "west pushed its events: {west_status}");
    // Ray's own metrics endpoint of the polled head, labelled with its cluster.
    let east_metrics_port = ready["east_metrics_port"].as_u64().unwrap();
    let sd = bundle_support::wait_for("the polled head's metrics target", Duration::from_secs(30), || {
        let sd = get(&base, "/sd?targets=ray")?;
        sd.as_array().filter(|g| !g.is_empty()).cloned().ok_or(format!("{sd}"))
    });
    assert_eq!(sd.len(), 1, "{sd:?}");
    let target = sd[0]["targets"][0].as_str().unwrap().to_string();
    assert!(target.ends_with(&format!(":{east_metrics_port}")), "{sd:?}");
    assert_eq!(sd[0]["labels"]["ray_io_cluster"], "east");
    assert_eq!(sd[0]["labels"]["ray_is_head_node"], "true");
    // It is Ray's own exporter: Prometheus scraping the target gets Ray's series.
    bundle_support::wait_for("Ray's series at the target", Duration::from_secs(60), || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(10)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut r = agent.get(&format!("http://{target}/metrics")).call().map_err(|e| e.to_string())?;
        let text = r.body_mut().with_config().limit(64 << 20).read_to_string().map_err(|e| e.to_string())?;
        text.lines().any(|l| l.starts_with("ray_")).then_some(()).ok_or(format!("no ray_ series at {target}"))
    });
    heads.step("quit", Duration::from_secs(120));
    // Each cluster's trace is its own, and rayscope flow reads each apart.
    for (cluster, mine) in [("east", "east_root"), ("west", "west_root")] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rayscope"))
            .args(["flow", "--trace", trace.to_str().unwrap(), "--cluster", cluster, "--job", "01000000"])
            .args(["--out", dir.path().join(format!("views-{cluster}")).to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "flow --cluster {cluster}: {}", String::from_utf8_lossy(&out.stderr));
        let graph = std::fs::read_to_string(dir.path().join(format!("views-{cluster}/graph.json"))).unwrap();
        assert!(graph.contains(mine), "{cluster}'s recorded graph: {text}");
    }
}
