//! The per-call costs issue 19's suite added, each checked where the engine charges it
//! (the object store's, a put's, a get's and a pull's, are tests/object_costs.rs): a
//! raised error's cost, a placement group's commit and its nodes, an async actor's one
//! event loop, a warmed-up actor pool, a node's prestarted workers and a worker's late
//! first answer, the count of the processes a pool starts, reniced workers yielding
//! the cores, and a process's first call begun before its renice. Each
//! runs end to end with the invariants checked, and compares the same config with the
//! cost on and off, so the test fails if the engine stops charging it.

mod common;

use common::{load, makespan_s, only_costs, run_checked, Limits};
use rayscope::sim::Engine;

fn run(yaml: &str) -> Engine {
    run_checked(load(yaml), Limits::default()).unwrap_or_else(|m| panic!("{m}"))
}

#[test]
fn a_raised_error_reaches_its_caller_after_the_workers_error_cost() {
    let job = |cost: &str| {
        let yaml = format!(
            "{}workloads:\n  - {{kind: fan_out, tasks: 1, task_duration: 0s, max_retries: 0}}\n\
             faults:\n  - {{kind: task_failures, at: 0s, probability: 1.0, application_error: true}}\n",
            only_costs(&format!("task_error_cost: {cost}"))
        );
        let e = run(&yaml);
        // The task, once (no retry), then its driver, whose `ray.get` re-raises it.
        assert_eq!(e.model.counters.tasks_failed, 2, "the task failed once, then its driver");
        makespan_s(&e)
    };
    let extra = job("250ms") - job("0s");
    assert!((extra - 0.25).abs() < 1e-3, "the error cost {extra} s, not 0.25 s");
}

#[test]
fn a_placement_group_is_prepared_then_created_a_commit_later() {
    let yaml = |latency: &str| {
        format!(
            "{}workloads:\n  - {{kind: training, workers: 2, bundle_cpu: 1, bundle_gpu: 0, steps: 1, \
             step_duration: 0s}}\nsim: {{event_log_capacity: 100000}}\n",
            only_costs(&format!("placement_group_commit_latency: {latency}"))
        )
    };
    let e = run(&yaml("40ms"));
    let created = &e.model.placement_ms[2];
    assert_eq!(created.count, 1);
    assert!((created.sum - 40.0).abs() < 0.01, "creation took {} ms, not the 40 ms commit", created.sum);
    let lines: Vec<String> = e.model.log.recent().map(|l| l.message.to_string()).collect();
    let at = |state: &str| lines.iter().position(|l| l.ends_with(state)).unwrap_or_else(|| panic!("no {state} line"));
    // `recent` is newest first: PREPARED was logged before CREATED.
    assert!(at(" PREPARED") > at(" CREATED"), "{lines:?}");
    let without = run(&yaml("0s"));
    let slower = makespan_s(&e) - makespan_s(&without);
    assert!((slower - 0.04).abs() < 1e-3, "the job took {slower} s longer, not the commit's 40 ms");
}

#[test]
fn a_group_commits_a_node_latency_later_for_each_node_beyond_its_first() {
    // Three 1-CPU bundles: on one node (STRICT_PACK) or on three (STRICT_SPREAD).
    let created_ms = |strategy: &str, node_latency: &str| {
        let e = run(&format!(
            "cluster:\n  host_node: false\n  head: {{cpu: 4, memory: 16GiB}}\n  \
             node_types: [{{name: w, count: 2, cpu: 4, memory: 16GiB, ip_range: 10.0.1.0/24}}]\n\
             scheduler: {{placement_group_node_latency: {node_latency}}}\n\
             workloads:\n  - {{kind: training, workers: 3, bundle_cpu: 1, bundle_gpu: 0, \
             placement_strategy: {strategy}, steps: 1, step_duration: 0s}}\n"
        ));
        let created = &e.model.placement_ms[2];
        assert_eq!(created.count, 1, "one group, created once");
        created.sum
    };
    let spread = created_ms("STRICT_SPREAD", "5ms") - created_ms("STRICT_SPREAD", "0s");
    assert!((spread - 10.0).abs() < 0.01, "over three nodes the group took {spread} ms more, not 2 × 5 ms");
    let packed = created_ms("STRICT_PACK", "5ms") - created_ms("STRICT_PACK", "0s");
    assert!(packed.abs() < 0.01, "on one node it took {packed} ms more, not none");
}

#[test]
fn an_async_actors_calls_start_one_at_a_time_on_its_event_loop() {
    // 100 calls to one actor that runs 1,000 at once, on a node of 8 cores: with 10 ms of
    // loop work per call they still take a second, as the loop is one thread.
    let job = |cost: &str, concurrency: u32| {
        makespan_s(&run(&format!(
            "{}workloads:\n  - {{kind: actor_pool, actors: 1, warm_up: true, calls_per_actor: 100, \
             call_duration: 0s, max_concurrency: {concurrency}}}\n",
            only_costs(&format!("async_call_cost: {cost}, worker_first_call_latency: 0s"))
        )))
    };
    let serial = job("10ms", 1000) - job("0s", 1000);
    assert!((serial - 1.01).abs() < 1e-3, "100 calls and the warm-up took {serial} s more, not 1.01 s");
    // A sync actor (one call at a time anyway) pays no event-loop cost.
    assert_eq!(job("10ms", 1), job("0s", 1));
}

#[test]
fn a_warmed_up_pool_answers_one_call_per_actor_before_the_rest() {
    let calls = |warm: bool| {
        let e = run(&format!(
            "{}workloads:\n  - {{kind: actor_pool, actors: 3, warm_up: {warm}, calls_per_actor: 2, call_duration: 1s}}\n",
            only_costs("async_call_cost: 0s")
        ));
        (e.model.counters.tasks_finished, makespan_s(&e))
    };
    let (cold_tasks, cold) = calls(false);
    let (warm_tasks, warm) = calls(true);
    assert_eq!(warm_tasks, cold_tasks + 3, "one warm-up call per actor");
    assert!((warm - cold - 1.0).abs() < 1e-3, "the warm-up is one more 1 s call per actor, in parallel");
}

#[test]
fn a_prestarted_worker_runs_the_first_task_with_no_start() {
    // One CPU, one core: the node prestarts one task worker, so ten tasks pay no 1 s start;
    // without the prestart, the first lease waits for it.
    let job = |prestart: bool| {
        makespan_s(&run(&format!(
            "cluster:\n  host_node: false\n  head: {{cpu: 1, cores: 1, memory: 16GiB}}\n\
             scheduler: {{call_submit_cost: 0s, actor_call_submit_cost: 0s, call_start_cost: 0s, task_worker_cost: 0s, task_reply_cost: 0s, lease_latency: 0s, \
             dispatch_cost: 0s, worker_start_cpu: 1s, worker_start_latency: 0s, sleep_overshoot: 0s, \
             idle_worker_cpu: 0, worker_first_call_latency: 0s, prestart_worker_first_driver: {prestart}}}\n\
             workloads:\n  - {{kind: fan_out, tasks: 10, task_duration: 0s}}\n"
        )))
    };
    let saved = job(false) - job(true);
    assert!((saved - 1.0).abs() < 1e-3, "the prestarted worker saved {saved} s, not the 1 s start");
}

#[test]
fn a_workers_first_call_answers_late_and_its_later_calls_do_not() {
    // One prestarted worker runs 100 tasks: only the first waits the first-call latency.
    // An actor's first call waits it too, counted from the actor's creation.
    let tasks = |latency: &str| {
        makespan_s(&run(&format!(
            "cluster:\n  host_node: false\n  head: {{cpu: 1, cores: 1, memory: 16GiB}}\n\
             scheduler: {{call_submit_cost: 0s, call_start_cost: 0s, task_worker_cost: 0s, task_reply_cost: 0s, lease_latency: 0s, dispatch_cost: 0s, \
             sleep_overshoot: 0s, idle_worker_cpu: 0, worker_first_call_latency: {latency}}}\n\
             workloads:\n  - {{kind: fan_out, tasks: 100, task_duration: 10ms}}\n"
        )))
    };
    let later = tasks("300ms") - tasks("0s");
    assert!((later - 0.3).abs() < 1e-3, "100 tasks on one worker took {later} s more, not one 300 ms wait");
    let calls = |latency: &str| {
        makespan_s(&run(&format!(
            "{}workloads:\n  - {{kind: actor_pool, actors: 1, calls_per_actor: 5, call_duration: 10ms}}\n",
            only_costs(&format!("worker_first_call_latency: {latency}, async_call_cost: 0s"))
        )))
    };
    let later = calls("300ms") - calls("0s");
    assert!((later - 0.3).abs() < 1e-3, "five calls to a new actor took {later} s more, not one 300 ms wait");
}

#[test]
fn a_first_calls_work_waits_for_the_worker_start_that_holds_the_core() {
    // Two CPUs on one core: one prestarted worker, and one started for the second task
    // (1 s of the core from the grant). The prestarted worker's first task runs at once,
    // but its first call's 300 ms are CPU work after it, so they wait for the start
    // (1.0-1.3 s); the started worker's first call then waits for them (1.3-1.6 s).
    // As a wait before the call it would have ended at 1.31 s.
    let e = run("cluster:\n  host_node: false\n  head: {cpu: 2, cores: 1, memory: 16GiB}\n\
         scheduler: {call_submit_cost: 0s, first_submit_cost: 0s, owner_push_cost: 0s, call_start_cost: 0s, task_worker_cost: 0s, task_reply_cost: 0s, \
         lease_latency: 0s, dispatch_cost: 0s, task_push_latency: 0s, sleep_overshoot: 0s, idle_worker_cpu: 0, \
         worker_start_cpu: 1s, \
         worker_start_latency: 0s, worker_first_call_latency: 300ms}\n\
         workloads:\n  - {kind: fan_out, tasks: 2, task_duration: 10ms}\n");
    let took = makespan_s(&e);
    assert!((took - 1.6).abs() < 2e-3, "two first calls behind a 1 s start took {took} s, not 1.6 s");
}

#[test]
fn every_worker_process_the_pool_starts_is_counted_prestarted_ones_included() {
    // Four CPUs on two cores: a node joins with two prestarted task workers. Ray's
    // `ray_internal_num_processes_started` counts every process its pool starts.
    let started = |workloads: &str| {
        let e = run(&format!(
            "cluster:\n  host_node: false\n  head: {{cpu: 4, cores: 2, memory: 16GiB}}\nworkloads:\n{workloads}"
        ));
        let head = e.model.nodes().iter().find(|n| n.is_alive()).expect("the head");
        assert_eq!(head.stats.workers_started, e.model.counters.workers_started, "one node: its count is the total");
        head.stats.workers_started
    };
    // Four tasks: the two prestarted workers and two started; ten seconds later two
    // actors take idle task workers and start nothing.
    let tasks_then_actors = started(
        "  - {kind: fan_out, tasks: 4, task_duration: 1s}\n\
         \x20 - {kind: actor_pool, start: 10s, actors: 2, calls_per_actor: 1, call_duration: 10ms, num_cpus: 0}\n",
    );
    assert_eq!(tasks_then_actors, 4, "2 prestarted and 2 started for the tasks; the actors took idle ones");
    // With Ray's prestart for the backlog (`worker_prestart`): one process prestarted as
    // the first lease arrives, the third lease's own start, and the fourth lease's, which
    // the prestarted process serves first, so Ray's pool leaves that one over, idle.
    let with_prestart = started(
        "  - {kind: fan_out, tasks: 4, task_duration: 1s}\n\
         scheduler: {worker_prestart: true}\n",
    );
    assert_eq!(with_prestart, 5, "2 prestarted and 3 started for the tasks, one of them over");
    // Five actors alone: two take the prestarted workers, three start a process each.
    let actors = started("  - {kind: actor_pool, actors: 5, calls_per_actor: 1, call_duration: 10ms, num_cpus: 0}\n");
    assert_eq!(actors, 5, "2 prestarted and 3 started for the actors");
}

#[test]
fn an_owner_keeps_a_lease_for_its_next_task_until_the_lease_times_out() {
    // One CPU: 100 tasks of 10 ms queue behind one worker. A kept lease runs them back to
    // back, asking the raylet (5 ms) again only once the lease is 500 ms old; with no
    // reuse every task pays the lease.
    let job = |timeout: &str| {
        let e = run(&format!(
            "cluster:\n  host_node: false\n  head: {{cpu: 1, cores: 1, memory: 16GiB}}\n\
             scheduler: {{call_submit_cost: 0s, first_submit_cost: 0s, owner_push_cost: 0s, call_start_cost: 0s, task_worker_cost: 0s, task_reply_cost: 0s, \
             lease_latency: 5ms, dispatch_cost: 0s, \
             task_push_latency: 0s, sleep_overshoot: 0s, worker_first_call_latency: 0s, \
             worker_lease_timeout: {timeout}}}\n\
             workloads:\n  - {{kind: fan_out, tasks: 100, task_duration: 10ms}}\n"
        ));
        (makespan_s(&e), e.model.counters.tasks_finished)
    };
    let (kept, kept_tasks) = job("500ms");
    let (each, each_tasks) = job("0s");
    assert_eq!(kept_tasks, each_tasks);
    // 1 s of work, and a 5 ms lease at the start and once the lease is 500 ms old.
    assert!((kept - 1.01).abs() < 1e-3, "kept leases took {kept} s");
    assert!((each - 1.5).abs() < 1e-3, "a lease per task took {each} s, not 100 x (10 ms + 5 ms)");
}

#[test]
fn freed_cpus_reach_another_nodes_owner_at_the_next_resource_report() {
    // Ray's spillback run: a head and a worker node of 2 CPUs each, 40 tasks of 100 ms
    // from a driver on the head, 50 ms after a report tick. The worker node's leases
    // expire after 500 ms; the head hears of its freed CPUs at its next report, 50 ms
    // later, and the run ends that much later. Reports every instant: no wait. Only the
    // head prestarts workers (the driver's raylet): the worker node's starts cost nothing
    // here, so that its first leases are as quick as the head's.
    let split = |period: &str| {
        let e = run(&format!(
            "cluster:\n  host_node: false\n  head: {{cpu: 2, cores: 2, memory: 16GiB}}\n\
             \x20 node_types:\n    - {{name: worker, count: 1, cpu: 2, cores: 2, memory: 16GiB, ip_range: 10.0.1.0/24}}\n\
             scheduler: {{call_submit_cost: 0s, first_submit_cost: 0s, owner_push_cost: 0s, call_start_cost: 0s, task_worker_cost: 0s, task_reply_cost: 0s, \
             lease_latency: 0s, dispatch_cost: 0s, task_push_latency: 0s, sleep_overshoot: 0s, \
             worker_first_call_latency: 0s, worker_start_cpu: 0s, worker_start_latency: 0s, \
             resource_report_period: {period}}}\n\
             workloads:\n  - {{kind: fan_out, start: 1050ms, tasks: 40, task_duration: 100ms}}\n"
        ));
        let on = |head: bool| e.model.nodes().iter().find(|n| n.is_head == head).expect("node").stats.tasks_finished;
        // The head also ran the driver.
        let on = |head: bool| on(head) - u64::from(head);
        (on(true), on(false), makespan_s(&e))
    };
    let (head, worker, slow) = split("100ms");
    let (head0, worker0, fast) = split("0s");
    assert_eq!((head0, worker0), (20, 20), "fresh views split evenly");
    assert_eq!(head + worker, 40);
    assert!((slow - fast - 0.05).abs() < 1e-3, "stale views: {slow} s against {fast} s");
}

/// The engine of `yaml` run to `at_us` of virtual time: (tasks submitted, normal tasks
/// running then).
fn at(yaml: &str, at_us: u64) -> (u64, usize) {
    let e = common::run_until(load(yaml), at_us);
    let running = e
        .model
        .tasks
        .values()
        .filter(|t| t.kind == rayscope::model::TaskType::NormalTask && t.state() == rayscope::model::TaskState::Running)
        .count();
    (e.model.counters.tasks_submitted, running)
}

#[test]
fn a_drivers_first_submit_sets_it_up_once_before_its_first_task_goes() {
    // Two jobs, each a driver of its own, each submitting 300 tasks (chunk by chunk).
    let yaml = |first: &str| {
        format!(
            "{}workloads:\n  - {{kind: fan_out, tasks: 300, task_duration: 0s}}\n\
             \x20 - {{kind: fan_out, start: 10s, tasks: 300, task_duration: 0s}}\n",
            only_costs(&format!("first_submit_cost: {first}, task_push_latency: 0s, worker_first_call_latency: 0s"))
        )
    };
    let (with, without) = (run(&yaml("50ms")), run(&yaml("0s")));
    let spans = |e: &Engine| -> Vec<f64> { e.model.jobs().values().map(|j| j.makespan_s().unwrap()).collect() };
    for (w, wo) in spans(&with).iter().zip(spans(&without)) {
        assert!((w - wo - 0.05).abs() < 1e-4, "each job's driver pays 50 ms once: {w} s vs {wo} s");
    }
    // The counts include each job's driver.
    let submitted = |t: u64| at(&yaml("50ms"), t).0;
    assert_eq!(submitted(49_999), submitted(0), "no task goes before its driver's setup is done");
    assert!(submitted(50_000) > submitted(0));
    assert_eq!(submitted(10_049_999), submitted(10_000_000), "the second job's driver sets up too");
    assert!(submitted(10_050_000) > submitted(10_000_000));
}

#[test]
fn an_actors_first_submit_sets_its_process_up_once() {
    // A chain of three actors, each creating the next and calling it twice: the driver
    // and the two actors that create pay the setup once each, in turn (the leaf submits
    // nothing), and a second call costs no setup again.
    let yaml = |first: &str| {
        format!(
            "{}workloads:\n  - {{kind: flow_insight, sleep: 0s, bottleneck_sleep: 0s, calls_per_child: 2, \
             tree: {{children: [{{children: [{{}}]}}]}}}}\n",
            only_costs(&format!("first_submit_cost: {first}, task_push_latency: 0s, worker_first_call_latency: 0s"))
        )
    };
    let (with, without) = (run(&yaml("50ms")), run(&yaml("0s")));
    let (w, wo) = (makespan_s(&with), makespan_s(&without));
    assert!((w - wo - 0.15).abs() < 1e-4, "the driver and two creating actors pay 50 ms each: {w} s vs {wo} s");
}

#[test]
fn a_drivers_loop_is_not_held_back_by_its_workers_but_slowed_by_them() {
    // One core. The driver's loop submits 3,000 tasks a thousand calls at a time, 1 ms of
    // work each call; each task costs its worker 10 ms. The first task's work arrives
    // while the first chunk runs, ahead of the loop's second chunk (from 1 s) on the
    // core; the loop is time-sliced (Linux), so it does not wait for that work and hands
    // the third thousand over at 2 s, whether the workers are reniced (Ray's 15) or not.
    let yaml = |niceness: u8, slowdown: &str| {
        format!(
            "{}workloads:\n  - {{kind: fan_out, tasks: 3000, task_duration: 0s}}\n",
            only_costs(&format!(
                "call_submit_cost: 1ms, task_worker_cost: 10ms, worker_first_call_latency: 0s, \
                 worker_niceness: {niceness}, driver_slowdown_per_busy_worker: {slowdown}"
            ))
            .replace("{cpu: 8, cores: 8,", "{cpu: 1, cores: 1,")
        )
    };
    let submitted = |niceness: u8, slowdown: &str, t: u64| at(&yaml(niceness, slowdown), t).0;
    // The driver counts as a task.
    for niceness in [0, 15] {
        assert_eq!(submitted(niceness, "0", 1_999_999), 2_001, "at {niceness}");
        assert_eq!(submitted(niceness, "0", 2_000_000), 3_001, "at {niceness}: the loop does not wait");
    }
    // At a slowdown of 0.5 every thousand calls take 1.5 times as long: the first too,
    // since its first call leases the node's one prestarted worker, busy beside the loop
    // from then on. The second thousand goes at 1.5 s, the third at 3 s.
    assert_eq!(submitted(0, "0.5", 1_499_999), 1_001);
    assert_eq!(submitted(0, "0.5", 1_500_000), 2_001);
    assert_eq!(submitted(0, "0.5", 2_999_999), 2_001);
    assert_eq!(submitted(0, "0.5", 3_000_000), 3_001);
    // Either way the core does the same work: the last task ends at about the same time.
    let end = |niceness: u8| {
        let e = common::run_until(load(&yaml(niceness, "0")), u64::MAX);
        e.model.jobs().values().next().and_then(|j| j.makespan_s()).expect("the job finished")
    };
    let (alike, reniced) = (end(0), end(15));
    assert!((alike - reniced).abs() < 0.05, "{alike} s alike vs {reniced} s reniced");
}

#[test]
fn one_owners_pushes_wait_for_each_other_and_two_owners_do_not() {
    // 8 CPUs and cores, 8 tasks of 1 s at once: the pushes are the only cost. One
    // driver's io thread pushes them one after another; two drivers push theirs side by
    // side.
    let yaml = |jobs: u32| {
        let mut y = only_costs(
            "owner_push_cost: 10ms, task_push_latency: 0s, worker_first_call_latency: 0s, \
             prestart_worker_first_driver: false",
        );
        y.push_str("workloads:\n");
        for _ in 0..jobs {
            y.push_str(&format!("  - {{kind: fan_out, tasks: {}, task_duration: 1s}}\n", 8 / jobs));
        }
        y
    };
    let running = |jobs: u32, t: u64| at(&yaml(jobs), t).1;
    assert_eq!(running(1, 35_000), 3, "one owner: its pushes 10 ms apart");
    assert_eq!(running(1, 79_999), 7);
    assert_eq!(running(1, 80_000), 8);
    assert_eq!(running(2, 40_000), 8, "two owners push theirs at once");
}

#[test]
fn a_push_due_after_a_worker_start_holds_no_core_idle_before_it() {
    // 4 CPUs on 2 cores: 2 prestarted workers, and 2 started (100 ms of CPU each) for the
    // other two tasks. The prestarted workers' pushes go at once; the started ones' when
    // their leases reach the owner, after the starts. Placed at the grant instead, a push
    // due at 100 ms would hold its core from now on, and the second start would wait for
    // it and end at 200 ms. (The starts beside the two busy prestarted workers are not
    // slowed by them here: `driver_slowdown_per_busy_worker: 0`.)
    let yaml = "cluster:\n  host_node: false\n  head: {cpu: 4, cores: 2, memory: 16GiB}\n\
         scheduler: {call_submit_cost: 0s, first_submit_cost: 0s, call_start_cost: 0s, task_worker_cost: 0s, task_reply_cost: 0s, lease_latency: 0s, \
         dispatch_cost: 0s, worker_start_cpu: 100ms, worker_start_latency: 0s, sleep_overshoot: 0s, \
         idle_worker_cpu: 0, owner_push_cost: 1ms, task_push_latency: 0s, worker_first_call_latency: 0s, \
         driver_slowdown_per_busy_worker: 0}\n\
         workloads:\n  - {kind: fan_out, tasks: 4, task_duration: 1s}\n";
    assert_eq!(at(yaml, 2_000).1, 2, "the prestarted workers' tasks run at once");
    assert_eq!(at(yaml, 99_999).1, 2);
    assert_eq!(at(yaml, 103_000).1, 4, "both starts end by 102 ms and their pushes follow");
}

#[test]
fn a_callers_loop_goes_ahead_of_the_worker_starts_its_calls_ask_for() {
    // 4 CPUs on 2 cores: 2 prestarted workers, and 2 started (1 s of CPU each) for the
    // first thousand calls' leases. The driver's loop over those thousand (40 µs each)
    // was on its core before the raylet heard of them: it ends at 40 ms and the last call
    // goes then. Placed after the starts, it would wait for a core until 1 s. With
    // `driver_slowdown_per_busy_worker`, the two prestarted workers its calls lease slow
    // it from its start, the starting ones not.
    let yaml = |slowdown: &str| {
        format!(
            "cluster:\n  host_node: false\n  head: {{cpu: 4, cores: 2, memory: 16GiB}}\n\
         scheduler: {{driver_slowdown_per_busy_worker: {slowdown}, call_submit_cost: 40us, first_submit_cost: 0s, owner_push_cost: 0s, call_start_cost: 0s, task_worker_cost: 0s, task_reply_cost: 0s, \
         lease_latency: 0s, dispatch_cost: 0s, worker_start_cpu: 1s, worker_start_latency: 0s, \
         sleep_overshoot: 0s, idle_worker_cpu: 0, task_push_latency: 0s, worker_first_call_latency: 0s}}\n\
         workloads:\n  - {{kind: fan_out, tasks: 1001, task_duration: 1s}}\n"
        )
    };
    let submitted = |slowdown: &str, t: u64| at(&yaml(slowdown), t).0;
    assert_eq!(submitted("0", 39_999), 1_001, "the driver and the first thousand calls");
    assert_eq!(submitted("0", 40_000), 1_002, "the loop's first thousand paid, its last call goes");
    // 40 ms × (1 + 2 × 0.25): two busy, not four.
    assert_eq!(submitted("0.25", 59_999), 1_001);
    assert_eq!(submitted("0.25", 60_000), 1_002);
}

#[test]
fn a_task_workers_cost_comes_before_each_normal_tasks_body_and_not_an_actor_calls() {
    let yaml = |cost: &str, workload: &str| {
        format!(
            "{}workloads:\n  - {workload}\n",
            only_costs(&format!("task_worker_cost: {cost}, task_push_latency: 0s, worker_first_call_latency: 0s"))
        )
    };
    let task = "{kind: fan_out, tasks: 1, task_duration: 0s}";
    let extra = makespan_s(&run(&yaml("10ms", task))) - makespan_s(&run(&yaml("0s", task)));
    assert!((extra - 0.010).abs() < 1e-6, "one task paid {extra} s, not 10 ms");
    let calls = "{kind: actor_pool, actors: 1, calls_per_actor: 3, call_duration: 0s, num_cpus: 0}";
    let extra = makespan_s(&run(&yaml("10ms", calls))) - makespan_s(&run(&yaml("0s", calls)));
    assert!(extra.abs() < 1e-6, "actor calls paid {extra} s of a normal task's cost");
}

#[test]
fn a_workers_cleanup_after_its_reply_holds_back_its_next_task_not_the_owner() {
    // One CPU: three tasks run one after another on one kept lease. Each worker's 10 ms
    // of cleanup comes after its reply: the next task waits for it, the driver does not
    // wait for the last one's.
    let yaml = |cost: &str| {
        only_costs(&format!("task_reply_cost: {cost}, task_push_latency: 0s, worker_first_call_latency: 0s"))
            .replace("cpu: 8, cores: 8", "cpu: 1, cores: 2")
            + "workloads:\n  - {kind: fan_out, tasks: 3, task_duration: 1ms}\n"
    };
    let extra = makespan_s(&run(&yaml("10ms"))) - makespan_s(&run(&yaml("0s")));
    assert!((extra - 0.020).abs() < 1e-6, "two cleanups between three tasks: {extra} s, not 20 ms");
}

#[test]
fn a_callers_creation_loop_goes_ahead_of_the_worker_starts_its_actors_ask_for() {
    // One core: two actors, each a worker start of 1 s of CPU. The driver's loop of two
    // creations (40 ms each) was on its core before the raylet heard of them: it ends at
    // 80 ms and the driver's two calls go then. Placed after the starts, the loop would
    // wait for the core until 2 s.
    let yaml = "cluster:\n  host_node: false\n  head: {cpu: 1, cores: 1, memory: 16GiB}\n\
         scheduler: {call_submit_cost: 40ms, actor_call_submit_cost: 0s, first_submit_cost: 0s, owner_push_cost: 0s, \
         call_start_cost: 0s, lease_latency: 0s, dispatch_cost: 0s, worker_start_cpu: 1s, worker_start_latency: 0s, \
         idle_worker_cpu: 0, task_push_latency: 0s, worker_first_call_latency: 0s, prestart_worker_first_driver: false}\n\
         workloads:\n  - {kind: actor_pool, actors: 2, calls_per_actor: 1, call_duration: 10ms, num_cpus: 0}\n";
    let submitted = |t: u64| at(yaml, t).0;
    assert_eq!(submitted(79_999), submitted(0), "nothing more goes while the loop is on the core");
    assert_eq!(submitted(80_000), submitted(0) + 2, "the loop paid, both calls go");
}

#[test]
fn a_worker_started_for_a_call_begins_it_beside_the_starts_queued_after_its_own() {
    // Three CPUs on one core, one start at a time, no prestarted worker: three tasks
    // each start a process (1 s of the core), placed at their grants, so the core is
    // held to 3 s. Ray hands the first process its call before it renices it (20–80 ms
    // after it registers), so the call's start (10 ms) runs beside the second start, as
    // normal work, and does not wait for the third: the call runs at about 1 s, not 3.
    let e = run("cluster:\n  host_node: false\n  head: {cpu: 3, cores: 1, memory: 16GiB}\n\
         scheduler: {call_submit_cost: 0s, first_submit_cost: 0s, owner_push_cost: 0s, call_start_cost: 10ms, task_worker_cost: 0s, task_reply_cost: 0s, \
         lease_latency: 0s, dispatch_cost: 0s, task_push_latency: 0s, sleep_overshoot: 0s, idle_worker_cpu: 0, \
         worker_start_cpu: 1s, worker_start_latency: 0s, worker_first_call_latency: 0s, prestart_worker_first_driver: false}\n\
         workloads:\n  - {kind: fan_out, tasks: 3, task_duration: 0s}\n");
    let mut began: Vec<f64> = e
        .model
        .log
        .recent()
        .filter(|l| l.source == "task" && l.message.ends_with(" RUNNING attempt=0") && !l.message.starts_with("1 "))
        .map(|l| l.time_us.as_secs_f64())
        .collect();
    began.sort_by(f64::total_cmp);
    assert_eq!(began.len(), 3, "three tasks ran: {began:?}");
    assert!(
        began[0] > 1.0 && began[0] < 1.05,
        "the first call began at {} s, not just after its worker came up at 1 s",
        began[0]
    );
}
