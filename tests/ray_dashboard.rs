//! Ray's own default Grafana dashboard has data on rayscope: every panel query of the
//! installed Ray package's default dashboard returns at least one series from a real
//! Prometheus scraping `rayscope serve` on the embedded default config.
//!
//! The queries are read at test time from the installed Ray (its dashboard factory
//! builds the dashboard JSON, run through the venv's python), never copied into this
//! repository, so a Ray upgrade that adds or renames a panel shows up here. Template
//! variables take their "All" values as Grafana sends them: `$SessionName` and
//! `$Instance` `.+`, `$Cluster` `.*`, and the multi-valued custom `$RayNodeType` every
//! option as a regex alternation.
//!
//! Excluded: the "TPU Utilization by Node" row (rayscope models no TPUs).
//!
//! Needs Ray (`RAYSCOPE_RAY_CLI` names the `ray` executable of a venv with
//! `ray[default]`; its `python` sits beside it) and Prometheus (`/usr/bin/prometheus`,
//! or `RAYSCOPE_PROMETHEUS`). Without them the test says so and passes, unless
//! `RAYSCOPE_REQUIRE_TOOLS` is set.

mod common;
mod ray_env;
mod ray_panels;

use common::free_port;
use ray_env::ray_python;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "ray-dashboard-test-token";

fn require(what: &str, why: &str) -> bool {
    if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some() {
        panic!("{what} is required (RAYSCOPE_REQUIRE_TOOLS is set) but {why}; run scripts/test");
    }
    eprintln!("skipping: {what} is not available ({why})");
    false
}

fn prometheus() -> Option<PathBuf> {
    let p = PathBuf::from(std::env::var("RAYSCOPE_PROMETHEUS").unwrap_or_else(|_| "/usr/bin/prometheus".into()));
    if p.exists() {
        Some(p)
    } else {
        require("Prometheus", &format!("{} does not exist", p.display()));
        None
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `rayscope serve` on the embedded default; returns the process and its address.
fn rayscope() -> (Killed, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"])
        .env("RAYSCOPE_TOKEN", TOKEN)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("rayscope starts");
    let (address, lines) = common::serving_address(&mut child);
    let child = Killed(child);
    std::thread::spawn(move || for _ in lines {});
    (child, address)
}

/// A plain HTTP/1.1 exchange on loopback; returns (status, body).
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_string() };
    (status, body)
}

fn dechunk(mut b: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = b.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        b = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Grafana's "All" for each variable of Ray's default dashboard.

#[test]
fn rays_default_dashboard_has_data_for_every_panel() {
    let (Some(python), Some(prom)) = (ray_python(), prometheus()) else { return };
    let (targets, node_types) = ray_panels::ray_default_panels(&python);
    let (_server, address) = rayscope();
    // Ten times wall speed, so the job mix has run, retried and queued within the test.
    let (status, body) = http(
        &address,
        "POST",
        "/api/control/speed",
        &[("Authorization", &format!("Bearer {TOKEN}")), ("Content-Type", "application/json")],
        r#"{"speed": 10}"#,
    );
    assert_eq!(status, 200, "{body}");

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             scrape_configs:\n  - job_name: ray\n    honor_labels: true\n    static_configs: [{{targets: ['{address}']}}]\n"
        ),
    )
    .unwrap();
    let prom_addr = format!("127.0.0.1:{}", free_port());
    let _prom = Killed(
        Command::new(&prom)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );

    let mut missing: Vec<&(String, String, String)> = targets.iter().collect();
    let deadline = Instant::now() + Duration::from_secs(150);
    while !missing.is_empty() && Instant::now() < deadline {
        missing.retain(|(_, _, expr)| {
            let q = ray_panels::with_all_values(expr, &node_types)
                .replace("$__rate_interval", "10s")
                .replace("$__interval", "5s");
            let path = format!("/api/v1/query?query={}", encode(&q));
            let Ok(stream) = TcpStream::connect(&prom_addr) else { return true };
            drop(stream);
            let (status, body) = http(&prom_addr, "GET", &path, &[], "");
            let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            if status == 400 {
                panic!("Prometheus refused a Ray dashboard query: {q}\n{body}");
            }
            !(status == 200 && v["data"]["result"].as_array().is_some_and(|r| !r.is_empty()))
        });
        std::thread::sleep(Duration::from_millis(1000));
    }
    let report: Vec<String> = missing.iter().map(|(row, title, expr)| format!("[{row}] {title}: {expr}")).collect();
    assert!(
        missing.is_empty(),
        "{} of {} Ray default-dashboard queries returned no data within 150 s:\n{}",
        missing.len(),
        targets.len(),
        report.join("\n")
    );
}
