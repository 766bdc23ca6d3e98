//! The nodes view: one [`NodeView`] per node in the table.
//!
//! Owns: building node views, and what they share so that the dead-node cache (Ray's
//! 1,000) stays cheap: a dead node no longer changes, so its view is built once and
//! every later snapshot holds the same `Arc`; views share the model's name strings;
//! resource names are one `Arc<str>` per resource kind; and a dead node's resource list
//! (everything free, as the node runtime leaves it) is one list per node shape, shared
//! by every dead node of that shape. Must never: mutate the model; cost more than
//! O(nodes + their leases).

use crate::model::*;
use crate::sim::gcs::actors::ActorManager;
use crate::sim::raylet::node_runtime::Raylets;
use crate::snapshot::{NodeResources, NodeView};
use std::cell::RefCell;
use std::sync::Arc;

/// What views share between snapshots (the engine holds it; only this file uses it).
/// Behind a `RefCell`: publishing reads the engine, and only this cache changes.
#[derive(Default)]
pub(crate) struct NodeViewCache {
    /// By slot: the view of the dead node there, built by the first snapshot after it died.
    dead: Vec<Option<Arc<NodeView>>>,
    /// Resource names by resource id (the registry grows when jobs bring new kinds).
    names: Vec<Arc<str>>,
    /// Dead nodes' resource lists, one per total-resource shape (a handful).
    dead_resources: Vec<(ResVec, NodeResources)>,
}

/// Every node in the table, dead ones from the shared cache where it still holds
/// the same node.
pub(super) fn nodes(
    m: &Model,
    raylets: &Raylets,
    actors: &ActorManager,
    cache: &RefCell<NodeViewCache>,
) -> Vec<Arc<NodeView>> {
    let mut cache = cache.borrow_mut();
    if cache.names.len() != m.resource_names.len() {
        cache.names = m.resource_names.iter().map(|(_, name)| Arc::from(name)).collect();
    }
    m.nodes()
        .iter()
        .map(|n| {
            let idx = n.idx.index();
            if let Some(Some(v)) = cache.dead.get(idx) {
                if !n.is_alive() && Arc::ptr_eq(&v.node_id, &n.node_id) {
                    return v.clone();
                }
            }
            let view = Arc::new(node_view(m, raylets, actors, n, &mut cache));
            if !n.is_alive() {
                if cache.dead.len() <= idx {
                    cache.dead.resize(idx + 1, None);
                }
                cache.dead[idx] = Some(view.clone());
            } else if let Some(forgotten @ Some(_)) = cache.dead.get_mut(idx) {
                // The slot was reused: the forgotten node's view goes with it.
                *forgotten = None;
            }
            view
        })
        .collect()
}

fn node_view(m: &Model, raylets: &Raylets, actors: &ActorManager, n: &Node, cache: &mut NodeViewCache) -> NodeView {
    let running =
        raylets.leased_on(n.idx).iter().filter(|t| m.tasks.get(t).is_some_and(|t| t.state().is_running())).count()
            as u64
            + actors.on(n.idx).iter().filter_map(|a| m.actors().get(a)).map(|a| a.running.len() as u64).sum::<u64>();
    NodeView {
        idx: n.idx.0,
        node_id: n.node_id.clone(),
        ip: n.ip.clone(),
        node_type: n.type_name.clone(),
        is_head: n.is_head,
        state: n.state,
        resources: resources(n, cache),
        memory_total: n.memory_bytes,
        memory_used: n.memory_used(),
        store_capacity: n.store.capacity,
        store_used: n.store.used,
        store_spilled: n.store.spilled,
        store_fallback: n.store.fallback,
        store_num_objects: n.store.num_objects,
        worker_heap_objects: n.store.worker_heap.0,
        gpu_model: n.gpu_model.clone(),
        gpu_memory: n.gpu_memory,
        running_tasks: running,
        leased_tasks: raylets.leased_on(n.idx).len() as u64,
        actors: actors.on(n.idx).len() as u64,
        started_at_us: VirtualTime(n.started_at),
        died_at_us: n.died_at.map(VirtualTime),
        crashed_at_us: n.crashed_at.map(VirtualTime),
        death_reason: n.death_reason,
        stats: n.stats.clone(),
    }
}

/// The node's resource list; a dead node's (all free) from the list of its shape.
fn resources(n: &Node, cache: &mut NodeViewCache) -> NodeResources {
    let shared = !n.is_alive() && *n.available == n.total;
    if shared {
        if let Some((_, r)) = cache.dead_resources.iter().find(|(shape, _)| *shape == n.total) {
            return r.clone();
        }
    }
    let list: NodeResources = cache
        .names
        .iter()
        .enumerate()
        .map(|(i, name)| (ResourceId(i as u16), name))
        .filter(|(id, _)| n.total.get(*id).0 > 0)
        .map(|(id, name)| (name.clone(), n.total.get(id).to_f64(), n.available.get(id).to_f64()))
        .collect();
    if shared {
        cache.dead_resources.push((n.total.clone(), list.clone()));
    }
    list
}
