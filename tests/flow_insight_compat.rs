//! Cross-check against Ant's own `flow-insight` 1.1.1 server: `rayscope flow --emit`
//! posts the seed scenario's calls and physical stats to a real server on loopback, and
//! for every endpoint Ant's frontend calls (`frontend/src/services/api.ts`), that
//! server's answer must equal what rayscope itself answers for the same run: the call
//! graph (count per edge), the flame graph (time and calls per callee, and `_main`'s
//! end), the physical view (each actor's node, pid and state; the nodes), contexts,
//! resource usage, snapshots, and the flow's creation time (an integer of ms on both;
//! Ant's is its wall clock). A flow neither knows gets the same empty answers.
//!
//! Needs the `flowinsight` executable of a venv with `flow-insight==1.1.1`:
//! `RAYSCOPE_FLOW_INSIGHT` names it (scripts/test installs it into
//! `target/flow-insight`); the server runs as the venv's python serving
//! `flow_insight.api.fastapi_api.create_app()` with uvicorn (the wheel has no frontend
//! build, so `flowinsight serve` itself refuses to start). Without it the test says so
//! and passes, unless `RAYSCOPE_REQUIRE_TOOLS` is set (and `RAYSCOPE_SKIP_FLOW_INSIGHT`
//! does not say why not).

mod api_support;

use api_support::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Seed 42 draws a tree of five workers (about 2,100 calls): big enough to be the seed
/// scenario, small enough for Ant's server, which takes a few ms per record.
const SEED: u64 = 42;

fn flow_insight() -> Option<PathBuf> {
    let path = std::env::var("RAYSCOPE_FLOW_INSIGHT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target/flow-insight/bin/flowinsight")));
    if path.exists() {
        return Some(path);
    }
    let why = std::env::var("RAYSCOPE_SKIP_FLOW_INSIGHT").ok();
    if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some() && why.is_none() {
        panic!(
            "flow-insight is required (RAYSCOPE_REQUIRE_TOOLS is set) but {} does not exist; run scripts/test",
            path.display()
        );
    }
    eprintln!("skipping: flow-insight is not available ({})", why.unwrap_or_else(|| format!("no {}", path.display())));
    None
}

/// Ant's server on a free loopback port; killed on drop.
struct Ant {
    child: Child,
    port: u16,
}

impl Drop for Ant {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Ant {
    fn start(flowinsight: &std::path::Path) -> Ant {
        let python = flowinsight.with_file_name("python");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(python)
            .arg("-c")
            .arg(format!(
                "import uvicorn; from flow_insight.api.fastapi_api import create_app; \
                 uvicorn.run(create_app(), host='127.0.0.1', port={port}, log_level='warning')"
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start flow-insight's server");
        let mut ant = Ant { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(v) = ant.get("/ping") {
                if v["result"] == true {
                    return ant;
                }
            }
            assert!(ant.child.try_wait().unwrap().is_none(), "flow-insight's server exited");
            assert!(Instant::now() < deadline, "flow-insight's server did not answer /ping within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn get(&self, path: &str) -> std::io::Result<Value> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf)?;
        let split = buf.windows(4).position(|w| w == b"\r\n\r\n").ok_or(std::io::ErrorKind::InvalidData)?;
        serde_json::from_slice(&buf[split + 4..]).map_err(|_| std::io::ErrorKind::InvalidData.into())
    }
}

/// Edge (caller name, callee name) → count, names as `Service:instance.method` or the function.
fn call_counts(data: &Value) -> BTreeMap<(String, String), u64> {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for m in data["methods"].as_array().unwrap() {
        let s = &m["service"];
        names.insert(
            m["id"].as_str().unwrap().into(),
            format!(
                "{}:{}.{}",
                s["service_name"].as_str().unwrap(),
                s["instance_id"].as_str().unwrap(),
                m["method"]["name"].as_str().unwrap()
            ),
        );
    }
    for f in data["functions"].as_array().unwrap() {
        names.insert(f["id"].as_str().unwrap().into(), f["method"]["name"].as_str().unwrap().into());
    }
    data["callFlows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name =
                |k: &str| names.get(e[k].as_str().unwrap()).cloned().unwrap_or_else(|| panic!("unknown id {}", e[k]));
            ((name("source_id"), name("target_id")), e["count"].as_u64().unwrap())
        })
        .collect()
}

/// Callee id → (calls, total ms of ended calls), below the root.
fn flame_per_callee(root: &Value) -> BTreeMap<String, (u64, i64)> {
    let mut out: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    let mut stack: Vec<&Value> = root["children"].as_array().unwrap().iter().collect();
    while let Some(n) = stack.pop() {
        let e = out.entry(n["id"].as_str().unwrap().to_string()).or_default();
        e.0 += 1;
        let (start, end) = (n["start_time"].as_i64().unwrap(), n["end_time"].as_i64().unwrap());
        if end >= 0 {
            e.1 += end - start;
        }
        stack.extend(n["children"].as_array().unwrap().iter());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_insight_shows_the_same_graph_as_rayscope() {
    let Some(flowinsight) = flow_insight() else { return };
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/flow-insight.yaml");

    // rayscope's own answers, from a server running the same config and seed.
    let mut cfg = rayscope::config::load_file_with(std::path::Path::new(example), &[]).expect("the example is valid");
    cfg.sim.seed = SEED;
    cfg.sim.speed = 1_000_000.0;
    let s = Server::start(cfg, Tokens::default()).await;
    eventually("the job to end", Duration::from_secs(30), || async {
        let v = s.get("/api/flow/jobs").await.json();
        (!v["jobs"][0]["end_time_s"].is_null()).then_some(())
    })
    .await;
    let ours_graph = s.get("/get_call_graph_data?flow_id=01000000&stack_mode=false").await.json();
    let ours_flame = s.get("/get_flame_graph_data?flow_id=01000000").await.json();
    let ours_physical = s.get("/get_physical_view_data?flow_id=01000000").await.json();
    let mut ours_rest = BTreeMap::new();
    for path in ANSWERED_ALIKE.iter().chain(UNKNOWN_FLOW) {
        let r = s.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        ours_rest.insert(*path, r.json());
    }
    s.stop().await;
    assert_eq!(ours_graph["result"], true);

    // The same run, emitted to Ant's server.
    let ant = tokio::task::spawn_blocking(move || Ant::start(&flowinsight)).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let emitted = tokio::task::spawn_blocking({
        let (url, dir) = (format!("http://127.0.0.1:{}", ant.port), out.path().to_path_buf());
        move || {
            Command::new(env!("CARGO_BIN_EXE_rayscope"))
                .args(["flow", "--config", example, "--seed", &SEED.to_string(), "--emit", &url])
                .args(["--flow-id", "01000000", "--out"])
                .arg(&dir)
                .output()
                .expect("run rayscope flow")
        }
    })
    .await
    .unwrap();
    assert!(emitted.status.success(), "rayscope flow --emit failed: {}", String::from_utf8_lossy(&emitted.stderr));
    let printed = String::from_utf8_lossy(&emitted.stdout);
    assert!(printed.contains("emitted") && printed.contains("records of job 01000000 to"), "{printed}");
    assert!(printed.contains("as flow 01000000"), "{printed}");

    let theirs_graph = ant.get("/get_call_graph_data?flow_id=01000000").unwrap();
    let theirs_flame = ant.get("/get_flame_graph_data?flow_id=01000000").unwrap();
    assert_eq!(theirs_graph["result"], true, "{theirs_graph}");

    let (ours, theirs) = (call_counts(&ours_graph["data"]), call_counts(&theirs_graph["data"]));
    assert!(ours.len() >= 5, "a real graph: {ours:?}");
    assert!(ours.values().sum::<u64>() > 1000);
    assert_eq!(ours, theirs, "call counts per edge: rayscope vs flow-insight");

    let (ours, theirs) = (flame_per_callee(&ours_flame["data"]), flame_per_callee(&theirs_flame["data"]));
    assert!(ours.contains_key("Worker.process"), "{ours:?}");
    assert_eq!(ours, theirs, "flame graph time and calls per callee: rayscope vs flow-insight");
    assert_eq!(theirs_flame["data"]["id"], "_main");
    // The driver's end reached Ant: its root ends when rayscope's does.
    assert!(ours_flame["data"]["end_time"].as_i64() > Some(0), "{}", ours_flame["data"]["end_time"]);
    assert_eq!(theirs_flame["data"]["end_time"], ours_flame["data"]["end_time"], "_main's end");

    // The physical view: each actor where it ran, and the nodes.
    let theirs_physical = ant.get("/get_physical_view_data?flow_id=01000000").unwrap();
    let services = |v: &Value| -> BTreeMap<String, (Value, Value, Value)> {
        v["data"]["services"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let st = &s["stats"];
                (
                    format!("{}:{}", s["service"]["service_name"], s["service"]["instance_id"]),
                    (st["node_id"].clone(), st["pid"].clone(), st["state"].clone()),
                )
            })
            .collect()
    };
    let ours = services(&ours_physical);
    assert!(ours.len() >= 3, "{ours_physical}");
    assert_eq!(ours, services(&theirs_physical), "physical view: services");
    let nodes = |v: &Value| -> BTreeMap<String, Value> {
        v["data"]["nodes"].as_object().unwrap().iter().map(|(k, n)| (k.clone(), n["resources"].clone())).collect()
    };
    assert_eq!(nodes(&ours_physical), nodes(&theirs_physical), "physical view: nodes and their resources");

    // The rest of what the frontend asks, for this flow and for one neither knows.
    for path in ANSWERED_ALIKE.iter().chain(UNKNOWN_FLOW) {
        let theirs = ant.get(path).unwrap();
        let ours = &ours_rest[path];
        assert_eq!((&ours["result"], &theirs["result"]), (&Value::Bool(true), &Value::Bool(true)), "{path}");
        if path.starts_with("/get_flow_creation_time") {
            assert!(ours["data"].is_u64() && theirs["data"].is_u64(), "{path}: {ours} vs {theirs}");
        } else if path.starts_with("/get_physical_view_data") {
            assert_eq!(ours["data"]["services"], theirs["data"]["services"], "{path}");
        } else {
            assert_eq!(ours["data"], theirs["data"], "{path}: rayscope vs flow-insight");
        }
    }
}

/// Endpoints whose answers must be equal (or, for the creation time, of one type).
const ANSWERED_ALIKE: &[&str] = &[
    "/get_context?flow_id=01000000",
    "/get_resource_usage?flow_id=01000000",
    "/get_flow_creation_time?flow_id=01000000",
    "/list_snapshots?flow_id=01000000",
];

/// Every endpoint the frontend calls, for a flow nobody posted.
const UNKNOWN_FLOW: &[&str] = &[
    "/get_call_graph_data?flow_id=ffffffff&stack_mode=false",
    "/get_flame_graph_data?flow_id=ffffffff",
    "/get_physical_view_data?flow_id=ffffffff",
    "/get_context?flow_id=ffffffff",
    "/get_resource_usage?flow_id=ffffffff",
    "/get_flow_creation_time?flow_id=ffffffff",
    "/list_snapshots?flow_id=ffffffff",
];
