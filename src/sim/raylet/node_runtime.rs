//! The node runtime: each raylet's local resource manager.
//!
//! Owns: every change of a node's available resources, and the scheduler's index that
//! orders nodes by them. A reservation (a lease, a placement-group bundle), its release,
//! the CPU a task lends back while blocked in `ray.get` and takes again, a node joining
//! and a node lost: each is one method here, and each updates the index in the same
//! call, so the index and the nodes agree after every event by construction.
//! Also owns each raylet's lists ([`Raylets`]): the tasks holding a lease on the node,
//! and the tasks back from `ray.get` waiting to take their CPU again there; and, in the
//! node table, the rest of what a live node holds (its idle clock, its workers' heaps,
//! a fault's memory pressure), written only here with [`Key`].
//! Must never: decide where work goes (the scheduler does), queue or wake work (the
//! engine does, after a release), or be bypassed: [`Key`] can only be made in this
//! file, and `model::Available` has no other way to change in place.

use crate::model::{FixedPoint, Model, Node, NodeIdx, ObjectId, ResVec, ResourceId, ResourceRequest, TaskId};
use crate::scheduler::Scheduler;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Proof that a change of availability comes from the node runtime. Its field is
/// private, so no other module can make one.
pub struct Key(());

const KEY: Key = Key(());

/// The nodes' local resource managers, borrowed for a change. Built from the engine's
/// node table and scheduler as disjoint borrows, so a request borrowed from the specs
/// can be passed in without a copy.
pub(crate) struct LocalResources<'a> {
    nodes: &'a mut [Node],
    sched: &'a mut Scheduler,
}

impl<'a> LocalResources<'a> {
    pub(crate) fn of(model: &'a mut Model, sched: &'a mut Scheduler) -> LocalResources<'a> {
        LocalResources { nodes: model.raylet_nodes_mut(&KEY), sched }
    }

    fn avail(&mut self, n: NodeIdx) -> &mut ResVec {
        self.nodes[n.index()].available.get_mut(&KEY)
    }

    /// A node joined (or came back in a reused slot) with nothing reserved.
    pub(crate) fn joined(&mut self, n: NodeIdx) {
        self.sched.add_node(&self.nodes[n.index()]);
    }

    /// A node is gone: what was reserved there is gone with it (nothing to give back),
    /// so it reads as all free, and it leaves the index.
    pub(crate) fn lost(&mut self, n: NodeIdx) {
        let node = &mut self.nodes[n.index()];
        let total = node.total.clone();
        *node.available.get_mut(&KEY) = total;
        self.sched.remove_node(&self.nodes[n.index()]);
    }

    /// A node's raylet crashed: nothing more is placed there (it leaves the index)
    /// until the GCS marks it dead ([`Self::lost`]).
    pub(crate) fn unreachable(&mut self, n: NodeIdx) {
        self.sched.unreachable(&self.nodes[n.index()]);
    }

    /// Reserve `req` on `n` (a lease, an actor's resources, a bundle): the node is busy.
    pub(crate) fn reserve(&mut self, n: NodeIdx, req: &ResourceRequest) {
        self.avail(n).subtract(req);
        self.nodes[n.index()].idle_since = None;
        self.sched.update_node(&self.nodes[n.index()]);
    }

    /// Give `req` back on `n` (a lease ended, an actor died, a group was removed).
    pub(crate) fn release(&mut self, n: NodeIdx, req: &ResourceRequest) {
        self.avail(n).add(req);
        self.sched.update_node(&self.nodes[n.index()]);
    }

    /// Give a lease's `req` back; with `cpu_lent`, its CPU was already lent back while
    /// the task blocked in `ray.get`, so it is not returned twice.
    pub(crate) fn release_lease(&mut self, n: NodeIdx, req: &ResourceRequest, cpu_lent: bool) {
        let avail = self.avail(n);
        avail.add(req);
        if cpu_lent {
            avail.0[ResourceId::CPU.index()] -= req.get(ResourceId::CPU);
        }
        self.sched.update_node(&self.nodes[n.index()]);
    }

    /// A task blocked in `ray.get` lends its `cpu` back to the node (as Ray's raylet
    /// does for a worker blocked on `ray.get`).
    pub(crate) fn lend_cpu(&mut self, n: NodeIdx, cpu: FixedPoint) {
        self.avail(n).0[ResourceId::CPU.index()] += cpu;
        self.sched.update_node(&self.nodes[n.index()]);
    }

    /// A task returning from `ray.get` takes its `cpu` again; false (and nothing
    /// changes) when the node has less than that free now.
    pub(crate) fn reclaim_cpu(&mut self, n: NodeIdx, cpu: FixedPoint) -> bool {
        if self.nodes[n.index()].available.get(ResourceId::CPU) < cpu {
            return false;
        }
        self.avail(n).0[ResourceId::CPU.index()] -= cpu;
        self.sched.update_node(&self.nodes[n.index()]);
        true
    }
}

/// What a node's workers hold in their heaps (the memory monitor reads it): `bytes`
/// more as a call starts there.
pub(crate) fn worker_heap_grew(m: &mut Model, n: NodeIdx, bytes: u64) {
    m.raylet_nodes_mut(&KEY)[n.index()].worker_heap_used.0 += bytes;
}

/// `bytes` fewer in node `n`'s worker heaps, as a call there ends.
pub(crate) fn worker_heap_shrank(m: &mut Model, n: NodeIdx, bytes: u64) {
    let used = &mut m.raylet_nodes_mut(&KEY)[n.index()].worker_heap_used.0;
    *used = used.saturating_sub(bytes);
}

/// A memory-pressure fault takes `bytes` of node `n`'s memory.
pub(crate) fn pressure_added(m: &mut Model, n: NodeIdx, bytes: u64) {
    m.raylet_nodes_mut(&KEY)[n.index()].pressure_bytes.0 += bytes;
}

/// A memory-pressure fault's window ended: its `bytes` are free again.
pub(crate) fn pressure_ended(m: &mut Model, n: NodeIdx, bytes: u64) {
    let p = &mut m.raylet_nodes_mut(&KEY)[n.index()].pressure_bytes.0;
    *p = p.saturating_sub(bytes);
}

/// Node `n`'s idle clock (the autoscaler's): idle since `since`, or busy (`None`).
pub(crate) fn set_idle_since(m: &mut Model, n: NodeIdx, since: Option<u64>) {
    m.raylet_nodes_mut(&KEY)[n.index()].idle_since = since;
}

/// Each raylet's lists, per node slot. Invariant (checked by `check_invariants`): a
/// task is leased on at most one node, the one it runs on, and holds resources there
/// unless it is a driver; a task waits to resume only on its own node, blocked in
/// `ray.get` with its CPU lent back; a dead node's lists are empty.
#[derive(Default)]
pub(crate) struct Raylets {
    nodes: Vec<Raylet>,
}

#[derive(Default)]
struct Raylet {
    /// Tasks holding a lease (resources) here, for node death and the OOM killer.
    leased: Vec<TaskId>,
    /// Tasks blocked in `ray.get` whose CPU was lent back, waiting to take it again
    /// (first come, first served).
    resuming: VecDeque<TaskId>,
    /// How many leased tasks here hold each object as an argument: Ray's raylet pins a
    /// granted task's arguments, and plasma may not evict a pinned copy. Kept only once
    /// plasma has asked ([`Raylets::pinned`]), since only a store over capacity asks.
    pins: Option<FxHashMap<ObjectId, u32>>,
    /// How many times a pin here was let go (a count fell to zero, or every lease went
    /// at once); it never goes back, even when the slot is reused.
    unpinned: u64,
}

fn count_pins(pins: &mut FxHashMap<ObjectId, u32>, args: &[ObjectId]) {
    for a in args {
        *pins.entry(*a).or_insert(0) += 1;
    }
}

/// Pins are counted only where a store went over capacity: out of line, so that the
/// lease paths every task takes stay small.
impl Raylet {
    #[cold]
    #[inline(never)]
    fn pin_args(&mut self, tid: TaskId, m: &Model) {
        let (Some(pins), Some(t)) = (&mut self.pins, m.tasks.get(&tid)) else { return };
        count_pins(pins, &t.args);
    }

    #[cold]
    #[inline(never)]
    fn unpin_args(&mut self, tid: TaskId, m: &Model) {
        let (Some(pins), Some(t)) = (&mut self.pins, m.tasks.get(&tid)) else { return };
        for a in t.args.iter() {
            if let std::collections::hash_map::Entry::Occupied(mut e) = pins.entry(*a) {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                    self.unpinned += 1;
                }
            }
        }
    }
}

impl Raylets {
    /// A node joined (or came back in a reused slot): its raylet starts empty.
    pub(crate) fn joined(&mut self, n: NodeIdx) {
        let i = n.index();
        if i >= self.nodes.len() {
            self.nodes.resize_with(i + 1, Raylet::default);
        }
        self.reset(i);
    }

    /// A node died: give back what its lists grew to while it was alive.
    pub(crate) fn lost(&mut self, n: NodeIdx) {
        self.reset(n.index());
    }

    fn reset(&mut self, i: usize) {
        let unpinned = self.nodes[i].unpinned + 1;
        self.nodes[i] = Raylet { unpinned, ..Raylet::default() };
    }

    /// What `n`'s lists hold room for: (leases, tasks waiting to resume).
    #[cfg(test)]
    pub(crate) fn capacities(&self, n: NodeIdx) -> (usize, usize) {
        let r = &self.nodes[n.index()];
        (r.leased.capacity(), r.resuming.capacity())
    }

    /// Bring `n`'s record and its leases into cache ahead of a lease's step there
    /// (`cache_hint`): returning a lease searches that list, which a task's finish,
    /// thousands of events after its start, finds cold. The records of all nodes are
    /// a small array, so reading this one for the list's address seldom waits long.
    #[inline]
    pub(crate) fn prefetch(&self, n: NodeIdx) {
        if let Some(r) = self.nodes.get(n.index()) {
            crate::model::cache_hint::prefetch(r);
            crate::model::cache_hint::prefetch_slice(&r.leased);
        }
    }

    /// `tid` holds a lease on `n` now (a driver counts, to die with its node); `m` has
    /// its arguments, which the lease pins.
    #[inline]
    pub(crate) fn lease_granted(&mut self, n: NodeIdx, tid: TaskId, m: &Model) {
        let r = &mut self.nodes[n.index()];
        r.leased.push(tid);
        if r.pins.is_some() {
            r.pin_args(tid, m);
        }
    }

    /// `tid` no longer holds a lease on `n` (if it did); its pins go with it.
    #[inline]
    pub(crate) fn lease_returned(&mut self, n: NodeIdx, tid: TaskId, m: &Model) {
        let r = &mut self.nodes[n.index()];
        let Some(pos) = r.leased.iter().position(|x| *x == tid) else { return };
        r.leased.swap_remove(pos);
        if r.pins.is_some() {
            r.unpin_args(tid, m);
        }
    }

    /// Whether a task leased on `n` holds `id` as an argument. The first question about
    /// a node counts its leases' pins; leases keep them counted from then on.
    #[inline]
    pub(crate) fn pinned(&mut self, n: NodeIdx, id: ObjectId, m: &Model) -> bool {
        let r = &mut self.nodes[n.index()];
        let pins = r.pins.get_or_insert_with(|| {
            let mut pins = FxHashMap::default();
            for t in r.leased.iter().filter_map(|t| m.tasks.get(t)) {
                count_pins(&mut pins, &t.args);
            }
            pins
        });
        pins.contains_key(&id)
    }

    /// How many times a pin on `n` was let go: while this stays the same, every object
    /// found pinned there is pinned still.
    #[inline]
    pub(crate) fn unpinned(&self, n: NodeIdx) -> u64 {
        self.nodes[n.index()].unpinned
    }

    /// The tasks leased on `n`, in no particular order.
    #[inline]
    pub(crate) fn leased_on(&self, n: NodeIdx) -> &[TaskId] {
        &self.nodes[n.index()].leased
    }

    /// Take every lease on `n` (the node died: they fail with it).
    pub(crate) fn take_leased(&mut self, n: NodeIdx) -> Vec<TaskId> {
        let r = &mut self.nodes[n.index()];
        if r.pins.take().is_some() {
            r.unpinned += 1;
        }
        std::mem::take(&mut r.leased)
    }

    /// Per node slot, its leases (for the invariants and the views).
    pub(crate) fn leases(&self) -> impl Iterator<Item = &[TaskId]> {
        self.nodes.iter().map(|r| r.leased.as_slice())
    }

    /// `tid` is back from `ray.get` and waits to take its CPU again on `n`.
    #[inline]
    pub(crate) fn wait_to_resume(&mut self, n: NodeIdx, tid: TaskId) {
        self.nodes[n.index()].resuming.push_back(tid);
    }

    /// The task next in line to take its CPU back on `n`.
    #[inline]
    pub(crate) fn next_to_resume(&self, n: NodeIdx) -> Option<TaskId> {
        self.nodes[n.index()].resuming.front().copied()
    }

    /// The task next in line on `n` took its CPU back (or is gone).
    #[inline]
    pub(crate) fn resumed(&mut self, n: NodeIdx) {
        self.nodes[n.index()].resuming.pop_front();
    }

    /// Nobody waits to resume on `n` any more (it died).
    pub(crate) fn clear_resuming(&mut self, n: NodeIdx) {
        self.nodes[n.index()].resuming.clear();
    }

    /// The tasks waiting to resume on `n`, first in line first.
    pub(crate) fn resuming_on(&self, n: NodeIdx) -> &VecDeque<TaskId> {
        &self.nodes[n.index()].resuming
    }

    /// Per node slot, the tasks waiting to resume there (for the invariants).
    pub(crate) fn resuming(&self) -> impl Iterator<Item = &VecDeque<TaskId>> {
        self.nodes.iter().map(|r| &r.resuming)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Engine;

    fn engine() -> Engine {
        let yaml = "cluster:\n  head: {cpu: 4, memory: 8GiB}\n  node_types:\n    - {name: w, count: 2, cpu: 4, memory: 8GiB, ip_range: 10.1.0.0/24}\nworkloads: []\n";
        Engine::new(crate::config::load_str(yaml, "test").expect("valid config"))
    }

    #[test]
    fn every_operation_keeps_the_index_in_step_with_the_nodes() {
        let mut e = engine();
        let req = ResourceRequest::cpu(2.0);
        let cpu = req.get(ResourceId::CPU);
        let n = NodeIdx(1);
        e.local_resources().reserve(n, &req);
        e.local_resources().lend_cpu(n, cpu);
        assert!(e.local_resources().reclaim_cpu(n, cpu));
        e.local_resources().lend_cpu(n, cpu);
        e.local_resources().release_lease(n, &req, true);
        assert_eq!(e.model.nodes()[1].available, e.model.nodes()[1].total);
        e.local_resources().reserve(NodeIdx(2), &req);
        e.sched.check_index(e.model.nodes()).expect("index agrees after every change");
        e.follow(crate::sim::follow::Follow::KillNode(NodeIdx(2), "test", true));
        e.sched.check_index(e.model.nodes()).expect("index agrees after a node is lost");
    }

    #[test]
    fn pins_are_counted_from_the_first_question_and_every_release_is_seen() {
        use crate::model::{JobId, NameId, Task, TaskType};
        let mut m = engine().model;
        let n = NodeIdx(1);
        let (x, y) = (ObjectId(100), ObjectId(101));
        for (t, args) in [(1, vec![x, y]), (2, vec![x]), (3, vec![y])] {
            let mut task = Task::new(TaskId(t), JobId(1), NameId(0), TaskType::NormalTask, 0, n, 0);
            task.args = args.into();
            m.tasks.insert(TaskId(t), task);
        }
        let mut r = Raylets::default();
        r.joined(n);
        r.lease_granted(n, TaskId(1), &m);
        r.lease_granted(n, TaskId(2), &m);
        assert!(r.pinned(n, x, &m) && r.pinned(n, y, &m), "the first question counts the leases already held");
        assert!(!r.pinned(n, ObjectId(102), &m), "no lease uses it");
        let before = r.unpinned(n);
        r.lease_granted(n, TaskId(3), &m);
        r.lease_returned(n, TaskId(1), &m);
        assert!(r.pinned(n, x, &m) && r.pinned(n, y, &m), "tasks 2 and 3 still use x and y");
        assert_eq!(r.unpinned(n), before, "no pin was let go");
        r.lease_returned(n, TaskId(2), &m);
        assert!(!r.pinned(n, x, &m), "x's last lease went");
        assert_eq!(r.unpinned(n), before + 1);
        r.take_leased(n);
        assert!(!r.pinned(n, y, &m), "the node's leases all went at once");
        assert_eq!(r.unpinned(n), before + 2);
        r.lost(n);
        assert!(r.unpinned(n) > before + 2, "a slot reset never reads as unchanged");
    }

    #[test]
    fn raylet_lists_follow_leases_and_getters_and_start_empty_in_a_reused_slot() {
        let m = engine().model;
        let mut r = Raylets::default();
        let n = NodeIdx(2);
        r.joined(n);
        assert_eq!(r.leases().count(), 3, "one list per slot up to the node");
        for t in [7, 8, 9] {
            r.lease_granted(n, TaskId(t), &m);
        }
        r.lease_returned(n, TaskId(7), &m);
        r.lease_returned(n, TaskId(42), &m); // never leased: nothing changes
        let mut leased = r.leased_on(n).to_vec();
        leased.sort();
        assert_eq!(leased, [TaskId(8), TaskId(9)]);
        r.wait_to_resume(n, TaskId(9));
        r.wait_to_resume(n, TaskId(8));
        assert_eq!(r.next_to_resume(n), Some(TaskId(9)), "first come, first served");
        r.resumed(n);
        assert_eq!(r.next_to_resume(n), Some(TaskId(8)));
        assert_eq!(r.take_leased(n).len(), 2);
        assert!(r.leased_on(n).is_empty());
        r.joined(n);
        assert!(r.resuming_on(n).is_empty(), "a node joining a reused slot inherits nothing");
    }

    #[test]
    fn a_change_that_bypasses_the_runtime_is_caught() {
        let mut e = engine();
        // Only this file can make the key: this is the bypass the compiler prevents elsewhere.
        e.model.raylet_nodes_mut(&KEY)[1].available.get_mut(&KEY).subtract(&ResourceRequest::cpu(4.0));
        let err = e.sched.check_index(e.model.nodes()).expect_err("a stale index is reported");
        assert!(err.contains("node 1"), "{err}");
    }
}
