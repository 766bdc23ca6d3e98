//! Observe mode against a hostile client: `POST /api/observe/events` takes no token
//! (Ray's agent sends none), so each bound here is open to anyone who reaches the port.
//! Pushed bodies are bounded before they are read (the bytes in flight across
//! connections, a body deadline, the batch size named right when chunked); one task
//! pushed again and again with new state names stays small; job ids of the wrong
//! length are refused and counted; running jobs past the cap are refused, counted and
//! said; and a soak of all of it together keeps the process's memory bounded while
//! `/-/healthy` answers fast.

mod api_support;
mod observe_support;

use api_support::{raw, request};
use base64::Engine as _;
use observe_support::{at, b64, Observed};
use rayscope::observe::store::StoreLimits;
use rayscope::observe::trace::TraceLimits;
use rayscope::observe::{ObserveOptions, Source};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const JOB: &str = "AQAAAA=="; // 01000000

/// Open a connection and send a push's head (and `body`, perhaps only a part of what the
/// head promises); the body's rest never comes.
async fn open_push(addr: SocketAddr, head_extra: &str, body: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!("POST /api/observe/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{head_extra}\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    s
}

/// The answer on `s`, within `within`.
async fn answer(mut s: TcpStream, within: Duration) -> (u16, String) {
    let mut buf = Vec::new();
    let read = tokio::time::timeout(within, async {
        let mut chunk = [0u8; 4096];
        loop {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "an answer within {within:?}");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

fn lifecycle(task: &str, transitions: Vec<Value>) -> Value {
    json!({"eventType": "TASK_LIFECYCLE_EVENT", "taskLifecycleEvent": {"taskId": b64(task), "jobId": JOB,
        "taskAttempt": 0, "stateTransitions": transitions}})
}

/// A push-only observer with `configure`'s options.
async fn observed(configure: impl FnOnce(&mut ObserveOptions)) -> Observed {
    let mut opts = ObserveOptions::new(Source::Push);
    opts.poll_every = Duration::from_millis(100);
    configure(&mut opts);
    Observed::start(opts).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunked_body_past_the_limit_is_refused_naming_the_push_limit() {
    let s = observed(|_| {}).await;
    let mut c = open_push(s.addr, "Transfer-Encoding: chunked\r\n", b"").await;
    let chunk = vec![b' '; 1 << 20];
    // 17 chunks of 1 MiB: the server answers once 16 MiB are passed and stops reading.
    for _ in 0..17 {
        let mut wire = format!("{:x}\r\n", chunk.len()).into_bytes();
        wire.extend_from_slice(&chunk);
        wire.extend_from_slice(b"\r\n");
        if c.write_all(&wire).await.is_err() {
            break;
        }
    }
    let (status, text) = answer(c, Duration::from_secs(10)).await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains(&format!("\"limit_bytes\":{}", 16 << 20)), "the push limit, not the API's: {text}");
    // Declared past the limit: refused before a byte of it is read.
    let wire = format!(
        "POST /api/observe/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        64 << 20
    );
    let r = raw(s.addr, wire.as_bytes()).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["limit_bytes"], 16 << 20);
    s.status_until("both counted", |v| v["push_bodies_too_large"] == 2).await;
    assert_eq!(s.metric("rayscope_observe_push_too_large_total").await, 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_bodies_hold_at_most_the_in_flight_cap_and_only_until_the_deadline() {
    let s = observed(|o| o.push_body_deadline = Duration::from_millis(1_500)).await;
    // Each promises 15 MiB and sends 1 KiB: four fit under the 64 MiB in flight.
    let promise = format!("Content-Length: {}\r\n", 15 << 20);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(open_push(s.addr, &promise, &[b' '; 1024]).await);
    }
    // The four are being read (their bytes reserved) before the fifth comes.
    s.status_until("four bodies being read", |v| v["push_in_flight_bytes"] == 4 * (15 << 20)).await;
    let wire = format!("POST /api/observe/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{promise}\r\n");
    let fifth =
        tokio::time::timeout(Duration::from_secs(5), raw(s.addr, wire.as_bytes())).await.expect("refused at once");
    assert_eq!(fifth.status, 503, "{}", fifth.text());
    assert_eq!(fifth.header("retry-after"), Some("1"));
    assert!(fifth.text().contains("being read already"), "{}", fifth.text());
    // The held ones are answered 408 at the deadline, and their bytes let go.
    for c in held {
        let (status, text) = answer(c, Duration::from_secs(5)).await;
        assert_eq!(status, 408, "{text}");
    }
    let ok = s.push_json(&json!([])).await;
    assert_eq!(ok.status, 200, "room again once they are gone: {}", ok.text());
    let v = s
        .status_until("both refusals counted", |v| {
            v["pushes_over_in_flight"].as_u64() >= Some(1) && v["push_body_timeouts"].as_u64() >= Some(4)
        })
        .await;
    assert_eq!(v["pushes_over_in_flight"], 1, "{v}");
    assert_eq!(s.metric("rayscope_observe_push_in_flight_refused_total").await, 1.0);
    assert_eq!(s.metric("rayscope_observe_push_body_timeouts_total").await, 4.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_ids_of_2_or_5_bytes_are_refused_and_counted() {
    let s = observed(|_| {}).await;
    let def =
        |job: String| json!({"eventType": "DRIVER_JOB_DEFINITION_EVENT", "driverJobDefinitionEvent": {"jobId": job}});
    let r = s.push_json(&json!([def(b64("0100")), def(b64("0100000000"))])).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!((v["records"].as_u64(), v["refused"].as_u64()), (Some(0), Some(2)), "{v}");
    assert!(v["errors"][0].as_str().unwrap().contains("Ray's job ids are 4"), "{v}");
    s.status_until("the refusals counted", |v| v["events_refused"] == 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_task_pushed_with_ever_new_state_names_stays_within_the_cap() {
    let s = observed(|_| {}).await;
    let task = format!("{:016x}{}01000000", 1, "0".repeat(24));
    for round in 0..20u64 {
        let transitions: Vec<Value> =
            (0..32).map(|i| json!({"state": format!("BOGUS_{round}_{i}"), "timestamp": at(round * 32 + i)})).collect();
        let r = s.push_json(&json!([lifecycle(&task, transitions)])).await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let v =
        s.status_until("the dropped transitions counted", |v| v["transitions_dropped"].as_u64() >= Some(19 * 32)).await;
    assert_eq!(v["transitions_dropped"], 19 * 32, "one attempt keeps 32: {v}");
    assert_eq!(s.metric("rayscope_observe_transitions_dropped_total").await, (19 * 32) as f64);
}

/// A driver job's definition event for job number `n`.
fn job_def(n: u32) -> Value {
    let id = base64::engine::general_purpose::STANDARD.encode(n.to_le_bytes());
    json!({"eventType": "DRIVER_JOB_DEFINITION_EVENT", "driverJobDefinitionEvent": {"jobId": id, "entrypoint": "x"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_jobs_past_the_cap_are_refused_counted_and_said() {
    let s = observed(|o| o.limits = StoreLimits { max_jobs: 5, ..StoreLimits::default() }).await;
    let r = s.push_json(&Value::Array((1..=20).map(job_def).collect())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = s.status_until("the refused jobs counted", |v| v["jobs_refused"] == 15).await;
    assert_eq!((v["jobs_held"].as_u64(), v["jobs_full_of_running"].as_bool()), (Some(5), Some(true)), "{v}");
    assert_eq!(s.metric("rayscope_observe_jobs_cap_full").await, 1.0);
    let jobs = s.get("/api/jobs/").await.json();
    assert_eq!(jobs.as_array().map(Vec::len), Some(5), "{jobs}");
}

/// Job `n`, ended: its definition and its lifecycle from CREATED to FINISHED at `end` ms.
fn ended_job(n: u32, end: u64) -> [Value; 2] {
    let id = base64::engine::general_purpose::STANDARD.encode(n.to_le_bytes());
    [
        json!({"eventType": "DRIVER_JOB_DEFINITION_EVENT", "driverJobDefinitionEvent": {"jobId": id, "entrypoint": "x"}}),
        json!({"eventType": "DRIVER_JOB_LIFECYCLE_EVENT", "driverJobLifecycleEvent": {"jobId": id,
            "stateTransitions": [{"state": "CREATED", "timestamp": at(0)}, {"state": "FINISHED", "timestamp": at(end)}]}}),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_events_of_a_forgotten_job_are_refused_counted_and_hold_no_slot() {
    let s = observed(|o| o.limits = StoreLimits { max_jobs: 2, ..StoreLimits::default() }).await;
    // Jobs 1, 2 and 3 end in turn; job 1 is forgotten to hold 3.
    let jobs: Vec<Value> = (1..=3).flat_map(|n| ended_job(n, u64::from(n) * 100)).collect();
    assert_eq!(s.push_json(&Value::Array(jobs)).await.status, 200);
    s.status_until("job 1 forgotten", |v| v["jobs_held"] == 2).await;
    // Job 1's task events, late, many times over: none brings job 1 back.
    for i in 0..10 {
        let task = format!("{:016x}{}01000000", 100 + i, "0".repeat(24));
        let late = lifecycle(&task, vec![json!({"state": "FINISHED", "timestamp": at(50)})]);
        assert_eq!(s.push_json(&json!([late])).await.status, 200);
    }
    let v = s.status_until("the late records counted", |v| v["late_records"] == 10).await;
    assert_eq!((v["jobs_held"].as_u64(), v["tasks_held"].as_u64()), (Some(2), Some(0)), "{v}");
    assert_eq!(s.metric("rayscope_observe_late_records_total").await, 10.0);
    // A new job still finds room: the oldest ended one held makes it.
    assert_eq!(s.push_json(&json!([job_def(4)])).await.status, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let jobs = s.get("/api/jobs/").await.text();
        if jobs.contains("04000000") {
            assert!(!jobs.contains("01000000"), "job 1 stays forgotten: {jobs}");
            break;
        }
        assert!(Instant::now() < deadline, "job 4 never held: {jobs}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(s.status_until("the count", |_| true).await["jobs_refused"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timestamp_in_year_9999_is_refused_and_never_time_zero() {
    let s = observed(|_| {}).await;
    let task = format!("{:016x}{}01000000", 1, "0".repeat(24));
    let far = lifecycle(&task, vec![json!({"state": "PENDING_ARGS_AVAIL", "timestamp": "9999-12-31T23:59:59Z"})]);
    assert_eq!(s.push_json(&json!([far])).await.status, 200);
    let near = lifecycle(&task, vec![json!({"state": "PENDING_ARGS_AVAIL", "timestamp": at(0)})]);
    assert_eq!(s.push_json(&json!([near])).await.status, 200);
    let v = s.status_until("the plausible record taken", |v| v["tasks_held"] == 1).await;
    assert_eq!(v["implausible_times"], 1, "{v}");
    let zero = v["zero_unix_ms"].as_u64().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    assert!(zero < now, "time zero is the plausible record's, not year 9999: {v}");
    assert_eq!(s.metric("rayscope_observe_implausible_times_total").await, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_trace_write_is_said_counted_and_recording_resumes() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("rec");
    let record = dir.clone();
    // A segment per line: each record opens a new file, so a lost directory fails at once.
    let limits = TraceLimits { segment_bytes: 1, max_bytes: 1 << 30 };
    let s = observed(move |o| o.record = Some((record, limits))).await;
    assert_eq!(s.push_json(&json!([job_def(1)])).await.status, 200);
    s.status_until("the first record written", |v| v["trace_lines"].as_u64() >= Some(1)).await;
    // The disk goes away under the recorder (as a full one fails its writes).
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(s.push_json(&json!([job_def(2), job_def(3)])).await.status, 200);
    let v = s.status_until("the failure said", |v| v["unrecorded_records"].as_u64() >= Some(2)).await;
    assert!(v["record_error"].as_str().is_some_and(|e| e.contains("rec")), "{v}");
    assert!(v["record_failures"].as_u64() >= Some(1), "{v}");
    let ready = s.get("/-/ready").await;
    assert_eq!(ready.status, 503, "{}", ready.text());
    assert!(ready.json()["reason"].as_str().unwrap().starts_with("recording fails"), "{}", ready.text());
    assert_eq!(s.metric("rayscope_observe_record_failing").await, 1.0);
    assert!(s.metric("rayscope_observe_unrecorded_records_total").await >= 2.0);
    // Space returns: recording resumes by itself, in a new segment.
    std::fs::create_dir_all(&dir).unwrap();
    let v = s.status_until("recording resumed", |v| v["record_error"].is_null()).await;
    assert!(v["unrecorded_records"].as_u64() >= Some(2), "what was lost stays counted: {v}");
    assert_eq!(s.get("/-/ready").await.status, 200);
    assert_eq!(s.push_json(&json!([job_def(4)])).await.status, 200);
    s.status_until("the next record written", |v| v["trace_lines"].as_u64() >= Some(2)).await;
    let (store, _) = rayscope::observe::trace::read(&dir, StoreLimits::default()).unwrap();
    assert!(store.jobs.contains_key(&4), "the record after the failure is in the new segments");
}

/// The process's resident memory, bytes (Linux; 0 elsewhere).
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The bound the soak holds the whole test process (server, observer and clients) to:
/// 64 MiB of bodies in flight, 64 MiB queued, two batches parsed, 1,000 jobs held.
const SOAK_RSS_BOUND: u64 = 768 << 20;

/// State-name growth, slow bodies and 100,000 running jobs, all at once, for a few
/// seconds: memory stays under [`SOAK_RSS_BOUND`] and `/-/healthy` answers each probe
/// within 100 ms throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soak_of_hostile_pushes_keeps_memory_bounded_and_health_answering() {
    let s = observed(|o| o.push_body_deadline = Duration::from_secs(2)).await;
    let addr = s.addr;
    // Every body made before the clock starts: the clients' own work is not the server's.
    let task = format!("{:016x}{}01000000", 7, "0".repeat(24));
    let names: Vec<Vec<u8>> = (0..200u64)
        .map(|round| {
            let ts: Vec<Value> = (0..32)
                .map(|i| json!({"state": format!("GROW_{round}_{i}"), "timestamp": at(round * 32 + i)}))
                .collect();
            json!([lifecycle(&task, ts)]).to_string().into_bytes()
        })
        .collect();
    let jobs: Vec<Vec<u8>> = (0..20u32)
        .map(|b| Value::Array((0..5_000).map(|i| job_def(2 + b * 5_000 + i)).collect()).to_string().into_bytes())
        .collect();
    let baseline = rss_bytes();

    // Health probes from a thread of their own, each on a fresh connection.
    let probing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let probe = {
        let probing = probing.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let (mut worst, mut probes, mut peak) = (Duration::ZERO, 0u32, 0u64);
            while probing.load(std::sync::atomic::Ordering::Relaxed) {
                let started = Instant::now();
                let r = rt.block_on(request(addr, "GET", "/-/healthy", &[], None));
                assert_eq!(r.status, 200);
                worst = worst.max(started.elapsed());
                probes += 1;
                peak = peak.max(rss_bytes());
                std::thread::sleep(Duration::from_millis(20));
            }
            (worst, probes, peak)
        })
    };

    // Slow bodies: 12 connections each promising 15 MiB and sending 64 KiB; at most 4
    // are read at once, the rest are refused unread, and the deadline lets go of them.
    let promise = format!("Content-Length: {}\r\n", 15 << 20);
    let slow = async {
        let mut conns = Vec::new();
        for _ in 0..12 {
            conns.push(open_push(addr, &promise, &[b' '; 64 << 10]).await);
        }
        let mut statuses = Vec::new();
        for c in conns {
            statuses.push(answer(c, Duration::from_secs(10)).await.0);
        }
        statuses
    };
    // State-name growth on one task, and 100,000 running jobs in batches of 5,000.
    let grow = async {
        for body in &names {
            let r = request(addr, "POST", "/api/observe/events", &[], Some(body)).await;
            assert!(r.status == 200 || r.status == 503, "{}", r.text());
        }
    };
    let flood = async {
        for body in &jobs {
            // A 503 (the observer behind, or bytes in flight) is sent again, as Ray's agent does.
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let r = request(addr, "POST", "/api/observe/events", &[], Some(body)).await;
                if r.status == 200 {
                    break;
                }
                assert_eq!(r.status, 503, "{}", r.text());
                assert!(Instant::now() < deadline, "a batch never taken");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let (statuses, (), ()) = tokio::join!(slow, grow, flood);
    let v = s
        .status_until("every job pushed seen", |v| {
            v["jobs_held"].as_u64().unwrap_or(0) + v["jobs_refused"].as_u64().unwrap_or(0) >= 100_000
        })
        .await;
    probing.store(false, std::sync::atomic::Ordering::Relaxed);
    let (worst, probes, peak) = probe.join().unwrap();

    assert!(statuses.iter().all(|s| *s == 408 || *s == 503), "{statuses:?}");
    assert!(statuses.iter().filter(|s| **s == 503).count() >= 8, "at most 4 read at once: {statuses:?}");
    assert_eq!(v["jobs_held"], 1_000, "{v}");
    assert_eq!(v["jobs_full_of_running"], true, "{v}");
    assert!(v["transitions_dropped"].as_u64() > Some(0), "{v}");
    eprintln!(
        "soak: {probes} health probes, the slowest {worst:?}; RSS {} MiB at start, {} MiB at peak",
        baseline >> 20,
        peak >> 20
    );
    assert!(probes >= 10, "probed throughout: {probes}");
    assert!(worst < Duration::from_millis(100), "/-/healthy took {worst:?}");
    assert!(peak < SOAK_RSS_BOUND, "RSS peaked at {} MiB", peak >> 20);
}
