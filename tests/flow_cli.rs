//! `rayscope flow`: every view written, the bottleneck list printed, `--at` time
//! travel, and bad input refused with exit 2 and a message that names it.

use std::process::Command;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/flow-insight.yaml");

fn flow(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rayscope")).arg("flow").args(args).output().expect("run rayscope flow")
}

#[test]
fn writes_every_view_and_prints_the_bottlenecks() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = flow(&["--config", EXAMPLE, "--seed", "2", "--out", out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed = String::from_utf8_lossy(&o.stdout);
    let first = printed.lines().nth(3).expect("a ranked entry");
    assert!(
        first.trim_start().starts_with("1 ") && first.contains("Worker.process") && first.contains("true"),
        "{printed}"
    );
    for f in [
        "graph.json",
        "physical.json",
        "stack.json",
        "flame.folded",
        "flame.svg",
        "flame-wall.folded",
        "flame-wall.svg",
        "timeline.json",
        "findings.json",
        "bottlenecks.txt",
    ] {
        let body = std::fs::read(dir.path().join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(!body.is_empty(), "{f} is empty");
        if f.ends_with(".json") {
            serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("bottlenecks.txt")).unwrap(), printed);
    // The seed's actor tree is written the documented way: no anti-pattern is named.
    assert!(printed.contains("findings (Ray's design patterns and anti-patterns): none"), "{printed}");
    // The file is the whole timeline: no window, no limit, nothing cut.
    let tl: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("timeline.json")).unwrap()).unwrap();
    let o = &tl["otherData"];
    assert_eq!((o["truncated"].as_bool(), o["limit"].is_null()), (Some(false), true), "{o}");
    let x =
        tl["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X" && e["cat"] == "task").count() as u64;
    assert_eq!(o["total"].as_u64(), Some(x));
    // At the end nothing is in flight; mid-run something is.
    let stack = |d: &std::path::Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(d.join("stack.json")).unwrap()).unwrap()
    };
    assert_eq!(stack(dir.path())["in_flight"], 0);
    let mid = tempfile::tempdir().unwrap();
    let o = flow(&["--config", EXAMPLE, "--seed", "2", "--at", "3600", "--out", mid.path().to_str().unwrap()]);
    assert!(o.status.success());
    assert!(stack(mid.path())["in_flight"].as_u64().unwrap() > 0);
}

#[test]
fn bad_input_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    for (args, needle) in [
        (vec!["--config", EXAMPLE, "--job", "ffffffff", "--out", out], "ffffffff"),
        (vec!["--config", EXAMPLE, "--emit", "https://example.invalid", "--out", out], "http://"),
        (vec!["--config", EXAMPLE, "--emit", "http://127.0.0.1:notaport", "--out", out], "port"),
        (vec!["--config", EXAMPLE, "--at=-5", "--out", out], "--at"),
        (vec!["--config", EXAMPLE, "--set", "sim.flow_calls_per_job=-1", "--out", out], "flow_calls_per_job"),
        (vec!["--config", "/no/such/file.yaml", "--out", out], "file.yaml"),
        (vec!["--config", EXAMPLE, "--flow-id", "x", "--out", out], "--emit"),
        (vec!["--config", EXAMPLE, "--emit", "http://127.0.0.1:9", "--flow-id", " ", "--out", out], "--flow-id"),
    ] {
        let o = flow(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing written on bad input");
    let help = Command::new(env!("CARGO_BIN_EXE_rayscope")).args(["flow", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in
        ["--config", "--seed", "--job", "--out", "--emit", "--flow-id", "--at", "bottlenecks.txt", "not windowed"]
    {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}
