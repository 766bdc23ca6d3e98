//! `rayscope flow --emit URL`: post a run's records to a running `flow-insight` server
//! (`POST /emit`), one record per request over one kept-alive HTTP/1.1 connection.
//!
//! Owns: a minimal HTTP/1.1 client for `http://host:port[/prefix]` (no TLS, no
//! redirects: the server is Ant's own, on a known address).
//! Must never: retry a record (a duplicate submit would double a count) or go on
//! after an answer that is not `{"result": true}`.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

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
    let stream = TcpStream::connect((target.host.as_str(), target.port))
        .map_err(|e| format!("cannot connect to {}:{}: {e}", target.host, target.port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok();
    stream.set_nodelay(true).ok();
    let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    for (n, r) in records.iter().enumerate() {
        let body = serde_json::to_vec(r).map_err(|e| e.to_string())?;
        let head = format!(
            "POST {}/emit HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
            target.prefix,
            target.host,
            target.port,
            body.len()
        );
        writer.write_all(head.as_bytes()).and_then(|_| writer.write_all(&body)).map_err(|e| format!("record {n}: {e}"))?;
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

fn read_response(r: &mut BufReader<TcpStream>) -> Result<(u16, Vec<u8>), String> {
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| e.to_string())?;
    let status = line.split_whitespace().nth(1).and_then(|s| s.parse::<u16>().ok()).ok_or_else(|| format!("bad status line {line:?}"))?;
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut h = String::new();
        r.read_line(&mut h).map_err(|e| e.to_string())?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "content-length" {
                length = v.parse::<usize>().ok();
            } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).map_err(|e| e.to_string())?;
            let n = usize::from_str_radix(size.trim(), 16).map_err(|_| format!("bad chunk size {size:?}"))?;
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        r.read_exact(&mut body).map_err(|e| e.to_string())?;
    }
    Ok((status, body))
}
