//! The autoscaler: launch nodes for pending and infeasible demand after the launch
//! delay, terminate workers idle past the timeout, keep each type within min/max.

use super::clock::Event;
use super::engine::Engine;
use crate::config::ClusterConfig;
use crate::log_event;
use crate::model::*;

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
    pub types: Vec<TypeState>,
    /// Resources of pending launches, by resource name (for `autoscaler_pending_resources`).
    pub pending_resources: Vec<(String, f64)>,
    pub updates: u64,
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

    pub fn note_failure(&mut self, t: u16) {
        if let Some(s) = self.types.get_mut(t as usize) {
            s.recently_failed += 1;
        }
    }
}

impl Engine {
    /// Per node type: bounds, launches in flight and launch/stop totals.
    pub fn autoscaler_types(&self) -> &[TypeState] {
        &self.autoscaler.types
    }

    fn alive_of_type(&self, t: u16) -> u32 {
        self.model.nodes.iter().filter(|n| n.is_alive() && n.node_type == Some(t)).count() as u32
    }

    pub(crate) fn on_autoscaler_tick(&mut self) {
        self.autoscaler.updates += 1;
        self.scale_up();
        self.scale_down();
        if !self.workloads_done() || self.queues.waiting_count() + self.queues.infeasible_count() > 0 {
            self.schedule_in(TICK_US, Event::AutoscalerTick);
        }
    }

    /// Demand that current capacity does not absorb: (request, how many).
    fn unmet_demand(&self) -> Vec<(ResourceRequest, u64)> {
        let mut out: Vec<(ResourceRequest, u64)> = Vec::new();
        for (spec, q) in self.queues.infeasible() {
            out.push((self.specs[*spec as usize].request.clone(), q.len() as u64));
        }
        for ((spec, _), q) in self.queues.classes() {
            out.push((self.specs[*spec as usize].request.clone(), q.len() as u64));
        }
        for b in self.pending_pg_bundles() {
            out.push((b, 1));
        }
        out
    }

    fn scale_up(&mut self) {
        let demand = self.unmet_demand();
        let cfg = self.cfg.clone();
        let mut want = vec![0u64; cfg.cluster.node_types.len()];
        for (req, count) in demand {
            // The first autoscaled type whose nodes can hold the request.
            let Some((t, per_node)) = cfg.cluster.node_types.iter().enumerate().find_map(|(i, nt)| {
                if !self.autoscaler.types[i].enabled {
                    return None;
                }
                let mut fit = u64::MAX;
                for &(id, q) in &req.0 {
                    let cap = match id {
                        ResourceId::CPU => nt.cpu,
                        ResourceId::GPU => nt.gpu,
                        ResourceId::MEMORY => nt.memory.0 as f64 * 0.7,
                        ResourceId::OBJECT_STORE_MEMORY => nt.memory.0 as f64 * 0.3,
                        other => *nt.resources.get(self.model.resource_names.name(other)).unwrap_or(&0.0),
                    };
                    fit = fit.min((cap / q.to_f64()).floor().max(0.0) as u64);
                }
                (fit > 0).then_some((i, if fit == u64::MAX { 1 } else { fit }))
            }) else {
                continue;
            };
            want[t] += count.div_ceil(per_node);
        }
        for (t, need) in want.into_iter().enumerate() {
            let alive = self.alive_of_type(t as u16);
            let s = &self.autoscaler.types[t];
            let need = need.max(s.min.saturating_sub(alive + s.pending) as u64);
            let room = s.max.saturating_sub(alive + s.pending) as u64;
            let launch = need.saturating_sub(s.pending as u64).min(room) as u32;
            if launch == 0 {
                continue;
            }
            let delay = s.launch_delay;
            self.autoscaler.types[t].pending += launch;
            log_event!(
                self.model.log,
                self.clock.now,
                "autoscaler",
                "launching {} x {}",
                launch,
                cfg.cluster.node_types[t].name
            );
            self.note_launch(t, launch);
            for _ in 0..launch {
                self.schedule_in(delay, Event::NodeLaunched(t as u16));
            }
        }
        self.refresh_pending_resources();
    }

    fn refresh_pending_resources(&mut self) {
        let cfg = self.cfg.clone();
        let mut res: Vec<(String, f64)> =
            vec![("CPU".into(), 0.0), ("GPU".into(), 0.0), ("memory".into(), 0.0), ("object_store_memory".into(), 0.0)];
        for (i, s) in self.autoscaler.types.iter().enumerate() {
            let nt = &cfg.cluster.node_types[i];
            let p = s.pending as f64;
            res[0].1 += nt.cpu * p;
            res[1].1 += nt.gpu * p;
            let store = nt.object_store_memory.map(|b| b.0 as f64).unwrap_or(nt.memory.0 as f64 * 0.3);
            res[2].1 += (nt.memory.0 as f64 - store) * p;
            res[3].1 += store * p;
        }
        self.autoscaler.pending_resources = res;
    }

    fn scale_down(&mut self) {
        let now = self.clock.now;
        let mut victims = Vec::new();
        let mut alive_by_type: Vec<u32> =
            (0..self.autoscaler.types.len()).map(|t| self.alive_of_type(t as u16)).collect();
        for n in &mut self.model.nodes {
            let Some(t) = n.node_type else { continue };
            let s = &self.autoscaler.types[t as usize];
            if !s.enabled || !n.is_alive() {
                continue;
            }
            let idle = self.raylets.leased_on(n.idx).is_empty()
                && self.actor_manager.on(n.idx).is_empty()
                && n.store.num_objects == 0
                && n.available == n.total;
            if !idle {
                n.idle_since = None;
                continue;
            }
            let since = *n.idle_since.get_or_insert(now);
            if now - since >= s.idle_timeout && alive_by_type[t as usize] > s.min {
                alive_by_type[t as usize] -= 1;
                victims.push(n.idx);
            }
        }
        for v in victims {
            let t = self.model.nodes[v.index()].node_type.unwrap_or(0);
            self.autoscaler.types[t as usize].stopped_total += 1;
            self.note_node_removed(v, "idle");
            self.kill_node(v, "autoscaler: idle node terminated", false);
        }
    }

    pub(crate) fn on_node_launched(&mut self, t: u16) {
        let s = &mut self.autoscaler.types[t as usize];
        s.pending = s.pending.saturating_sub(1);
        match self.launch_node_of_type(t) {
            Some(_) => self.autoscaler.types[t as usize].started_total += 1,
            None => {
                self.autoscaler.types[t as usize].failed_create_total += 1;
                self.note_launch_failed(t);
            }
        }
        self.refresh_pending_resources();
    }
}
