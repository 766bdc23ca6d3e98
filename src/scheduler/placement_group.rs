//! Decision-group bundle placement: PACK, SPREAD, STRICT_PACK, STRICT_SPREAD.
//!
//! Decision is atomic (gang): bundles are assigned against a scratch copy of node
//! availability and either all fit or none is reserved.

use super::Scheduler;
use crate::model::{Node, NodeIdx, PgStrategy, ResVec, ResourceRequest};
use rustc_hash::FxHashMap;

/// The scheduler's answer for a placement group's bundles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PgDecision {
    /// One node per bundle, in bundle order.
    Placed(Vec<NodeIdx>),
    /// Could fit on the current nodes once resources free up.
    Wait,
    /// Can never fit on the alive nodes (e.g. STRICT_SPREAD with too few nodes).
    Infeasible,
}

struct Scratch<'a> {
    nodes: &'a [Node],
    avail: FxHashMap<NodeIdx, ResVec>,
}

impl<'a> Scratch<'a> {
    fn fits(&self, n: NodeIdx, req: &ResourceRequest) -> bool {
        match self.avail.get(&n) {
            Some(v) => v.fits(req),
            None => self.nodes[n.index()].available.fits(req),
        }
    }
    fn take(&mut self, n: NodeIdx, req: &ResourceRequest) {
        let nodes = self.nodes;
        self.avail.entry(n).or_insert_with(|| (*nodes[n.index()].available).clone()).subtract(req);
    }
}

pub(super) fn place(s: &Scheduler, nodes: &[Node], bundles: &[ResourceRequest], strategy: PgStrategy) -> PgDecision {
    if bundles.is_empty() {
        return PgDecision::Placed(Vec::new());
    }
    // Policy order (least utilized first) over all alive nodes.
    let order: Vec<NodeIdx> = s.index().iter(None).map(|(n, _)| n).collect();
    let now = assign(nodes, &order, bundles, strategy, |n, r, sc| sc.fits(n, r));
    if let Some(p) = now {
        return PgDecision::Placed(p);
    }
    // Would it fit an empty cluster of the same nodes? Then wait, else it is infeasible.
    let totals: Vec<Node> = nodes
        .iter()
        .map(|n| {
            let mut c = n.clone();
            c.available = crate::model::Available::new(c.total.clone());
            c
        })
        .collect();
    match assign(&totals, &order, bundles, strategy, |n, r, sc| sc.fits(n, r)) {
        Some(_) => PgDecision::Wait,
        None => PgDecision::Infeasible,
    }
}

fn assign(
    nodes: &[Node],
    order: &[NodeIdx],
    bundles: &[ResourceRequest],
    strategy: PgStrategy,
    fits: impl Fn(NodeIdx, &ResourceRequest, &Scratch) -> bool,
) -> Option<Vec<NodeIdx>> {
    let mut sc = Scratch { nodes, avail: FxHashMap::default() };
    let mut out = Vec::with_capacity(bundles.len());
    match strategy {
        PgStrategy::StrictPack => {
            let total = bundles.iter().skip(1).fold(bundles[0].clone(), |acc, b| acc.plus(b));
            let n = order.iter().copied().find(|&n| fits(n, &total, &sc))?;
            Some(vec![n; bundles.len()])
        }
        PgStrategy::Pack => {
            // Whole group on one node if possible, else fill nodes in order.
            let total = bundles.iter().skip(1).fold(bundles[0].clone(), |acc, b| acc.plus(b));
            if let Some(n) = order.iter().copied().find(|&n| fits(n, &total, &sc)) {
                return Some(vec![n; bundles.len()]);
            }
            for b in bundles {
                let used_first = out.iter().copied().find(|&n| fits(n, b, &sc));
                let n = used_first.or_else(|| order.iter().copied().find(|&n| fits(n, b, &sc)))?;
                sc.take(n, b);
                out.push(n);
            }
            Some(out)
        }
        PgStrategy::StrictSpread | PgStrategy::Spread => {
            let strict = strategy == PgStrategy::StrictSpread;
            for b in bundles {
                let fresh = order.iter().copied().find(|&n| !out.contains(&n) && fits(n, b, &sc));
                let n = match fresh {
                    Some(n) => n,
                    None if !strict => order.iter().copied().find(|&n| fits(n, b, &sc))?,
                    None => return None,
                };
                sc.take(n, b);
                out.push(n);
            }
            Some(out)
        }
    }
}
