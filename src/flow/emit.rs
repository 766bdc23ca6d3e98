//! `rayscope flow --emit URL`: post a run's records to a running `flow-insight` server
//! (`POST /emit`), one record per request over a kept-alive connection.
//!
//! Owns: turning `--emit`'s URL into where the records go, and posting them with the
//! same HTTP client observe mode uses (`ureq`; no redirects followed: the server is
//! Ant's own, on a known address).
//! Must never: retry a record (a duplicate submit would double a count), go on after
//! an answer that is not `{"result": true}`, wait on one record past [`DEADLINE`] (a
//! server trickling a byte at a time is cut off, not waited for), or take more than
//! [`MAX_ANSWER`] bytes of an answer into memory.

use serde_json::Value;
use std::time::Duration;

/// The whole exchange of one record (connect, send, and the full answer) must fit in this.
pub const DEADLINE: Duration = Duration::from_secs(30);
/// An answer is `{"result": true}`; anything larger than this is refused.
pub const MAX_ANSWER: usize = 1 << 20;

/// Where to post: `http://host:port` plus an optional path prefix.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub prefix: String,
}

impl Target {
    fn emit_url(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("http://{host}:{}{}/emit", self.port, self.prefix)
    }
}

/// Why records could not be sent to Flow Insight: a URL it cannot use, no connection,
/// no complete answer in time, or a record refused (with the server's answer).
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("--emit {0:?}: only http:// URLs are supported")]
    NotHttp(String),
    #[error("--emit {0:?}: bad port {1:?}")]
    BadPort(String, String),
    #[error("--emit {0:?}: no host")]
    NoHost(String),
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
    #[error("cannot connect to {host}:{port}: {source}")]
    Connect { host: String, port: u16, source: ureq::Error },
    /// Record `n` failed on the way (no complete answer in time, or the transport's error).
    #[error("record {0}: {1}")]
    Exchange(usize, String),
    #[error("record {n} ({record_type}) refused: HTTP {status}: {answer}")]
    Refused { n: usize, record_type: String, status: u16, answer: String },
}

pub fn parse_url(url: &str) -> Result<Target, EmitError> {
    let rest = url.strip_prefix("http://").ok_or_else(|| EmitError::NotHttp(url.to_string()))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse::<u16>().map_err(|_| EmitError::BadPort(url.to_string(), p.to_string()))?),
        None => (authority, 80),
    };
    if host.is_empty() {
        return Err(EmitError::NoHost(url.to_string()));
    }
    Ok(Target { host: host.trim_start_matches('[').trim_end_matches(']').to_string(), port, prefix: path.to_string() })
}

/// Post every record; returns how many were accepted.
pub fn emit(target: &Target, records: &[Value]) -> Result<usize, EmitError> {
    emit_within(target, records, DEADLINE)
}

/// [`emit`] with `deadline` for each record's whole exchange.
pub fn emit_within(target: &Target, records: &[Value], deadline: Duration) -> Result<usize, EmitError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(deadline))
        .http_status_as_error(false)
        .max_redirects(0)
        .user_agent(concat!("rayscope/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let url = target.emit_url();
    let failed = |e: ureq::Error| match e {
        ureq::Error::Timeout(_) => format!("no complete answer within {deadline:?}"),
        e => e.to_string(),
    };
    for (n, r) in records.iter().enumerate() {
        let sent = agent.post(&url).header("Content-Type", "application/json").send(serde_json::to_vec(r)?);
        let mut answer = sent.map_err(|e| match e {
            ureq::Error::Io(_) | ureq::Error::ConnectionFailed | ureq::Error::HostNotFound if n == 0 => {
                EmitError::Connect { host: target.host.clone(), port: target.port, source: e }
            }
            e => EmitError::Exchange(n, failed(e)),
        })?;
        let status = answer.status().as_u16();
        let body = answer.body_mut().with_config().limit(MAX_ANSWER as u64).read_to_vec().map_err(|e| {
            EmitError::Exchange(n, format!("reading the answer (at most {MAX_ANSWER} bytes are read): {}", failed(e)))
        })?;
        let ok = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["result"].as_bool()) == Some(true);
        if status != 200 || !ok {
            return Err(EmitError::Refused {
                n,
                record_type: r["record_type"].to_string(),
                status,
                answer: String::from_utf8_lossy(&body).chars().take(300).collect(),
            });
        }
    }
    Ok(records.len())
}
