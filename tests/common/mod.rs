//! Helpers shared by the engine's behaviour tests, and by the tests that run the
//! `rayscope` binary.
#![allow(dead_code)]

use rayscope::config::{self, Config};
use rayscope::sim::Engine;

/// Parse and validate config text, panicking with the config errors.
pub fn load(yaml: &str) -> Config {
    match config::load_str(yaml, "test.yaml") {
        Ok(c) => c,
        Err(e) => panic!("config does not load:\n{e}\n---\n{yaml}"),
    }
}

/// The last job's makespan in seconds; panics when there is none or it did not finish.
pub fn makespan_s(e: &Engine) -> f64 {
    let job = e.model.jobs().values().last().expect("a job");
    job.makespan_s().expect("the job finished")
}

/// The seed scenario (`examples/flow-insight.yaml`) drawn with `seed`.
pub fn seed_example(seed: u64) -> Config {
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/flow-insight.yaml"))
        .expect("examples/flow-insight.yaml is readable");
    let mut cfg = load(&yaml);
    cfg.sim.seed = seed;
    cfg
}

/// How far a checked run may go.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Check the invariants after every this many events (and at the end).
    pub every: u64,
    /// Stop at this virtual time (µs) even if jobs are still running.
    pub until_us: u64,
    pub max_events: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { every: 1, until_us: 6 * 3_600_000_000, max_events: 400_000 }
    }
}

/// Step the engine event by event until its workloads are done (or a limit), checking
/// the model's invariants as it goes. Returns the engine at the end.
pub fn run_checked(cfg: Config, limits: Limits) -> Result<Engine, String> {
    run_checked_watching(cfg, limits, |_| {})
}

/// As [`run_checked`], handing the engine to `watch` after each event (to follow a
/// figure the end state does not keep, such as a peak).
pub fn run_checked_watching(cfg: Config, limits: Limits, mut watch: impl FnMut(&Engine)) -> Result<Engine, String> {
    let mut e = Engine::new(cfg);
    e.check_invariants().map_err(|m| format!("after setup: {m}"))?;
    let mut n = 0u64;
    while !e.workloads_done() && n < limits.max_events {
        match e.next_event_time() {
            Some(t) if t <= limits.until_us => {
                e.step();
                watch(&e);
            }
            _ => break,
        }
        n += 1;
        if n.is_multiple_of(limits.every) {
            e.check_invariants().map_err(|m| format!("after event {n}: {m}"))?;
        }
    }
    e.check_invariants().map_err(|m| format!("at the end (event {n}): {m}"))?;
    Ok(e)
}

/// Run to the end without checks (as `simulate` does).
pub fn run(cfg: Config) -> Engine {
    let mut e = Engine::new(cfg);
    while !e.workloads_done() && e.step() {}
    e
}

/// Run until the given virtual time (µs).
pub fn run_until(cfg: Config, until_us: u64) -> Engine {
    let mut e = Engine::new(cfg);
    while e.next_event_time().is_some_and(|t| t <= until_us) {
        e.step();
    }
    e
}

/// The address a `rayscope serve --log-format json --listen 127.0.0.1:0` child reports in
/// its "serving" log line (within 30 s), and the rest of its stderr, which the caller
/// must keep draining so the server never blocks on a full pipe.
pub fn serving_address(
    child: &mut std::process::Child,
) -> (String, std::io::Lines<std::io::BufReader<std::process::ChildStderr>>) {
    use std::io::BufRead;
    use std::time::{Duration, Instant};
    let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "rayscope did not report its address within 30 s");
        let line = lines.next().expect("rayscope exited before serving").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if v["fields"]["message"] == "serving" {
            return (v["fields"]["address"].as_str().unwrap().to_string(), lines);
        }
    }
}

/// One node with plenty of cores, every per-call cost off (tests/costs.rs,
/// tests/object_costs.rs): what is left is the cost tested
/// (`costs`, `key: value` pairs, which win over the ones turned off).
pub fn only_costs(costs: &str) -> String {
    let given: Vec<&str> = costs.split(',').filter_map(|kv| kv.split(':').next()).map(str::trim).collect();
    let mut off: Vec<String> = [
        "call_submit_cost",
        "first_submit_cost",
        "owner_push_cost",
        "actor_call_submit_cost",
        "call_start_cost",
        "task_worker_cost",
        "task_reply_cost",
        "lease_latency",
        "dispatch_cost",
        "worker_start_cpu",
        "worker_start_latency",
        "sleep_overshoot",
    ]
    .into_iter()
    .filter(|key| !given.contains(key))
    .map(|key| format!("{key}: 0s"))
    .collect();
    if !given.contains(&"driver_slowdown_per_busy_worker") {
        off.push("driver_slowdown_per_busy_worker: 0".to_string());
    }
    format!(
        "cluster:\n  host_node: false\n  head: {{cpu: 8, cores: 8, memory: 16GiB}}\n\
         scheduler: {{{}, idle_worker_cpu: 0, {costs}}}\n",
        off.join(", ")
    )
}

/// The first records of an observed job, as a trace holds them: its head node (with
/// `cpus` CPUs, started at `t0_ms`), the job itself and its driver's task, which ran
/// from `t0_ms` for `run_ms` and succeeded. The job's calls follow them.
pub fn observed_job_opening(
    job: &str,
    entrypoint: &str,
    cpus: f64,
    t0_ms: u64,
    run_ms: u64,
) -> Vec<rayscope::observe::store::Change> {
    use rayscope::observe::rows::{ObservedJob, ObservedNode, ObservedTask};
    use rayscope::observe::store::Change;
    vec![
        Change::Node(ObservedNode {
            node_id: "aa".into(),
            node_ip: "10.0.0.1".into(),
            is_head_node: true,
            state: "ALIVE".into(),
            resources_total: vec![("CPU".into(), cpus)],
            start_time_ms: Some(t0_ms),
            ..Default::default()
        }),
        Change::Job(ObservedJob {
            job_id: job.into(),
            entrypoint: entrypoint.into(),
            status: "SUCCEEDED".into(),
            start_time: Some(t0_ms),
            end_time: Some(t0_ms + run_ms),
            ..Default::default()
        }),
        Change::Task(ObservedTask {
            task_id: format!("{}{job}", "f".repeat(40)),
            job_id: job.into(),
            kind: "DRIVER_TASK".into(),
            state: "FINISHED".into(),
            start_time_ms: Some(t0_ms),
            end_time_ms: Some(t0_ms + run_ms),
            ..Default::default()
        }),
    ]
}

/// A loopback port nobody listens on now, for a server the test starts next.
///
/// A port the kernel picked for us and we let go of is the next one it may hand to
/// anyone asking, and a Ray cluster booting beside a test asks hundreds of times (its
/// servers bind port 0; every outgoing connection draws a port too): once, the
/// what-if test's observer found its port answering in gRPC. So the port comes from
/// below the kernel's ephemeral range and above Ray's worker ports (10002–19999), where
/// nothing is handed out unasked. Each test process walks that span from an offset of
/// its own, so tests running in parallel in one binary never draw the same port.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    static DRAWN: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let span = ephemeral_low.saturating_sub(LOW);
    // Reduced first: a sum that wrapped past u32::MAX would revisit ports already drawn.
    let offset = (u64::from(std::process::id()) * 7_919 % u64::from(span.max(1))) as u32;
    for _ in 0..span.min(4_096) {
        let drawn = DRAWN.fetch_add(1, Ordering::Relaxed) % span;
        let port = LOW + (offset + drawn) % span;
        if std::net::TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return port as u16;
        }
    }
    // No room below the ephemeral range (or all of it taken): the kernel's pick.
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Write a cluster of one 2-CPU head on 2 cores (the what-if harness's recorded shape,
/// `scripts/ray-whatif/whatif.py`'s `head2`) into `dir`; its path, for `simulate
/// --config` beside a `--replay`.
pub fn head2_cluster(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("head2.yaml");
    std::fs::write(
        &path,
        "cluster:\n  host_node: false\n  head: {cpu: 2, cores: 2, memory: 8GiB, object_store_memory: 200MiB}\n",
    )
    .expect("a temporary folder is writable");
    path
}
