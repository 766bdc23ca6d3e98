//! `rayscope observe` as a process: SIGTERM stops it within 2 s whatever it is doing (a
//! first poll of a Ray that never answers included), and `--record` fails at start,
//! with a clear error, where it could not keep the history: a directory another
//! rayscope records into, or a path that is a regular file; and bad cluster flags
//! (`--ray NAME=URL`) exit 2 at start, naming the mistake.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn observe(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rayscope"));
    c.arg("observe").args(["--listen", "127.0.0.1:0", "--log-format", "json"]).args(args);
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

/// Read the child's JSON log until a line whose message is `message` (30 s at most);
/// the rest of the log is drained on a thread so the child never blocks on the pipe.
fn wait_for_log(child: &mut Child, message: &str) -> serde_json::Value {
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let found = loop {
        assert!(Instant::now() < deadline, "no `{message}` log line within 30 s");
        let Some(Ok(line)) = lines.next() else { panic!("rayscope exited before logging `{message}`") };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        if v["fields"]["message"] == message {
            break v;
        }
    };
    std::thread::spawn(move || for _ in lines {});
    found
}

/// Run to the end (30 s at most): the exit status and what it wrote to stderr.
fn run(mut c: Command) -> (std::process::ExitStatus, String) {
    let mut child = c.spawn().unwrap();
    let status = wait_with_deadline(&mut child, Duration::from_secs(30)).expect("rayscope exits");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

#[test]
fn sigterm_stops_observe_within_2s_even_while_ray_never_answers() {
    // A "dashboard" that takes connections and never answers: the first poll waits on it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ray = format!("http://{}", silent.local_addr().unwrap());
    let mut child = observe(&["--ray", &ray]).spawn().unwrap();
    wait_for_log(&mut child, "observing");
    // The first poll is under way once Ray's port has a connection.
    silent.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let _held = loop {
        if let Ok((conn, _)) = silent.accept() {
            break conn;
        }
        assert!(Instant::now() < deadline, "the observer never asked Ray");
        std::thread::sleep(Duration::from_millis(10));
    };
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

/// A trace whose one job spans 30 days (a clock gone wrong), all of it in the past.
fn trace_spanning_30_days() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let start = now - 31 * 86_400_000;
    let header = r#"{"kind":"header","format":1,"ray_version":"2.60.0","session_name":"s","source":"x","opened_ms":0}"#;
    let job = serde_json::json!({"kind": "job", "job_id": "01000000", "status": "SUCCEEDED", "entrypoint": "python x.py",
        "start_time": start, "end_time": start + 30 * 86_400_000u64});
    let task = serde_json::json!({"kind": "task", "task_id": format!("{:016x}{}01000000", 1, "f".repeat(24)),
        "job_id": "01000000", "name": "f", "type": "NORMAL_TASK", "state": "FINISHED",
        "events": [["PENDING_ARGS_AVAIL", start + 10], ["RUNNING", start + 20], ["FINISHED", start + 30]],
        "start_time_ms": start + 20, "end_time_ms": start + 30});
    let text = format!("{header}\n{job}\n{task}\n");
    std::fs::write(dir.path().join("segment-000001.jsonl"), text).unwrap();
    dir
}

#[test]
fn replay_and_flow_refuse_a_recorded_job_spanning_past_the_limit() {
    let trace = trace_spanning_30_days();
    let out = tempfile::tempdir().unwrap();
    let mut flow = Command::new(env!("CARGO_BIN_EXE_rayscope"));
    flow.args(["flow", "--trace"]).arg(trace.path()).arg("--out").arg(out.path());
    flow.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let (status, stderr) = run(flow);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("past the limit of 604800 s"), "{stderr}");
    let mut replay = Command::new(env!("CARGO_BIN_EXE_rayscope"));
    replay.args(["simulate", "--replay"]).arg(trace.path());
    replay.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let (status, stderr) = run(replay);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--replay") && stderr.contains("past the limit of 604800 s"), "{stderr}");
}

#[test]
fn a_second_recorder_on_one_directory_and_a_record_path_that_is_a_file_fail_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    let rec_arg = rec.to_str().unwrap();
    let mut first = observe(&["--push-only", "--record", rec_arg]).spawn().unwrap();
    wait_for_log(&mut first, "serving");
    let (status, stderr) = run(observe(&["--push-only", "--record", rec_arg]));
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("another rayscope is recording into it"), "{stderr}");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let (status, stderr) = run(observe(&["--push-only", "--record", file.to_str().unwrap()]));
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a directory"), "{stderr}");
}

/// Many clusters on the command line: each `--ray` past the first needs a name, a name
/// is a plain word and names one cluster; each mistake exits 2 at start, saying which.
#[test]
fn bad_cluster_flags_exit_at_start_naming_the_problem() {
    let cases: [(&[&str], &str); 4] = [
        (&["--ray", "http://127.0.0.1:1", "--ray", "http://127.0.0.1:2"], "only one --ray may be unnamed"),
        (&["--ray", "a=http://127.0.0.1:1", "--ray", "a=http://127.0.0.1:2"], "cluster \"a\" is named twice"),
        (&["--ray", "a/b=http://127.0.0.1:1"], "cluster name \"a/b\""),
        (&["--ray", "east=127.0.0.1:8265"], "give the dashboard's URL"),
    ];
    for (args, expected) in cases {
        let out = observe(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
    let out = observe(&["--push-only", "--max-clusters", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-clusters"));
}

/// Unix ms now.
fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// A dashboard on a loopback port, answering each GET with `answer(path)` as JSON, or a
/// 404 where it gives none; its URL.
fn fake_ray(answer: impl Fn(&str) -> Option<serde_json::Value> + Send + 'static) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut asked = Vec::new();
            let mut buf = [0u8; 4096];
            while !asked.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => asked.extend_from_slice(&buf[..n]),
                }
            }
            let line = String::from_utf8_lossy(&asked).lines().next().unwrap_or_default().to_string();
            let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
            let (status, body) = match answer(&path) {
                Some(b) => ("200 OK", b.to_string()),
                None => ("404 Not Found", "{}".to_string()),
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// A Ray dashboard just big enough for one poller: its version, one job that ended
/// half a second ago, and that job's tasks, the second of which Ray has only from the
/// second listing on (its last report, landed after the end). Every other listing is a
/// 404. Returns its URL and how many task listings it answered.
fn ray_whose_last_report_lands_late() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = reads.clone();
    let end = now_ms() - 500;
    let task = |n: u8, at: u64| {
        serde_json::json!({"task_id": format!("{n:02x}").repeat(24), "job_id": "01000000", "name": "f",
            "func_or_class_name": "f", "type": "NORMAL_TASK", "state": "FINISHED",
            "events": [{"state": "PENDING_NODE_ASSIGNMENT", "created_ms": at}, {"state": "RUNNING", "created_ms": at + 10},
                       {"state": "FINISHED", "created_ms": at + 100}]})
    };
    let url = fake_ray(move |path| {
        if path == "/api/version" {
            Some(serde_json::json!({"ray_version": "2.60.0", "session_name": "session_late_report"}))
        } else if path == "/api/jobs/" {
            Some(serde_json::json!([{"job_id": "01000000", "status": "SUCCEEDED", "entrypoint": "python job.py",
                    "start_time": end - 2_000, "end_time": end}]))
        } else if path.starts_with("/api/v0/tasks") {
            let earlier = counted.fetch_add(1, Ordering::SeqCst);
            let mut rows = vec![task(1, end - 1_500)];
            if earlier > 0 {
                rows.push(task(2, end - 400));
            }
            Some(serde_json::json!({"result": true, "data": {"result": {"result": rows, "total": rows.len()}}}))
        } else {
            None
        }
    });
    (url, reads)
}

#[test]
fn a_recording_stopped_before_its_job_settled_reads_it_once_more_and_says_so() {
    let (ray, task_reads) = ray_whose_last_report_lands_late();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let mut child =
        observe(&["--ray", &ray, "--record", trace.to_str().unwrap(), "--poll-every", "30s"]).spawn().unwrap();
    // Every log line kept, read on a thread so the child never blocks on the pipe.
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let kept = log.clone();
    let reader = std::thread::spawn(move || lines.map_while(Result::ok).for_each(|l| kept.lock().unwrap().push(l)));
    let deadline = Instant::now() + Duration::from_secs(30);
    while task_reads.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the observer never listed the job's tasks");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The job ended half a second ago and the next poll is 30 s away: a stop now comes
    // before any read after the end, as a user's Ctrl-C right after the job would.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(task_reads.load(std::sync::atomic::Ordering::SeqCst), 1, "no second listing before the stop");
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = wait_with_deadline(&mut child, Duration::from_secs(5)).expect("rayscope exits within 5 s");
    assert!(status.success(), "{status:?}");
    reader.join().unwrap();
    let log = log.lock().unwrap().join("\n");
    assert!(log.contains("stopping before these ended jobs settled"), "{log}");
    assert!(log.contains("01000000"), "the warning names the job: {log}");
    assert!(task_reads.load(std::sync::atomic::Ordering::SeqCst) >= 2, "the job was read once more at the stop");
    let recorded: String = std::fs::read_dir(&trace)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(recorded.contains(&"02".repeat(24)), "the late report is in the trace: {recorded}");
}

/// A Ray dashboard that lists two worker processes and nothing else: `pids[0]` and
/// `pids[1]`, on a node it does not list. Every other listing is empty, every other
/// path a 404.
fn ray_listing_workers(pids: [u32; 2]) -> String {
    ray_listing_workers_on_nodes([(pids[0], "ab"), (pids[1], "ab")], Vec::new())
}

/// The same, each worker on the node whose id is its byte repeated (`"ab"`: `abab…`),
/// and `nodes` listed as (that byte, the node's address).
fn ray_listing_workers_on_nodes(workers: [(u32, &'static str); 2], nodes: Vec<(&'static str, &'static str)>) -> String {
    fake_ray(move |path| {
        let listing = |rows: Vec<serde_json::Value>| serde_json::json!({"result": true, "data": {"result": {"result": rows, "total": rows.len()}}});
        if path == "/api/version" {
            Some(serde_json::json!({"ray_version": "2.60.0", "session_name": "session_cpu_times"}))
        } else if path == "/api/jobs/" {
            Some(serde_json::json!([]))
        } else if path.starts_with("/api/v0/workers") {
            let row = |k: usize| {
                serde_json::json!({"worker_id": format!("{:02x}", k + 1).repeat(28), "node_id": workers[k].1.repeat(28),
                        "pid": workers[k].0, "worker_type": "WORKER", "is_alive": true})
            };
            Some(listing(vec![row(0), row(1)]))
        } else if path.starts_with("/api/v0/nodes") {
            let row = |(id, ip): &(&str, &str)| serde_json::json!({"node_id": id.repeat(28), "node_ip": ip, "state": "ALIVE", "is_head_node": false});
            Some(listing(nodes.iter().map(row).collect()))
        } else if path.starts_with("/api/v0/") {
            Some(listing(Vec::new()))
        } else {
            None
        }
    })
}

/// The `worker_cpu` records of the trace in `dir`: (pid, CPU ms) of each reading.
fn cpu_readings(dir: &std::path::Path) -> Vec<(u64, u64)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out = Vec::new();
    for path in entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")) {
        for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            if v["kind"] == "worker_cpu" {
                for pair in v["cpu_ms"].as_array().into_iter().flatten() {
                    out.push((pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap()));
                }
            }
        }
    }
    out
}

/// A busy process titled as Ray titles a worker.
fn busy_ray_worker() -> std::process::Child {
    Command::new("bash").args(["-c", "exec -a ray::burn bash -c 'while :; do :; done'"]).spawn().unwrap()
}

/// How many readings of `pid` are in `readings`.
fn reads_of(readings: &[(u64, u64)], pid: u32) -> usize {
    readings.iter().filter(|(p, _)| *p == u64::from(pid)).count()
}

/// Record the Ray at `ray` (with `more` flags) until `busy`'s CPU time is read 3 times
/// (30 s at most), stop the observer (which must exit cleanly within 5 s), end
/// `processes`, and return the trace's readings.
fn record_until_read_thrice(
    ray: &str,
    more: &[&str],
    busy: u32,
    processes: &mut [std::process::Child],
) -> Vec<(u64, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let mut args = vec!["--ray", ray, "--record", trace.to_str().unwrap(), "--poll-every", "200ms"];
    args.extend_from_slice(more);
    let mut child = observe(&args).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let readings = loop {
        let r = cpu_readings(&trace);
        if reads_of(&r, busy) >= 3 || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = wait_with_deadline(&mut child, Duration::from_secs(5)).expect("rayscope exits within 5 s");
    for p in processes {
        let _ = p.kill();
        let _ = p.wait();
    }
    assert!(status.success(), "{status:?}");
    readings
}

#[test]
fn a_recording_reads_the_cpu_time_of_rays_workers_on_its_machine_and_of_nothing_else() {
    // A busy Ray worker, and a process that is not one: Ray's worker table lists both.
    let worker = busy_ray_worker();
    let other = Command::new("sleep").arg("60").spawn().unwrap();
    let (worker_pid, other_pid) = (worker.id(), other.id());
    let ray = ray_listing_workers([worker_pid, other_pid]);
    let readings = record_until_read_thrice(&ray, &[], worker_pid, &mut [worker, other]);
    let mine: Vec<u64> = readings.iter().filter(|(pid, _)| *pid == u64::from(worker_pid)).map(|r| r.1).collect();
    assert!(mine.len() >= 3, "the busy worker's CPU time read at least 3 times: {readings:?}");
    assert!(mine.windows(2).all(|w| w[0] < w[1]), "each reading written is one that moved: {mine:?}");
    assert!(
        readings.iter().all(|(pid, _)| *pid != u64::from(other_pid)),
        "a process that is not a Ray worker is never read: {readings:?}"
    );
}

/// The address of the second node [`workers_here_and_at_another_address`] lists.
const ANOTHER_HOSTS_ADDRESS: &str = "203.0.113.77";

/// Two busy Ray workers, and a Ray that lists the first on a node at this machine's
/// loopback address and the second on a node at [`ANOTHER_HOSTS_ADDRESS`].
fn workers_here_and_at_another_address() -> (String, std::process::Child, std::process::Child) {
    let (here, there) = (busy_ray_worker(), busy_ray_worker());
    let ray = ray_listing_workers_on_nodes(
        [(here.id(), "ab"), (there.id(), "cd")],
        vec![("ab", "127.0.0.1"), ("cd", ANOTHER_HOSTS_ADDRESS)],
    );
    (ray, here, there)
}

#[test]
fn a_recording_reads_no_worker_of_a_node_on_another_host() {
    // Ray lists the second worker on a node at another host's address: that pid here is
    // some other process, whatever its title.
    let (ray, here, there) = workers_here_and_at_another_address();
    let (here_pid, there_pid) = (here.id(), there.id());
    let readings = record_until_read_thrice(&ray, &[], here_pid, &mut [here, there]);
    assert!(reads_of(&readings, here_pid) >= 3, "the worker of the node on this machine is read: {readings:?}");
    assert_eq!(reads_of(&readings, there_pid), 0, "a pid listed on another host is never read: {readings:?}");
}

#[test]
fn a_node_address_named_as_this_machines_has_its_workers_read() {
    // As above, but the user says the second node's address is this machine's (a NAT'ed
    // --node-ip-address that no interface here shows): its worker is read too.
    let (ray, here, there) = workers_here_and_at_another_address();
    let (here_pid, there_pid) = (here.id(), there.id());
    let named = ["--local-node-ip", ANOTHER_HOSTS_ADDRESS];
    let readings = record_until_read_thrice(&ray, &named, there_pid, &mut [here, there]);
    assert!(reads_of(&readings, there_pid) >= 3, "the worker of the node named as local is read: {readings:?}");
    assert!(reads_of(&readings, here_pid) >= 1, "and the loopback node's still is: {readings:?}");
}
