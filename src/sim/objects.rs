//! Objects: creation, the per-node plasma stores (spill at the threshold, restore on
//! access), transfers between nodes, reference counting, and loss with lineage
//! reconstruction when a node dies.
//!
//! Owns: [`PlasmaStores`] (each node's copies in spill and eviction order) and the
//! object lifecycle (`lifecycle.rs`): sealing a return, `ray.put`, waking or failing an object's readers,
//! dropping references, and a dead node's lost copies (reconstructed from lineage: the
//! producer's new record and its resubmission). Pulling a task's arguments, or what a
//! `ray.get` asks for, to its node is `pull.rs`. The object records live in the model's
//! object table; each node's store bytes in the node table, changed only here ([`Key`]).
//! Must never: run
//! the memory monitor (a store that grew asks for a look, [`Follow::CheckMemory`]),
//! resolve an owner's future or ready a task itself (it asks, [`Follow::FutureResolved`]
//! and [`Follow::TaskReady`]), or fail a task (it asks, [`Follow::FailTask`]).

mod lifecycle;
pub(super) mod pull;

pub(crate) use lifecycle::{
    arg_failed, arg_ready, new_return_object, object_failed, put_sealed, reconstruct_or_fail, unref_object,
    wake_readers,
};

use super::clock::Event;
use super::core_worker::task_runs::TaskRuns;
use super::flow_recorder::FlowRecorder;
use super::follow::{Cx, Follow, Follows};
use super::raylet::node_runtime::Raylets;
use crate::log_event;
use crate::model::*;
use smallvec::smallvec;
use std::collections::VecDeque;

/// The key to `Model::store_mut` and to the byte counters of `Model::node_stats_mut`:
/// only this room (`objects` and its `pull`) can make one, so the plasma stores' bytes,
/// and the bytes counted as moved, spilled and restored, change only here.
pub struct Key(());

const KEY: Key = Key(());

/// How long the writer of one object of `size` bytes into its node's store works (µs),
/// `fresh` of them into pages the store never touched: the store's round trips, then the
/// copy. Up to `object_store.put_parallel_threshold` that is one `memcpy`, its fresh bytes
/// at `put_bandwidth`; over it Ray starts `parallel_memcopy`'s threads
/// (`put_parallel_start`) and the fresh bytes move at `put_parallel_bandwidth`. Bytes
/// into pages the store held before move at `put_reused_bandwidth` either way.
pub fn put_micros(cfg: &crate::config::Config, size: u64, fresh: u64) -> f64 {
    let s = &cfg.object_store;
    let fresh = fresh.min(size);
    let reused = size - fresh;
    let (start, fresh_rate) = if size > s.put_parallel_threshold.0 {
        (s.put_parallel_start.as_micros() as f64, s.put_parallel_bandwidth)
    } else {
        (0.0, s.put_bandwidth)
    };
    s.put_latency.as_micros() as f64
        + start
        + fresh as f64 / fresh_rate.0.max(1) as f64 * 1e6
        + reused as f64 / s.put_reused_bandwidth.0.max(1) as f64 * 1e6
}

/// How long a `ray.get` of one object of `size` bytes in the getter's node's store
/// works (µs): the round trip, then the copy into a new object in the getter's heap, at
/// `object_store.get_bandwidth`, or at `get_fresh_bandwidth` above `get_fresh_threshold`
/// (pages mapped for it alone). An inline object came inside its reply: no cost here.
pub fn get_micros(cfg: &crate::config::Config, size: u64) -> f64 {
    let s = &cfg.object_store;
    let rate = if size > s.get_fresh_threshold.0 { s.get_fresh_bandwidth } else { s.get_bandwidth };
    s.get_latency.as_micros() as f64 + size as f64 / rate.0.max(1) as f64 * 1e6
}

/// What a getter works to get the return `o` out of its node's store (µs): a copy into
/// its heap, or for a numpy return (`value_type: numpy`) a view of the store's memory at
/// a fixed cost.
pub(crate) fn get_cost(cfg: &crate::config::Config, specs: &[crate::workload::CallSpec], o: &Object) -> f64 {
    if specs.get(o.spec as usize).is_some_and(|s| s.zero_copy_return) {
        cfg.object_store.zero_copy_get_latency.as_micros() as f64
    } else {
        get_micros(cfg, o.size)
    }
}

/// How long a put of `size` into `node`'s store works now (µs, whole): the bytes beyond
/// what the store has held at most land in pages it never touched.
pub(crate) fn put_cost_on(cfg: &crate::config::Config, m: &Model, node: NodeIdx, size: u64) -> u64 {
    let s = &m.nodes()[node.index()].store;
    let fresh = (s.used.0 + size).saturating_sub(s.touched.0).min(size);
    crate::model::time::round_to_u64(put_micros(cfg, size, fresh))
}

/// The plasma stores: per node, the order each gives up copies in (primary copies
/// oldest first, the spill order; secondary copies made by transfers, oldest first,
/// evicted under pressure), and spilling and eviction themselves.
pub(crate) struct PlasmaStores {
    pub(crate) primaries: Vec<VecDeque<ObjectId>>,
    /// The secondary copies in eviction order are `held` then `secondaries`.
    pub(crate) secondaries: Vec<VecDeque<ObjectId>>,
    /// Per node, the oldest secondary copies, each found pinned by a lease.
    pub(crate) held: Vec<HeldCopies>,
    /// `object_store.spill_threshold`: the fraction of a store at which spilling starts.
    spill_threshold: f64,
}

/// A node's oldest secondary copies, each found pinned by a lease when eviction last
/// looked. While no pin there has been let go since (`Raylets::unpinned` still reads
/// `unpinned_seen`), they are pinned still and eviction passes them without a look: a
/// reducer pulling its 10,000th argument onto a full store no longer rescans the 9,999
/// before it.
#[derive(Default)]
pub(crate) struct HeldCopies {
    pub(crate) copies: VecDeque<ObjectId>,
    unpinned_seen: u64,
}

/// What plasma must know of a node's running work when it evicts: the tasks leased
/// there and the actors placed there, whose arguments are in use.
pub(crate) struct InUse<'a> {
    pub(crate) raylets: &'a mut Raylets,
    pub(crate) actors: &'a dyn ActorsOn,
}

/// Which actors live on a node: all plasma asks of the GCS actor manager, which sits
/// above it (it creates objects) and implements this.
pub(crate) trait ActorsOn {
    /// The actors on `n`, in no particular order.
    fn on(&self, n: NodeIdx) -> &[ActorId];
}

impl PlasmaStores {
    pub(crate) fn new(spill_threshold: f64) -> PlasmaStores {
        PlasmaStores { primaries: Vec::new(), secondaries: Vec::new(), held: Vec::new(), spill_threshold }
    }

    /// Bring the slot `n`'s next primary copy takes into cache (`cache_hint`): a return
    /// sealed there appends to that queue, whose end, one of 2,000 at scale.yaml's size,
    /// is cold by then. Past a full buffer the hint is wasted, never wrong.
    #[inline]
    pub(crate) fn prefetch_next_primary(&self, n: NodeIdx) {
        if let Some(q) = self.primaries.get(n.index()) {
            let (front, back) = q.as_slices();
            let last = if back.is_empty() { front } else { back };
            crate::model::cache_hint::prefetch(last.as_ptr().wrapping_add(last.len()));
        }
    }

    /// A node's store holds nothing: it joined, came back in a reused slot, or died
    /// (what its queues grew to is given back).
    pub(crate) fn clear_node(&mut self, n: NodeIdx) {
        let i = n.index();
        if i >= self.primaries.len() {
            self.primaries.resize_with(i + 1, VecDeque::new);
            self.secondaries.resize_with(i + 1, VecDeque::new);
            self.held.resize_with(i + 1, Default::default);
        }
        self.primaries[i] = VecDeque::new();
        self.secondaries[i] = VecDeque::new();
        self.held[i] = Default::default();
    }

    /// Put bytes into a node's plasma store; spill when usage crosses the threshold.
    pub(crate) fn add(&mut self, m: &mut Model, in_use: InUse, node: NodeIdx, id: ObjectId, size: u64, now: u64) {
        let s = m.store_mut(node, &KEY);
        s.used.0 += size;
        s.touched.0 = s.touched.0.max(s.used.0);
        s.num_objects += 1;
        if m.objects.get(&id).is_some_and(|o| o.primary.get() == Some(node)) {
            // Spill order is this queue's order: oldest primary copy first.
            self.primaries[node.index()].push_back(id);
        }
        self.maybe_spill(m, in_use, node, now);
    }

    /// A dead node's store, once its objects are lost, reads empty.
    pub(crate) fn empty_dead(m: &mut Model, n: NodeIdx) {
        let s = m.store_mut(n, &KEY);
        s.used = Bytes(0);
        s.spilled = Bytes(0);
        s.num_objects = 0;
        s.fallback = Bytes(0);
        s.worker_heap = Bytes(0);
    }

    /// Take `size` bytes of one object out of `node`'s store.
    pub(crate) fn remove(m: &mut Model, node: NodeIdx, size: u64) {
        let s = m.store_mut(node, &KEY);
        s.used.0 = s.used.0.saturating_sub(size);
        s.num_objects = s.num_objects.saturating_sub(1);
        if s.fallback.0 > 0 && s.used.0 <= s.capacity.0 {
            s.fallback.0 = 0;
        }
    }

    /// Drop `id` from the table and its bytes from the stores once nobody refers to it
    /// and it is no longer pending.
    pub(crate) fn free_if_unreferenced(m: &mut Model, id: ObjectId) {
        let Some(o) = m.objects.get(&id) else { return };
        if o.refs > 0 || o.status == ObjectStatus::Pending {
            return;
        }
        let o = m.objects.remove(&id).expect("object exists");
        m.counters.objects_freed += 1;
        if o.status != ObjectStatus::Ready {
            return;
        }
        if o.inline {
            if let Some(n) = o.primary.get() {
                let s = m.store_mut(n, &KEY);
                s.worker_heap.0 = s.worker_heap.0.saturating_sub(o.size);
            }
            return;
        }
        if let Some(n) = o.primary.get() {
            let s = m.store_mut(n, &KEY);
            if o.spilled {
                s.spilled.0 = s.spilled.0.saturating_sub(o.size);
            } else {
                Self::remove(m, n, o.size);
            }
        }
        for c in o.copies {
            Self::remove(m, c, o.size);
        }
    }

    /// Ray spills primary copies once the store is `spill_threshold` full, oldest first.
    pub(crate) fn maybe_spill(&mut self, m: &mut Model, in_use: InUse, node: NodeIdx, now: u64) {
        let s = m.store_mut(node, &KEY);
        let limit = (s.capacity.0 as f64 * self.spill_threshold) as u64;
        if (s.used.0 < limit || limit == 0) && s.used.0 <= s.capacity.0 {
            // Every put lands here but a few: nothing to spill or evict, and only the
            // queue it grew to bound (the secondaries are bounded where they grow).
            s.fallback.0 = 0;
            let num_objects = s.num_objects;
            self.trim_primaries(m, node, num_objects);
            return;
        }
        while m.store_mut(node, &KEY).used.0 >= limit && limit > 0 {
            let Some(id) = self.primaries[node.index()].pop_front() else { break };
            let Some(o) = m.objects.get_mut(&id) else { continue };
            if o.primary.get() != Some(node) || o.spilled || o.status != ObjectStatus::Ready {
                continue;
            }
            o.spilled = true;
            let size = o.size;
            let s = m.store_mut(node, &KEY);
            s.used.0 = s.used.0.saturating_sub(size);
            s.num_objects = s.num_objects.saturating_sub(1);
            s.spilled.0 += size;
            let stats = m.node_stats_mut(node, &KEY);
            stats.bytes_spilled += size;
            stats.objects_spilled += 1;
            m.counters.spilled_bytes += size;
            m.counters.spilled_objects += 1;
            log_event!(m.log, now, "object_store", "node={} SPILLED {:x} bytes={}", node.0, id.0, size);
        }
        self.evict_secondaries(m, in_use, node, now);
        let s = m.store_mut(node, &KEY);
        s.fallback.0 = s.used.0.saturating_sub(s.capacity.0);
        let num_objects = s.num_objects;
        self.trim_primaries(m, node, num_objects);
        self.trim_secondaries(m, node);
    }

    /// Stale entries (freed or spilled objects) are dropped lazily: a queue is trimmed
    /// once past 1,024 entries and twice the objects its store holds.
    fn trim_primaries(&mut self, m: &Model, node: NodeIdx, num_objects: u64) {
        let q = &mut self.primaries[node.index()];
        if q.len() > 1024 && q.len() as u64 > 2 * num_objects.max(1) {
            let objects = &m.objects;
            q.retain(|id| objects.get(id).is_some_and(|o| o.primary.get() == Some(node) && !o.spilled));
        }
    }

    /// As [`Self::trim_primaries`], for the copies transfers made.
    pub(crate) fn trim_secondaries(&mut self, m: &Model, node: NodeIdx) {
        let num_objects = m.nodes()[node.index()].store.num_objects;
        let q = &mut self.secondaries[node.index()];
        if q.len() > 1024 && q.len() as u64 > 2 * num_objects.max(1) {
            let objects = &m.objects;
            q.retain(|id| objects.get(id).is_some_and(|o| o.copies.contains(&node)));
        }
    }

    /// Plasma evicts secondary copies (made by transfers; the primary stays pinned where
    /// it was created) that no task on the node is using, oldest first, once the store is
    /// over capacity. Without this, copies fetched by attempts that were killed or have
    /// finished stayed until their object was freed, and a node could stay above its
    /// memory threshold for good: every task started there was OOM-killed and retried.
    #[inline(never)]
    fn evict_secondaries(&mut self, m: &mut Model, in_use: InUse, node: NodeIdx, now: u64) {
        let i = node.index();
        if m.nodes()[i].store.used.0 <= m.nodes()[i].store.capacity.0 {
            return;
        }
        let unpinned = in_use.raylets.unpinned(node);
        let held = &mut self.held[i];
        if held.unpinned_seen != unpinned {
            // A pin was let go: what was held goes back to the queue's front, in order.
            for id in held.copies.drain(..).rev() {
                self.secondaries[i].push_front(id);
            }
            held.unpinned_seen = unpinned;
        }
        if self.secondaries[i].is_empty() {
            return;
        }
        #[cfg(debug_assertions)]
        self.check_held(m, &in_use, node);
        // The calls actor workers run here are few: their arguments are gathered afresh.
        let actor_args: rustc_hash::FxHashSet<ObjectId> = in_use
            .actors
            .on(node)
            .iter()
            .filter_map(|a| m.actors().get(a))
            .flat_map(|a| a.running.iter())
            .filter_map(|t| m.tasks.get(t))
            .flat_map(|t| t.args.iter().copied())
            .collect();
        // Copies kept in use go back in front of the queue, after `held`: those pinned
        // by leases join `held` until one is kept for an actor's call alone.
        let mut kept = Vec::new();
        while m.nodes()[i].store.used.0 > m.nodes()[i].store.capacity.0 {
            let Some(id) = self.secondaries[i].pop_front() else { break };
            let Some(o) = m.objects.get(&id) else { continue };
            let Some(pos) = o.copies.iter().position(|c| *c == node) else { continue };
            let pinned = in_use.raylets.pinned(node, id, m);
            if pinned && kept.is_empty() {
                self.held[i].copies.push_back(id);
                continue;
            }
            if pinned || actor_args.contains(&id) {
                kept.push(id);
                continue;
            }
            let o = m.objects.get_mut(&id).expect("looked up above");
            o.copies.swap_remove(pos);
            let size = o.size;
            Self::remove(m, node, size);
            log_event!(m.log, now, "object_store", "node={} EVICTED {:x} bytes={}", node.0, id.0, size);
        }
        for id in kept.into_iter().rev() {
            self.secondaries[i].push_front(id);
        }
    }

    /// Debug builds prove `held` against its meaning: every copy in it is on the node and
    /// is an argument of a task leased there.
    #[cfg(debug_assertions)]
    fn check_held(&self, m: &Model, in_use: &InUse, node: NodeIdx) {
        let leased_args: rustc_hash::FxHashSet<ObjectId> = in_use
            .raylets
            .leased_on(node)
            .iter()
            .filter_map(|t| m.tasks.get(t))
            .flat_map(|t| t.args.iter().copied())
            .collect();
        for id in &self.held[node.index()].copies {
            assert!(leased_args.contains(id), "plasma held {id:?} on node {node:?} without a lease using it");
            assert!(
                m.objects.get(id).is_some_and(|o| o.copies.contains(&node)),
                "plasma held {id:?} on node {node:?} with no copy there"
            );
        }
    }
}

impl PlasmaStores {
    /// Put bytes into `node`'s store (spilling as needed); the memory monitor then looks
    /// at the node, where the bytes now count, if it is over the monitor's threshold
    /// (under it, a look changes nothing: asking only above it spares every other store
    /// a follow-up).
    pub(super) fn store(
        &mut self,
        cx: &mut Cx,
        actors: &dyn ActorsOn,
        node: NodeIdx,
        id: ObjectId,
        size: u64,
    ) -> Option<Follow> {
        let in_use = InUse { raylets: &mut *cx.raylets, actors };
        self.add(cx.model, in_use, node, id, size, cx.clock.now);
        let threshold = cx.cfg.memory_monitor.usage_threshold;
        let look = size > 0 && threshold > 0.0 && cx.model.nodes()[node.index()].over_memory_threshold(threshold);
        look.then_some(Follow::CheckMemory(node))
    }

    /// The producer finished on `node`: the value exists, inline or in that node's plasma
    /// store. Its readers wake once the memory monitor has looked at the store it grew.
    pub(crate) fn seal(&mut self, cx: &mut Cx, actors: &dyn ActorsOn, id: ObjectId, node: NodeIdx) -> Follows {
        let m = &mut *cx.model;
        let Some(o) = m.objects.get_mut(&id) else { return Follows::new() };
        if o.status == ObjectStatus::Ready {
            return Follows::new();
        }
        o.status = ObjectStatus::Ready;
        let (size, inline) = (o.size, o.inline);
        if inline {
            // Small returns travel back to the owner's in-process store.
            let owner_node = m.tasks.get(&o.owner).and_then(|t| t.node.get()).unwrap_or(node);
            o.primary = Some(owner_node).into();
            m.store_mut(owner_node, &KEY).worker_heap.0 += size;
        } else {
            o.primary = Some(node).into();
            o.spilled = false;
            if let Some(look) = self.store(cx, actors, node, id, size) {
                return smallvec![look, Follow::WakeReaders(id)];
            }
        }
        wake_readers(cx.model, id)
    }

    /// `ray.put`: an object owned by the task, sealed on its node (`head` if it has none).
    /// Flow Insight records the put and the task holds the object once the seal's
    /// follow-ups ran ([`Follow::PutSealed`]).
    pub(crate) fn put(
        &mut self,
        cx: &mut Cx,
        actors: &dyn ActorsOn,
        head: NodeIdx,
        tid: TaskId,
        attempt: u32,
        size: u64,
    ) -> Follows {
        let (job, node) = {
            let t = &cx.model.tasks[&tid];
            (t.job, t.node.get().unwrap_or(head))
        };
        let id = new_return_object(cx, tid, tid, job, u32::MAX, size, &ObjectList::EMPTY);
        if let Some(o) = cx.model.objects.get_mut(&id) {
            o.producer = CompactOption::NONE;
            o.owner_waits = false;
        }
        let mut follows = self.seal(cx, actors, id, node);
        follows.push(Follow::PutSealed(tid, attempt, id, size));
        follows
    }

    /// A node died: copies there are gone. Objects left without any copy are
    /// reconstructed from lineage when their producer can run again, else lost for good
    /// ([`Follow::ReconstructOrFail`], one at a time: each reads what the last one left).
    pub(crate) fn lose_objects_on(&mut self, cx: &mut Cx, actors: &dyn ActorsOn, node: NodeIdx) -> Follows {
        let m = &mut *cx.model;
        let mut lost = Vec::new();
        let mut ids: Vec<ObjectId> = m
            .objects
            .iter()
            .filter(|(_, o)| o.primary.get() == Some(node) || o.copies.contains(&node))
            .map(|(id, _)| id)
            .collect();
        ids.sort();
        let mut promoted_on = Vec::new();
        for id in ids {
            let o = m.objects.get_mut(&id).expect("object exists");
            o.copies.retain(|c| *c != node);
            if o.primary.get() == Some(node) {
                if let Some(c) = o.copies.pop() {
                    // A secondary copy becomes the primary: spillable there from now on.
                    o.primary = Some(c).into();
                    o.spilled = false;
                    self.primaries[c.index()].push_back(id);
                    if !promoted_on.contains(&c) {
                        promoted_on.push(c);
                    }
                } else if o.status == ObjectStatus::Ready {
                    o.primary = CompactOption::NONE;
                    o.status = ObjectStatus::Lost;
                    lost.push(id);
                }
            }
        }
        self.primaries[node.index()].clear();
        for c in promoted_on {
            let in_use = InUse { raylets: &mut *cx.raylets, actors };
            self.maybe_spill(cx.model, in_use, c, cx.clock.now);
        }
        lost.into_iter().map(Follow::ReconstructOrFail).collect()
    }
}
