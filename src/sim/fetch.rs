//! The object manager's pull: bringing a task's plasma arguments to the node it runs on
//! (restoring spilled ones from disk first), before the worker starts it.
//!
//! Owns: nothing (the copies are the plasma stores', `objects.rs`). Must never: start
//! the task (its caller does once the fetch time has passed) or run the memory monitor
//! itself (each store that grew is looked at through a [`Follow::CheckMemory`]).

use super::actors::ActorManager;
use super::clock::Event;
use super::follow::{Cx, Follow, Follows};
use super::objects::{InUse, PlasmaStores};
use crate::model::*;

/// Bring a task's plasma arguments to `node`; returns the virtual time that takes (µs)
/// and the memory checks of the stores that grew, in the order they grew.
pub(crate) fn fetch_args(
    cx: &mut Cx,
    plasma: &mut PlasmaStores,
    actors: &ActorManager,
    tid: TaskId,
    node: NodeIdx,
) -> (u64, Follows) {
    let args = cx.model.tasks[&tid].args.clone();
    let mut checks = Vec::new();
    if args.is_empty() {
        return (0, checks);
    }
    let net = cx.cfg.cluster.network_bandwidth.0.max(1) as f64;
    let disk = cx.cfg.object_store.spill_bandwidth.0.max(1) as f64;
    let look = cx.cfg.memory_monitor.usage_threshold > 0.0;
    let mut micros = 0f64;
    let mut fetched = 0u64;
    for a in args.iter() {
        let m = &mut *cx.model;
        let Some(o) = m.objects.get_mut(a) else { continue };
        if o.inline || o.status != ObjectStatus::Ready || o.in_memory_at(node) {
            continue;
        }
        let size = o.size;
        let primary = o.primary;
        if o.spilled {
            // Restore from the spilling node's disk first.
            o.spilled = false;
            micros += size as f64 / disk * 1e6;
            if let Some(p) = primary {
                let n = &mut m.nodes[p.index()];
                n.store.spilled.0 = n.store.spilled.0.saturating_sub(size);
                n.stats.bytes_restored += size;
                n.stats.objects_restored += 1;
                m.counters.restored_bytes += size;
                m.counters.restored_objects += 1;
                plasma.add(m, InUse { raylets: cx.raylets, actors }, p, *a, size, cx.clock.now);
                if size > 0 && look {
                    checks.push(Follow::CheckMemory(p));
                }
            }
        }
        if primary == Some(node) {
            continue;
        }
        let source = primary.unwrap_or(node);
        micros += size as f64 / net * 1e6;
        fetched += size;
        m.nodes[source.index()].stats.bytes_sent += size;
        m.nodes[node.index()].stats.bytes_received += size;
        m.counters.transferred_bytes += size;
        if let Some(o) = m.objects.get_mut(a) {
            o.copies.push(node);
        }
        plasma.secondaries[node.index()].push_back(*a);
        plasma.add(m, InUse { raylets: cx.raylets, actors }, node, *a, size, cx.clock.now);
        if size > 0 && look {
            checks.push(Follow::CheckMemory(node));
        }
    }
    if let Some(t) = cx.model.tasks.get_mut(&tid) {
        t.arg_bytes += fetched;
    }
    (micros.ceil() as u64, checks)
}

/// After a fetch of `micros`: the task waits in `state` (PENDING_ARGS_FETCH, or its
/// actor-task form) until [`Event::ArgsFetched`].
pub(crate) fn wait_for_fetch(cx: &mut Cx, tid: TaskId, attempt: u32, micros: u64, state: TaskState) {
    cx.model.set_task_state(tid, state, cx.clock.now);
    cx.clock.schedule_in(micros, Event::ArgsFetched(tid, attempt));
}
