//! The GCS node manager: node membership.
//!
//! Owns the node table's rows ([`Key`]): a node joins (or takes a forgotten node's
//! slot), its raylet crashes, the GCS marks it dead. What a live node holds is the
//! node runtime's to change; its plasma store is the object manager's.
//!
//! Owns: which node is the head, the address each alive node answers at, the
//! addresses handed out per node type, the node ids given so far, and the dead-node
//! cache: the order in which nodes died, forgetting the longest dead once
//! `sim.dead_node_capacity` are kept, so that the next node to join takes the
//! forgotten node's slot. Ray's GCS bounds its dead-node cache the same way with
//! `maximum_gcs_dead_node_cached_count` (default 1,000; `GcsNodeManager::AddDeadNodeToCache`
//! in Ray's `gcs_node_manager.cc` evicts the earliest-dead node). Without it an autoscaled
//! cluster grows its node table by every node it ever replaced.
//!
//! A node is forgotten when a slot is needed, not when the next node dies, so the table
//! never shows a hole: it holds at most the most nodes ever alive at once plus the
//! capacity, and at most `capacity` dead nodes whenever nodes are being replaced (a
//! cluster that only shrinks keeps its dead until new nodes join).
//!
//! Must never: forget a node that is alive, leave a record pointing at a slot that now
//! holds another node (records that named a forgotten node name no node), or tell the
//! other components that a node joined (the engine does, once the record is in place).

use crate::config::{ip_range::IpRange, ClusterConfig, Config};
use crate::log_event;
use crate::model::*;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// The key to `Model::nodes_mut`: only this file can make one, so nodes join, crash and
/// die only here.
pub struct Key(());

const KEY: Key = Key(());

pub(crate) struct GcsNodeManager {
    head: NodeIdx,
    /// Address → the node last registered there (alive, or dead and not yet forgotten).
    by_ip: FxHashMap<String, NodeIdx>,
    /// Per node type: the next address of its range to try.
    ip_cursor: Vec<u32>,
    /// The head's (first) and each node type's name and GPU model, shared by all their
    /// nodes and views: a cached dead node holds no copy of them.
    shape_names: Vec<(Arc<str>, Option<Arc<str>>)>,
    /// Dead nodes still in the node table, in order of death.
    dead: VecDeque<NodeIdx>,
    dead_capacity: usize,
    /// Nodes ever added: each gets a new node id, even in a reused slot.
    added: u32,
    seed: u64,
}

impl GcsNodeManager {
    pub(crate) fn new(cfg: &Config) -> GcsNodeManager {
        let c = &cfg.cluster;
        GcsNodeManager {
            head: NodeIdx(0),
            by_ip: FxHashMap::default(),
            ip_cursor: vec![0; c.node_types.len()],
            shape_names: std::iter::once((&c.head.name, &c.head.gpu_model))
                .chain(c.node_types.iter().map(|t| (&t.name, &t.gpu_model)))
                .map(|(name, gpu)| (Arc::from(name.as_str()), gpu.as_deref().map(Arc::from)))
                .collect(),
            dead: VecDeque::new(),
            dead_capacity: cfg.sim.dead_node_capacity.max(1),
            added: 0,
            seed: cfg.sim.seed,
        }
    }

    /// The head node (the latest one registered at the head's address).
    #[inline]
    pub(crate) fn head(&self) -> NodeIdx {
        self.head
    }

    /// The node last registered at `ip`, alive or dead (until it is forgotten).
    pub(crate) fn at(&self, ip: &str) -> Option<NodeIdx> {
        self.by_ip.get(ip).copied()
    }

    /// The alive node at `ip`, if any.
    pub(crate) fn alive_at(&self, model: &Model, ip: &str) -> Option<NodeIdx> {
        self.at(ip).filter(|n| model.node(*n).is_alive())
    }

    /// The next free address of node type `t`'s range. Addresses are handed out in
    /// order; after wrapping, the first one not in use. `None`: every one is in use.
    pub(crate) fn next_address(&mut self, cluster: &ClusterConfig, model: &Model, t: u16) -> Option<String> {
        let range = IpRange::parse(&cluster.node_types[t as usize].ip_range).ok()?;
        let start = self.ip_cursor[t as usize];
        let (i, ip) = (0..range.len())
            .map(|k| (start + k) % range.len())
            .filter_map(|i| range.nth(i).map(|a| (i, a.to_string())))
            .find(|(_, ip)| self.alive_at(model, ip).is_none())?;
        self.ip_cursor[t as usize] = i + 1;
        Some(ip)
    }

    /// The node type whose address range holds `ip` (`Some(None)`: the head's address).
    pub(crate) fn type_at(cluster: &ClusterConfig, ip: &str) -> Option<Option<u16>> {
        let addr: std::net::Ipv4Addr = ip.parse().ok()?;
        match cluster.node_types.iter().position(|t| IpRange::parse(&t.ip_range).is_ok_and(|r| r.contains(addr))) {
            Some(t) => Some(Some(t as u16)),
            None if ip == cluster.head.ip => Some(None),
            None => None,
        }
    }

    /// The type a node coming back at `ip` joins as (`Some(None)`: the head's shape):
    /// `None` while a node is alive there, or when no type's range (nor the head) holds it.
    pub(crate) fn returning_type(&self, model: &Model, cluster: &ClusterConfig, ip: &str) -> Option<Option<u16>> {
        if self.alive_at(model, ip).is_some() {
            return None;
        }
        Self::type_at(cluster, ip)
    }

    /// Register a new node of a configured type (`None`: the head's shape) at `ip`,
    /// alive from `now`, in a free slot of the node table (the longest-dead node's,
    /// forgotten now, once the cache is full). A node at the head's shape becomes the
    /// head. The caller tells the other components.
    pub(crate) fn register(
        &mut self,
        model: &mut Model,
        cluster: &ClusterConfig,
        node_type: Option<u16>,
        ip: String,
        now: u64,
    ) -> NodeIdx {
        let shape = NodeShape::of(cluster, node_type);
        let (type_name, gpu_model) = self.shape_names[node_type.map_or(0, |t| t as usize + 1)].clone();
        let reused = self.free_slot(model, now);
        let idx = reused.unwrap_or(NodeIdx(model.nodes().len() as u32));
        let serial = NodeIdx(self.added);
        self.added += 1;
        // Ray: 30% of memory by default, capped at 200 GB.
        let memory = shape.memory;
        let store = shape.object_store.unwrap_or(((memory as f64 * 0.3) as u64).min(200_000_000_000));
        let mut total = ResVec::zeros(model.resource_names.len());
        total.set(ResourceId::CPU, FixedPoint::from_f64(shape.cpu));
        total.set(ResourceId::GPU, FixedPoint::from_f64(shape.gpu));
        total.set(ResourceId::MEMORY, FixedPoint::from_f64((memory - store.min(memory)) as f64));
        total.set(ResourceId::OBJECT_STORE_MEMORY, FixedPoint::from_f64(store as f64));
        for (name, q) in shape.custom {
            if let Some(id) = model.resource_names.id_of(name) {
                total.set(id, FixedPoint::from_f64(*q));
            }
        }
        let node = Node {
            idx,
            node_id: node_id_hex(self.seed, serial).into(),
            ip: ip.as_str().into(),
            node_type,
            type_name: type_name.clone(),
            is_head: node_type.is_none(),
            state: NodeState::Alive,
            available: Available::new(total.clone()),
            total,
            memory_bytes: Bytes(memory),
            store: ObjectStore { capacity: Bytes(store), ..Default::default() },
            worker_heap_used: Bytes(0),
            pressure_bytes: Bytes(0),
            gpu_model,
            gpu_memory: Bytes(shape.gpu_memory),
            started_at: now,
            died_at: None,
            death_reason: None,
            crashed_at: None,
            idle_since: Some(now),
            stats: NodeStats::default(),
        };
        log_event!(model.log, now, "node", "{} ALIVE ip={} type={}", idx.0, ip, type_name);
        match reused {
            Some(slot) => model.nodes_mut(&KEY)[slot.index()] = node,
            None => model.nodes_mut(&KEY).push(node),
        }
        self.by_ip.insert(ip, idx);
        if node_type.is_none() {
            self.head = idx;
        }
        idx
    }

    /// Node `n`'s raylet crashed now: the GCS has not noticed yet (see `Node::crashed_at`).
    pub(crate) fn crashed(m: &mut Model, n: NodeIdx, now: u64) {
        m.nodes_mut(&KEY)[n.index()].crashed_at = Some(now);
    }

    /// The GCS marks node `n` dead now for `reason`; its workers' heaps go with it.
    pub(crate) fn died(m: &mut Model, n: NodeIdx, reason: &'static str, now: u64) {
        let nd = &mut m.nodes_mut(&KEY)[n.index()];
        nd.state = NodeState::Dead;
        nd.died_at = Some(now);
        nd.death_reason = Some(reason);
        nd.worker_heap_used = Bytes(0);
    }

    /// Remember that `n` died now.
    pub(crate) fn remember_dead(&mut self, n: NodeIdx) {
        self.dead.push_back(n);
    }

    /// A slot for a node about to join: the longest-dead node's, forgotten now, once the
    /// cache is full; `None`: append a slot.
    fn free_slot(&mut self, model: &mut Model, now: u64) -> Option<NodeIdx> {
        if self.dead.len() < self.dead_capacity {
            return None;
        }
        let old = self.dead.pop_front()?;
        self.forget(model, old, now);
        Some(old)
    }

    /// Drop every reference to the dead node `n`, whose slot is about to be reused.
    fn forget(&mut self, m: &mut Model, n: NodeIdx, now: u64) {
        debug_assert!(!m.node(n).is_alive());
        let head = self.head;
        let ip = m.node(n).ip.clone();
        if self.by_ip.get(&*ip) == Some(&n) {
            self.by_ip.remove(&*ip);
        }
        // What the report's utilization per node type needs of it, kept as an aggregate.
        let node = &m.nodes()[n.index()];
        let cpus = node.total.get(ResourceId::CPU).to_f64();
        let lifetime = node.died_at.unwrap_or(now).saturating_sub(node.started_at) as f64;
        let busy = node.stats.cpu_busy_us as f64;
        let e = m.counters.forgotten_nodes.entry(node.type_name.to_string()).or_default();
        e.nodes += 1;
        e.cpu_busy_us += busy;
        e.cpu_available_us += lifetime * cpus;
        for r in m.finished_tasks.iter_mut().filter(|r| r.node == Some(n)) {
            r.node = None;
        }
        for t in m.tasks.values_mut() {
            if t.node.get() == Some(n) {
                t.node = CompactOption::NONE;
            }
            // An owner that lived there is gone; its local raylet is the head's from now on.
            if t.owner_node == n {
                t.owner_node = head;
            }
        }
        m.unplace_actors_on(n);
        for o in m.objects.values_mut() {
            if o.primary.get() == Some(n) {
                o.primary = CompactOption::NONE;
            }
            o.copies.retain(|c| *c != n);
        }
        m.unplace_bundles_on(n);
        m.move_drivers(n, head);
        log_event!(m.log, now, "node", "{} FORGOTTEN", n.0);
    }
}

/// The configured shape of a node type (or of the head node).
struct NodeShape<'a> {
    cpu: f64,
    gpu: f64,
    memory: u64,
    object_store: Option<u64>,
    custom: &'a BTreeMap<String, f64>,
    gpu_memory: u64,
}

impl<'a> NodeShape<'a> {
    fn of(c: &'a ClusterConfig, node_type: Option<u16>) -> NodeShape<'a> {
        match node_type.and_then(|t| c.node_types.get(t as usize)) {
            Some(nt) => NodeShape {
                cpu: nt.cpu,
                gpu: nt.gpu,
                memory: nt.memory.0,
                object_store: nt.object_store_memory.map(|b| b.0),
                custom: &nt.resources,
                gpu_memory: nt.gpu_memory.map(|b| b.0).unwrap_or(0),
            },
            None => {
                let h = &c.head;
                NodeShape {
                    cpu: h.cpu,
                    gpu: h.gpu,
                    memory: h.memory.0,
                    object_store: h.object_store_memory.map(|b| b.0),
                    custom: &h.resources,
                    gpu_memory: h.gpu_memory.map(|b| b.0).unwrap_or(0),
                }
            }
        }
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
            snapshots.push(Arc::new(engine.publish(crate::sim::PublishOptions::seq(step))));
        }
        (engine, snapshots)
    }

    #[test]
    fn a_cached_dead_node_keeps_no_engine_state_and_shares_its_names_and_resources() {
        let (e, snapshots) = autoscaled_for_two_hours();
        let dead: Vec<usize> = e.model.nodes().iter().filter(|n| !n.is_alive()).map(|n| n.idx.index()).collect();
        assert!(dead.len() >= 20, "only {} dead nodes: the run proves little", dead.len());
        for &i in &dead {
            // What it grew to while alive was given back, not just emptied.
            let n = crate::model::NodeIdx(i as u32);
            assert_eq!(e.raylets.capacities(n), (0, 0), "node {i}: leases, tasks waiting to resume");
            assert_eq!(e.actor_manager.capacity_on(n), 0, "node {i}: actors");
            assert_eq!(e.plasma.primaries[i].capacity(), 0, "node {i}: plasma primaries");
            assert_eq!(e.plasma.secondaries[i].capacity(), 0, "node {i}: plasma secondaries");
            assert_eq!(e.plasma.held[i].copies.capacity(), 0, "node {i}: plasma's held copies");
        }
        e.check_scheduler_index().expect("the index holds exactly the alive nodes");

        let (before, last) = (&snapshots[snapshots.len() - 2], &snapshots[snapshots.len() - 1]);
        // Per node type: the first dead node's type name and resource list.
        let mut per_type: Vec<(Option<u16>, &Arc<str>, &crate::snapshot::NodeResources)> = Vec::new();
        for &i in &dead {
            let (node, view) = (&e.model.nodes()[i], &last.nodes[i]);
            assert_eq!(view.died_at_us.map(crate::model::VirtualTime::as_micros), node.died_at);
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
