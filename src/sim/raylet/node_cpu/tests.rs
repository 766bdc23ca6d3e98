//! The node cores' unit tests: placement, priorities, starts and the idle share.

use super::*;

fn node() -> NodeIdx {
    NodeIdx(0)
}

fn machine(cores: u32, startup_concurrency: u32) -> NodeMachine {
    NodeMachine { cores, startup_concurrency, prestarted: 0, on: None }
}

/// What a lease got in the tests that ask no prestart and whose starts cost nothing.
#[derive(Debug, PartialEq)]
enum Got {
    Warm,
    Fresh,
    Started,
}

fn lease(cpus: &mut NodeCpus) -> Got {
    let worker = cpus.task_lease_granted(node(), 0, PoolAsk::default());
    match (worker.launched, worker.first_call) {
        (0, false) => Got::Warm,
        (0, true) => Got::Fresh,
        _ => Got::Started,
    }
}

/// Cores run by `settings`, with one node of `machine` joined.
fn cpus_on(settings: CpuSettings, machine: NodeMachine) -> NodeCpus {
    let mut cpus = NodeCpus::new(settings);
    cpus.joined(node(), machine);
    cpus
}

#[test]
fn work_shares_the_cores_first_come_first_served() {
    let mut cpus = cpus_on(CpuSettings::default(), machine(2, 4));
    // Two cores: two pieces run at once, the third waits for the first to end.
    assert_eq!(cpus.work(node(), Priority::Worker, 0, 10), 10);
    assert_eq!(cpus.work(node(), Priority::Worker, 0, 10), 10);
    assert_eq!(cpus.work(node(), Priority::Worker, 0, 10), 20);
    // Zero work takes no core.
    assert_eq!(cpus.work(node(), Priority::Worker, 5, 0), 5);
    // Work arriving after the cores are free starts when it arrives.
    assert_eq!(cpus.work(node(), Priority::Worker, 100, 10), 110);
}

fn reniced() -> CpuSettings {
    CpuSettings { reniced_workers: true, ..CpuSettings::default() }
}

#[test]
fn reniced_workers_leave_the_cores_to_normal_work() {
    // Both cores are busy with workers' work until 100.
    for reniced_workers in [false, true] {
        let mut cpus = cpus_on(CpuSettings { reniced_workers, ..CpuSettings::default() }, machine(2, 2));
        cpus.work(node(), Priority::Worker, 0, 100);
        cpus.work(node(), Priority::Worker, 0, 100);
        let dispatched = cpus.raylet_work(node(), 0, 10);
        let next_worker_piece = cpus.work(node(), Priority::Worker, 0, 10);
        if reniced_workers {
            assert_eq!(dispatched, 10, "the raylet does not wait for the workers");
            assert_eq!(next_worker_piece, 110, "the workers' later work waits as long as the raylet took");
        } else {
            assert_eq!(dispatched, 110, "alike, the raylet waits its turn");
            assert_eq!(next_worker_piece, 110);
        }
    }
}

#[test]
fn normal_work_shares_the_cores_among_itself() {
    let mut cpus = cpus_on(reniced(), machine(2, 3));
    // Three starts at once on two cores: the third shares them (Linux), where first
    // come, first served would have it wait for a whole start.
    let ends: Vec<u64> = (0..3).map(|_| cpus.start_worker(node(), 0, 100, 0)).collect();
    assert_eq!(ends, vec![100, 100, 150]);
    // Over by now, they hold nothing back.
    assert_eq!(cpus.start_worker(node(), 1_000, 100, 0), 1_100);
}

#[test]
fn a_queue_behind_one_thread_counts_as_one_runner() {
    let mut cpus = cpus_on(reniced(), machine(2, 2));
    // Ten dispatches queue on the raylet's one thread until 100: one stretch of work.
    for _ in 0..10 {
        cpus.raylet_work(node(), 0, 10);
    }
    let driver = Thread::OwnerOfTask(TaskId(1));
    assert_eq!(cpus.thread_work(node(), driver, Priority::Normal, 0, 50, 10), 60, "a core is still free");
}

#[test]
fn the_raylet_is_one_thread() {
    let mut cpus = cpus_on(CpuSettings::default(), machine(4, 4));
    assert_eq!(cpus.raylet_work(node(), 0, 10), 10);
    assert_eq!(cpus.raylet_work(node(), 0, 10), 20, "the second dispatch waits for the first");
    assert_eq!(cpus.work(node(), Priority::Worker, 0, 10), 10, "other work uses the other cores meanwhile");
}

#[test]
fn worker_starts_wait_for_a_slot_and_for_the_cores() {
    let mut cpus = cpus_on(CpuSettings::default(), machine(2, 4));
    // Four slots, two cores: starts of 100 µs of CPU share the cores (Linux time-slices
    // them), each slowed by those running when it begins; a fifth waits for a slot.
    let ends: Vec<u64> = (0..8).map(|_| cpus.start_worker(node(), 0, 100, 5)).collect();
    assert_eq!(ends, vec![105, 105, 155, 205, 255, 305, 355, 405]);
    assert_eq!(cpus.work(node(), Priority::Worker, 0, 10), 410, "a worker's work waits for the CPU they took");
    // One slot: starts go one after another even with cores free.
    let mut one = cpus_on(CpuSettings::default(), machine(8, 1));
    assert_eq!(one.start_worker(node(), 0, 100, 0), 100);
    assert_eq!(one.start_worker(node(), 0, 100, 0), 200);
}

#[test]
fn idle_processes_leave_less_of_the_cores() {
    let mut cpus = cpus_on(CpuSettings { idle_cpu: 0.5, ..CpuSettings::default() }, machine(2, 2));
    assert_eq!(cpus.work(node(), Priority::Worker, 0, 100), 100);
    // Two idle processes take half the machine: work takes twice as long.
    cpus.start_worker(node(), 0, 0, 0);
    cpus.start_worker(node(), 0, 0, 0);
    assert_eq!(cpus.work(node(), Priority::Worker, 1_000, 100), 1_200);
    // Past what the cores can give, work crawls at the minimum share.
    for _ in 0..10 {
        cpus.start_worker(node(), 0, 0, 0);
    }
    assert_eq!(cpus.work(node(), Priority::Worker, 10_000, 100), 10_000 + 2_000);
    for a in 0..12 {
        cpus.process_exited(node(), ActorId(a));
    }
    assert_eq!(cpus.work(node(), Priority::Worker, 20_000, 100), 20_100);
}

#[test]
fn task_workers_start_once_and_are_reused() {
    let mut cpus = cpus_on(CpuSettings::default(), machine(2, 2));
    let started = |w| w == Got::Started;
    assert!(started(lease(&mut cpus)), "the first lease starts a worker");
    assert!(started(lease(&mut cpus)), "two at once need two");
    cpus.task_lease_returned(node());
    assert_eq!(lease(&mut cpus), Got::Warm, "a returned worker is reused");
    cpus.task_lease_returned(node());
    cpus.task_lease_returned(node());
    assert_eq!(lease(&mut cpus), Got::Warm);
    assert_eq!(lease(&mut cpus), Got::Warm);
    assert!(started(lease(&mut cpus)), "a third at once needs a third");
}

#[test]
fn prestarted_workers_serve_the_first_leases_and_actors_take_idle_ones() {
    let mut cpus = cpus_on(CpuSettings::default(), NodeMachine { prestarted: 2, ..machine(2, 2) });
    assert_eq!(lease(&mut cpus), Got::Fresh, "a prestarted worker, no start");
    cpus.task_lease_returned(node());
    // One warm and one fresh idle: the warm one goes first.
    assert_eq!(lease(&mut cpus), Got::Warm);
    assert_eq!(lease(&mut cpus), Got::Fresh);
    assert_eq!(lease(&mut cpus), Got::Started);
    cpus.task_lease_returned(node());
    // An actor takes the idle worker's process; the next task needs a new one.
    assert!(cpus.actor_takes_idle_worker(node()));
    assert!(!cpus.actor_takes_idle_worker(node()), "none idle is left");
    assert_eq!(lease(&mut cpus), Got::Started);
}

#[test]
fn an_actor_takes_a_warm_worker_before_a_fresh_one() {
    let mut cpus = cpus_on(CpuSettings::default(), NodeMachine { prestarted: 2, ..machine(2, 2) });
    assert_eq!(lease(&mut cpus), Got::Fresh);
    cpus.task_lease_returned(node());
    assert!(cpus.actor_takes_idle_worker(node()), "the warm one");
    assert_eq!(lease(&mut cpus), Got::Fresh, "the fresh one is still there");
}

#[test]
fn an_actor_answers_no_call_before_its_first_work_window_ends() {
    let mut cpus = cpus_on(CpuSettings::default(), machine(2, 2));
    assert_eq!(cpus.actor_answers_from(node(), ActorId(1), 5), 5, "nothing known: at once");
    assert_eq!(cpus.last_actor_up(node()), None);
    cpus.actor_up(node(), ActorId(1), 3, 100);
    assert_eq!(cpus.last_actor_up(node()), Some(3), "the raylet's look reads when it began");
    assert_eq!(cpus.actor_answers_from(node(), ActorId(1), 10), 100, "within its first work's window");
    assert_eq!(cpus.actor_answers_from(node(), ActorId(1), 60), 100, "every call in it waits");
    assert_eq!(cpus.actor_answers_from(node(), ActorId(1), 150), 150, "after it, at once");
    cpus.actor_up(node(), ActorId(2), 4, 100);
    cpus.process_exited(node(), ActorId(2));
    assert_eq!(cpus.actor_answers_from(node(), ActorId(2), 10), 10, "an exited process is forgotten");
}

#[test]
fn a_dead_node_forgets_its_queue() {
    let mut cpus = cpus_on(CpuSettings::default(), machine(1, 1));
    assert_eq!(cpus.work(node(), Priority::Worker, 0, 1_000), 1_000);
    cpus.lost(node());
    cpus.joined(node(), machine(1, 1));
    assert_eq!(cpus.work(node(), Priority::Worker, 0, 10), 10);
}

#[test]
fn a_drivers_work_is_time_sliced_and_slowed_by_busy_task_workers() {
    for reniced_workers in [false, true] {
        let mut cpus =
            cpus_on(CpuSettings { reniced_workers, driver_slowdown: 0.5, ..CpuSettings::default() }, machine(1, 1));
        // A worker's piece holds the one core until 100; a driver's piece arriving at 0
        // does not wait for it, and the worker's next piece waits for both.
        assert_eq!(cpus.work(node(), Priority::Worker, 0, 100), 100);
        assert_eq!(cpus.work(node(), Priority::Normal, 0, 10), 10, "the driver is time-sliced");
        assert_eq!(cpus.work(node(), Priority::Worker, 0, 10), 120);
        // Two busy task workers: the driver's piece takes 1 + 2 × 0.5 times as long.
        lease(&mut cpus);
        lease(&mut cpus);
        assert_eq!(cpus.work(node(), Priority::Normal, 1_000, 10), 1_020);
        cpus.task_lease_returned(node());
        cpus.task_lease_returned(node());
        assert_eq!(cpus.work(node(), Priority::Normal, 2_000, 10), 2_010, "none busy: as it is");
    }
}

#[test]
fn a_start_is_slowed_by_the_task_workers_busy_when_it_is_launched() {
    let settings = CpuSettings { driver_slowdown: 0.5, ..CpuSettings::default() };
    let mut cpus = cpus_on(settings, NodeMachine { cores: 4, startup_concurrency: 4, prestarted: 2, on: None });
    // Nothing leased: a start's 100 µs of work take 100 µs.
    assert_eq!(cpus.start_worker(node(), 0, 100, 5), 105);
    // Both idle workers leased and busy: the next start takes 1 + 2 × 0.5 times as long;
    // its latency after the work is not stretched.
    assert_eq!(lease(&mut cpus), Got::Fresh);
    assert_eq!(lease(&mut cpus), Got::Fresh);
    assert_eq!(cpus.start_worker(node(), 1_000, 100, 5), 1_205);
    // Their leases back: as it is again.
    cpus.task_lease_returned(node());
    cpus.task_lease_returned(node());
    assert_eq!(cpus.start_worker(node(), 2_000, 100, 5), 2_105);
    // A lease waiting for a process to come up is not busy: on a node with no idle
    // worker, a lease starts its own, and a start beside it is not slowed by that lease;
    // once its worker is up (at 100 + 5), it is.
    let mut cpus = cpus_on(settings, NodeMachine { cores: 4, startup_concurrency: 4, prestarted: 0, on: None });
    let ask = PoolAsk { cost: StartCost { cpu: 100, latency: 5 }, ..PoolAsk::default() };
    let leased = cpus.task_lease_granted(node(), 0, ask);
    assert_eq!((leased.ready, leased.launched), (105, 1));
    assert_eq!(cpus.start_worker(node(), 0, 100, 5), 105);
    assert_eq!(cpus.start_worker(node(), 1_000, 100, 5), 1_155, "one busy: 1.5 times as long");
}

#[test]
fn a_submit_loop_counts_the_idle_workers_its_calls_will_lease() {
    let settings = CpuSettings { driver_slowdown: 0.5, ..CpuSettings::default() };
    let mut cpus = cpus_on(settings, NodeMachine { cores: 2, startup_concurrency: 2, prestarted: 2, on: None });
    // Two idle prestarted workers: a loop handing over 1 call makes one busy beside it,
    // 5 calls both; none handed over, none.
    assert_eq!(cpus.work_leasing(node(), Priority::Normal, 0, 10, 0), 10);
    assert_eq!(cpus.work_leasing(node(), Priority::Normal, 100, 10, 1), 115);
    assert_eq!(cpus.work_leasing(node(), Priority::Normal, 200, 10, 5), 220);
    // One leased already: it is busy, and only the other idle one is added.
    lease(&mut cpus);
    assert_eq!(cpus.work_leasing(node(), Priority::Normal, 300, 10, 5), 320);
    // A worker's own work is queued, never stretched.
    assert_eq!(cpus.work_leasing(node(), Priority::Worker, 400, 10, 5), 410);
}

#[test]
fn queued_work_ends_when_a_heap_of_core_free_times_says() {
    // The cores are kept in no order and the earliest found by a scan: every piece
    // must end exactly when taking the top of a min-heap of free times would have it.
    use rand::{Rng, SeedableRng};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for cores in [1u32, 2, 5, 16, 40] {
        let mut cpus = cpus_on(CpuSettings::default(), machine(cores, 1));
        let mut heap: BinaryHeap<Reverse<u64>> = (0..cores).map(|_| Reverse(0)).collect();
        let mut now = 0u64;
        for _ in 0..5_000 {
            now += rng.random_range(0..20u64);
            let cost = rng.random_range(1..100u64);
            let Reverse(free) = heap.pop().expect("a core");
            let expected = now.max(free) + cost;
            heap.push(Reverse(expected));
            assert_eq!(cpus.work(node(), Priority::Worker, now, cost), expected, "{cores} cores at {now}");
        }
    }
}

#[test]
fn a_node_on_the_head_machine_takes_the_heads_cores() {
    let head = node();
    let guest = NodeIdx(1);
    let mut cpus = cpus_on(CpuSettings::default(), machine(2, 2));
    cpus.joined(guest, NodeMachine { on: Some(head), ..machine(2, 2) });
    // Two cores between both raylets: the guest's piece waits for the head's two.
    assert_eq!(cpus.work(head, Priority::Worker, 0, 10), 10);
    assert_eq!(cpus.work(head, Priority::Worker, 0, 10), 10);
    assert_eq!(cpus.work(guest, Priority::Worker, 0, 10), 20);
    // Its raylet's thread is still its own: it waits for the cores, not the head's raylet.
    assert_eq!(cpus.raylet_work(head, 100, 50), 150);
    assert_eq!(cpus.raylet_work(guest, 100, 50), 150, "a second core is free");
    assert_eq!(cpus.raylet_work(guest, 100, 50), 200, "its own raylet's earlier work");
    // On machines of their own, the same pieces would not wait for each other.
    let mut apart = cpus_on(CpuSettings::default(), machine(2, 2));
    apart.joined(guest, machine(2, 2));
    apart.work(head, Priority::Worker, 0, 10);
    apart.work(head, Priority::Worker, 0, 10);
    assert_eq!(apart.work(guest, Priority::Worker, 0, 10), 10);
}

#[test]
fn a_guest_nodes_idle_processes_load_the_head_machine_until_it_goes() {
    let settings = CpuSettings { idle_cpu: 0.5, ..CpuSettings::default() };
    let head = node();
    let guest = NodeIdx(1);
    let mut cpus = cpus_on(settings, machine(2, 2));
    cpus.joined(guest, NodeMachine { on: Some(head), prestarted: 2, ..machine(2, 2) });
    // The guest's two idle processes take one of the two cores: work runs at half speed.
    assert_eq!(cpus.work(head, Priority::Worker, 0, 10), 20);
    cpus.start_worker(guest, 100, 0, 0);
    // Three take 1.5 cores: a quarter of the machine is left.
    assert_eq!(cpus.work(head, Priority::Worker, 1_000, 10), 1_040);
    cpus.process_exited(guest, ActorId(1));
    assert_eq!(cpus.work(head, Priority::Worker, 2_000, 10), 2_020);
    // The guest gone, its processes no longer load the head's cores.
    cpus.lost(guest);
    assert_eq!(cpus.work(head, Priority::Worker, 3_000, 10), 3_010);
}

#[test]
fn a_core_free_before_virtual_time_is_as_good_as_the_earliest() {
    // Two cores free at 10 and 40; virtual time is 50. Either starts a piece arriving at
    // 60 on arrival, so the one taken changes no time from here on.
    let mut cpus = cpus_on(CpuSettings::default(), machine(2, 2));
    cpus.work(node(), Priority::Worker, 0, 10);
    cpus.work(node(), Priority::Worker, 0, 40);
    cpus.time_is(50);
    assert_eq!(cpus.thread_work(node(), Thread::OwnerOfTask(TaskId(1)), Priority::Worker, 50, 60, 5), 65);
    assert_eq!(cpus.work(node(), Priority::Worker, 50, 5), 55, "the other core is still free at 50");
    assert_eq!(cpus.work(node(), Priority::Worker, 50, 5), 60, "then the earliest free, at 55");
}

#[test]
fn work_placed_ahead_of_virtual_time_leaves_the_earliest_core_to_work_due_sooner() {
    // A start placed for 100 while virtual time is 0 must take the core free first (at
    // 10), not one free by 100 that only the start's own time makes look alike: a piece
    // placed next at time 0 still finds the core free at 30.
    let mut cpus = cpus_on(CpuSettings::default(), machine(2, 2));
    cpus.work(node(), Priority::Worker, 0, 30);
    cpus.work(node(), Priority::Worker, 0, 10);
    assert_eq!(cpus.start_worker(node(), 100, 50, 0), 150);
    assert_eq!(cpus.work(node(), Priority::Worker, 0, 5), 35, "the core free at 30 is left");
}

/// A 6-CPU head on 2 cores with its 2 prestarted workers, and a burst of 6 leases
/// arriving at 100 with the rest of a 12-task burst behind each: how many processes the
/// pool launches, and when each lease has a worker.
fn burst_of_six(prestart: bool) -> (u32, Vec<u64>) {
    let mut cpus = cpus_on(CpuSettings::default(), NodeMachine { prestarted: 2, ..machine(2, 2) });
    cpus.time_is(100);
    let cost = StartCost { cpu: 500, latency: 2 };
    let (mut launched, mut ready) = (0, Vec::new());
    for i in 0..6u32 {
        let ask = PoolAsk { backlog: 11 - i, available_cpus: 6 - i, prestart, cost };
        let worker = cpus.task_lease_granted(node(), 100, ask);
        launched += worker.launched;
        ready.push(worker.ready);
    }
    (launched, ready)
}

#[test]
fn a_burst_leaves_one_process_over_as_ray_s_pool_does() {
    // Ray 2.60 (runs/worker-pool-log.json): the second lease request prestarts into both
    // start slots; the first to register serves the oldest waiting lease and its slot
    // starts the next lease's request; the second prestarted then serves that lease, so
    // the chain of requests ends one process over: five launched for four.
    let (launched, ready) = burst_of_six(true);
    assert_eq!(launched, 5, "two prestarts, three requests");
    // Two idle at once; then both prestarts (time-sliced, each a core: up at 602), then
    // the two requests started in their slots at 600 (up at 1,102).
    assert_eq!(ready, vec![100, 100, 602, 602, 1_102, 1_102]);
    let spare = cpus_after_burst();
    assert_eq!(spare, 1, "the last request's process serves no lease");
}

#[test]
fn without_prestart_each_lease_starts_its_own_and_none_is_over() {
    let (launched, ready) = burst_of_six(false);
    assert_eq!(launched, 4);
    assert_eq!(ready, vec![100, 100, 602, 602, 1_102, 1_102]);
}

/// Idle task workers once every start of [`burst_of_six`] is up and its leases hold.
fn cpus_after_burst() -> u32 {
    let mut cpus = cpus_on(CpuSettings::default(), NodeMachine { prestarted: 2, ..machine(2, 2) });
    cpus.time_is(100);
    let cost = StartCost { cpu: 500, latency: 2 };
    for i in 0..6u32 {
        cpus.task_lease_granted(node(), 100, PoolAsk { backlog: 11 - i, available_cpus: 6 - i, prestart: true, cost });
    }
    cpus.time_is(10_000);
    // An actor takes an idle task worker if there is one: the spare.
    let mut idle = 0;
    while cpus.actor_takes_idle_worker(node()) {
        idle += 1;
    }
    idle
}
