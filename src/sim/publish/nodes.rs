//! The nodes view: one [`NodeView`] per node in the table.
//!
//! Owns: building node views, and the sharing of dead nodes' views (a dead node no
//! longer changes, so its view is built once and every later snapshot holds the same
//! `Arc`). Must never: mutate the model; cost more than O(nodes + their leases).

use crate::model::*;
use crate::sim::Engine;
use crate::snapshot::NodeView;
use std::sync::Arc;

impl Engine {
    /// Every node in the table, dead ones from the shared cache where it still holds
    /// the same node.
    pub(super) fn nodes_view(&self) -> Vec<Arc<NodeView>> {
        let m = &self.model;
        let mut dead_views = self.dead_node_views.borrow_mut();
        m.nodes
            .iter()
            .map(|n| {
                let idx = n.idx.index();
                if let Some(Some(v)) = dead_views.get(idx) {
                    if !n.is_alive() && v.node_id == n.node_id {
                        return v.clone();
                    }
                }
                let view = Arc::new(self.node_view(n));
                if !n.is_alive() {
                    if dead_views.len() <= idx {
                        dead_views.resize(idx + 1, None);
                    }
                    dead_views[idx] = Some(view.clone());
                }
                view
            })
            .collect()
    }

    fn node_view(&self, n: &Node) -> NodeView {
        let m = &self.model;
        let running = self
            .raylets
            .leased_on(n.idx)
            .iter()
            .filter(|t| m.tasks.get(t).is_some_and(|t| t.state.is_running()))
            .count() as u64
            + self.actor_manager.on(n.idx).iter().filter_map(|a| m.actors.get(a)).map(|a| a.running.len() as u64).sum::<u64>();
        NodeView {
            idx: n.idx.0,
            node_id: n.node_id.clone(),
            ip: n.ip.clone(),
            node_type: n.type_name.clone(),
            is_head: n.is_head,
            state: n.state,
            resources: m
                .resource_names
                .iter()
                .filter(|(id, _)| n.total.get(*id).0 > 0)
                .map(|(id, name)| (name.to_string(), n.total.get(id).to_f64(), n.available.get(id).to_f64()))
                .collect(),
            memory_total: n.memory_bytes.0,
            memory_used: n.memory_used().0,
            store_capacity: n.store.capacity.0,
            store_used: n.store.used.0,
            store_spilled: n.store.spilled.0,
            store_fallback: n.store.fallback.0,
            store_num_objects: n.store.num_objects,
            worker_heap_objects: n.store.worker_heap.0,
            gpu_model: n.gpu_model.clone(),
            gpu_memory: n.gpu_memory.0,
            running_tasks: running,
            leased_tasks: self.raylets.leased_on(n.idx).len() as u64,
            actors: self.actor_manager.on(n.idx).len() as u64,
            started_at_us: n.started_at,
            died_at_us: n.died_at,
            death_reason: n.death_reason.clone(),
            stats: n.stats.clone(),
        }
    }
}
