//! `rayscope flow --emit URL`: post a run's records to a running `flow-insight` server
//! (`POST /emit`), one record per request over one kept-alive HTTP/1.1 connection.
//!
//! Owns: a minimal HTTP/1.1 client for `http://host:port[/prefix]` (no TLS, no
//! redirects: the server is Ant's own, on a known address).
//! Must never: retry a record (a duplicate submit would double a count), go on after
//! an answer that is not `{"result": true}`, wait on one record past [`DEADLINE`] (a
//! server trickling a byte at a time is cut off, not waited for), or take more than
//! [`MAX_ANSWER`] bytes of an answer into memory.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The whole exchange of one record (connect, send, and the full answer) must fit in this.
pub const DEADLINE: Duration = Duration::from_secs(30);
/// An answer is `{"result": true}`; anything larger than this is refused.
pub const MAX_ANSWER: usize = 1 << 20;
/// One status or header line.
const MAX_LINE: usize = 8 * 1024;
const MAX_HEADERS: usize = 100;

/// A socket whose every read waits only for what is left of one deadline.
struct DeadlineStream {
    stream: TcpStream,
    deadline: Instant,
    within: Duration,
}

impl Read for DeadlineStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let late = || {
            std::io::Error::new(std::io::ErrorKind::TimedOut, format!("no complete answer within {:?}", self.within))
        };
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late());
        }
        self.stream.set_read_timeout(Some(left))?;
        // A read timeout surfaces as `WouldBlock` on Unix and `TimedOut` elsewhere.
        self.stream.read(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => late(),
            _ => e,
        })
    }
}

/// Where to post: `http://host:port` plus an optional path prefix.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub prefix: String,
}

pub fn parse_url(url: &str) -> Result<Target, String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| format!("--emit {url:?}: only http:// URLs are supported"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse::<u16>().map_err(|_| format!("--emit {url:?}: bad port {p:?}"))?),
        None => (authority, 80),
    };
    if host.is_empty() {
        return Err(format!("--emit {url:?}: no host"));
    }
    Ok(Target { host: host.trim_start_matches('[').trim_end_matches(']').to_string(), port, prefix: path.to_string() })
}

/// Post every record; returns how many were accepted.
pub fn emit(target: &Target, records: &[Value]) -> Result<usize, String> {
    emit_within(target, records, DEADLINE)
}

/// [`emit`] with `deadline` for each record's whole exchange.
pub fn emit_within(target: &Target, records: &[Value], deadline: Duration) -> Result<usize, String> {
    let cannot = |e: &dyn std::fmt::Display| format!("cannot connect to {}:{}: {e}", target.host, target.port);
    let addr = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| cannot(&e))?
        .next()
        .ok_or_else(|| cannot(&"the host has no address"))?;
    let stream = TcpStream::connect_timeout(&addr, deadline).map_err(|e| cannot(&e))?;
    stream.set_write_timeout(Some(deadline)).ok();
    stream.set_nodelay(true).ok();
    let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(DeadlineStream { stream, deadline: Instant::now() + deadline, within: deadline });
    for (n, r) in records.iter().enumerate() {
        reader.get_mut().deadline = Instant::now() + deadline;
        let body = serde_json::to_vec(r).map_err(|e| e.to_string())?;
        let head = format!(
            "POST {}/emit HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
            target.prefix,
            target.host,
            target.port,
            body.len()
        );
        writer
            .write_all(head.as_bytes())
            .and_then(|_| writer.write_all(&body))
            .map_err(|e| format!("record {n}: {e}"))?;
        let (status, answer) = read_response(&mut reader).map_err(|e| format!("record {n}: {e}"))?;
        let ok = serde_json::from_slice::<Value>(&answer).ok().and_then(|v| v["result"].as_bool()) == Some(true);
        if status != 200 || !ok {
            return Err(format!(
                "record {n} ({}) refused: HTTP {status}: {}",
                r["record_type"],
                String::from_utf8_lossy(&answer).chars().take(300).collect::<String>()
            ));
        }
    }
    Ok(records.len())
}

/// One line of at most [`MAX_LINE`] bytes.
fn read_line(r: &mut impl BufRead) -> Result<String, String> {
    let mut line = Vec::new();
    r.take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
    if line.len() > MAX_LINE {
        return Err(format!("an answer line is longer than {MAX_LINE} bytes"));
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

fn read_response(r: &mut BufReader<DeadlineStream>) -> Result<(u16, Vec<u8>), String> {
    let line = read_line(r)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("bad status line {line:?}"))?;
    let (mut length, mut chunked) = (None, false);
    for headers in 0.. {
        if headers > MAX_HEADERS {
            return Err(format!("the answer has more than {MAX_HEADERS} header lines"));
        }
        let h = read_line(r)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "content-length" {
                length = Some(v.parse::<u64>().map_err(|_| format!("bad Content-Length {v:?}"))?);
            } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let too_large = |n: u64| format!("the answer's body is {n} bytes; at most {MAX_ANSWER} are read");
    let mut body = Vec::new();
    if chunked {
        loop {
            let size = read_line(r)?;
            let size = size.trim().split(';').next().unwrap_or_default();
            let n = u64::from_str_radix(size, 16).map_err(|_| format!("bad chunk size {size:?}"))?;
            if body.len() as u64 + n > MAX_ANSWER as u64 {
                return Err(too_large(body.len() as u64 + n));
            }
            let mut chunk = vec![0; n as usize + 2];
            r.read_exact(&mut chunk).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n as usize]);
        }
    } else if let Some(n) = length {
        if n > MAX_ANSWER as u64 {
            return Err(too_large(n));
        }
        body.resize(n as usize, 0);
        r.read_exact(&mut body).map_err(|e| e.to_string())?;
    }
    Ok((status, body))
}
