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
