//! The autoscaler: launch nodes for pending and infeasible demand after the launch
//! delay, terminate workers idle past the timeout, keep each type within min/max.
//!
//! Owns: [`Autoscaler`]: per node type, its bounds, launches in flight and totals; and
//! the periodic look at demand, terminating idle workers and a launch coming due. Reads
//! the cluster queues, pending groups and raylets' lists it is given. Must never: add
//! or kill a node itself (a launched node joins through the engine, which tells every
//! component; a terminated one dies through [`Follow::KillNode`]).

use super::clock::Event;
use super::follow::{Cx, Follow, Follows};
use super::gcs::actors::ActorManager;
use super::gcs::jobs::JobManager;
use super::gcs::placement_groups::PlacementGroupManager;
use super::raylet::cluster_queues::ClusterQueues;
use super::raylet::node_runtime;
use crate::config::ClusterConfig;
use crate::log_event;
use crate::model::*;
use crate::workload::CallSpec;
use smallvec::smallvec;

/// How often the autoscaler looks at demand (Ray's update interval is 5 s).
pub const TICK_US: u64 = 5_000_000;

#[derive(Clone, Debug, Default)]
pub struct TypeState {
    pub name: String,
    pub enabled: bool,
    pub min: u32,
    pub max: u32,
    pub launch_delay: u64,
    pub idle_timeout: u64,
    /// Launches in flight.
    pub pending: u32,
    pub recently_failed: u32,
    pub started_total: u64,
    pub stopped_total: u64,
    pub failed_create_total: u64,
}

pub struct Autoscaler {
    types: Vec<TypeState>,
    /// Resources of pending launches, by resource name (for `autoscaler_pending_resources`).
    pending_resources: Vec<(String, f64)>,
    updates: u64,
}

/// What one look at demand decided for a node type: launch `count` nodes, which come
/// up after `delay`.
pub(crate) struct Launch {
    pub(crate) node_type: u16,
    pub(crate) count: u32,
    pub(crate) delay: u64,
}

impl Autoscaler {
    pub fn new(c: &ClusterConfig) -> Autoscaler {
        let types = c
            .node_types
            .iter()
            .map(|t| match &t.autoscaler {
                Some(a) => TypeState {
                    name: t.name.clone(),
                    enabled: true,
                    min: a.min_workers,
                    max: a.max_workers,
                    launch_delay: a.launch_delay.as_micros(),
                    idle_timeout: a.idle_timeout.as_micros(),
                    ..Default::default()
                },
                None => TypeState { name: t.name.clone(), ..Default::default() },
            })
            .collect();
        Autoscaler { types, pending_resources: Vec::new(), updates: 0 }
    }

    pub fn enabled(&self) -> bool {
        self.types.iter().any(|t| t.enabled)
    }

    /// Per node type: bounds, launches in flight and launch/stop totals.
    pub fn types(&self) -> &[TypeState] {
        &self.types
    }

    /// Resources of the launches in flight, by resource name.
    pub fn pending_resources(&self) -> &[(String, f64)] {
        &self.pending_resources
    }

    /// Looks at demand so far.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    pub fn note_failure(&mut self, t: u16) {
        if let Some(s) = self.types.get_mut(t as usize) {
            s.recently_failed += 1;
        }
    }

    /// One look at `demand` (requests and how many of each the cluster does not absorb),
    /// given the nodes alive per type: the launches to make, each now in flight.
    pub(crate) fn scale_up(
        &mut self,
        cluster: &ClusterConfig,
        names: &ResourceNames,
        demand: Vec<(ResourceRequest, u64)>,
        alive: &[u32],
    ) -> Vec<Launch> {
        self.updates += 1;
        let mut want = vec![0u64; cluster.node_types.len()];
        for (req, count) in demand {
            // The first autoscaled type whose nodes can hold the request.
            let Some((t, per_node)) = cluster.node_types.iter().enumerate().find_map(|(i, nt)| {
                if !self.types[i].enabled {
                    return None;
                }
                let mut fit = u64::MAX;
                for &(id, q) in &req.0 {
                    let cap = match id {
                        ResourceId::CPU => nt.cpu,
                        ResourceId::GPU => nt.gpu,
                        ResourceId::MEMORY => nt.memory.0 as f64 * 0.7,
                        ResourceId::OBJECT_STORE_MEMORY => nt.memory.0 as f64 * 0.3,
                        other => *nt.resources.get(names.name(other)).unwrap_or(&0.0),
                    };
                    fit = fit.min((cap / q.to_f64()).floor().max(0.0) as u64);
                }
                (fit > 0).then_some((i, if fit == u64::MAX { 1 } else { fit }))
            }) else {
                continue;
            };
            want[t] += count.div_ceil(per_node);
        }
        let mut launches = Vec::new();
        for (t, need) in want.into_iter().enumerate() {
            let s = &mut self.types[t];
            let need = need.max(s.min.saturating_sub(alive[t] + s.pending) as u64);
            let room = s.max.saturating_sub(alive[t] + s.pending) as u64;
            let count = need.saturating_sub(s.pending as u64).min(room) as u32;
            if count > 0 {
                s.pending += count;
                launches.push(Launch { node_type: t as u16, count, delay: s.launch_delay });
            }
        }
        self.refresh_pending_resources(cluster);
        launches
    }

    /// The alive workers idle past their type's timeout that may go (their type stays at
    /// or above its min), each counted as stopped. `idle` says whether a node holds
    /// nothing; a node's idle clock starts at the first look that finds it idle.
    pub(crate) fn scale_down(&mut self, m: &mut Model, idle: impl Fn(&Node) -> bool, now: u64) -> Vec<NodeIdx> {
        let mut alive_by_type = alive_per_type(m.nodes(), self.types.len());
        let mut victims = Vec::new();
        for i in 0..m.nodes().len() {
            let n = &m.nodes()[i];
            let Some(t) = n.node_type else { continue };
            let s = &self.types[t as usize];
            if !s.enabled || !n.is_alive() {
                continue;
            }
            let (idx, idle_since) = (n.idx, n.idle_since);
            if !idle(n) {
                node_runtime::set_idle_since(m, idx, None);
                continue;
            }
            let since = match idle_since {
                Some(since) => since,
                None => {
                    node_runtime::set_idle_since(m, idx, Some(now));
                    now
                }
            };
            if now - since >= s.idle_timeout && alive_by_type[t as usize] > s.min {
                alive_by_type[t as usize] -= 1;
                victims.push(idx);
            }
        }
        for v in &victims {
            let t = m.nodes()[v.index()].node_type.unwrap_or(0);
            self.types[t as usize].stopped_total += 1;
        }
        victims
    }

    /// A launch of type `t` came due: it is no longer in flight.
    fn launch_due(&mut self, t: u16) {
        let s = &mut self.types[t as usize];
        s.pending = s.pending.saturating_sub(1);
    }

    /// The launch of type `t` that came due made a node (`ok`) or found no address.
    pub(crate) fn launch_done(&mut self, cx: &mut Cx, t: u16, ok: bool) {
        let cluster = &cx.cfg.cluster;
        if !ok {
            cx.cluster_events().launch_failed(&cluster.node_types[t as usize]);
        }
        let s = &mut self.types[t as usize];
        match ok {
            true => s.started_total += 1,
            false => s.failed_create_total += 1,
        }
        self.refresh_pending_resources(cluster);
    }

    fn refresh_pending_resources(&mut self, cluster: &ClusterConfig) {
        let mut res: Vec<(String, f64)> =
            vec![("CPU".into(), 0.0), ("GPU".into(), 0.0), ("memory".into(), 0.0), ("object_store_memory".into(), 0.0)];
        for (i, s) in self.types.iter().enumerate() {
            let nt = &cluster.node_types[i];
            let p = s.pending as f64;
            res[0].1 += nt.cpu * p;
            res[1].1 += nt.gpu * p;
            let store = nt.object_store_memory.map(|b| b.0 as f64).unwrap_or(nt.memory.0 as f64 * 0.3);
            res[2].1 += (nt.memory.0 as f64 - store) * p;
            res[3].1 += store * p;
        }
        self.pending_resources = res;
    }
}

/// Alive nodes per node type.
fn alive_per_type(nodes: &[Node], types: usize) -> Vec<u32> {
    let mut alive = vec![0u32; types];
    for n in nodes.iter().filter(|n| n.is_alive()) {
        if let Some(t) = n.node_type {
            alive[t as usize] += 1;
        }
    }
    alive
}

impl Autoscaler {
    /// The autoscaler's periodic look: launch for unmet demand (the cluster queues'
    /// waiting and infeasible work, the pending groups' bundles), terminate idle
    /// workers ([`Follow::TerminateIdleNode`], one at a time), then
    /// ([`Follow::NextAutoscalerTick`]) look again later while there is work.
    pub(crate) fn tick(
        &mut self,
        cx: &mut Cx,
        queues: &ClusterQueues,
        pg_manager: &PlacementGroupManager,
        actor_manager: &ActorManager,
    ) -> Follows {
        let demand = unmet_demand(cx.model, cx.specs, queues, pg_manager);
        let alive = alive_per_type(cx.model.nodes(), self.types().len());
        let cluster = &cx.cfg.cluster;
        for l in self.scale_up(cluster, &cx.model.resource_names, demand, &alive) {
            let name = &cluster.node_types[l.node_type as usize].name;
            log_event!(cx.model.log, cx.now(), "autoscaler", "launching {} x {}", l.count, name);
            cx.cluster_events().launch(&cluster.node_types[l.node_type as usize], l.count);
            for _ in 0..l.count {
                cx.clock.schedule_in(l.delay, Event::NodeLaunched(l.node_type));
            }
        }
        let raylets = &*cx.raylets;
        let idle = |n: &Node| {
            raylets.leased_on(n.idx).is_empty()
                && actor_manager.on(n.idx).is_empty()
                && n.store.num_objects == 0
                && n.available == n.total
        };
        let victims = self.scale_down(cx.model, idle, cx.clock.now);
        let mut follows: Follows = victims.into_iter().map(Follow::TerminateIdleNode).collect();
        follows.push(Follow::NextAutoscalerTick);
        follows
    }

    /// An idle worker the autoscaler chose goes (not a failure).
    pub(crate) fn terminate_idle_node(cx: &mut Cx, n: NodeIdx) -> Follows {
        cx.cluster_events().node_removed(n, "idle");
        smallvec![Follow::KillNode(n, "autoscaler: idle node terminated", false)]
    }

    /// Once the idle workers went: look again in one period while jobs run or will
    /// start, or work waits in the cluster queues.
    pub(crate) fn schedule_next_tick(cx: &mut Cx, jobs: &JobManager, queues: &ClusterQueues) {
        if !jobs.done() || queues.waiting_count() + queues.infeasible_count() > 0 {
            cx.clock.schedule_in(TICK_US, Event::AutoscalerTick);
        }
    }

    /// A launch of type `t` came due: it is no longer in flight, and the node joins
    /// through the engine ([`Follow::LaunchNode`]), which tells every component.
    pub(crate) fn node_launched(&mut self, t: u16) -> Follows {
        self.launch_due(t);
        smallvec![Follow::LaunchNode(t)]
    }
}

/// Demand that current capacity does not absorb: (request, how many).
fn unmet_demand(
    m: &Model,
    specs: &[CallSpec],
    queues: &ClusterQueues,
    pg_manager: &PlacementGroupManager,
) -> Vec<(ResourceRequest, u64)> {
    let mut out: Vec<(ResourceRequest, u64)> = Vec::new();
    for (spec, q) in queues.infeasible() {
        out.push((specs[*spec as usize].request.clone(), q.len() as u64));
    }
    for ((spec, _), q) in queues.classes() {
        out.push((specs[*spec as usize].request.clone(), q.len() as u64));
    }
    for b in pg_manager.pending_bundles(m) {
        out.push((b, 1));
    }
    out
}
