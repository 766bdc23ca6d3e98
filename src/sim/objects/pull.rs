//! Pulling objects to the node that needs them, as Ray's object manager does: a task's
//! arguments before its raylet dispatches it, and what a `ray.get` asks for before the
//! getter copies it out of its own store. Spilled copies are restored on their node
//! first, the others copied over the network (a secondary copy, evictable once unused),
//! and the task waits (in its fetch state, or in `ray.get`) for as long as the bytes take
//! to move.
//!
//! Owns: [`Pull`], where a pull stands while the memory monitor looks at a store it
//! grew; the copies themselves are the plasma stores' ([`PlasmaStores`]). Must never:
//! start or resume the task itself (it asks, [`Follow::StartTask`], or schedules
//! [`Event::Pulled`]) or run the memory monitor (a store that grew asks for a look,
//! [`Follow::CheckMemory`]).

use crate::model::*;
use crate::sim::clock::Event;
use crate::sim::follow::{Cx, Ending, Follow, Follows, Pull};
use crate::sim::objects::{ActorsOn, PlasmaStores};
use smallvec::smallvec;

impl Pull {
    /// A pull of `objects` to `node` for attempt `attempt` of task `tid`, not begun.
    fn new(tid: TaskId, attempt: u32, node: NodeIdx, ending: Ending, objects: ObjectList) -> Pull {
        Pull { tid, attempt, node, ending, args: objects, next: 0, transfer: None, micros: 0.0, fetched: 0 }
    }
}

/// Whether a `ray.get` on `node` must pull object `o` first: its value is in plasma,
/// ready, and not in memory there (elsewhere, or spilled).
pub(crate) fn must_pull(o: &Object, node: NodeIdx) -> bool {
    !o.inline && o.status == ObjectStatus::Ready && !o.in_memory_at(node)
}

/// How long copying one object of `size` bytes to another node takes (µs): the pull's
/// latency, then its bytes at the lower of the object manager's copy rate and the
/// network's bandwidth.
pub fn transfer_micros(cfg: &crate::config::Config, size: u64) -> f64 {
    let rate = cfg.object_store.transfer_bandwidth.0.min(cfg.cluster.network_bandwidth.0).max(1) as f64;
    cfg.object_store.transfer_latency.as_micros() as f64 + size as f64 / rate * 1e6
}

/// The pull is done. A getter goes on once the bytes arrive ([`Event::Pulled`]). A task
/// counts the bytes moved for its arguments, then waits for them to arrive
/// ([`Event::ArgsFetched`]), or starts now when nothing had to move.
fn done(cx: &mut Cx, f: &Pull) -> Follows {
    let micros = f.micros.ceil() as u64;
    let Ending::Start(waiting) = f.ending else {
        cx.clock.schedule_in(micros, Event::Pulled(f.tid, f.attempt));
        return Follows::new();
    };
    if let Some(t) = cx.model.tasks.get_mut(&f.tid) {
        t.arg_bytes += f.fetched;
    }
    if micros == 0 {
        return smallvec![Follow::StartTask(f.tid, f.node)];
    }
    cx.model.set_task_state(f.tid, waiting, cx.clock.now);
    cx.clock.schedule_in(micros, Event::ArgsFetched(f.tid, f.attempt));
    Follows::new()
}

impl PlasmaStores {
    /// Bring a task's plasma arguments to `node` (restoring spilled ones first), then the
    /// task waits in `waiting` for them to arrive, or starts now when nothing had to move.
    /// Each store that grows gets the memory monitor's look before the pull goes on
    /// ([`Follow::GoOnPulling`]), as when the look was a call: an OOM kill frees the copies
    /// the next transfer may evict.
    pub(crate) fn fetch_args(
        &mut self,
        cx: &mut Cx,
        actors: &dyn ActorsOn,
        tid: TaskId,
        attempt: u32,
        node: NodeIdx,
        waiting: TaskState,
    ) -> Follows {
        let args = cx.model.tasks[&tid].args.clone();
        self.go_on_pulling(cx, actors, Pull::new(tid, attempt, node, Ending::Start(waiting), args))
    }

    /// Bring what a `ray.get` of task `tid` on `node` asks for (`objects`) to that node's
    /// store, as for arguments; the getter, waiting in `RUNNING_IN_RAY_GET`, goes on when
    /// the bytes arrive ([`Event::Pulled`]).
    pub(crate) fn pull_for_get(
        &mut self,
        cx: &mut Cx,
        actors: &dyn ActorsOn,
        tid: TaskId,
        attempt: u32,
        node: NodeIdx,
        objects: ObjectList,
    ) -> Follows {
        self.go_on_pulling(cx, actors, Pull::new(tid, attempt, node, Ending::Get, objects))
    }

    /// Fetch from where `f` stands to the end, or to the next store the monitor must see
    /// (then [`Follow::GoOnPulling`] goes on after its look).
    pub(crate) fn go_on_pulling(&mut self, cx: &mut Cx, actors: &dyn ActorsOn, mut f: Pull) -> Follows {
        if let Some((a, size, primary)) = f.transfer.take() {
            if let Some(look) = self.transfer(cx, actors, &mut f, a, size, primary) {
                return smallvec![look, Follow::GoOnPulling(Box::new(f))];
            }
        }
        let disk = cx.cfg.object_store.spill_bandwidth.0.max(1) as f64;
        while let Some(&a) = f.args.get(f.next) {
            f.next += 1;
            let m = &mut *cx.model;
            let Some(o) = m.objects.get_mut(&a) else { continue };
            if !must_pull(o, f.node) {
                continue;
            }
            let size = o.size;
            let primary = o.primary.get();
            if o.spilled {
                // Restore from the spilling node's disk first.
                o.spilled = false;
                f.micros += size as f64 / disk * 1e6;
                if let Some(p) = primary {
                    let s = m.store_mut(p, &super::KEY);
                    s.spilled.0 = s.spilled.0.saturating_sub(size);
                    let stats = m.node_stats_mut(p, &super::KEY);
                    stats.bytes_restored += size;
                    stats.objects_restored += 1;
                    m.counters.restored_bytes += size;
                    m.counters.restored_objects += 1;
                    if let Some(look) = self.store(cx, actors, p, a, size) {
                        f.transfer = Some((a, size, primary));
                        return smallvec![look, Follow::GoOnPulling(Box::new(f))];
                    }
                }
            }
            if let Some(look) = self.transfer(cx, actors, &mut f, a, size, primary) {
                return smallvec![look, Follow::GoOnPulling(Box::new(f))];
            }
        }
        done(cx, &f)
    }

    /// Copy object `a` (`size` bytes) from its primary to the pulling node, unless the
    /// primary is there.
    fn transfer(
        &mut self,
        cx: &mut Cx,
        actors: &dyn ActorsOn,
        f: &mut Pull,
        a: ObjectId,
        size: u64,
        primary: Option<NodeIdx>,
    ) -> Option<Follow> {
        let node = f.node;
        if primary == Some(node) {
            return None;
        }
        let m = &mut *cx.model;
        let source = primary.unwrap_or(node);
        // Each object pays the latency, in a get of many too: Ray's 100 remote objects
        // in one get cost 1.1-2.1 ms each beyond a local get (get_pull.py).
        f.micros += transfer_micros(cx.cfg, size);
        f.fetched += size;
        m.node_stats_mut(source, &super::KEY).bytes_sent += size;
        m.node_stats_mut(node, &super::KEY).bytes_received += size;
        m.counters.transferred_bytes += size;
        if let Some(o) = m.objects.get_mut(&a) {
            o.copies.push(node);
        }
        self.secondaries[node.index()].push_back(a);
        self.trim_secondaries(m, node);
        self.store(cx, actors, node, a, size)
    }
}
