//! Starting and stopping: the server stops within 2 s of the shutdown signal (with a
//! live-stream client and an idle connection open), the `rayscope` binary stops on
//! SIGTERM within 2 s, and a taken port is a clear error with exit code 1.

mod api_support;

use api_support::*;
use futures_util::StreamExt;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn the_server_stops_within_2s_of_the_signal() {
    let s = Server::without_token().await;
    let addr = s.addr;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws/realtime")).await.unwrap();
    assert!(matches!(ws.next().await, Some(Ok(Message::Text(_)))));
    // A connection that never sends a request.
    let _idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    let handle = s.handle.clone();
    let took = s.stop().await;
    assert!(took < Duration::from_secs(2), "stopping took {took:?}");
    // The stream client was told the server is going away.
    let closed = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
                Some(Ok(_)) => continue,
                _ => return None,
            }
        }
    })
    .await
    .expect("the stream ends");
    assert!(closed.is_none() || closed == Some(1001), "{closed:?}");
    // The port is closed and the engine stopped: control requests find no engine.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    let e = handle.set_speed(2.0).await.unwrap_err();
    assert!(matches!(e, rayscope::sim::control::ControlError::EngineStopped), "{e:?}");
}

fn config_file() -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, CONFIG.as_bytes()).unwrap();
    f
}

fn rayscope(config: &std::path::Path, listen: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rayscope"));
    c.args(["serve", "--config"]).arg(config).args(["--listen", listen, "--log-format", "json"]);
    c.env_remove("RAYSCOPE_TOKEN").env_remove("RAYSCOPE_LISTEN").env("RUST_LOG", "info");
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    c
}

fn wait_with_deadline(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[test]
fn the_binary_stops_on_sigterm_within_2s() {
    let cfg = config_file();
    let mut child = rayscope(cfg.path(), "127.0.0.1:0").spawn().unwrap();
    // The JSON log says where it listens once it serves.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let address = loop {
        assert!(Instant::now() < deadline, "no `serving` log line within 30 s");
        let Some(Ok(line)) = lines.next() else { panic!("rayscope exited before serving") };
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
        if v["fields"]["message"] == "serving" {
            break v["fields"]["address"].as_str().unwrap().to_string();
        }
    };
    let addr: std::net::SocketAddr = address.parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert_eq!(rt.block_on(request(addr, "GET", "/-/ready", &[], None)).status, 200);
    // Keep draining the log so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let started = Instant::now();
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = wait_with_deadline(&mut child, Duration::from_secs(5));
    let took = started.elapsed();
    let Some(status) = status else {
        let _ = child.kill();
        panic!("rayscope did not exit within 5 s of SIGTERM");
    };
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn a_taken_port_is_a_clear_error_with_exit_code_1() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let cfg = config_file();
    let mut child = rayscope(cfg.path(), &address).spawn().unwrap();
    let status = wait_with_deadline(&mut child, Duration::from_secs(30)).expect("rayscope exits");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("error: cannot listen on {address}")), "{stderr}");
    assert!(stderr.contains("--listen"), "says what to do: {stderr}");
}
