//! What `observe --record` spends reading Ray's workers' CPU time on a big node: the
//! most processes a round reads (`cpu_times::MAX_PIDS_A_ROUND`, 512), each a process
//! titled as Ray titles its workers, read as the observer reads them ten times a second.
//!
//! The first round sees each process for the first time (its title and its parent's
//! command line are read besides its stat); later rounds read the stat alone. Prints a
//! human-readable summary, then one JSON line (what BENCHMARKS.md records). Not
//! criterion: a round is a batch of system calls whose figure is the observer's share
//! of a core.
//!
//! `cargo bench --bench worker_cpu` (`RAYSCOPE_BENCH_WORKERS=N` for another count)

use rayscope::observe::cpu_times::{is_ray_worker, CpuSampler, MAX_PIDS_A_ROUND, READ_EVERY};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 200;

/// Kills its processes however the bench ends.
struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn main() {
    let count: usize =
        std::env::var("RAYSCOPE_BENCH_WORKERS").ok().and_then(|v| v.parse().ok()).unwrap_or(MAX_PIDS_A_ROUND);
    let workers = Workers(
        (0..count)
            .map(|_| {
                Command::new("sleep").arg0("ray::bench").arg("600").stdout(Stdio::null()).spawn().expect("sleep runs")
            })
            .collect(),
    );
    // A node id the parent (this bench, no raylet) does not name: every first sight
    // reads the parent's command line, as under a real raylet.
    let listed: BTreeMap<u32, String> = workers.0.iter().map(|c| (c.id(), "ab12".to_string())).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !listed.keys().all(|&p| is_ray_worker(p)) {
        assert!(Instant::now() < deadline, "the processes did not start within 30 s");
        std::thread::sleep(Duration::from_millis(10));
    }

    let mut sampler = CpuSampler::default();
    let started = Instant::now();
    let first = sampler.round(&listed, 0).map_or(0, |r| r.cpu_ms.len());
    let first_us = started.elapsed().as_secs_f64() * 1e6;
    assert_eq!(first, count, "every process was read at first sight");

    let mut times: Vec<f64> = (0..ROUNDS)
        .map(|k| {
            let t = Instant::now();
            sampler.round(&listed, k as u64 + 1);
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    drop(workers);
    times.sort_by(f64::total_cmp);
    let median = times[ROUNDS / 2];
    let p99 = times[ROUNDS * 99 / 100];
    let rounds_a_second = 1.0 / READ_EVERY.as_secs_f64();
    let core_share = median * rounds_a_second / 1e6;
    println!(
        "{count} worker processes: first round {:.2} ms; later rounds median {:.2} ms, p99 {:.2} ms \
         ({:.2} µs a process); at {rounds_a_second:.0} rounds a second {:.1} % of a core",
        first_us / 1e3,
        median / 1e3,
        p99 / 1e3,
        median / count as f64,
        100.0 * core_share
    );
    println!(
        "{{\"workers\":{count},\"first_round_us\":{first_us:.0},\"round_median_us\":{median:.0},\
         \"round_p99_us\":{p99:.0},\"us_per_process\":{:.3},\"core_share\":{core_share:.4}}}",
        median / count as f64
    );
}
