//! Shared by the `bundle_*` tests and the tests on a real Ray cluster: finding the real
//! tools (Prometheus, Alertmanager, promtool, amtool, docker-compose, Ray's Python),
//! running them as children that die with the test, driving a script that holds a Ray
//! cluster, a minimal blocking HTTP client for their APIs, and waiting with deadlines.
//!
//! The client speaks HTTP/1.0 over a `TcpStream` (one request per connection, no
//! chunking), which is all Prometheus', Alertmanager's and rayscope's APIs need, and
//! adds no dependency.

#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../ray_env/mod.rs"]
mod ray_env;

// Not every test that includes this module runs Ray.
#[allow(unused_imports)]
pub use ray_env::{ray_oldest_python, ray_python};

pub use common::free_port;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A tool by name from PATH or /usr/bin. Without it: `None` and a message, or a panic
/// when RAYSCOPE_REQUIRE_TOOLS is set (scripts/test installs every tool these tests use).
pub fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some() {
            panic!("{name} (Debian package {package}) is required (RAYSCOPE_REQUIRE_TOOLS is set) but not installed; run scripts/test");
        }
        eprintln!("skipping: {name} (Debian package {package}) is not installed");
    }
    found
}

/// Run a tool to completion; returns (success, stdout + stderr).
pub fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// A child process killed (and reaped) on drop; its output goes to a log file so a
/// failing test can show it.
pub struct Proc {
    pub name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Proc {
    pub fn spawn(name: &'static str, cmd: &mut Command, log: PathBuf) -> Proc {
        let file = std::fs::File::create(&log).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc { name, child, log }
    }

    /// The last lines of its log, for failure messages.
    pub fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    pub fn assert_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("{} exited early ({status}):\n{}", self.name, self.tail());
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A script that holds a real Ray cluster (scripts/ray-*/cluster.py): one command line
/// in, one JSON answer out (`{"step", "ok", ...}`; other output is ignored). Dropping
/// it closes its stdin, which asks the cluster to shut down, then kills what is left.
pub struct ScriptDriver {
    child: Child,
    stdin: Option<ChildStdin>,
    answers: mpsc::Receiver<String>,
}

impl ScriptDriver {
    /// Start `cmd` with its stdin and stdout piped (its stderr as the caller set it).
    pub fn spawn(cmd: &mut Command) -> ScriptDriver {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("the cluster script starts");
        let (tx, answers) = mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for l in stdout.lines().map_while(Result::ok) {
                if l.starts_with('{') && tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        ScriptDriver { child, stdin, answers }
    }

    /// The next answer, which must say `"ok": true`.
    pub fn answer(&self, what: &str, limit: Duration) -> Value {
        let line =
            self.answers.recv_timeout(limit).unwrap_or_else(|_| panic!("cluster.py: no answer to {what} in {limit:?}"));
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("cluster.py said {line:?}: {e}"));
        assert_eq!(v["ok"], true, "cluster.py: {what} failed: {v}");
        v
    }

    /// Send one command and wait for its answer.
    pub fn step(&mut self, cmd: &str, limit: Duration) -> Value {
        writeln!(self.stdin.as_mut().unwrap(), "{cmd}").unwrap();
        self.answer(cmd, limit)
    }
}

impl Drop for ScriptDriver {
    fn drop(&mut self) {
        // EOF on stdin: the script shuts Ray down; then make sure, only our processes.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// rayscope serving `config` on an ephemeral loopback port with a token; returns the
/// process and its address (from its "serving" log line).
pub fn start_rayscope(config: &Path, token: &str, dir: &Path) -> (Proc, String) {
    let log = dir.join("rayscope.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rayscope"))
        .args(["serve", "--config", config.to_str().unwrap(), "--listen", "127.0.0.1:0", "--log-format", "json"])
        .env("RAYSCOPE_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rayscope starts");
    let (address, lines) = common::serving_address(&mut child);
    // Keep draining the log (into a file) so the server never blocks on a full pipe.
    let mut file = std::fs::File::create(&log).unwrap();
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            let _ = writeln!(file, "{l}");
        }
    });
    (Proc { name: "rayscope", child, log }, address)
}

/// The bundle's alertmanager.yml with the webhook on rayscope's loopback address and
/// the token file in `token_file`.
pub fn alertmanager_config(rayscope: &str, token_file: &str) -> String {
    let text = std::fs::read_to_string(repo().join("alertmanager/alertmanager.yml")).unwrap();
    let mut cfg: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let receivers = cfg["receivers"].as_sequence_mut().unwrap();
    let webhook = receivers
        .iter_mut()
        .find(|r| r["name"].as_str() == Some("rayscope"))
        .map(|r| &mut r["webhook_configs"][0])
        .expect("a rayscope receiver");
    assert_eq!(webhook["url"].as_str(), Some("http://rayscope:8080/api/alerts"));
    webhook["url"] = format!("http://{rayscope}/api/alerts").into();
    webhook["http_config"]["authorization"]["credentials_file"] = token_file.into();
    serde_yaml::to_string(&cfg).unwrap()
}

/// A real Alertmanager with `config` (YAML text), its data and log in `dir`, on a free
/// loopback port: one instance, no gossip, no listener beyond loopback.
pub fn start_alertmanager(binary: &Path, dir: &Path, config: &str) -> (Proc, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    std::fs::write(dir.join("alertmanager.yml"), config).unwrap();
    let proc = Proc::spawn(
        "alertmanager",
        Command::new(binary)
            .arg(format!("--config.file={}", dir.join("alertmanager.yml").display()))
            .arg(format!("--storage.path={}", dir.join("am").display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--cluster.listen-address="),
        dir.join("alertmanager.log"),
    );
    (proc, addr)
}

/// A real Prometheus with `config` (YAML text), its data and log in `dir`, on a free
/// loopback port.
pub fn start_prometheus(binary: &Path, dir: &Path, config: &str) -> (Proc, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let proc = Proc::spawn(
        "prometheus",
        Command::new(binary)
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("prom").display()))
            .arg(format!("--web.listen-address={addr}")),
        dir.join("prometheus.log"),
    );
    (proc, addr)
}

/// One HTTP/1.0 request; returns (status, body). Connection errors are status 0.
pub fn http(method: &str, addr: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect(addr) else { return (0, String::new()) };
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    if s.write_all(req.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut raw = Vec::new();
    if s.read_to_end(&mut raw).is_err() {
        return (0, String::new());
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, body.to_string())
}

pub fn get_json(addr: &str, path: &str) -> Option<Value> {
    match http("GET", addr, path, &[], "") {
        (200, body) => serde_json::from_str(&body).ok(),
        _ => None,
    }
}

/// `application/x-www-form-urlencoded` value.
pub fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A Prometheus API call with form parameters; returns `data` of a success, or the
/// error text.
pub fn prom(addr: &str, endpoint: &str, params: &[(&str, String)]) -> Result<Value, String> {
    let body = params.iter().map(|(k, v)| format!("{k}={}", form_encode(v))).collect::<Vec<_>>().join("&");
    let (status, text) = http(
        "POST",
        addr,
        &format!("/api/v1/{endpoint}"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &body,
    );
    let v: Value = serde_json::from_str(&text).map_err(|_| format!("HTTP {status}: {text}"))?;
    if v["status"] == "success" {
        Ok(v["data"].clone())
    } else {
        Err(format!("HTTP {status}: {} {}", v["errorType"], v["error"]))
    }
}

/// Instant query: the result vector.
pub fn prom_query(addr: &str, expr: &str) -> Result<Vec<Value>, String> {
    prom(addr, "query", &[("query", expr.to_string())]).map(|d| d["result"].as_array().cloned().unwrap_or_default())
}

/// Range query over [start, end] (Unix seconds) at `step` seconds: the result matrix.
pub fn prom_range(addr: &str, expr: &str, start: f64, end: f64, step: f64) -> Result<Vec<Value>, String> {
    prom(
        addr,
        "query_range",
        &[
            ("query", expr.to_string()),
            ("start", format!("{start:.3}")),
            ("end", format!("{end:.3}")),
            ("step", format!("{step}")),
        ],
    )
    .map(|d| d["result"].as_array().cloned().unwrap_or_default())
}

pub fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Poll `check` until it returns `Ok`, or panic after `limit` with what it waited for
/// and the last `Err` it gave.
pub fn wait_for<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        let last = match check() {
            Ok(v) => return v,
            Err(why) => why,
        };
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}; last: {last}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every dashboard file: (file name, parsed JSON).
pub fn dashboards() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(repo().join("grafana/dashboards"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap())
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Every panel of a dashboard, rows' nested panels included.
pub fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in dashboard["panels"].as_array().into_iter().flatten() {
        out.push(p);
        for inner in p["panels"].as_array().into_iter().flatten() {
            out.push(inner);
        }
    }
    out
}

/// A panel expression with the dashboard's variables at their "All" values (each
/// query variable's `allValue`), `$__rate_interval` as Grafana computes it for the
/// provisioned datasource (4 × its 5 s scrape interval) and `$__range` as the
/// dashboards' default time range (30 m).
pub fn substitute(dashboard: &Value, expr: &str) -> String {
    substitute_over(dashboard, expr, 1800.0)
}

/// `substitute` for a time range of `range_s` seconds (`$__range`).
pub fn substitute_over(dashboard: &Value, expr: &str, range_s: f64) -> String {
    let mut out = expr.replace("$__rate_interval", "20s").replace("$__range", &format!("{}s", range_s.ceil() as u64));
    for v in dashboard["templating"]["list"].as_array().into_iter().flatten() {
        let name = v["name"].as_str().unwrap();
        let value = match v["type"].as_str() {
            Some("query") => v["allValue"].as_str().unwrap_or(".+").to_string(),
            Some("textbox") | Some("constant") => v["query"].as_str().unwrap_or("").to_string(),
            _ => continue,
        };
        out = out.replace(&format!("${{{name}}}"), &value).replace(&format!("${name}"), &value);
    }
    out
}

/// The bundle's prometheus.yml with its targets on loopback and its rule files in the
/// repository; every other setting (intervals, honor_labels, jobs) is kept.
pub fn prometheus_config(rayscope: &str, alertmanager: &str) -> String {
    prometheus_config_with_rules(&repo().join("prometheus/rules"), rayscope, alertmanager)
}

/// [`prometheus_config`] with the rule files in `rules` (a copy, e.g. [`test_rules`]).
pub fn prometheus_config_with_rules(rules: &Path, rayscope: &str, alertmanager: &str) -> String {
    let text = std::fs::read_to_string(repo().join("prometheus/prometheus.yml")).unwrap();
    let mut cfg: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    cfg["rule_files"] = serde_yaml::to_value(vec![rules.join("*.yml").to_str().unwrap()]).unwrap();
    cfg["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] =
        serde_yaml::to_value(vec![alertmanager]).unwrap();
    let job = &mut cfg["scrape_configs"][0];
    assert_eq!(job["job_name"].as_str(), Some("rayscope"));
    assert_eq!(job["static_configs"][0]["targets"][0].as_str(), Some("rayscope:8080"));
    job["static_configs"][0]["targets"] = serde_yaml::to_value(vec![rayscope]).unwrap();
    serde_yaml::to_string(&cfg).unwrap()
}

/// The alerts the faults of the real-Ray scenario fire (tests/ray_alerts.rs on Ray,
/// tests/bundle_alerts.rs on rayscope), with the label keys each must have on both.
pub const FAULT_ALERTS: &[(&str, &[&str])] = &[
    ("RayTaskFailureRateHigh", &["alertname", "severity", "SessionName"]),
    ("RayWorkersOomKilled", &["alertname", "severity", "SessionName", "ip", "Name"]),
    ("RayObjectSpilling", &["alertname", "severity", "SessionName", "ip"]),
    ("RayNodeDown", &["alertname", "severity", "SessionName", "ip", "RayNodeType"]),
    ("RayHeadDown", &["alertname", "severity", "SessionName", "ip", "RayNodeType"]),
    ("RayTargetDown", &["alertname", "severity", "job", "instance"]),
];

/// The label keys `alertname` must have (from [`FAULT_ALERTS`]).
pub fn fault_alert_keys(alertname: &str) -> std::collections::BTreeSet<String> {
    let (_, keys) = FAULT_ALERTS.iter().find(|(a, _)| *a == alertname).unwrap_or_else(|| panic!("{alertname}?"));
    keys.iter().map(|k| k.to_string()).collect()
}

/// Label keys of a firing alert from Prometheus' ALERTS series, without `alertstate`.
pub fn alert_keys(alert: &Value) -> std::collections::BTreeSet<String> {
    alert["metric"].as_object().unwrap().keys().filter(|k| *k != "alertstate" && *k != "__name__").cloned().collect()
}

/// `for:` of every alert in the fault tests' copy of the rules (the shipped rules wait
/// 30 s to 1 m; docs/alerts-on-ray.md says so).
pub const TEST_FOR_S: u64 = 10;

/// The bundle's rule files copied into `dir/rules` with every `for:` cut to
/// [`TEST_FOR_S`] (alerts without one keep none); returns that directory.
pub fn test_rules(dir: &Path) -> PathBuf {
    let out = dir.join("rules");
    std::fs::create_dir_all(&out).unwrap();
    for e in std::fs::read_dir(repo().join("prometheus/rules")).unwrap() {
        let p = e.unwrap().path();
        let mut cfg: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        for g in cfg["groups"].as_sequence_mut().unwrap() {
            for r in g["rules"].as_sequence_mut().unwrap() {
                if r.get("for").is_some() {
                    r["for"] = format!("{TEST_FOR_S}s").into();
                }
            }
        }
        std::fs::write(out.join(p.file_name().unwrap()), serde_yaml::to_string(&cfg).unwrap()).unwrap();
    }
    out
}

/// Alerts firing in Prometheus under `alertname` (an error while none).
pub fn firing_alerts(prom: &str, alertname: &str) -> Result<Vec<Value>, String> {
    let r = prom_query(prom, &format!("ALERTS{{alertname=\"{alertname}\",alertstate=\"firing\"}}"))?;
    if r.is_empty() {
        Err(format!("{alertname} not firing"))
    } else {
        Ok(r)
    }
}

/// `GET base+path` as JSON through a real HTTP client (rayscope's observe answers can be
/// large and chunked): a non-200 answer is an error naming the path, status and body.
pub fn fetch_json(base: &str, path: &str) -> Result<Value, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent.get(&format!("{base}{path}")).call().map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let text = resp.body_mut().with_config().limit(64 << 20).read_to_string().map_err(|e| e.to_string())?;
    if status != 200 {
        return Err(format!("GET {path}: {status} {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("GET {path}: {e}"))
}
