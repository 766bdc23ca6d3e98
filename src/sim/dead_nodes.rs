//! The dead-node cache: how long the node table remembers nodes that died.
//!
//! Owns: the order in which nodes died, and forgetting the longest dead once
//! `sim.dead_node_capacity` are kept: the next node to join takes the forgotten node's
//! slot. Ray's GCS bounds its dead-node cache the same way with
//! `maximum_gcs_dead_node_cached_count` (default 1,000; `GcsNodeManager::AddDeadNodeToCache`
//! in Ray's `gcs_node_manager.cc` evicts the earliest-dead node). Without it an autoscaled
//! cluster grows its node table by every node it ever replaced.
//!
//! A node is forgotten when a slot is needed, not when the next node dies, so the table
//! never shows a hole: it holds at most the most nodes ever alive at once plus the
//! capacity, and at most `capacity` dead nodes whenever nodes are being replaced (a
//! cluster that only shrinks keeps its dead until new nodes join).
//!
//! Must never: forget a node that is alive, or leave a record pointing at a slot that
//! now holds another node (records that named a forgotten node name no node).

use super::engine::Engine;
use crate::log_event;
use crate::model::NodeIdx;

impl Engine {
    /// Remember that `n` died now.
    pub(crate) fn remember_dead_node(&mut self, n: NodeIdx) {
        self.dead_nodes.push_back(n);
    }

    /// A slot for a node about to join: the longest-dead node's, forgotten now, once the
    /// cache is full; `None`: append a slot.
    pub(crate) fn free_node_slot(&mut self) -> Option<NodeIdx> {
        if self.dead_nodes.len() < self.cfg.sim.dead_node_capacity.max(1) {
            return None;
        }
        let old = self.dead_nodes.pop_front()?;
        self.forget_node(old);
        Some(old)
    }

    /// Drop every reference to the dead node `n`, whose slot is about to be reused.
    fn forget_node(&mut self, n: NodeIdx) {
        debug_assert!(!self.model.node(n).is_alive());
        let head = self.head;
        let ip = self.model.node(n).ip.clone();
        if self.node_by_ip.get(&*ip) == Some(&n) {
            self.node_by_ip.remove(&*ip);
        }
        let m = &mut self.model;
        // What the report's utilization per node type needs of it, kept as an aggregate.
        let node = &m.nodes[n.index()];
        let cpus = node.total.get(crate::model::ResourceId::CPU).to_f64();
        let lifetime = node.died_at.unwrap_or(self.clock.now).saturating_sub(node.started_at) as f64;
        let busy = node.stats.cpu_busy_us as f64;
        let e = m.counters.forgotten_nodes.entry(node.type_name.to_string()).or_default();
        e.nodes += 1;
        e.cpu_busy_us += busy;
        e.cpu_available_us += lifetime * cpus;
        for r in m.finished_tasks.iter_mut().filter(|r| r.node == Some(n)) {
            r.node = None;
        }
        for t in m.tasks.values_mut() {
            if t.node == Some(n) {
                t.node = None;
            }
            // An owner that lived there is gone; its local raylet is the head's from now on.
            if t.owner_node == n {
                t.owner_node = head;
            }
        }
        for a in m.actors.values_mut().filter(|a| a.node == Some(n)) {
            a.node = None;
        }
        for o in m.objects.values_mut() {
            if o.primary == Some(n) {
                o.primary = None;
            }
            o.copies.retain(|c| *c != n);
        }
        for b in m.pgs.values_mut().flat_map(|pg| pg.bundles.iter_mut()).filter(|b| b.node == Some(n)) {
            b.node = None;
        }
        for j in m.jobs.values_mut().filter(|j| j.driver_node == n) {
            j.driver_node = head;
        }
        log_event!(m.log, self.clock.now, "node", "{} FORGOTTEN", n.0);
    }
}
