//! Shared by the `api_*` tests: a server on an ephemeral port over a small fixed-seed
//! cluster, a minimal HTTP/1.1 client, and waiting on conditions with deadlines.
//!
//! The client is hand-rolled over a `TcpStream` (one request per connection, like
//! `curl`): it adds no dependency, and it can send what a polite client library would
//! refuse to (a declared 2 MiB body, a malformed header), which the error-path tests need.

#![allow(dead_code)]

use rayscope::api::{self, ServeOptions};
use rayscope::config::{self, Config};
use rayscope::sim::runner::{EngineHandle, RunOptions};
use serde_json::Value;
use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Three nodes, a fan-out and an actor pool, at 20× wall speed; no host readings.
pub const CONFIG: &str = r#"
cluster:
  host_node: false
  head: {cpu: 4, memory: 8GiB}
  node_types:
    - name: worker
      count: 2
      cpu: 4
      memory: 8GiB
      ip_range: 10.0.1.0/24
workloads:
  - kind: fan_out
    name: fan-out
    tasks: 200
    task_duration: 1s
  - kind: actor_pool
    name: pool
    actors: 4
    calls_per_actor: 1000
    call_duration: 2s
sim:
  seed: 7
  speed: 20
server:
  stream_interval: 100ms
  max_stream_clients: 2
"#;

pub const TOKEN: &str = "test-token-0123456789";
pub const ALERT_TOKEN: &str = "alert-token-9876543210";

pub fn config() -> Config {
    config::load_str(CONFIG, "api test config").expect("the test config is valid")
}

/// A running server; dropping it without `stop` leaves it to the test runtime.
pub struct Server {
    pub addr: SocketAddr,
    pub handle: EngineHandle,
    stop: Option<oneshot::Sender<()>>,
    pub task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    pub async fn start(cfg: Config, tokens: Tokens) -> Server {
        let mut opts = ServeOptions::new(cfg.clone());
        opts.history_every = Duration::from_millis(100);
        opts.token = tokens.token.map(str::to_string);
        opts.alert_token = tokens.alert.map(str::to_string);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = EngineHandle::spawn(cfg, RunOptions::default());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(api::serve(listener, handle.clone(), opts, async move {
            let _ = rx.await;
        }));
        Server { addr, handle, stop: Some(tx), task }
    }

    pub async fn with_token() -> Server {
        Server::start(config(), Tokens { token: Some(TOKEN), alert: Some(ALERT_TOKEN) }).await
    }

    pub async fn without_token() -> Server {
        Server::start(config(), Tokens::default()).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Send the shutdown signal and return how long `serve` took to return.
    pub async fn stop(mut self) -> Duration {
        let started = Instant::now();
        let _ = self.stop.take().map(|tx| tx.send(()));
        tokio::time::timeout(Duration::from_secs(10), &mut self.task)
            .await
            .expect("serve returned within 10 s")
            .expect("serve did not panic")
            .expect("serve returned Ok");
        started.elapsed()
    }

    pub async fn get(&self, path: &str) -> Resp {
        request(self.addr, "GET", path, &[], None).await
    }

    pub async fn post(&self, path: &str, body: &str) -> Resp {
        request(self.addr, "POST", path, &[("authorization", &format!("Bearer {TOKEN}"))], Some(body.as_bytes())).await
    }

    pub async fn post_as(&self, path: &str, auth: Option<&str>, body: &str) -> Resp {
        let header = auth.map(|a| format!("Bearer {a}"));
        let headers: Vec<(&str, &str)> = header.iter().map(|h| ("authorization", h.as_str())).collect();
        request(self.addr, "POST", path, &headers, Some(body.as_bytes())).await
    }
}

#[derive(Default, Clone, Copy)]
pub struct Tokens {
    pub token: Option<&'static str>,
    pub alert: Option<&'static str>,
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    /// The `data.result` of Ray's State API envelope, after checking the envelope.
    pub fn state(&self) -> Value {
        assert_eq!(self.status, 200, "{}", self.text());
        let v = self.json();
        assert_eq!(v["result"], true, "{v}");
        assert_eq!(v["msg"], "", "{v}");
        v["data"]["result"].clone()
    }
    /// The error body's `parameter` (query) or `field` (body).
    pub fn names(&self) -> String {
        let v = self.json();
        assert!(v["error"].is_string(), "{v}");
        v.get("parameter").or_else(|| v.get("field")).and_then(Value::as_str).unwrap_or_default().to_string()
    }
}

/// One HTTP/1.1 request on a fresh connection; the body is sent with its length.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Resp {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    let mut wire = head.into_bytes();
    wire.extend_from_slice(body.unwrap_or_default());
    raw(addr, &wire).await
}

/// Write `wire` as is and read the whole answer.
pub async fn raw(addr: SocketAddr, wire: &[u8]) -> Resp {
    let work = async {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(wire).await.expect("write request");
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.expect("read response");
        parse(&buf)
    };
    tokio::time::timeout(Duration::from_secs(10), work).await.expect("response within 10 s")
}

fn parse(buf: &[u8]) -> Resp {
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete response head");
    let head = String::from_utf8_lossy(&buf[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = buf[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
        body = dechunk(&body);
    }
    Resp { status, headers, body }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").expect("chunk size line");
        let size = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().split(';').next().unwrap().trim(), 16)
            .unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[eol + 2 + size + 2..];
    }
}

/// Poll `check` until it yields a value or `within` passes.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {within:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The value of the first `name` sample (bare or with labels) in the server's /metrics.
pub async fn metric(s: &Server, name: &str) -> f64 {
    let text = s.get("/metrics").await.text();
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
}
