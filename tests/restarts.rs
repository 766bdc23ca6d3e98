//! Issue 21: restarts are honest. Ray starts a new session on every start, and so does
//! `rayscope serve`: after `kill -9` and a restart, the `SessionName` label differs, so
//! Prometheus sees new series instead of counter resets on the old ones.

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// Start `rayscope serve` on an ephemeral port, read its `SessionName` from /metrics,
/// and kill it without grace.
fn session_of_one_start() -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["serve", "--log-format", "json", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rayscope starts");
    let (address, lines) = common::serving_address(&mut child);
    let drain = std::thread::spawn(move || lines.for_each(drop));
    let mut tcp = std::net::TcpStream::connect(&address).unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    drain.join().unwrap();
    let at = text.find("SessionName=\"").expect("a SessionName label on /metrics") + "SessionName=\"".len();
    text[at..].split('"').next().unwrap().to_string()
}

#[test]
fn every_serve_start_is_a_new_session_named_as_ray_names_one() {
    let first = session_of_one_start();
    let second = session_of_one_start();
    assert!(first.starts_with("session_") && second.starts_with("session_"), "{first} {second}");
    assert_ne!(first, second, "a restart must not reuse the session");
}

/// A `rayscope serve` child with a token and a state directory, on an ephemeral port.
struct Child {
    child: std::process::Child,
    address: String,
    drain: Option<std::thread::JoinHandle<()>>,
}

const TOKEN: &str = "restart-token-0123456789";

impl Child {
    fn start(state_dir: &std::path::Path) -> Child {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rayscope"))
            .args(["serve", "--log-format", "json", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(state_dir)
            .env("RAYSCOPE_TOKEN", TOKEN)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rayscope starts");
        let (address, lines) = common::serving_address(&mut child);
        let drain = Some(std::thread::spawn(move || lines.for_each(drop)));
        Child { child, address, drain }
    }

    /// One request; the status and the body.
    fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, serde_json::Value) {
        let mut tcp = std::net::TcpStream::connect(&self.address).unwrap();
        let body = body.unwrap_or("");
        let req = format!(
            "{method} {path} HTTP/1.0\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(req.as_bytes()).unwrap();
        let mut text = String::new();
        tcp.read_to_string(&mut text).unwrap();
        let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let json = text.split_once("\r\n\r\n").and_then(|(_, b)| serde_json::from_str(b).ok()).unwrap_or_default();
        (status, json)
    }

    fn kill_without_grace(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.drain.take().unwrap().join().unwrap();
    }
}

/// Wait for `check` to hold, up to `within`.
fn eventually(what: &str, within: std::time::Duration, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !check() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_state_directory_keeps_submitted_jobs_and_received_alerts_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let first = Child::start(dir.path());
    let (status, job) = first.call(
        "POST",
        "/api/jobs/",
        Some(r#"{"entrypoint": "fan-out --tasks 100000", "submission_id": "raysubmit_keep_me", "metadata": {"team": "infra"}}"#),
    );
    assert_eq!(status, 200, "{job}");
    let hook = r#"{"version": "4", "status": "firing", "alerts": [{"status": "firing", "labels": {"alertname": "RayNodeDown"}}]}"#;
    assert_eq!(first.call("POST", "/api/alerts", Some(hook)).0, 200);
    // Both reach the disk within the write period; then the server dies without grace.
    eventually("the state files", std::time::Duration::from_secs(10), || {
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
        read("jobs.json").contains("raysubmit_keep_me") && read("alerts.json").contains("RayNodeDown")
    });
    first.kill_without_grace();
    for file in ["jobs.json", "alerts.json"] {
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
        assert!(serde_json::from_str::<Vec<serde_json::Value>>(&text).is_ok(), "{file} is whole: {text}");
    }

    let second = Child::start(dir.path());
    let (status, kept) = second.call("GET", "/api/jobs/raysubmit_keep_me", None);
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["metadata"]["team"], "infra", "{kept}");
    // It was running when the server died: it cannot have gone on, and says so.
    assert_eq!(kept["status"], "FAILED", "{kept}");
    assert!(kept["message"].as_str().unwrap().contains("restarted"), "{kept}");
    assert!(kept["session_name"].as_str().unwrap().starts_with("session_"));
    let (_, listed) = second.call("GET", "/api/jobs/", None);
    assert!(listed.as_array().unwrap().iter().any(|j| j["submission_id"] == "raysubmit_keep_me"));
    let (_, alerts) = second.call("GET", "/api/alerts", None);
    assert_eq!(alerts["alerts"][0]["labels"]["alertname"], "RayNodeDown", "{alerts}");
    second.kill_without_grace();

    // A file rayscope did not write is refused, naming it, rather than silently dropped.
    std::fs::write(dir.path().join("alerts.json"), "{not json").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("alerts.json"), "{}", String::from_utf8_lossy(&out.stderr));
}
