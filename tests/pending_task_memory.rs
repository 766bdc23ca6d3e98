//! What one pending task costs in live heap, measured: the figure that decides how far
//! a driver may run ahead of its cluster before a run's memory is the problem.
//!
//! A driver that submits faster than its cluster runs holds its calls pending, as Ray's
//! owner does: at `scheduler.worker_niceness` 15, `examples/scale.yaml`'s map driver
//! holds 782,839 of them at once (docs/benchmarks-history.md, "Two priorities on a node's cores").
//! This binary counts the live heap bytes of its own test thread with a counting global
//! allocator (the engine runs on that thread), and compares two runs that differ only in
//! how many no-op calls one driver has submitted onto a node where one runs at a time.
//! Their difference, divided by the difference in calls held, is what one pending task
//! costs: its task record and run, its return object, and its place in the queues.
//! Nothing here is timed.

mod heap_support;

use heap_support::live;
use rayscope::config::Config;
use rayscope::sim::Engine;

#[global_allocator]
static ALLOC: heap_support::Counting = heap_support::Counting;

fn fan_out(tasks: u32) -> Config {
    // One CPU: one call runs (for an hour), every other one waits for it.
    let yaml = format!(
        "cluster:\n  host_node: false\n  head: {{cpu: 1, memory: 16GiB}}\n\
         workloads:\n  - {{kind: fan_out, tasks: {tasks}, task_duration: 1h}}\n\
         sim:\n  seed: 7\n  event_log_capacity: 16\n"
    );
    heap_support::config(&yaml, "pending-task-memory.yaml")
}

/// Live heap (bytes, blocks) of an engine whose driver has submitted `tasks` calls and
/// waits on them, and the tasks it holds.
fn submitted(tasks: u32) -> ((isize, isize), usize) {
    let before = live();
    let mut engine = Engine::new(fan_out(tasks));
    // The loop submits a call in well under a millisecond; a minute is plenty.
    engine.run_until(60_000_000);
    let held = engine.model.tasks.len();
    let after = live();
    drop(engine);
    ((after.0 - before.0, after.1 - before.1), held)
}

#[test]
fn a_pending_task_costs_what_its_records_hold() {
    // 100,000 and 400,000 fill the vectors that grow by doubling (a class's queue, the
    // driver's futures) to the same share of their room (2^17 and 2^19 slots), so the
    // difference is a task's records with the room they hold, not a doubling that one
    // run made and the other not.
    let (few, held_few) = submitted(100_000);
    let (many, held_many) = submitted(400_000);
    assert!(held_few > 100_000 && held_many > 400_000, "the calls are held: {held_few}, {held_many}");
    let heap_support::PerRecord { bytes: per_task, blocks: blocks_per_task, footprint } =
        heap_support::per_record(few, many, held_many - held_few);
    eprintln!(
        "per pending task: {per_task:.0} bytes requested in {blocks_per_task:.2} blocks, ~{footprint:.0} bytes \
         with allocator overhead ({held_many} vs {held_few} tasks held; size_of Task {} B, Object {} B)",
        std::mem::size_of::<rayscope::model::Task>(),
        std::mem::size_of::<rayscope::model::Object>(),
    );
    // Measured on 2026-12-06: 316 bytes, in no block of its own. That is its task record
    // (152 B), its run (32 B) and its return object (104 B), each a slot in a table held
    // in pages of 1,024 (`model/table.rs`), and its 8-byte places in its class's queue
    // and in the driver's futures, in vectors that grow by doubling. It was 478 while the
    // task and run tables were one ring each that doubled; 407 while a task's caller,
    // actor, node and start and an object's producer were `Option`s of 16 and 8 bytes
    // (`model::CompactOption` holds each in its value's own size); 367 while a task's
    // arguments and its return's lineage were a 16-byte box each, an object repeated its
    // own id and its primary was an `Option` (`model::ObjectList`, `IdTable::iter`); 333
    // while an object's copies and waiters were a 24-byte `SmallVec` each (`model::Few`).
    // Making this small is what `worker_niceness` 15 as the default waits on
    // (docs/benchmarks-history.md, "What a pending task costs"); until then it must not
    // grow.
    assert!(footprint < 330.0, "a pending task costs ~{footprint:.0} bytes of live heap");
}
