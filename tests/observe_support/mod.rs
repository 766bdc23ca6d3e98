//! Shared by the observe tests that run without Ray: an observer served on an ephemeral
//! port the way `rayscope observe` serves it (its clusters and push inbox handed to the
//! server), and waiting on a condition with a deadline.
#![allow(dead_code)]

use crate::api_support::{request, Resp};
use base64::Engine as _;
use rayscope::api::{self, ObserveServe, ServeOptions};
use rayscope::config;
use rayscope::observe::ObserveOptions;
use serde_json::Value;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// An observer and its server; dropping it stops the server.
pub struct Observed {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Observed {
    pub async fn start(opts: ObserveOptions) -> Observed {
        Observed::start_with_token(opts, None).await
    }

    /// As `start`, with the Jobs API's submit token set.
    pub async fn start_with_token(opts: ObserveOptions, token: Option<&str>) -> Observed {
        let observer = rayscope::observe::spawn(opts).unwrap();
        let cfg = config::load_str(config::DEFAULT_CONFIG_YAML, "default.yaml").unwrap();
        let mut serve = ServeOptions::new(cfg);
        serve.token = token.map(str::to_string);
        serve.host = None;
        // The seed dashboard's history sampled every 100 ms (5 s by default).
        serve.history_every = Duration::from_millis(100);
        serve.clusters = Some(observer.clusters.clone());
        serve.observe = Some(ObserveServe { inbox: observer.inbox });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(api::serve(listener, observer.handle, serve, async move {
            let _ = rx.await;
        }));
        Observed { addr, stop: Some(tx) }
    }

    pub async fn get(&self, path: &str) -> Resp {
        request(self.addr, "GET", path, &[], None).await
    }

    /// POST `body` to the push endpoint at `path` (a cluster's, or a query naming one).
    pub async fn push_to(&self, path: &str, body: &[u8]) -> Resp {
        request(self.addr, "POST", path, &[], Some(body)).await
    }

    /// POST `body` to the default push endpoint.
    pub async fn push(&self, body: &[u8]) -> Resp {
        self.push_to("/api/observe/events", body).await
    }

    pub async fn push_json(&self, body: &Value) -> Resp {
        self.push(body.to_string().as_bytes()).await
    }
    /// The first sample of `name` in `/metrics`.
    pub async fn metric(&self, name: &str) -> f64 {
        let text = self.get("/metrics").await.text();
        text.lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing from /metrics"))
    }

    /// Poll `/api/observe` until `check` holds of it (10 s at most).
    pub async fn status_until(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let v = self.get("/api/observe").await.json();
            if check(&v) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {v}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// `f`'s first `Ok`, asked every 50 ms for up to 10 s; past that, fails naming `what`
/// and the last error.
pub async fn eventually<T>(what: &str, mut f: impl AsyncFnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) => {
                assert!(Instant::now() < deadline, "timed out waiting for {what}: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Ray's id in Event Export's form: the hex id's bytes, base64.
pub fn b64(hex: &str) -> String {
    let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An instant `ms` after a minute ago, as Ray writes it.
pub fn at(ms: u64) -> String {
    let base = std::time::SystemTime::now() - Duration::from_secs(60);
    humantime::format_rfc3339_millis(base + Duration::from_millis(ms)).to_string()
}
