//! A real headless Chromium driven over the DevTools Protocol, for the page tests
//! (the dashboard's, and Flow Insight's later): launch, open a page, evaluate
//! JavaScript, wait on DOM conditions with deadlines, record every network request,
//! and save screenshots under `target/screenshots/`.
//!
//! There is no Playwright for Rust here, and the protocol is small: JSON messages over
//! one WebSocket (`tokio-tungstenite`), with pages attached as flattened sessions.
//! Chromium picks its own debugging port (`--remote-debugging-port=0`) and writes it to
//! `DevToolsActivePort` in a fresh user-data dir, so parallel tests never collide.
//!
//! Also here: a rayscope server that can be stopped and started again on the same
//! port, which the reconnect check needs.

#![allow(dead_code)]

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use rayscope::api::{self, ServeOptions};
use rayscope::config::Config;
use rayscope::sim::runner::{EngineHandle, RunOptions};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

/// Events kept per browser; a test that needs more is doing something else.
const MAX_EVENTS: usize = 200_000;

/// Where Chromium is: `RAYSCOPE_CHROMIUM`, else the usual names on `PATH`.
pub fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RAYSCOPE_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Chromium, or `None` after saying the test is skipped; a failure instead when
/// `RAYSCOPE_REQUIRE_TOOLS` is set.
pub fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        if std::env::var_os("RAYSCOPE_REQUIRE_TOOLS").is_some() {
            panic!("chromium not found and RAYSCOPE_REQUIRE_TOOLS is set: install the Debian package `chromium`");
        }
        eprintln!("SKIPPED {test}: chromium not found (apt-get install chromium; set RAYSCOPE_REQUIRE_TOOLS=1 to make this a failure)");
    }
    found
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// A running headless Chromium; killed on drop.
pub struct Browser {
    child: Child,
    _dir: tempfile::TempDir,
    out: mpsc::UnboundedSender<Message>,
    pending: Pending,
    events: Arc<Mutex<Vec<Value>>>,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
}

impl Browser {
    pub async fn launch(exe: &Path) -> Browser {
        let dir = tempfile::tempdir().expect("a temporary user-data dir");
        let log = std::fs::File::create(dir.path().join("chromium.log")).expect("chromium log file");
        let child = Command::new(exe)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-dev-shm-usage",
                "--metrics-recording-only",
                "--remote-debugging-port=0",
                "--window-size=1400,1000",
            ])
            .arg(format!("--user-data-dir={}", dir.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", exe.display()));
        let port_file = dir.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        let endpoint = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break format!("ws://127.0.0.1:{}{}", port.trim(), path.trim());
                }
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(dir.path().join("chromium.log")).unwrap_or_default();
                panic!("chromium wrote no DevToolsActivePort within 30 s; its log:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        let (ws, _) =
            tokio_tungstenite::connect_async(endpoint.as_str()).await.expect("connect to the DevTools socket");
        let (mut sink, mut source) = ws.split();
        let (out, mut out_rx) = mpsc::unbounded_channel::<Message>();
        tokio::spawn(async move {
            while let Some(m) = out_rx.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let events: Arc<Mutex<Vec<Value>>> = Arc::default();
        let (p, e) = (pending.clone(), events.clone());
        let reader = tokio::spawn(async move {
            while let Some(Ok(m)) = source.next().await {
                let Message::Text(text) = m else { continue };
                let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
                if let Some(id) = v.get("id").and_then(Value::as_u64) {
                    if let Some(tx) = p.lock().unwrap().remove(&id) {
                        let _ = tx.send(v);
                    }
                } else if v.get("method").is_some() {
                    let mut e = e.lock().unwrap();
                    if e.len() < MAX_EVENTS {
                        e.push(v);
                    }
                }
            }
        });
        Browser { child, _dir: dir, out, pending, events, next_id: AtomicU64::new(1), reader }
    }

    /// Send one command (to a page when `session` is set) and return its `result`.
    pub async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        self.out
            .send(Message::Text(msg.to_string().into()))
            .map_err(|_| "the DevTools socket is closed".to_string())?;
        let v = tokio::time::timeout(Duration::from_secs(30), rx)
            .await
            .map_err(|_| format!("{method}: no answer within 30 s"))?
            .map_err(|_| format!("{method}: the DevTools socket closed"))?;
        match v.get("error") {
            Some(e) => Err(format!("{method}: {e}")),
            None => Ok(v["result"].clone()),
        }
    }

    /// A new tab (1400×1000) with the Network, Page and Runtime domains on.
    pub async fn page(&self) -> Page<'_> {
        let target = self.call(None, "Target.createTarget", json!({"url": "about:blank"})).await.unwrap();
        let target_id = target["targetId"].as_str().unwrap().to_string();
        let attached =
            self.call(None, "Target.attachToTarget", json!({"targetId": target_id, "flatten": true})).await.unwrap();
        let session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Network.enable", "Page.enable", "Runtime.enable"] {
            self.call(Some(&session), domain, json!({})).await.unwrap();
        }
        self.call(
            Some(&session),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await
        .unwrap();
        Page { browser: self, session, target_id }
    }

    fn events_of(&self, session: &str) -> Vec<Value> {
        self.events.lock().unwrap().iter().filter(|e| e["sessionId"] == session).cloned().collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.reader.abort();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request a page made, as the Network domain reported it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub url: String,
    /// Bytes received for it (`Network.loadingFinished`), when it finished.
    pub encoded_bytes: Option<u64>,
}

pub struct Page<'b> {
    browser: &'b Browser,
    session: String,
    target_id: String,
}

impl Page<'_> {
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        self.browser.call(Some(&self.session), method, params).await
    }

    /// Navigate and wait for the document to finish loading.
    pub async fn goto(&self, url: &str) {
        let r = self.call("Page.navigate", json!({"url": url})).await.unwrap();
        assert!(r.get("errorText").is_none(), "navigating to {url}: {r}");
        self.wait_for(&format!("{url} loaded"), "document.readyState === 'complete'", Duration::from_secs(20)).await;
    }

    /// Evaluate `expr` (awaiting a promise) and return its value.
    pub async fn eval(&self, expr: &str) -> Result<Value, String> {
        let r = self
            .call("Runtime.evaluate", json!({"expression": expr, "returnByValue": true, "awaitPromise": true}))
            .await?;
        if let Some(e) = r.get("exceptionDetails") {
            return Err(format!("{expr}: {e}"));
        }
        Ok(r["result"].get("value").cloned().unwrap_or(Value::Null))
    }

    /// Poll `expr` until it is truthy (not null/false/0/""), failing after `within`.
    pub async fn wait_for(&self, what: &str, expr: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let last = match self.eval(expr).await {
                Ok(v) if truthy(&v) => return v,
                Ok(v) => v,
                Err(e) => json!(e),
            };
            assert!(Instant::now() < deadline, "timed out after {within:?} waiting for {what}; last value: {last}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The text of the view `selector` (a Flow Insight panel, say) once it has loaded
    /// (`dataset.loaded`), failing after `within`.
    pub async fn loaded_text(&self, selector: &str, within: Duration) -> String {
        let expr = format!(
            "document.querySelector('{selector}').dataset.loaded ? document.querySelector('{selector}').textContent : null"
        );
        let text = self.wait_for(&format!("{selector} to load"), &expr, within).await;
        text.as_str().unwrap_or_default().to_string()
    }

    /// Every request this page made so far, WebSockets included.
    pub fn requests(&self) -> Vec<Request> {
        let events = self.browser.events_of(&self.session);
        let mut sizes: HashMap<String, u64> = HashMap::new();
        for e in &events {
            if e["method"] == "Network.loadingFinished" {
                if let (Some(id), Some(n)) =
                    (e["params"]["requestId"].as_str(), e["params"]["encodedDataLength"].as_f64())
                {
                    sizes.insert(id.to_string(), n as u64);
                }
            }
        }
        events
            .iter()
            .filter_map(|e| match e["method"].as_str()? {
                "Network.requestWillBeSent" => Some(Request {
                    method: e["params"]["request"]["method"].as_str()?.to_string(),
                    url: e["params"]["request"]["url"].as_str()?.to_string(),
                    encoded_bytes: e["params"]["requestId"].as_str().and_then(|id| sizes.get(id).copied()),
                }),
                "Network.webSocketCreated" => Some(Request {
                    method: "GET".into(),
                    url: e["params"]["url"].as_str()?.to_string(),
                    encoded_bytes: None,
                }),
                _ => None,
            })
            .collect()
    }

    /// Console errors and uncaught exceptions this page reported.
    pub fn errors(&self) -> Vec<String> {
        self.browser
            .events_of(&self.session)
            .iter()
            .filter_map(|e| match e["method"].as_str()? {
                "Runtime.exceptionThrown" => Some(e["params"]["exceptionDetails"].to_string()),
                "Runtime.consoleAPICalled" if e["params"]["type"] == "error" => Some(e["params"]["args"].to_string()),
                _ => None,
            })
            .collect()
    }

    /// Save the viewport as `target/screenshots/<name>.png`; returns the path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let r = self.call("Page.captureScreenshot", json!({"format": "png"})).await.unwrap();
        let png = base64::engine::general_purpose::STANDARD.decode(r["data"].as_str().unwrap()).unwrap();
        let dir = screenshots_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }
}

/// An integer as the pages write it (`RS.int`: thousands separated by commas).
pub fn int_text(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

pub fn screenshots_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("screenshots")
}

/// rayscope serving a config on 127.0.0.1, which can be stopped and started again on
/// the same port. Dropping it stops the server.
pub struct Rayscope {
    pub addr: SocketAddr,
    config: Config,
    token: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Rayscope {
    pub async fn start(config: Config, token: Option<&str>) -> Rayscope {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut r = Rayscope {
            addr: listener.local_addr().unwrap(),
            config,
            token: token.map(str::to_string),
            stop: None,
            task: None,
        };
        r.serve(listener);
        r
    }

    fn serve(&mut self, listener: TcpListener) {
        let mut opts = ServeOptions::new(self.config.clone());
        opts.history_every = Duration::from_millis(200);
        opts.token = self.token.clone();
        let handle = EngineHandle::spawn(self.config.clone(), RunOptions::default());
        let (tx, rx) = oneshot::channel::<()>();
        self.task = Some(tokio::spawn(api::serve(listener, handle, opts, async move {
            let _ = rx.await;
        })));
        self.stop = Some(tx);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stop serving and wait until the server has returned.
    pub async fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task).await.expect("serve returned within 10 s").ok();
        }
    }

    /// Serve again on the address it had before [`Rayscope::stop`] (a fresh engine
    /// from the same config).
    pub async fn start_again(&mut self) {
        assert!(self.task.is_none(), "stop the server before starting it again");
        let deadline = Instant::now() + Duration::from_secs(10);
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) => {
                    assert!(Instant::now() < deadline, "could not bind {} again: {e}", self.addr);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        self.serve(listener);
    }
}

impl Drop for Rayscope {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}
