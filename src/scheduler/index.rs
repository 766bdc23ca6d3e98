//! An ordered index of alive nodes by hybrid-policy score.
//!
//! Nodes sit in a `BTreeSet` keyed by (CPU full, score bucket, node index), one set for
//! nodes with GPUs and one without. A node below the spread threshold has bucket 0, so
//! the walk from the front visits packed-but-not-busy nodes in node order, then the
//! rest from least to most utilized, exactly the order Ray's policy sorts into. Nodes
//! with no CPU left come last, so a walk for work that needs CPU can stop at the first
//! of them instead of visiting every full node of a busy cluster.

use crate::model::{Node, NodeIdx, ResourceId};
use std::collections::BTreeSet;

/// Critical-resource utilization, as Ray's `CalculateCriticalResourceUtilization`:
/// the highest of CPU, memory and object-store-memory utilization.
pub fn critical_utilization(node: &Node) -> f64 {
    let mut worst: f64 = 0.0;
    for r in [ResourceId::CPU, ResourceId::MEMORY, ResourceId::OBJECT_STORE_MEMORY] {
        let total = node.total.get(r).0;
        if total > 0 {
            let used = total - node.available.get(r).0;
            worst = worst.max(used as f64 / total as f64);
        }
    }
    worst
}

pub fn has_gpu(node: &Node) -> bool {
    node.total.get(ResourceId::GPU).0 > 0
}

/// (no CPU available, score bucket, node index)
type Key = (bool, u32, u32);

fn cpu_full(node: &Node) -> bool {
    node.available.get(ResourceId::CPU).0 <= 0
}

pub struct ScoreIndex {
    threshold: f64,
    cpu_nodes: BTreeSet<Key>,
    gpu_nodes: BTreeSet<Key>,
    /// Current key per node index and its set, `None` when the node is not in the index.
    keys: Vec<Option<(Key, bool)>>,
}

impl ScoreIndex {
    pub fn new(threshold: f64) -> ScoreIndex {
        ScoreIndex { threshold, cpu_nodes: BTreeSet::new(), gpu_nodes: BTreeSet::new(), keys: Vec::new() }
    }

    fn bucket(&self, node: &Node) -> u32 {
        let u = critical_utilization(node);
        if u < self.threshold {
            0
        } else {
            // Resolution of 1/100,000: finer than any fixed-point step that matters.
            1 + (u * 100_000.0) as u32
        }
    }

    fn key(&self, node: &Node) -> Key {
        (cpu_full(node), self.bucket(node), node.idx.0)
    }

    fn set(&mut self, gpu: bool) -> &mut BTreeSet<Key> {
        if gpu {
            &mut self.gpu_nodes
        } else {
            &mut self.cpu_nodes
        }
    }

    pub fn insert(&mut self, node: &Node) {
        let i = node.idx.index();
        if self.keys.len() <= i {
            self.keys.resize(i + 1, None);
        }
        if !node.is_alive() || self.keys[i].is_some() {
            return;
        }
        let key = self.key(node);
        let gpu = has_gpu(node);
        self.set(gpu).insert(key);
        self.keys[i] = Some((key, gpu));
    }

    pub fn remove(&mut self, idx: NodeIdx) {
        if let Some(Some((key, gpu))) = self.keys.get(idx.index()).copied() {
            self.set(gpu).remove(&key);
            self.keys[idx.index()] = None;
        }
    }

    #[inline]
    pub fn update(&mut self, node: &Node) {
        let i = node.idx.index();
        let Some(Some((old, gpu))) = self.keys.get(i).copied() else { return };
        let new = self.key(node);
        if new != old {
            let set = self.set(gpu);
            set.remove(&old);
            set.insert(new);
            self.keys[i] = Some((new, gpu));
        }
    }

    /// Whether the index holds exactly the alive nodes, each under the key its current
    /// availability gives (for the invariant checks; walks every node).
    pub fn check(&self, nodes: &[Node]) -> Result<(), String> {
        let mut indexed = 0;
        for n in nodes {
            let held = self.keys.get(n.idx.index()).copied().flatten();
            let want = n.is_alive().then(|| (self.key(n), has_gpu(n)));
            if held != want {
                return Err(format!("node {}: index holds {held:?}, its availability gives {want:?}", n.idx.0));
            }
            if let Some((key, gpu)) = held {
                indexed += 1;
                let set = if gpu { &self.gpu_nodes } else { &self.cpu_nodes };
                if !set.contains(&key) {
                    return Err(format!("node {}: key {key:?} missing from its set", n.idx.0));
                }
            }
        }
        if indexed != self.len() {
            return Err(format!("index has {} entries for {indexed} alive nodes", self.len()));
        }
        Ok(())
    }

    pub fn is_below_threshold(&self, idx: NodeIdx) -> bool {
        matches!(self.keys.get(idx.index()), Some(Some(((_, 0, _), _))))
    }

    pub fn len(&self) -> usize {
        self.cpu_nodes.len() + self.gpu_nodes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len_of(&self, gpu: Option<bool>) -> usize {
        match gpu {
            Some(true) => self.gpu_nodes.len(),
            Some(false) => self.cpu_nodes.len(),
            None => self.len(),
        }
    }

    /// Nodes in policy order: by score bucket, then node order; nodes without free CPU
    /// last. `None` merges both sets. Yields (node, has no CPU available).
    pub fn iter(&self, gpu: Option<bool>) -> Box<dyn Iterator<Item = (NodeIdx, bool)> + '_> {
        match gpu {
            Some(true) => Box::new(self.gpu_nodes.iter().map(|&(f, _, i)| (NodeIdx(i), f))),
            Some(false) => Box::new(self.cpu_nodes.iter().map(|&(f, _, i)| (NodeIdx(i), f))),
            None => Box::new(MergeByKey { a: self.cpu_nodes.iter().peekable(), b: self.gpu_nodes.iter().peekable() }),
        }
    }
}

struct MergeByKey<'a> {
    a: std::iter::Peekable<std::collections::btree_set::Iter<'a, Key>>,
    b: std::iter::Peekable<std::collections::btree_set::Iter<'a, Key>>,
}

impl Iterator for MergeByKey<'_> {
    type Item = (NodeIdx, bool);
    fn next(&mut self) -> Option<(NodeIdx, bool)> {
        let take_a = match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) => x <= y,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let item = if take_a { self.a.next() } else { self.b.next() };
        item.map(|&(f, _, i)| (NodeIdx(i), f))
    }
}
