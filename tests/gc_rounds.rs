//! The raylet's resource-deadlock look and the GC rounds it sets off (`sim/raylet/gc_rounds.rs`):
//! leases waiting on resources with no worker free, seen twice in a row, make every
//! process on the node do `scheduler.worker_gc_cpu` of work; actors that wait for
//! nothing pay none.

mod common;

use common::{load, makespan_s, run_checked, Limits};
use rayscope::sim::Engine;

/// One CPU and one core, no prestarted worker: ten actors' creations one after another,
/// each holding the CPU 4.5 s (1 s of it the start's CPU work). With default resources
/// the other creations wait for that CPU from 0 s to 40.5 s.
fn run(num_cpus: &str, gc_cpu: &str) -> Engine {
    run_with(num_cpus, gc_cpu, "0s", "0s")
}

/// The same, each creation's call doing `call_start` of queued work on the core.
fn run_with_call_start(num_cpus: &str, gc_cpu: &str, call_start: &str) -> Engine {
    run_with(num_cpus, gc_cpu, call_start, "0s")
}

/// The same, a look seeing a creation as progress for `window` after its run began.
fn run_with(num_cpus: &str, gc_cpu: &str, call_start: &str, window: &str) -> Engine {
    let yaml = format!(
        "cluster:\n  host_node: false\n  head: {{cpu: 1, cores: 1, memory: 16GiB}}\n\
         scheduler: {{call_submit_cost: 0s, actor_call_submit_cost: 0s, call_start_cost: {call_start}, task_worker_cost: 0s, task_reply_cost: 0s, lease_latency: 0s, \
         dispatch_cost: 0s, worker_start_cpu: 1s, worker_start_latency: 3.5s, sleep_overshoot: 0s, \
         idle_worker_cpu: 0, worker_first_call_latency: 0s, prestart_worker_first_driver: false, \
         worker_gc_cpu: {gc_cpu}, actor_creation_window: {window}}}\n\
         workloads:\n  - {{kind: actor_pool, actors: 10, calls_per_actor: 1, call_duration: 0s{num_cpus}}}\n"
    );
    run_checked(load(&yaml), Limits::default()).unwrap_or_else(|m| panic!("{m}"))
}

/// The GC rounds the log records: (second, processes).
fn rounds(e: &Engine) -> Vec<(f64, u64)> {
    let mut out: Vec<(f64, u64)> = e
        .model
        .log
        .recent()
        .filter(|l| l.source == "raylet" && l.message.contains("local GC"))
        .map(|l| {
            let n = l.message.rsplit('=').next().and_then(|v| v.parse().ok()).expect("a process count");
            (l.time_us.as_secs_f64(), n)
        })
        .collect();
    out.reverse();
    out
}

#[test]
fn waiting_default_actors_set_off_a_gc_round_from_the_second_look_in_a_row() {
    let e = run("", "1ms");
    // Looks at 10, 20, 30 and 40 s all see creations waiting; the first only counts.
    // A round reaches the actors started so far (one every 4.5 s from 0 s) and the driver.
    assert_eq!(rounds(&e), vec![(20.0, 5 + 1), (30.0, 7 + 1), (40.0, 9 + 1)]);
    // Nothing waits after 40.5 s: the looks stop, so the run ends.
    assert!(e.workloads_done());
}

#[test]
fn a_look_that_sees_a_creation_within_its_window_sees_progress() {
    // The creations begin their runs at 4.5, 9, 13.5, ... 36 and 40.5 s. With a window of
    // 1.2 s the look at 10 s sees the one of 9 s (progress: the count starts again), the
    // one at 20 s sees none (18 s is 2 s before): its first; 30 s (27) and 40 s (36) none.
    let e = run_with("", "1ms", "0s", "1.2s");
    assert_eq!(rounds(&e), vec![(30.0, 7 + 1), (40.0, 9 + 1)]);
    // A window of 4.5 s covers every look: the creations of 9, 18, 27 and 36 s are 1-4 s
    // before the looks at 10, 20, 30 and 40 s.
    let wide = run_with("", "1ms", "0s", "4.5s");
    assert_eq!(rounds(&wide), vec![], "every look sees a creation's window");
    assert!(wide.workloads_done());
}

#[test]
fn actors_that_wait_for_nothing_pay_no_round() {
    let e = run(", num_cpus: 0", "1ms");
    assert_eq!(rounds(&e), vec![]);
    assert_eq!(makespan_s(&e), makespan_s(&run(", num_cpus: 0", "0s")));
}

#[test]
fn a_round_is_cpu_work_that_queued_work_waits_for_and_a_start_does_not() {
    // At 20 s six processes collect for 2 s each on the one core, until 32 s. A worker
    // start is time-sliced (Ray starts it at nice 0, the collecting actors run at 15):
    // it does not wait for them, so with nothing else on the core the rounds cost
    // nothing.
    assert_eq!(makespan_s(&run("", "2s")), makespan_s(&run("", "0s")));
    // Each creation's call does 10 ms of queued work: the one due at 22.5 s waits for
    // the core until 32 s, and every later creation with it.
    let free = makespan_s(&run_with_call_start("", "0s", "10ms"));
    let paid = makespan_s(&run_with_call_start("", "2s", "10ms"));
    assert!(paid > free + 9.0, "the rounds cost {} s, not the 9.5 s the first one holds the core", paid - free);
    // With no cost the rounds are not simulated at all.
    assert_eq!(rounds(&run("", "0s")), vec![]);
}
