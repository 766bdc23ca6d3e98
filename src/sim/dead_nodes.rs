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

#[cfg(test)]
mod tests {
    use crate::config::{default_config, DurationSpec};
    use crate::sim::Engine;
    use std::sync::Arc;

    /// The default config with its autoscaler's idle timeout cut to a minute, so that it
    /// replaces nodes all the time, for two virtual hours with a snapshot every ten
    /// minutes (dead views are built by the snapshot after a death).
    fn autoscaled_for_two_hours() -> (Engine, Vec<Arc<crate::snapshot::Snapshot>>) {
        let mut cfg = default_config();
        for t in &mut cfg.cluster.node_types {
            if let Some(a) = &mut t.autoscaler {
                a.idle_timeout = DurationSpec::secs(60.0);
            }
        }
        let mut engine = Engine::new(cfg);
        let mut snapshots = Vec::new();
        for step in 1..=12u64 {
            engine.run_until(step * 600 * 1_000_000);
            snapshots.push(Arc::new(engine.snapshot(step, 1.0, 0.0, None, Arc::new(Vec::new()))));
        }
        (engine, snapshots)
    }

    #[test]
    fn a_cached_dead_node_keeps_no_engine_state_and_shares_its_names_and_resources() {
        let (e, snapshots) = autoscaled_for_two_hours();
        let dead: Vec<usize> = e.model.nodes.iter().filter(|n| !n.is_alive()).map(|n| n.idx.index()).collect();
        assert!(dead.len() >= 20, "only {} dead nodes: the run proves little", dead.len());
        for &i in &dead {
            // What it grew to while alive was given back, not just emptied.
            let n = crate::model::NodeIdx(i as u32);
            assert_eq!(e.raylets.capacities(n), (0, 0), "node {i}: leases, tasks waiting to resume");
            assert_eq!(e.actor_manager.capacity_on(n), 0, "node {i}: actors");
            assert_eq!(e.plasma.primaries[i].capacity(), 0, "node {i}: plasma primaries");
            assert_eq!(e.plasma.secondaries[i].capacity(), 0, "node {i}: plasma secondaries");
        }
        e.check_scheduler_index().expect("the index holds exactly the alive nodes");

        let (before, last) = (&snapshots[snapshots.len() - 2], &snapshots[snapshots.len() - 1]);
        // Per node type: the first dead node's type name and resource list.
        let mut per_type: Vec<(Option<u16>, &Arc<str>, &crate::snapshot::NodeResources)> = Vec::new();
        for &i in &dead {
            let (node, view) = (&e.model.nodes[i], &last.nodes[i]);
            assert_eq!(view.died_at_us, node.died_at);
            assert!(view.death_reason.is_some_and(|r| !r.is_empty()), "node {i} has a death reason");
            // One copy of each name: the view shares the model's strings, and nodes of
            // a type share the type's.
            assert!(Arc::ptr_eq(&view.node_id, &node.node_id) && Arc::ptr_eq(&view.ip, &node.ip), "node {i}");
            // Its totals are still shown, all free; one list per shape.
            assert!(view.resources.iter().any(|(name, total, free)| &**name == "CPU" && *total > 0.0 && free == total));
            match per_type.iter().find(|(t, _, _)| *t == node.node_type) {
                Some((_, name, shared)) => {
                    assert!(Arc::ptr_eq(name, &node.type_name), "node {i}'s type name is its type's");
                    assert!(Arc::ptr_eq(shared, &view.resources), "node {i}'s resource list is shared");
                }
                None => per_type.push((node.node_type, &node.type_name, &view.resources)),
            }
            // Built once: the previous snapshot holds the same view if it was dead then.
            if before.nodes.get(i).is_some_and(|v| Arc::ptr_eq(&v.node_id, &node.node_id) && v.died_at_us.is_some()) {
                assert!(Arc::ptr_eq(&before.nodes[i], view), "node {i}'s view is shared between snapshots");
            }
        }
    }
}
