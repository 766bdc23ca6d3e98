//! The scheduler: Ray's policies for choosing a node, over the model's node table.
//!
//! Owns: the policies (DEFAULT hybrid, SPREAD, NodeAffinity, placement groups) and an
//! ordered index of nodes by utilization score, kept up to date incrementally so a
//! decision never sorts the cluster. Must never: write the model. The engine applies
//! the decisions (counts spillbacks); the node runtime (`sim::raylet::node_runtime`) reserves
//! resources and tells the index, in the same call, that a node's availability changed.

mod index;
mod placement_group;

pub use index::ScoreIndex;
pub use placement_group::PgDecision;

use crate::config::SchedulerConfig;
use crate::model::{Node, NodeIdx, PgId, ResVec, ResourceRequest};
use rand::Rng;

/// A task's or actor's scheduling strategy (Ray's `scheduling_strategy`), resolved to
/// nodes. Vocabulary: a *strategy* is what work asks for (`workload::StrategySpec` as
/// written, this once resolved); a *decision* is what the scheduler answers; *placement*
/// is kept for Ray's placement groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    Default,
    Spread,
    NodeAffinity {
        node: NodeIdx,
        soft: bool,
    },
    /// Inside a placement group's bundle (`None`: any bundle).
    PlacementGroup {
        pg: PgId,
        bundle: Option<u32>,
    },
}

/// The scheduler's answer for one task or actor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Reserve on this node now.
    Node(NodeIdx),
    /// Feasible, but no node has the resources now: wait (optionally only for one node).
    Wait { only: Option<NodeIdx> },
    /// No alive node could ever hold the request.
    Infeasible,
    /// Hard node affinity to a dead or infeasible node: fail (TaskUnschedulableError).
    Unschedulable,
}

/// Ray's scheduler knobs, resolved.
#[derive(Clone, Debug)]
pub struct Params {
    pub spread_threshold: f64,
    pub top_k_fraction: f64,
    pub top_k_absolute: u32,
    pub avoid_gpu_nodes: bool,
}

impl From<&SchedulerConfig> for Params {
    fn from(c: &SchedulerConfig) -> Params {
        Params {
            spread_threshold: c.spread_threshold,
            top_k_fraction: c.top_k_fraction,
            top_k_absolute: c.top_k_absolute,
            avoid_gpu_nodes: c.avoid_gpu_nodes,
        }
    }
}

pub struct Scheduler {
    params: Params,
    index: ScoreIndex,
    spread_cursor: usize,
    /// Distinct total-resource shapes of alive nodes, with how many nodes have each:
    /// feasibility is a check over a handful of shapes, not over every node.
    shapes: Vec<(ResVec, u32)>,
    candidates: Vec<NodeIdx>,
    /// Bumped whenever any node's availability changes.
    epoch: u64,
    /// Requests that found no available node, per node set, at an epoch: until
    /// availability changes the answer is the same, so a burst of submissions to a
    /// saturated cluster does not walk every node for each task.
    saturated: Vec<(ResourceRequest, Option<bool>, u64)>,
}

impl Scheduler {
    pub fn new(params: Params) -> Scheduler {
        let index = ScoreIndex::new(params.spread_threshold);
        Scheduler {
            params,
            index,
            spread_cursor: 0,
            shapes: Vec::new(),
            candidates: Vec::new(),
            epoch: 0,
            saturated: Vec::new(),
        }
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// A node joined the cluster.
    pub fn add_node(&mut self, node: &Node) {
        self.epoch += 1;
        self.index.insert(node);
        match self.shapes.iter_mut().find(|(s, _)| *s == node.total) {
            Some((_, n)) => *n += 1,
            None => self.shapes.push((node.total.clone(), 1)),
        }
    }

    /// A node died or was removed.
    pub fn remove_node(&mut self, node: &Node) {
        self.epoch += 1;
        self.index.remove(node.idx);
        if let Some(pos) = self.shapes.iter().position(|(s, _)| *s == node.total) {
            self.shapes[pos].1 -= 1;
            if self.shapes[pos].1 == 0 {
                self.shapes.swap_remove(pos);
            }
        }
    }

    /// A node stopped answering (its raylet crashed) while the GCS still counts it
    /// alive: it leaves the index, so nothing is placed there, but keeps its shape
    /// (feasibility does not change until the GCS marks it dead).
    pub fn unreachable(&mut self, node: &Node) {
        self.epoch += 1;
        self.index.remove(node.idx);
    }

    /// A node's available resources changed.
    #[inline]
    pub fn update_node(&mut self, node: &Node) {
        self.epoch += 1;
        self.index.update(node);
    }

    /// Whether the index and the shapes agree with `nodes` (for the invariant checks).
    /// A `String`: a broken invariant's diagnostic, not an error a caller handles.
    pub fn check_index(&self, nodes: &[Node]) -> Result<(), String> {
        self.index.check(nodes)?;
        let mut shapes: Vec<(ResVec, u32)> = Vec::new();
        for n in nodes.iter().filter(|n| n.is_alive()) {
            match shapes.iter_mut().find(|(s, _)| *s == n.total) {
                Some((_, c)) => *c += 1,
                None => shapes.push((n.total.clone(), 1)),
            }
        }
        let same = shapes.len() == self.shapes.len() && shapes.iter().all(|s| self.shapes.contains(s));
        if !same {
            return Err(format!("feasibility shapes {:?} != alive nodes' {:?}", self.shapes, shapes));
        }
        Ok(())
    }

    /// Whether some alive node could ever hold `req`.
    pub fn is_feasible(&self, req: &ResourceRequest) -> bool {
        self.shapes.iter().any(|(s, _)| s.fits(req))
    }

    /// Choose a node for a task or actor. `preferred` is the owner's local raylet;
    /// `locality` the node holding most of its argument bytes (DEFAULT tasks only).
    pub fn schedule<R: Rng>(
        &mut self,
        nodes: &[Node],
        req: &ResourceRequest,
        strategy: Strategy,
        preferred: NodeIdx,
        locality: Option<NodeIdx>,
        rng: &mut R,
    ) -> Decision {
        match strategy {
            Strategy::Default => self.hybrid(nodes, req, preferred, locality, rng),
            Strategy::Spread => self.spread(nodes, req),
            Strategy::NodeAffinity { node, soft } => {
                let target = nodes.get(node.index());
                match target {
                    Some(n) if n.is_alive() && n.total.fits(req) => {
                        if n.is_schedulable() && n.available.fits(req) {
                            Decision::Node(node)
                        } else {
                            Decision::Wait { only: Some(node) }
                        }
                    }
                    _ if soft => self.hybrid(nodes, req, preferred, None, rng),
                    _ => Decision::Unschedulable,
                }
            }
            // Bundles are resolved by the engine (it owns the reservations); a task that
            // reaches here has no bundle, so it is placed like DEFAULT.
            Strategy::PlacementGroup { .. } => self.hybrid(nodes, req, preferred, None, rng),
        }
    }

    /// Ray's DEFAULT policy: pack onto the preferred node while its critical utilization
    /// is below the spread threshold, otherwise pick at random among the top-k nodes
    /// ordered by (score, node order). CPU-only work tries nodes without GPUs first.
    fn hybrid<R: Rng>(
        &mut self,
        nodes: &[Node],
        req: &ResourceRequest,
        preferred: NodeIdx,
        locality: Option<NodeIdx>,
        rng: &mut R,
    ) -> Decision {
        if let Some(l) = locality {
            let n = &nodes[l.index()];
            if n.is_schedulable() && n.available.fits(req) {
                return Decision::Node(l);
            }
        }
        let needs_gpu = req.needs_gpu();
        // GPU work only fits GPU nodes; with avoid_gpu_nodes, CPU work tries nodes
        // without GPUs first.
        let passes: &[bool] = if needs_gpu { &[true] } else { &[false, true] };
        if !needs_gpu && !self.params.avoid_gpu_nodes {
            // One pass over both sets, merged by score.
            if let Some(n) = self.pick_top_k(nodes, req, preferred, None, rng) {
                return Decision::Node(n);
            }
        } else {
            for &gpu in passes {
                if let Some(n) = self.pick_top_k(nodes, req, preferred, Some(gpu), rng) {
                    return Decision::Node(n);
                }
            }
        }
        if self.is_feasible(req) {
            Decision::Wait { only: None }
        } else {
            Decision::Infeasible
        }
    }

    fn pick_top_k<R: Rng>(
        &mut self,
        nodes: &[Node],
        req: &ResourceRequest,
        preferred: NodeIdx,
        gpu_set: Option<bool>,
        rng: &mut R,
    ) -> Option<NodeIdx> {
        let set_len = self.index.len_of(gpu_set);
        if set_len == 0 {
            return None;
        }
        let epoch = self.epoch;
        if self.saturated.iter().any(|(r, g, e)| *e == epoch && *g == gpu_set && r == req) {
            return None;
        }
        if let Some(p) = nodes.get(preferred.index()) {
            let in_set = gpu_set.is_none_or(|g| index::has_gpu(p) == g);
            if in_set && p.is_schedulable() && p.available.fits(req) && self.index.is_below_threshold(preferred) {
                return Some(preferred);
            }
        }
        let k =
            ((self.params.top_k_fraction * set_len as f64) as usize).max(self.params.top_k_absolute as usize).max(1);
        // Draw the rank first and stop walking as soon as it is reached; if fewer than
        // k nodes qualify, a second uniform draw among those found keeps the choice
        // uniform over the available top-k without collecting all k every time.
        let rank = rng.random_range(0..k);
        // The common case answered from the index's counts: the same node the walk
        // below would reach, and the same draws.
        if let Some(gpu) = gpu_set {
            if let Some(fitting) = self.index.all_with_cpu_fit(gpu, req) {
                return match fitting {
                    0 => {
                        self.remember_saturated(req, gpu_set);
                        None
                    }
                    n if rank < n => self.index.nth_with_cpu(gpu, rank),
                    n => self.index.nth_with_cpu(gpu, rng.random_range(0..n)),
                };
            }
        }
        let needs_cpu = req.get(crate::model::ResourceId::CPU).0 > 0;
        self.candidates.clear();
        for (idx, cpu_full) in self.index.iter(gpu_set) {
            if cpu_full && needs_cpu {
                // Every node from here on has no CPU left.
                break;
            }
            if nodes[idx.index()].available.fits(req) {
                if self.candidates.len() == rank {
                    return Some(idx);
                }
                self.candidates.push(idx);
                if self.candidates.len() >= k {
                    break;
                }
            }
        }
        match self.candidates.len() {
            0 => {
                self.remember_saturated(req, gpu_set);
                None
            }
            c => Some(self.candidates[rng.random_range(0..c)]),
        }
    }

    /// No node of `gpu_set` has room for `req` now: say so at once until availability
    /// changes (answers from earlier epochs are dropped).
    fn remember_saturated(&mut self, req: &ResourceRequest, gpu_set: Option<bool>) {
        let epoch = self.epoch;
        self.saturated.retain(|(_, _, e)| *e == epoch);
        self.saturated.push((req.clone(), gpu_set, epoch));
    }

    /// SPREAD: round-robin over nodes that have the resources now.
    fn spread(&mut self, nodes: &[Node], req: &ResourceRequest) -> Decision {
        let epoch = self.epoch;
        if self.saturated.iter().any(|(r, g, e)| *e == epoch && g.is_none() && r == req) {
            return if self.is_feasible(req) { Decision::Wait { only: None } } else { Decision::Infeasible };
        }
        let n = nodes.len();
        for step in 0..n {
            let i = (self.spread_cursor + step) % n;
            let node = &nodes[i];
            if node.is_schedulable() && node.available.fits(req) {
                self.spread_cursor = (i + 1) % n;
                return Decision::Node(node.idx);
            }
        }
        self.remember_saturated(req, None);
        if self.is_feasible(req) {
            Decision::Wait { only: None }
        } else {
            Decision::Infeasible
        }
    }

    /// Place a placement group's bundles atomically (all or nothing).
    pub fn place_bundles(
        &self,
        nodes: &[Node],
        bundles: &[ResourceRequest],
        strategy: crate::model::PgStrategy,
    ) -> PgDecision {
        placement_group::place(self, nodes, bundles, strategy)
    }

    pub(crate) fn index(&self) -> &ScoreIndex {
        &self.index
    }
}

#[cfg(test)]
mod tests;
