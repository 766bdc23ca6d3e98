//! Ray semantics the engine reproduces (shared/design/ray-facts.md, Part A), one test
//! per behaviour, each run end to end through the engine with the invariants checked.

mod common;

use common::{load, run_checked, Limits};
use rayscope::model::*;
use rayscope::sim::Engine;

const S: u64 = 1_000_000;

/// Step until virtual time `t` (µs), checking the invariants after every event.
fn step_until(e: &mut Engine, t: u64) {
    while e.next_event_time().is_some_and(|n| n <= t) {
        e.step();
        if let Err(m) = e.check_invariants() {
            panic!("{m}");
        }
    }
}

/// The event log, oldest first (configs here keep all of it in memory).
fn log(e: &Engine) -> Vec<String> {
    let mut v: Vec<String> =
        e.model.log.recent().map(|l| format!("{} {} {}", l.time_us.as_micros(), l.source, l.message)).collect();
    v.reverse();
    v
}

fn records<'a>(e: &'a Engine, name: &'a str) -> impl Iterator<Item = &'a TaskRecord> + 'a {
    e.model.finished_tasks.iter().filter(move |r| e.model.names.get(r.name) == name)
}

fn job_status(e: &Engine) -> JobStatus {
    e.model.jobs().values().next().expect("one job").status()
}

fn node_at(e: &Engine, ip: &str) -> NodeIdx {
    e.model.nodes().iter().rev().find(|n| &*n.ip == ip).expect("node with that ip").idx
}

fn run_all(yaml: &str) -> Engine {
    run_checked(load(yaml), Limits::default()).unwrap_or_else(|m| panic!("{m}"))
}

// ---------------------------------------------------------------- scheduling

const FOUR_NODES: &str = "cluster:
  head: {cpu: 8, memory: 16GiB}
  node_types: [{name: w, count: 3, cpu: 8, memory: 16GiB, ip_range: 10.0.1.0/24}]
";

/// Where each live map task holds its lease, by node index.
fn leases_by_node(e: &Engine) -> Vec<usize> {
    let mut per = vec![0; e.model.nodes().len()];
    for t in e.model.tasks.values().filter(|t| t.kind == TaskType::NormalTask && t.holds_resources) {
        per[t.node.get().unwrap().index()] += 1;
    }
    per
}

#[test]
fn hybrid_policy_packs_the_owner_node_until_half_full_then_spreads() {
    // The driver (owner) is on the head: 8 CPUs, so 4 one-CPU tasks bring it to 50%.
    for (tasks, want) in [(3, vec![3, 0, 0, 0]), (4, vec![4, 0, 0, 0]), (12, vec![4, 4, 4, 0])] {
        let yaml = format!("{FOUR_NODES}workloads: [{{kind: fan_out, tasks: {tasks}, task_duration: 100s}}]\n");
        let mut e = Engine::new(load(&yaml));
        step_until(&mut e, S);
        // Below the spread threshold a node keeps its work; at it the next-least-utilized
        // node (top-k = 1 of 4) packs in turn.
        assert_eq!(leases_by_node(&e), want, "{tasks} tasks");
        let first_four: Vec<_> = {
            let mut ids: Vec<_> = e
                .model
                .tasks
                .values()
                .filter(|t| t.kind == TaskType::NormalTask)
                .map(|t| (t.id, t.node.get()))
                .collect();
            ids.sort();
            ids.into_iter().take(4).map(|(_, n)| n).collect()
        };
        assert!(
            first_four.iter().all(|n| *n == Some(NodeIdx(0))),
            "the first tasks stay on the owner node: {first_four:?}"
        );
    }
}

#[test]
fn spillback_is_counted_once_per_task_leased_away_from_its_owner() {
    // No raylet dispatch work: each lease's placement time is then its round trips alone.
    let yaml =
        format!("{FOUR_NODES}scheduler: {{dispatch_cost: 0s}}\nworkloads: [{{kind: fan_out, tasks: 12, task_duration: 100s}}]\n");
    let mut e = Engine::new(load(&yaml));
    step_until(&mut e, S);
    let away = leases_by_node(&e)[1..].iter().sum::<usize>() as u64;
    assert_eq!(away, 8);
    assert_eq!(e.model.counters.spillbacks, away, "one spillback per task granted by another raylet");
    assert_eq!(e.model.nodes()[0].stats.spillbacks, away, "counted at the owner's raylet, which redirected them");
    assert!(e.model.nodes()[1..].iter().all(|n| n.stats.spillbacks == 0));
    let lines = log(&e);
    assert_eq!(lines.iter().filter(|l| l.contains("LEASED") && l.ends_with("spillback")).count() as u64, away);
    // A spilled-back lease pays a second lease round trip.
    let lease_ms = rayscope::config::SchedulerConfig::default().lease_latency.as_micros() as f64 / 1000.0;
    let placement = &e.model.placement_ms[0];
    assert_eq!(placement.count, 12);
    let want = 4.0 * lease_ms + 8.0 * 2.0 * lease_ms;
    assert!((placement.sum - want).abs() < 1e-9, "placement ms sum {} (want {want})", placement.sum);
}

const TRAINING: &str = "cluster:
  head: {cpu: 4, memory: 16GiB}
  node_types: [{name: w, count: 2, cpu: 4, memory: 16GiB, ip_range: 10.0.1.0/24}]
workloads: [{kind: training, workers: 3, bundle_cpu: 1, bundle_gpu: 0, placement_strategy: STRICT_SPREAD, steps: 2, step_duration: 1s}]
";

#[test]
fn strict_spread_group_with_more_bundles_than_nodes_stays_pending() {
    // Enough nodes: one bundle per node, the job runs to the end.
    let e = run_all(TRAINING);
    assert_eq!(job_status(&e), JobStatus::Succeeded);
    let pg = e.model.pgs().values().next().unwrap();
    let mut nodes: Vec<_> = pg.bundles.iter().map(|b| b.node.unwrap()).collect();
    nodes.dedup();
    assert_eq!(nodes.len(), 3, "each bundle on its own node: {nodes:?}");

    // One node too few (validation would refuse this config; the engine must still hold).
    let mut cfg = load(TRAINING);
    cfg.cluster.node_types[0].count = Some(1);
    let e = run_checked(cfg, Limits { until_us: 3600 * S, ..Limits::default() }).unwrap();
    assert!(!e.workloads_done());
    assert_eq!(job_status(&e), JobStatus::Running);
    let pg = e.model.pgs().values().next().unwrap();
    assert_eq!(pg.state(), PgState::Pending);
    assert!(pg.bundles.iter().all(|b| b.node.is_none()), "gang placement: no bundle reserved");
    assert!(e.model.nodes().iter().all(|n| n.available == n.total), "nothing reserved anywhere");
    assert!(log(&e).iter().any(|l| l.ends_with("placement_group 1 INFEASIBLE")));
    assert_eq!(e.model.counters.actors_created, 0, "the driver is still waiting for pg.ready()");
}

#[test]
fn hard_node_affinity_to_a_dead_node_fails_while_soft_runs_elsewhere() {
    let yaml = |soft: bool| {
        format!(
            "cluster:
  head: {{cpu: 4, memory: 16GiB}}
  node_types: [{{name: w, count: 2, cpu: 4, memory: 16GiB, ip_range: 10.0.1.0/24}}]
workloads: [{{kind: fan_out, start: 1s, tasks: 2, strategy: {{kind: NODE_AFFINITY, node: 10.0.1.1, soft: {soft}}}}}]
faults: [{{kind: kill_node, at: 0s, node: 10.0.1.1}}]
"
        )
    };
    let e = run_all(&yaml(false));
    let maps: Vec<_> = records(&e, "map").collect();
    assert_eq!(maps.len(), 2);
    assert!(maps
        .iter()
        .all(|r| r.state == TaskState::Failed && r.error == Some(ErrorType::TaskUnschedulable) && r.attempt == 0));
    assert!(maps.iter().all(|r| r.started_at.is_none()), "never ran");
    assert_eq!(job_status(&e), JobStatus::Failed);

    let e = run_all(&yaml(true));
    let dead = node_at(&e, "10.0.1.1");
    let maps: Vec<_> = records(&e, "map").collect();
    assert!(maps.iter().all(|r| r.state == TaskState::Finished && r.node.is_some_and(|n| n != dead)));
    assert_eq!(job_status(&e), JobStatus::Succeeded);
}

// ---------------------------------------------------------------- fault tolerance

fn failing_map(max_retries: i32, retry_exceptions: bool, application: bool) -> Engine {
    run_all(&format!(
        "workloads: [{{kind: fan_out, tasks: 1, task_duration: 1s, max_retries: {max_retries}, retry_exceptions: {retry_exceptions}}}]
faults: [{{kind: task_failures, at: 0s, probability: 1.0, application_error: {application}}}]
"
    ))
}

fn attempts_failed(e: &Engine) -> usize {
    log(e).iter().filter(|l| l.contains("ATTEMPT_FAILED")).count()
}

#[test]
fn a_task_failing_every_attempt_is_tried_max_retries_plus_one_times() {
    for max_retries in [0, 1, 3] {
        let e = failing_map(max_retries, false, false);
        // Every attempt is kept, as Ray lists it: FAILED with the crash, numbered in order.
        let r: Vec<_> = records(&e, "map").collect();
        assert_eq!(r.len(), max_retries as usize + 1);
        for (i, a) in r.iter().enumerate() {
            assert_eq!((a.state, a.error, a.attempt), (TaskState::Failed, Some(ErrorType::WorkerDied), i as u32));
        }
        assert_eq!(attempts_failed(&e), max_retries as usize, "worker crashes are retried");
        assert_eq!(e.model.counters.tasks_retried, max_retries as u64);
        assert_eq!(e.model.nodes()[0].stats.tasks_started, max_retries as u64 + 1);
        assert_eq!(e.model.counters.worker_failures.values().sum::<u64>(), max_retries as u64 + 1);
        assert_eq!(job_status(&e), JobStatus::Failed, "ray.get re-raises the error");
    }
}

#[test]
fn application_errors_are_retried_only_with_retry_exceptions() {
    let e = failing_map(3, false, true);
    let r: Vec<_> = records(&e, "map").collect();
    assert_eq!((r[0].error, r[0].attempt), (Some(ErrorType::TaskExecutionException), 0));
    assert_eq!(attempts_failed(&e), 0);

    let e = failing_map(3, true, true);
    let r: Vec<_> = records(&e, "map").collect();
    assert_eq!(r.len(), 4, "one record per attempt");
    assert!(r.iter().all(|a| a.error == Some(ErrorType::TaskExecutionException)));
    assert_eq!(r[3].attempt, 3);
    assert_eq!(attempts_failed(&e), 3);
}

fn pool_with_kills(max_restarts: i32, kills: u32) -> String {
    let faults: Vec<String> =
        (1..=kills).map(|k| format!("{{kind: kill_actor, at: {}s, class: PoolActor}}", 10 * k)).collect();
    format!(
        "workloads: [{{kind: actor_pool, actors: 1, calls_per_actor: 60, call_duration: 1s, max_restarts: {max_restarts}, max_task_retries: -1}}]
faults: [{}]
",
        faults.join(", ")
    )
}

#[test]
fn actor_restarts_honour_max_restarts() {
    let actor = |e: &Engine| e.model.actors().values().next().unwrap().clone();
    let mut e = Engine::new(load(&pool_with_kills(2, 4)));
    for (t, state, restarts) in
        [(5, ActorState::Alive, 0), (15, ActorState::Alive, 1), (25, ActorState::Alive, 2), (35, ActorState::Dead, 2)]
    {
        step_until(&mut e, t * S);
        let a = actor(&e);
        assert_eq!((a.state(), a.num_restarts), (state, restarts), "at {t}s");
    }
    assert_eq!(e.model.counters.actors_restarted, 2);
    assert_eq!(actor(&e).death_cause.as_deref(), Some("killed by ray.kill (fault injection)"));
    step_until(&mut e, 3600 * S);
    assert_eq!(job_status(&e), JobStatus::Failed, "calls to a dead actor fail");

    // -1: restarted every time; the job completes (calls are retried with max_task_retries: -1).
    let e = run_all(&pool_with_kills(-1, 4));
    assert_eq!((actor(&e).num_restarts, e.model.counters.actors_restarted), (4, 4));
    assert_eq!(job_status(&e), JobStatus::Succeeded);
    assert_eq!(records(&e, "PoolActor.run").filter(|r| r.state == TaskState::Finished).count(), 60);

    // 0 (Ray's default): the first kill is final.
    let mut e = Engine::new(load(&pool_with_kills(0, 1)));
    step_until(&mut e, 11 * S);
    assert_eq!((actor(&e).state(), actor(&e).num_restarts), (ActorState::Dead, 0));
}

#[test]
fn a_worker_crash_in_an_actor_call_restarts_the_actor() {
    let e = run_all(
        "workloads: [{kind: actor_pool, actors: 1, calls_per_actor: 3, call_duration: 1s, max_restarts: 1, max_task_retries: 0}]
faults: [{kind: task_failures, at: 1s, until: 2s, probability: 1.0}]
",
    );
    // The first call ends (and crashes) at ~1.7 s (the worker starts in 0.65 s); the
    // restarted actor serves the other two after 2 s.
    let a = e.model.actors().values().next().unwrap();
    assert_eq!(a.num_restarts, 1, "the crash took the actor's process with it");
    let calls: Vec<_> = records(&e, "PoolActor.run").collect();
    assert_eq!(
        calls.iter().filter(|r| r.error == Some(ErrorType::ActorDied)).count(),
        1,
        "max_task_retries 0: not retried"
    );
    assert_eq!(calls.iter().filter(|r| r.state == TaskState::Finished).count(), 2);
    assert_eq!(e.model.counters.worker_failures.values().sum::<u64>(), 1);
}

// ---------------------------------------------------------------- memory

#[test]
fn spilling_starts_when_the_store_reaches_80_percent_not_before() {
    // One CPU: ten 10 MiB outputs sealed one per second into a 100 MiB store.
    let mut e = Engine::new(load(
        "cluster: {head: {cpu: 1, memory: 8GiB, object_store_memory: 100MiB}}
workloads: [{kind: fan_out, tasks: 10, task_duration: 1s, output_size: 10MiB}]
",
    ));
    let head = |e: &Engine| e.model.nodes()[0].store.clone();
    step_until(&mut e, 7 * S + S / 2);
    assert_eq!((head(&e).used.0, head(&e).num_objects), (70 * Bytes::MIB, 7));
    assert_eq!(e.model.counters.spilled_objects, 0, "70% full: nothing spilled");
    step_until(&mut e, 8 * S + S / 2);
    assert_eq!(e.model.counters.spilled_objects, 1, "the 8th object brings it to 80%: the oldest is spilled");
    assert_eq!((head(&e).used.0, head(&e).spilled.0), (70 * Bytes::MIB, 10 * Bytes::MIB));
    assert_eq!(e.model.nodes()[0].stats.bytes_spilled, 10 * Bytes::MIB);
    assert!(log(&e).iter().any(|l| l.contains("SPILLED 2 ")), "the oldest map output (object 2) goes first");
}

#[test]
fn the_memory_monitor_kills_above_95_percent_not_at_90() {
    // 10 GiB node; a 512 MiB task; pressure to exactly 90%, then 6% more.
    let mut e = Engine::new(load(
        "cluster: {head: {cpu: 1, memory: 10GiB, object_store_memory: 100MiB}}
workloads: [{kind: fan_out, tasks: 1, task_duration: 100s, memory: 512MiB, output_size: 1KiB}]
faults:
  - {kind: memory_pressure, at: 10s, node: 10.0.0.1, fraction: 0.85, duration: 60s}
  - {kind: memory_pressure, at: 20s, node: 10.0.0.1, fraction: 0.06, duration: 5s}
",
    ));
    step_until(&mut e, 19 * S);
    let n = &e.model.nodes()[0];
    assert_eq!(n.memory_used().0 * 10, 9 * n.memory_bytes.0, "exactly 90% used");
    assert!(e.model.counters.oom_kills.is_empty(), "90% is below the 95% threshold");
    step_until(&mut e, 20 * S);
    let kills = &e.model.counters.oom_kills;
    assert_eq!(kills.get(&("MemoryManager.TaskEviction.Total", "map".to_string())), Some(&1));
    assert_eq!(e.model.nodes()[0].stats.oom_kills, 1);
    // OOM kills retry without touching max_retries, after a backoff.
    let t = e.model.tasks.values().find(|t| t.kind == TaskType::NormalTask).unwrap();
    assert_eq!((t.attempt, t.retries_left, t.state()), (1, 3, TaskState::PendingNodeAssignment));
    step_until(&mut e, 3600 * S);
    assert_eq!(job_status(&e), JobStatus::Succeeded);
}

// ---------------------------------------------------------------- autoscaler

fn autoscaled(min: u32) -> String {
    // The head cannot run the 4-CPU maps; a pinned 1-CPU keeper job holds the cluster open.
    format!(
        "cluster:
  head: {{cpu: 1, memory: 16GiB}}
  node_types:
    - {{name: w, cpu: 4, memory: 16GiB, ip_range: 10.0.1.0/24, autoscaler: {{min_workers: {min}, max_workers: 2, launch_delay: 30s, idle_timeout: 60s}}}}
workloads:
  - {{kind: fan_out, name: maps, tasks: 4, num_cpus: 4, task_duration: 10s}}
  - {{kind: fan_out, name: keeper, function: keep, tasks: 1, task_duration: 400s, strategy: {{kind: NODE_AFFINITY, node: 10.0.0.1}}}}
"
    )
}

#[test]
fn the_autoscaler_launches_after_the_delay_and_removes_idle_workers_within_bounds() {
    for min in [0u32, 1] {
        let mut e = Engine::new(load(&autoscaled(min)));
        let workers = |e: &Engine| e.model.nodes().iter().filter(|n| n.is_alive() && !n.is_head).count() as u32;
        let mut joined_at = Vec::new();
        let mut peak = 0;
        while !e.workloads_done() && e.step() {
            e.check_invariants().unwrap();
            peak = peak.max(workers(&e));
            for n in e.model.nodes().iter().filter(|n| !n.is_head) {
                if !joined_at.contains(&(n.idx, n.started_at)) {
                    joined_at.push((n.idx, n.started_at));
                }
            }
        }
        assert_eq!(peak, 2, "max_workers caps the launch (4 maps want 4 nodes)");
        // min_workers start at once; the rest join one launch delay after the first tick (5 s).
        let launched: Vec<u64> = joined_at.iter().map(|(_, t)| *t).filter(|t| *t > 0).collect();
        assert_eq!(launched, vec![35 * S; (2 - min) as usize], "launched at tick 5 s + 30 s delay");
        // Each idle worker is terminated at the first autoscaler tick (every 5 s) at least
        // idle_timeout after its last task, down to min_workers and never below.
        let stopped: Vec<&Node> = e.model.nodes().iter().filter(|n| n.died_at.is_some()).collect();
        assert_eq!(stopped.len() as u32, 2 - min);
        for n in stopped {
            let tasks = e.model.finished_tasks.iter().filter(|r| r.node == Some(n.idx)).map(|r| r.ended_at);
            let last = tasks.max().unwrap_or(0).max(n.started_at);
            let died = n.died_at.unwrap();
            assert!(
                died >= last + 60 * S && died < last + 70 * S && died % (5 * S) == 0,
                "idle from {last}, stopped at {died}"
            );
        }
        assert_eq!(workers(&e), min);
        assert!(log(&e).iter().filter(|l| l.contains("DEAD")).all(|l| l.contains("autoscaler: idle node terminated")));
    }
}

// ---------------------------------------------------------------- objects

#[test]
fn node_death_loses_objects_and_lineage_reconstruction_reruns_their_producers() {
    // The head runs nothing; four maps pack onto the first worker, whose outputs the
    // reducer (placed there by locality) reads; that worker dies mid-reduce.
    let e = run_all(
        "cluster:
  head: {cpu: 0, memory: 16GiB}
  node_types: [{name: w, count: 2, cpu: 8, memory: 16GiB, ip_range: 10.0.1.0/24}]
workloads: [{kind: fan_out, tasks: 4, reducers: 1, task_duration: 1s, reduce_duration: 30s, output_size: 10MiB}]
faults: [{kind: kill_node, at: 10s, node: 10.0.1.1}]
",
    );
    assert_eq!(e.model.counters.node_failures, 1);
    assert_eq!(e.model.counters.objects_reconstructed, 4, "all four map outputs lived only on the dead node");
    let lines = log(&e);
    assert_eq!(lines.iter().filter(|l| l.contains("RECONSTRUCTING")).count(), 4);
    let maps: Vec<_> = records(&e, "map").collect();
    assert_eq!(maps.len(), 8, "each map ran twice");
    assert_eq!(maps.iter().filter(|r| r.attempt == 1 && r.state == TaskState::Finished).count(), 4);
    assert!(maps.iter().filter(|r| r.attempt == 1).all(|r| r.node == Some(NodeIdx(2))), "re-run on the survivor");
    let reduce: Vec<_> = records(&e, "reduce").collect();
    // The reduce ran on the dead node: its first attempt failed there, its retry finished.
    assert_eq!(reduce.len(), 2);
    assert_eq!(
        (reduce[0].attempt, reduce[0].state, reduce[0].error),
        (0, TaskState::Failed, Some(ErrorType::NodeDied))
    );
    assert_eq!((reduce[1].attempt, reduce[1].state), (1, TaskState::Finished));
    assert_eq!(job_status(&e), JobStatus::Succeeded);
}

// ---------------------------------------------------------------- the seed's flow insight tree

/// Run the seed's Flow Insight example (with another seed, if given) and check that the
/// run is exactly the tree the RNG drew. Returns (calls by bottlenecks above leaves, by others).
fn check_flow_insight_tree(seed: Option<u64>) -> (usize, usize) {
    let mut text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/flow-insight.yaml")).unwrap();
    if let Some(s) = seed {
        text = text.replace("seed: 42", &format!("seed: {s}"));
    }
    // Idle actors' share of a core stretches each submit a little (`sim/raylet/node_cpu.rs`);
    // without it a submit on these 8-core nodes takes exactly its submit cost.
    let mut cfg = load(&text);
    cfg.scheduler.idle_worker_cpu = 0.0;
    let e = run_checked(cfg, Limits { every: 50, until_us: 48 * 3600 * S, ..Limits::default() }).unwrap();
    assert_eq!(job_status(&e), JobStatus::Succeeded);
    let actors = e.model.actors();
    // The tree: a root at depth 3; every worker above depth 0 has 1 or 2 children one level down.
    let roots: Vec<_> = actors.values().filter(|a| a.level == 3).collect();
    assert_eq!(roots.len(), 1);
    let mut calls = std::collections::BTreeMap::new();
    // The driver calls the root once; each call to a worker calls each child 10 times.
    let mut stack = vec![(roots[0].id, 1u64)];
    while let Some((a, c)) = stack.pop() {
        let x = &actors[&a];
        assert!(if x.level == 0 { x.children.is_empty() } else { (1..=2).contains(&x.children.len()) }, "{x:?}");
        assert!(x.children.iter().all(|ch| actors[ch].level + 1 == x.level));
        calls.insert(a, c);
        stack.extend(x.children.iter().map(|ch| (*ch, c * 10)));
    }
    assert_eq!(calls.len(), actors.len(), "every actor is in the root's tree");
    assert_eq!(e.model.counters.actors_created, actors.len() as u64);
    let process: Vec<&TaskRecord> = records(&e, "Worker.process").collect();
    assert_eq!(process.len() as u64, calls.values().sum::<u64>(), "calls per the formula");
    assert_eq!(
        e.model.counters.tasks_finished,
        process.len() as u64 + actors.len() as u64 + 1,
        "calls + constructors + driver"
    );
    assert!(process.iter().all(|r| r.state == TaskState::Finished));
    for (a, c) in &calls {
        let mine: Vec<_> = process.iter().filter(|r| r.actor == Some(*a)).collect();
        assert_eq!(mine.len() as u64, *c, "calls to actor {a:?}");
        // One call at a time (max_concurrency 1): spans never overlap.
        let mut spans: Vec<(u64, u64)> = mine.iter().map(|r| (r.started_at.unwrap(), r.ended_at)).collect();
        spans.sort();
        assert!(spans.windows(2).all(|w| w[1].0 >= w[0].1), "actor {a:?} ran calls concurrently");
    }
    // Each call of a worker with children sleeps before every call to a child: 5 s, or
    // 5 + 30 s when it is a bottleneck whose children are leaves; each `time.sleep`
    // returns late by the calibrated overshoot, and each submit after the first follows
    // the previous one's submission cost.
    let costs = rayscope::config::SchedulerConfig::default();
    let (overshoot, submit) = (costs.sleep_overshoot.as_micros(), costs.actor_call_submit_cost.as_micros());
    let (mut slow, mut fast) = (0, 0);
    for p in &process {
        let a = &actors[&p.actor.unwrap()];
        if a.children.is_empty() {
            continue;
        }
        let bottleneck = a.flag && a.level == 1;
        let gap = if bottleneck { 35 * S + 2 * overshoot } else { 5 * S + overshoot };
        let mut submits: Vec<u64> = process.iter().filter(|c| c.parent == Some(p.id)).map(|c| c.submitted_at).collect();
        submits.sort();
        assert_eq!(submits.len(), 10 * a.children.len());
        let mut at = p.started_at.unwrap();
        for (i, s) in submits.into_iter().enumerate() {
            let after_submit = if i == 0 { 0 } else { submit };
            assert_eq!(s - at, gap + after_submit, "actor level {} flag {}", a.level, a.flag);
            at = s;
            *(if bottleneck { &mut slow } else { &mut fast }) += 1;
        }
    }
    (slow, fast)
}

#[test]
fn the_seed_flow_insight_tree_runs_as_the_rng_drew_it() {
    // Seed 42 (the example) draws a small tree; seed 11 a larger one with bottlenecks.
    let (slow42, fast42) = check_flow_insight_tree(None);
    let (slow11, fast11) = check_flow_insight_tree(Some(11));
    assert!(slow42 + slow11 > 0 && fast42 + fast11 > 0, "both kinds of worker were exercised");
}
