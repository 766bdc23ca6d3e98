//! The object store's costs, each checked where the engine charges it: a return's put
//! into the store, a get's copy out of it (or a numpy return's view), a get's pull of
//! what is elsewhere or spilled, and a get bigger than the getter's store. Each runs end
//! to end with the invariants checked, and compares the same config with the cost on
//! and off, so the test fails if the engine stops charging it.

mod common;

use common::{load, makespan_s, only_costs, run_checked, run_checked_watching, Limits};
use rayscope::sim::Engine;

fn run(yaml: &str) -> Engine {
    run_checked(load(yaml), Limits::default()).unwrap_or_else(|m| panic!("{m}"))
}

#[test]
fn a_transfer_rate_of_nothing_is_refused_by_name() {
    let yaml = "cluster:\n  head: {cpu: 2, memory: 4GiB}\nobject_store: {transfer_bandwidth: 0}\n";
    let err = rayscope::config::load_str_with(yaml, "costs.yaml", &[]).expect_err("refused").to_string();
    assert!(err.contains("costs.yaml") && err.contains("object_store.transfer_bandwidth"), "{err}");
}

#[test]
fn a_put_or_get_rate_of_nothing_is_refused_by_name() {
    for field in
        ["put_bandwidth", "put_parallel_bandwidth", "put_reused_bandwidth", "get_bandwidth", "get_fresh_bandwidth"]
    {
        let yaml = format!("cluster:\n  head: {{cpu: 2, memory: 4GiB}}\nobject_store: {{{field}: 0}}\n");
        let err = rayscope::config::load_str_with(&yaml, "costs.yaml", &[]).expect_err("refused").to_string();
        assert!(err.contains("costs.yaml") && err.contains(&format!("object_store.{field}")), "{err}");
    }
}

#[test]
fn a_put_over_the_parallel_threshold_starts_its_copy_threads_and_copies_at_their_rate() {
    // Ray copies a `bytes` value of up to 1 MiB with one memcpy and a bigger one with
    // parallel_memcopy: at the threshold one rate, one byte over it the threads' start
    // and the other rate.
    let cfg = load(
        "cluster:\n  head: {cpu: 2, memory: 4GiB}\nobject_store: {put_latency: 100us, put_bandwidth: 1GB, \
         put_parallel_threshold: 1MiB, put_parallel_start: 300us, put_parallel_bandwidth: 4GB}\n",
    );
    let put = |size: u64| rayscope::sim::put_micros(&cfg, size, size);
    let at = 1u64 << 20;
    assert!((put(at) - (100.0 + at as f64 / 1e3)).abs() < 1e-6, "1 MiB: {}", put(at));
    assert!((put(at + 1) - (400.0 + (at + 1) as f64 / 4e3)).abs() < 1e-6, "1 MiB + 1 B: {}", put(at + 1));
    assert!((put(100_000_000) - (400.0 + 25_000.0)).abs() < 1e-6, "100 MB: {}", put(100_000_000));
}

#[test]
fn a_return_over_the_inline_threshold_costs_its_worker_a_put_and_an_inline_one_does_not() {
    // Two jobs one after the other, one task each: the first job's return lands in
    // pages the store never touched, the second's in those the first one's left.
    let yaml = |size: &str| {
        format!(
            "{}workloads:\n  - {{kind: fan_out, tasks: 1, task_duration: 0s, output_size: {size}}}\n\
             \x20 - {{kind: fan_out, start: 10s, tasks: 1, task_duration: 0s, output_size: {size}}}\n",
            only_costs("task_error_cost: 0s")
        )
    };
    let jobs = |size: &str| -> Vec<f64> {
        let e = run(&yaml(size));
        e.model.jobs().values().map(|j| j.makespan_s().expect("the job finished")).collect()
    };
    let cfg = load(&yaml("10MB"));
    let (fresh, reused) = (
        rayscope::sim::put_micros(&cfg, 10_000_000, 10_000_000) / 1e6,
        rayscope::sim::put_micros(&cfg, 10_000_000, 0) / 1e6,
    );
    assert!(fresh > 0.002 && reused < fresh / 2.0, "a 10 MB put costs {fresh} s fresh, {reused} s reused");
    // The driver then gets it: that copy is the getter's (tested below).
    let get = rayscope::sim::get_micros(&cfg, 10_000_000) / 1e6;
    let (none, ten) = (jobs("0"), jobs("10MB"));
    assert_eq!((none.len(), ten.len()), (2, 2), "two jobs");
    let (first, second) = (ten[0] - none[0] - get, ten[1] - none[1] - get);
    assert!((first - fresh).abs() < 3e-6, "the first 10 MB return cost {first} s, not a fresh put's {fresh} s");
    assert!((second - reused).abs() < 3e-6, "the second cost {second} s, not a put into touched pages' {reused} s");
    let inline = jobs("50KiB");
    assert!(
        (inline[0] - none[0]).abs() < 2e-6,
        "a 50 KiB return travels in the reply, yet cost {} s",
        inline[0] - none[0]
    );
}

#[test]
fn a_shared_input_costs_the_driver_one_put_and_each_other_node_one_copy() {
    const HEAD: &str = "  head: {cpu: 8, cores: 8, memory: 16GiB}\n";
    let yaml = |shared: &str, worker: bool, strategy: &str| {
        let nodes = if worker {
            "  node_types:\n    - {name: w, count: 1, cpu: 8, cores: 8, memory: 16GiB, ip_range: 10.0.1.0/24}\n"
        } else {
            ""
        };
        format!(
            "{}workloads:\n  - {{kind: fan_out, tasks: 4, task_duration: 100ms, shared_input: {shared}, \
             strategy: {{kind: {strategy}}}}}\n",
            only_costs("task_error_cost: 0s").replace(HEAD, &format!("{HEAD}{nodes}"))
        )
    };
    // One node: the driver's put is the only difference.
    let one = |shared: &str| makespan_s(&run(&yaml(shared, false, "DEFAULT")));
    let put = rayscope::sim::put_micros(&load(&yaml("10MB", false, "DEFAULT")), 10_000_000, 10_000_000) / 1e6;
    let extra = one("10MB") - one("0");
    assert!((extra - put).abs() < 2e-6, "the shared input cost {extra} s, not its put's {put} s");
    // Beside a worker node, spread: the worker node copies the object once for its maps.
    let e = run(&yaml("10MB", true, "SPREAD"));
    let w = e.model.nodes().iter().find(|n| !n.is_head).expect("a worker node");
    assert!(w.stats.tasks_started >= 2, "SPREAD put maps on the worker node: {}", w.stats.tasks_started);
    assert_eq!(w.stats.bytes_received, 10_000_000, "one copy for all its maps");
    assert!(!e.model.objects.values().any(|o| o.size == 10_000_000), "what the job put is gone with the job");
}

#[test]
fn a_get_of_returns_made_on_another_node_waits_for_their_pull() {
    const HEAD: &str = "  head: {cpu: 8, cores: 8, memory: 16GiB}\n";
    let worker = "  node_types:\n    - {name: w, count: 1, cpu: 8, cores: 8, memory: 16GiB, ip_range: 10.0.1.0/24}\n";
    let job = |store: &str| {
        let yaml = format!(
            "{}object_store: {{{store}}}\nworkloads:\n  - {{kind: fan_out, tasks: 4, task_duration: 100ms, \
             output_size: 10MB, strategy: {{kind: SPREAD}}}}\n",
            only_costs("task_error_cost: 0s").replace(HEAD, &format!("{HEAD}{worker}"))
        );
        run(&yaml)
    };
    let quick = job("transfer_latency: 0s, transfer_bandwidth: 1GB");
    let w = quick.model.nodes().iter().find(|n| !n.is_head).expect("a worker node");
    let head = quick.model.nodes().iter().find(|n| n.is_head).expect("the head");
    let remote = w.stats.tasks_started;
    assert!((1..4).contains(&remote), "SPREAD puts maps on both nodes: {remote} on the worker");
    // The driver, on the head, pulls each return made on the worker into its store.
    assert_eq!(w.stats.bytes_sent, remote * 10_000_000, "each remote return crossed once");
    assert_eq!(head.stats.bytes_received, remote * 10_000_000);
    // Its get waits for the pull: each object's latency and bytes, one after another.
    let late = makespan_s(&job("transfer_latency: 250ms, transfer_bandwidth: 1GB")) - makespan_s(&quick);
    let want = 0.25 * remote as f64;
    assert!((late - want).abs() < 1e-3, "{remote} pulls' latency cost the get {late} s, not {want} s");
    let slow = makespan_s(&job("transfer_latency: 0s, transfer_bandwidth: 10MB")) - makespan_s(&quick);
    let want = remote as f64 * (1.0 - 0.01);
    assert!((slow - want).abs() < 1e-3, "{remote} × 10 MB at 10 MB/s cost the get {slow} s more, not {want} s");
}

#[test]
fn a_get_of_spilled_returns_waits_for_their_restore() {
    let job = |disk: &str| {
        let yaml = format!(
            "{}object_store: {{spill_bandwidth: {disk}}}\nworkloads:\n  - {{kind: fan_out, tasks: 8, \
             task_duration: 100ms, output_size: 20MB}}\n",
            only_costs("task_error_cost: 0s").replace("memory: 16GiB}", "memory: 16GiB, object_store_memory: 100MB}")
        );
        run(&yaml)
    };
    let (fast, slow) = (job("10GB"), job("100MB"));
    let restored = slow.model.counters.restored_bytes;
    assert!(restored > 0, "8 × 20 MB outputs in a 100 MB store: the driver's get restores some");
    assert_eq!(restored, fast.model.counters.restored_bytes, "the disk's speed changes no choice");
    assert_eq!(slow.model.counters.transferred_bytes, 0, "one node: nothing crosses");
    // The get waits for each restore, at the disk's rate.
    let extra = makespan_s(&slow) - makespan_s(&fast);
    let want = restored as f64 * (1.0 / 100e6 - 1.0 / 10e9);
    assert!((extra - want).abs() < 1e-3, "restoring {restored} B cost the get {extra} s more, not {want} s");
}

#[test]
fn a_get_costs_the_getter_a_copy_of_each_return_out_of_the_store() {
    // One task whose return is over the inline threshold, got by the driver: the get's
    // copy is the driver's work after the return is ready, at the heap's rate up to
    // 32 MiB and at the fresh-page rate above it. Puts cost nothing here.
    let yaml = |size: &str| {
        format!(
            "{}object_store: {{put_latency: 0s, put_parallel_start: 0s, put_bandwidth: 1000TB, \
             put_parallel_bandwidth: 1000TB, put_reused_bandwidth: 1000TB}}\n\
             workloads:\n  - {{kind: fan_out, tasks: 1, task_duration: 0s, output_size: {size}}}\n",
            only_costs("task_error_cost: 0s")
        )
    };
    let took = |size: &str| makespan_s(&run(&yaml(size)));
    let cfg = load(&yaml("0"));
    let store = &cfg.object_store;
    let none = took("0");
    for (size, bytes, rate) in [
        ("10MB", 10_000_000u64, store.get_bandwidth.0),
        ("30MiB", 30 << 20, store.get_bandwidth.0),
        ("40MiB", 40 << 20, store.get_fresh_bandwidth.0),
    ] {
        let want = store.get_latency.as_micros() as f64 / 1e6 + bytes as f64 / rate as f64;
        let got = took(size) - none;
        assert!((got - want).abs() < 3e-6, "getting {size} cost {got} s, not {want} s");
    }
    let inline = took("50KiB") - none;
    assert!(inline.abs() < 2e-6, "a 50 KiB return came inside its reply, yet its get cost {inline} s");
}

#[test]
fn a_get_of_a_numpy_return_costs_a_fixed_view_whatever_its_size() {
    // As above, with `value_type: numpy`: Ray hands the array back as a view of the
    // store's memory, so the get costs `zero_copy_get_latency` at 1 MB and at 100 MB,
    // where a `bytes` return of 100 MB costs its copy.
    let yaml = |size: &str, value_type: &str| {
        format!(
            "{}object_store: {{put_latency: 0s, put_parallel_start: 0s, put_bandwidth: 1000TB, \
             put_parallel_bandwidth: 1000TB, put_reused_bandwidth: 1000TB}}\n\
             workloads:\n  - {{kind: fan_out, tasks: 1, task_duration: 0s, output_size: {size}, \
             value_type: {value_type}}}\n",
            only_costs("task_error_cost: 0s")
        )
    };
    let took = |size: &str, value_type: &str| makespan_s(&run(&yaml(size, value_type)));
    let cfg = load(&yaml("0", "numpy"));
    let view = cfg.object_store.zero_copy_get_latency.as_micros() as f64 / 1e6;
    assert!(view > 0.0);
    let none = took("0", "numpy");
    for size in ["1MB", "100MB"] {
        let got = took(size, "numpy") - none;
        assert!((got - view).abs() < 3e-6, "getting a numpy {size} cost {got} s, not {view} s");
    }
    let copied = took("100MB", "bytes") - none;
    assert!(copied > 100.0 * view, "a 100 MB bytes return's get cost {copied} s, no more than a view");
}

#[test]
fn a_get_bigger_than_the_getters_store_makes_room_as_it_pulls() {
    // Eight 40 MB outputs, half made on a worker node, all got by a driver whose store
    // holds 100 MB: the get pulls 160 MB into it and needs the other 160 MB back too.
    const HEAD: &str = "  head: {cpu: 8, cores: 8, memory: 16GiB}\n";
    let nodes = "  head: {cpu: 8, cores: 8, memory: 16GiB, object_store_memory: 100MB}\n  node_types:\n    \
                 - {name: w, count: 1, cpu: 8, cores: 8, memory: 16GiB, ip_range: 10.0.1.0/24}\n";
    let yaml = format!(
        "{}workloads:\n  - {{kind: fan_out, tasks: 8, task_duration: 100ms, output_size: 40MB, \
         strategy: {{kind: SPREAD}}}}\n",
        only_costs("task_error_cost: 0s").replace(HEAD, nodes)
    );
    let head_store = |e: &Engine| e.model.nodes().iter().find(|n| n.is_head).expect("the head").store.used.0;
    let mut peak = 0;
    let e = run_checked_watching(load(&yaml), Limits::default(), |e| peak = peak.max(head_store(e)))
        .unwrap_or_else(|m| panic!("{m}"));
    assert!(e.workloads_done(), "the job ended");
    assert_eq!(e.model.counters.tasks_failed, 0, "no task or driver failed");
    let head = e.model.nodes().iter().find(|n| n.is_head).expect("the head");
    let worker = e.model.nodes().iter().find(|n| !n.is_head).expect("the worker");
    assert_eq!(head.stats.bytes_received, worker.stats.tasks_started * 40_000_000, "each remote output crossed once");
    assert!(
        head.stats.bytes_spilled > 0 && head.stats.bytes_restored > 0,
        "the head spilled to make room, then restored"
    );
    assert!(peak > 0, "the head's store was watched in use");
    assert!(peak <= 100_000_000, "the head's store held {peak} B, more than its 100 MB");
}
