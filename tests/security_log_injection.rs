//! Issue 7, A5: what clients send cannot forge log lines or reach the terminal. The
//! real binary serves on loopback, in text and in JSON log format; a control path with
//! a percent-encoded newline and escape sequence, and a job whose submission id carries
//! the same, must come out as one escaped record each, never as a line of their own.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "log-test-token-0123456789";
const CONFIG: &str = "cluster: {host_node: false}\nworkloads: []\nsim: {seed: 3}\n";

/// The server and everything it wrote to stderr so far; killed on drop.
struct Served {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn start(format: &str, dir: &std::path::Path) -> (Served, String) {
        let config = dir.join(format!("{format}.yaml"));
        std::fs::write(&config, CONFIG).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rayscope"))
            .args(["serve", "--config", config.to_str().unwrap(), "--listen", "127.0.0.1:0", "--log-format", format])
            .env("RAYSCOPE_TOKEN", TOKEN)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("the rayscope binary starts");
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let served = Served { child, log };
        let addr = served.wait_for("the serving address", |log| {
            let at = log.find("127.0.0.1:")?;
            let rest = &log[at..];
            let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ':')).unwrap_or(rest.len());
            let addr = &rest[..end];
            (!addr.ends_with(":0") && addr.len() > "127.0.0.1:".len()).then(|| addr.to_string())
        });
        (served, addr)
    }

    fn wait_for<T>(&self, what: &str, check: impl Fn(&str) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(v) = check(&self.log.lock().unwrap()) {
                return v;
            }
            assert!(Instant::now() < deadline, "no {what} in the log within 30 s:\n{}", self.log.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn post(addr: &str, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Send the hostile requests; then every record is checked by `check_line`.
fn inject(format: &str, check_line: impl Fn(&str)) {
    let dir = tempfile::tempdir().unwrap();
    let (served, addr) = Served::start(format, dir.path());
    let answer = post(&addr, "/api/control/nodes/10.0.1.2%0aFORGED%20INFO%20injected%1b%5b2J/kill", "");
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    let answer = post(
        &addr,
        "/api/jobs/",
        r#"{"entrypoint": "fan-out --tasks 5", "submission_id": "job\nFORGED INFO injected\u001b[2J"}"#,
    );
    assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
    // The control request is logged (refused: no such node); wait for its record.
    served.wait_for("the control request's record", |log| log.contains("control request refused").then_some(()));
    let log = served.log.lock().unwrap().clone();
    assert!(!log.contains('\u{1b}'), "an escape character reached the log:\n{log}");
    for line in log.lines() {
        assert!(!line.trim_start().starts_with("FORGED"), "a forged log line:\n{log}");
        check_line(line);
    }
    // The decoded value was logged (not only the percent-encoded request path).
    assert!(log.contains(r"10.0.1.2\nFORGED"), "the decoded hostile value was not logged:\n{log}");
}

#[test]
fn text_logs_escape_control_characters_from_clients() {
    inject("text", |line| {
        if line.contains("FORGED") && !line.contains("%0aFORGED") {
            assert!(line.contains(r"10.0.1.2\nFORGED") || line.contains(r"job\nFORGED"), "unescaped: {line}");
            assert!(line.contains(r"\u{1b}[2J"), "escape sequence not escaped: {line}");
        }
    });
}

#[test]
fn json_logs_stay_one_valid_record_per_line() {
    inject("json", |line| {
        let record: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not one JSON record ({e}): {line}"));
        if line.contains("FORGED") && !line.contains("%0aFORGED") {
            let text = record.to_string();
            assert!(text.contains(r"\nFORGED") && text.contains(r"\u001b[2J"), "{text}");
        }
    });
}
