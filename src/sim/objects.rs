//! Objects: creation, the per-node plasma stores (spill at the threshold, restore on
//! access), transfers between nodes, reference counting, and loss with lineage
//! reconstruction when a node dies.

use super::actors::ActorManager;
use super::engine::Engine;
use super::follow::{cx, Cx, Follow};
use super::node_runtime::Raylets;
use crate::log_event;
use crate::model::*;
use std::collections::VecDeque;

/// The plasma stores: per node, the order each gives up copies in (primary copies
/// oldest first, the spill order; secondary copies made by transfers, oldest first,
/// evicted under pressure), and spilling and eviction themselves.
pub(crate) struct PlasmaStores {
    pub(crate) primaries: Vec<VecDeque<ObjectId>>,
    pub(crate) secondaries: Vec<VecDeque<ObjectId>>,
    /// `object_store.spill_threshold`: the fraction of a store at which spilling starts.
    spill_threshold: f64,
}

/// What plasma must know of a node's running work when it evicts: the tasks leased
/// there and the actors placed there, whose arguments are in use.
pub(crate) struct InUse<'a> {
    pub(crate) raylets: &'a Raylets,
    pub(crate) actors: &'a ActorManager,
}

impl PlasmaStores {
    pub(crate) fn new(spill_threshold: f64) -> PlasmaStores {
        PlasmaStores { primaries: Vec::new(), secondaries: Vec::new(), spill_threshold }
    }

    /// A node's store holds nothing: it joined, came back in a reused slot, or died
    /// (what its queues grew to is given back).
    pub(crate) fn clear_node(&mut self, n: NodeIdx) {
        let i = n.index();
        if i >= self.primaries.len() {
            self.primaries.resize_with(i + 1, VecDeque::new);
            self.secondaries.resize_with(i + 1, VecDeque::new);
        }
        self.primaries[i] = VecDeque::new();
        self.secondaries[i] = VecDeque::new();
    }

    /// Put bytes into a node's plasma store; spill when usage crosses the threshold.
    pub(crate) fn add(&mut self, m: &mut Model, in_use: InUse, node: NodeIdx, id: ObjectId, size: u64, now: u64) {
        let s = &mut m.nodes[node.index()].store;
        s.used.0 += size;
        s.num_objects += 1;
        if m.objects.get(&id).is_some_and(|o| o.primary == Some(node)) {
            // Spill order is this queue's order: oldest primary copy first.
            self.primaries[node.index()].push_back(id);
        }
        self.maybe_spill(m, in_use, node, now);
    }

    /// Take `size` bytes of one object out of `node`'s store.
    pub(crate) fn remove(m: &mut Model, node: NodeIdx, size: u64) {
        let s = &mut m.nodes[node.index()].store;
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
            if let Some(n) = o.primary {
                let s = &mut m.nodes[n.index()].store;
                s.worker_heap.0 = s.worker_heap.0.saturating_sub(o.size);
            }
            return;
        }
        if let Some(n) = o.primary {
            let s = &mut m.nodes[n.index()].store;
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
        let cap = m.nodes[node.index()].store.capacity.0;
        let limit = (cap as f64 * self.spill_threshold) as u64;
        while m.nodes[node.index()].store.used.0 >= limit && limit > 0 {
            let Some(id) = self.primaries[node.index()].pop_front() else { break };
            let Some(o) = m.objects.get_mut(&id) else { continue };
            if o.primary != Some(node) || o.spilled || o.status != ObjectStatus::Ready {
                continue;
            }
            o.spilled = true;
            let size = o.size;
            let n = &mut m.nodes[node.index()];
            n.store.used.0 = n.store.used.0.saturating_sub(size);
            n.store.num_objects = n.store.num_objects.saturating_sub(1);
            n.store.spilled.0 += size;
            n.stats.bytes_spilled += size;
            n.stats.objects_spilled += 1;
            m.counters.spilled_bytes += size;
            m.counters.spilled_objects += 1;
            log_event!(m.log, now, "object_store", "node={} SPILLED {:x} bytes={}", node.0, id.0, size);
        }
        self.evict_secondaries(m, in_use, node, now);
        let s = &mut m.nodes[node.index()].store;
        s.fallback.0 = s.used.0.saturating_sub(s.capacity.0);
        // Stale entries (freed objects) are dropped lazily; keep the queue bounded.
        let q = &mut self.primaries[node.index()];
        if q.len() > 1024 && q.len() as u64 > 2 * s.num_objects.max(1) {
            let objects = &m.objects;
            q.retain(|id| objects.get(id).is_some_and(|o| o.primary == Some(node) && !o.spilled));
        }
        let q = &mut self.secondaries[node.index()];
        if q.len() > 1024 && q.len() as u64 > 2 * s.num_objects.max(1) {
            let objects = &m.objects;
            q.retain(|id| objects.get(id).is_some_and(|o| o.copies.contains(&node)));
        }
    }

    /// Plasma evicts secondary copies (made by transfers; the primary stays pinned where
    /// it was created) that no task on the node is using, oldest first, once the store is
    /// over capacity. Without this, copies fetched by attempts that were killed or have
    /// finished stayed until their object was freed, and a node could stay above its
    /// memory threshold for good: every task started there was OOM-killed and retried.
    fn evict_secondaries(&mut self, m: &mut Model, in_use: InUse, node: NodeIdx, now: u64) {
        let i = node.index();
        if m.nodes[i].store.used.0 <= m.nodes[i].store.capacity.0 || self.secondaries[i].is_empty() {
            return;
        }
        let running_actor_tasks =
            in_use.actors.on(node).iter().filter_map(|a| m.actors.get(a)).flat_map(|a| a.running.iter().copied());
        let in_use: rustc_hash::FxHashSet<ObjectId> = in_use
            .raylets
            .leased_on(node)
            .iter()
            .copied()
            .chain(running_actor_tasks)
            .filter_map(|t| m.tasks.get(&t))
            .flat_map(|t| t.args.iter().copied())
            .collect();
        let mut kept = Vec::new();
        while m.nodes[i].store.used.0 > m.nodes[i].store.capacity.0 {
            let Some(id) = self.secondaries[i].pop_front() else { break };
            let Some(o) = m.objects.get_mut(&id) else { continue };
            let Some(pos) = o.copies.iter().position(|c| *c == node) else { continue };
            if in_use.contains(&id) {
                kept.push(id);
                continue;
            }
            o.copies.swap_remove(pos);
            let size = o.size;
            Self::remove(m, node, size);
            log_event!(m.log, now, "object_store", "node={} EVICTED {:x} bytes={}", node.0, id.0, size);
        }
        for id in kept.into_iter().rev() {
            self.secondaries[i].push_front(id);
        }
    }
}

impl Engine {
    /// Put bytes into `node`'s store (spilling as needed); the memory monitor looks
    /// at the node after.
    fn store_add(&mut self, node: NodeIdx, id: ObjectId, size: u64) {
        let in_use = InUse { raylets: &self.raylets, actors: &self.actor_manager };
        self.plasma.add(&mut self.model, in_use, node, id, size, self.clock.now);
        if size > 0 && self.cfg.memory_monitor.usage_threshold > 0.0 {
            self.follow(Follow::CheckMemory(node));
        }
    }

    /// The producer finished on `node`: the value exists, inline or in that node's plasma store.
    pub(crate) fn seal_object(&mut self, id: ObjectId, node: NodeIdx) {
        let Some(o) = self.model.objects.get_mut(&id) else { return };
        if o.status == ObjectStatus::Ready {
            return;
        }
        o.status = ObjectStatus::Ready;
        let (size, inline) = (o.size, o.inline);
        if inline {
            // Small returns travel back to the owner's in-process store.
            let owner_node = self.model.tasks.get(&o.owner).and_then(|t| t.node).unwrap_or(node);
            o.primary = Some(owner_node);
            self.model.nodes[owner_node.index()].store.worker_heap.0 += size;
        } else {
            o.primary = Some(node);
            o.spilled = false;
            self.store_add(node, id, size);
        }
        self.object_ready(id);
        // Nobody may hold it (an actor handle's creation return): it goes as soon as it exists.
        PlasmaStores::free_if_unreferenced(&mut self.model, id);
    }

    /// Wake the owner (if it counts this future) and any task waiting for it as an argument.
    pub(crate) fn object_ready(&mut self, id: ObjectId) {
        let Some(o) = self.model.objects.get_mut(&id) else { return };
        let waiters = std::mem::take(&mut o.waiters);
        let (owner, owner_waits) = (o.owner, o.owner_waits);
        if owner_waits {
            self.follow(Follow::FutureResolved(owner, false));
        }
        for w in waiters {
            let (Some(t), Some(r)) = (self.model.tasks.get(&w), self.runs.get_mut(&w)) else { continue };
            if t.state() != TaskState::PendingArgsAvail {
                continue;
            }
            r.exec.unresolved = r.exec.unresolved.saturating_sub(1);
            if r.exec.unresolved == 0 {
                self.follow(Follow::TaskReady(w));
            }
        }
    }

    /// The producer failed for good: readers get its error.
    pub(crate) fn object_failed(&mut self, id: ObjectId) {
        let Some(o) = self.model.objects.get_mut(&id) else { return };
        o.status = ObjectStatus::Failed;
        let waiters = std::mem::take(&mut o.waiters);
        let (owner, owner_waits) = (o.owner, o.owner_waits);
        if owner_waits {
            self.follow(Follow::FutureResolved(owner, true));
        }
        for w in waiters {
            if self.model.tasks.get(&w).is_some_and(|t| t.state() == TaskState::PendingArgsAvail) {
                self.follow(Follow::FailTask(w, ErrorType::TaskExecutionException, false));
            }
        }
        PlasmaStores::free_if_unreferenced(&mut self.model, id);
    }

    pub(crate) fn unref_object(&mut self, id: ObjectId) {
        if let Some(o) = self.model.objects.get_mut(&id) {
            o.refs = o.refs.saturating_sub(1);
        }
        PlasmaStores::free_if_unreferenced(&mut self.model, id);
    }

    /// `ray.put`: an object owned by the task, stored on its node.
    pub(crate) fn op_put(&mut self, tid: TaskId, attempt: u32, size: u64) {
        let (job, node) = {
            let t = &self.model.tasks[&tid];
            (t.job, t.node.unwrap_or(self.node_manager.head()))
        };
        let id = new_return_object(cx!(self), tid, tid, job, u32::MAX, size, &[]);
        if let Some(o) = self.model.objects.get_mut(&id) {
            o.producer = None;
            o.owner_waits = false;
        }
        self.seal_object(id, node);
        self.flow.put(&self.model, &self.runs, tid, self.clock.now, size);
        self.follow(Follow::HoldFutures(tid, attempt, vec![id]));
    }

    /// A node died: copies there are gone. Objects left without any copy are
    /// reconstructed from lineage when their producer can run again, else lost for good.
    pub(crate) fn lose_objects_on(&mut self, node: NodeIdx) {
        let mut lost = Vec::new();
        let mut ids: Vec<ObjectId> = self
            .model
            .objects
            .values()
            .filter(|o| o.primary == Some(node) || o.copies.contains(&node))
            .map(|o| o.id)
            .collect();
        ids.sort();
        let mut promoted_on = Vec::new();
        for id in ids {
            let o = self.model.objects.get_mut(&id).expect("object exists");
            o.copies.retain(|c| *c != node);
            if o.primary == Some(node) {
                if let Some(c) = o.copies.pop() {
                    // A secondary copy becomes the primary: spillable there from now on.
                    o.primary = Some(c);
                    o.spilled = false;
                    self.plasma.primaries[c.index()].push_back(id);
                    if !promoted_on.contains(&c) {
                        promoted_on.push(c);
                    }
                } else if o.status == ObjectStatus::Ready {
                    o.primary = None;
                    o.status = ObjectStatus::Lost;
                    lost.push(id);
                }
            }
        }
        self.plasma.primaries[node.index()].clear();
        for c in promoted_on {
            let in_use = InUse { raylets: &self.raylets, actors: &self.actor_manager };
            self.plasma.maybe_spill(&mut self.model, in_use, c, self.clock.now);
        }
        for id in lost {
            self.reconstruct_or_fail(id);
        }
    }

    fn reconstruct_or_fail(&mut self, id: ObjectId) {
        let o = &self.model.objects[&id];
        if o.refs == 0 {
            self.model.objects.remove(&id);
            return;
        }
        let (spec_id, producer, owner, job) = (o.spec, o.producer, o.owner, o.job);
        let args_alive = o.lineage_args.iter().all(|a| self.model.objects.contains_key(a));
        let budget = self.specs.get(spec_id as usize).map(|s| s.max_retries).unwrap_or(0);
        let can = producer.is_some()
            && args_alive
            && self.specs.get(spec_id as usize).is_some_and(|s| s.kind == TaskType::NormalTask)
            && (budget < 0 || o.reconstructions < budget as u32)
            && self.model.tasks.contains_key(&owner)
            && !self.model.tasks.contains_key(&producer.unwrap_or_default());
        if !can {
            log_event!(self.model.log, self.clock.now, "object", "{:x} LOST unrecoverable", id.0);
            let o = self.model.objects.get_mut(&id).expect("object exists");
            let waiters = std::mem::take(&mut o.waiters);
            o.status = ObjectStatus::Failed;
            for w in waiters {
                self.follow(Follow::FailTask(w, ErrorType::ObjectLost, false));
            }
            return;
        }
        let producer = producer.expect("checked above");
        let o = self.model.objects.get_mut(&id).expect("object exists");
        o.reconstructions += 1;
        o.status = ObjectStatus::Pending;
        let attempt = o.producer_attempt + 1;
        let args = o.lineage_args.clone();
        let owner_waits = o.owner_waits;
        if owner_waits {
            if let Some(r) = self.runs.get_mut(&owner) {
                r.exec.unresolved += 1;
            }
        }
        for a in args.iter() {
            if let Some(ao) = self.model.objects.get_mut(a) {
                ao.refs += 1;
            }
        }
        self.model.counters.objects_reconstructed += 1;
        log_event!(self.model.log, self.clock.now, "object", "{:x} RECONSTRUCTING producer={:x}", id.0, producer.0);
        let spec = &self.specs[spec_id as usize];
        let owner_node = self.model.tasks.get(&owner).and_then(|t| t.node).unwrap_or(self.node_manager.head());
        let mut task = Task::new(producer, job, spec.name, TaskType::NormalTask, spec_id, owner_node, self.clock.now);
        task.attempt = attempt;
        task.parent = Some(owner);
        task.args = args;
        task.returns = id;
        self.runs.insert_task(&mut self.model, task, Default::default());
        self.model.counters.tasks_retried += 1;
        let attempt = self.model.tasks[&producer].attempt;
        self.clock.schedule_in(0, super::clock::Event::Resubmit(producer, attempt));
    }
}

/// Create the (pending) return object of a new task. The owner holds one reference.
pub(crate) fn new_return_object(
    cx: &mut Cx,
    producer: TaskId,
    owner: TaskId,
    job: JobId,
    spec: u32,
    size: u64,
    args: &[ObjectId],
) -> ObjectId {
    let (m, cfg, now) = (&mut *cx.model, cx.cfg, cx.clock.now);
    let id = m.alloc_object_id();
    let inline = size <= cfg.object_store.inline_threshold.0;
    m.objects.insert(
        id,
        Object {
            id,
            job,
            owner,
            producer: Some(producer),
            size,
            status: ObjectStatus::Pending,
            inline,
            primary: None,
            spilled: false,
            copies: Default::default(),
            refs: 1,
            // Set once the owner holds the future (`hold_futures`): a call that fails or
            // finishes while it is being submitted must not resolve a future the owner
            // has not counted yet.
            owner_waits: false,
            waiters: Default::default(),
            created_at: now,
            spec,
            lineage_args: if inline { Box::new([]) } else { args.into() },
            reconstructions: 0,
            producer_attempt: 0,
        },
    );
    m.counters.objects_created += 1;
    id
}
