//! An ordered index of alive nodes by hybrid-policy score.
//!
//! Nodes are grouped by (CPU full, score bucket), groups in that order, each group's
//! nodes in node order; one index for nodes with GPUs and one without. A node below the
//! spread threshold has bucket 0, so the walk from the front visits packed-but-not-busy
//! nodes in node order, then the rest from least to most utilized, exactly the order
//! Ray's policy sorts into. Nodes with no CPU left come last, so a walk for work that
//! needs CPU can stop at the first of them instead of visiting every full node of a
//! busy cluster.
//!
//! Each set also counts its nodes with free CPU and those with less than one CPU free.
//! When none has a fraction, a request for at most one CPU fits every node with free
//! CPU, so the policy's n-th fitting node is the set's n-th node with free CPU: found
//! group by group, without visiting (or loading) the nodes before it.
//!
//! Must never: hold a dead node, or a key other than the one its node's availability
//! gives now (`check` verifies both).

use crate::model::{Node, NodeIdx, ResourceId, ResourceRequest, RESOURCE_UNIT_SCALING};
use std::collections::btree_map::{BTreeMap, Entry};

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

/// Some CPU free, but less than one.
fn cpu_fractional(node: &Node) -> bool {
    let free = node.available.get(ResourceId::CPU).0;
    free > 0 && free < RESOURCE_UNIT_SCALING
}

/// Whether `req` asks for CPU only, at most one.
pub fn at_most_one_cpu(req: &ResourceRequest) -> bool {
    matches!(req.0.as_slice(), [(ResourceId::CPU, q)] if q.0 <= RESOURCE_UNIT_SCALING)
}

/// One node set (with GPUs, or without), in policy order.
#[derive(Default)]
struct ScoreSet {
    /// (CPU full, score bucket) → its nodes. No group is empty.
    groups: BTreeMap<(bool, u32), NodeBits>,
    len: usize,
    /// Nodes with free CPU (the groups before the first full one).
    with_cpu: usize,
    /// Nodes with some but less than one CPU free.
    fractional: usize,
    /// Emptied groups' bitsets, all zero, for the next new group: groups come and go
    /// as nodes' scores move, and a fresh one would be allocated and zeroed each time.
    spare: Vec<NodeBits>,
}

/// A group's node indices as a bitset, ascending when read: a node's score changes at
/// every lease it grants or returns, and a sorted list of a big group (every idle node
/// shares bucket 0) moved up to a few KB for each.
#[derive(Default)]
struct NodeBits {
    words: Vec<u64>,
    len: usize,
}

impl NodeBits {
    fn insert(&mut self, idx: u32) -> bool {
        let (w, bit) = ((idx / 64) as usize, 1u64 << (idx % 64));
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        let fresh = self.words[w] & bit == 0;
        self.words[w] |= bit;
        self.len += usize::from(fresh);
        fresh
    }

    fn remove(&mut self, idx: u32) -> bool {
        let (w, bit) = ((idx / 64) as usize, 1u64 << (idx % 64));
        let held = self.words.get(w).is_some_and(|word| word & bit != 0);
        if held {
            self.words[w] &= !bit;
            self.len -= 1;
        }
        held
    }

    fn contains(&self, idx: u32) -> bool {
        self.words.get((idx / 64) as usize).is_some_and(|word| word & (1u64 << (idx % 64)) != 0)
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    w as u32 * 64 + bit
                })
            })
        })
    }

    /// The `n`-th node (from 0), ascending.
    fn nth(&self, mut n: usize) -> Option<u32> {
        for (w, &word) in self.words.iter().enumerate() {
            let count = word.count_ones() as usize;
            if n < count {
                let mut rest = word;
                for _ in 0..n {
                    rest &= rest - 1;
                }
                return Some(w as u32 * 64 + rest.trailing_zeros());
            }
            n -= count;
        }
        None
    }
}

impl ScoreSet {
    fn insert(&mut self, (full, bucket, idx): Key, fractional: bool) {
        let spare = &mut self.spare;
        if self.groups.entry((full, bucket)).or_insert_with(|| spare.pop().unwrap_or_default()).insert(idx) {
            self.len += 1;
            self.with_cpu += usize::from(!full);
            self.fractional += usize::from(fractional);
        }
    }

    fn remove(&mut self, (full, bucket, idx): Key, fractional: bool) {
        if let Entry::Occupied(mut group) = self.groups.entry((full, bucket)) {
            if group.get_mut().remove(idx) {
                if group.get().len == 0 {
                    self.spare.push(group.remove());
                }
                self.len -= 1;
                self.with_cpu -= usize::from(!full);
                self.fractional -= usize::from(fractional);
            }
        }
    }

    fn contains(&self, (full, bucket, idx): Key) -> bool {
        self.groups.get(&(full, bucket)).is_some_and(|nodes| nodes.contains(idx))
    }

    fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        self.groups.iter().flat_map(|(&(full, bucket), nodes)| nodes.iter().map(move |i| (full, bucket, i)))
    }

    /// The `n`-th node (from 0) with free CPU, in policy order.
    fn nth_with_cpu(&self, mut n: usize) -> Option<u32> {
        for (&(full, _), nodes) in &self.groups {
            if full {
                break;
            }
            if n < nodes.len {
                return nodes.nth(n);
            }
            n -= nodes.len;
        }
        None
    }
}

pub struct ScoreIndex {
    threshold: f64,
    cpu_nodes: ScoreSet,
    gpu_nodes: ScoreSet,
    /// Per node index: its key, its set (has GPU) and whether its free CPU is a
    /// fraction; `None` when the node is not in the index.
    keys: Vec<Option<(Key, bool, bool)>>,
}

impl ScoreIndex {
    pub fn new(threshold: f64) -> ScoreIndex {
        ScoreIndex { threshold, cpu_nodes: ScoreSet::default(), gpu_nodes: ScoreSet::default(), keys: Vec::new() }
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

    fn entry(&self, node: &Node) -> (Key, bool, bool) {
        (self.key(node), has_gpu(node), cpu_fractional(node))
    }

    fn set(&mut self, gpu: bool) -> &mut ScoreSet {
        if gpu {
            &mut self.gpu_nodes
        } else {
            &mut self.cpu_nodes
        }
    }

    fn set_ref(&self, gpu: bool) -> &ScoreSet {
        if gpu {
            &self.gpu_nodes
        } else {
            &self.cpu_nodes
        }
    }

    pub fn insert(&mut self, node: &Node) {
        let i = node.idx.index();
        if self.keys.len() <= i {
            self.keys.resize(i + 1, None);
        }
        if !node.is_schedulable() || self.keys[i].is_some() {
            return;
        }
        let (key, gpu, fractional) = self.entry(node);
        self.set(gpu).insert(key, fractional);
        self.keys[i] = Some((key, gpu, fractional));
    }

    pub fn remove(&mut self, idx: NodeIdx) {
        if let Some(Some((key, gpu, fractional))) = self.keys.get(idx.index()).copied() {
            self.set(gpu).remove(key, fractional);
            self.keys[idx.index()] = None;
        }
    }

    #[inline]
    pub fn update(&mut self, node: &Node) {
        let i = node.idx.index();
        let Some(Some(old)) = self.keys.get(i).copied() else { return };
        let new = self.entry(node);
        if new != old {
            let set = self.set(old.1);
            set.remove(old.0, old.2);
            set.insert(new.0, new.2);
            self.keys[i] = Some(new);
        }
    }

    /// Whether the index holds exactly the schedulable nodes, each under the key its current
    /// availability gives (for the invariant checks; walks every node).
    /// A `String`: the diagnostic of a broken invariant, for a failing test to print, not
    /// an error a caller handles.
    pub fn check(&self, nodes: &[Node]) -> Result<(), String> {
        let mut indexed = 0;
        for n in nodes {
            let held = self.keys.get(n.idx.index()).copied().flatten();
            let want = n.is_schedulable().then(|| self.entry(n));
            if held != want {
                return Err(format!("node {}: index holds {held:?}, its availability gives {want:?}", n.idx.0));
            }
            if let Some((key, gpu, _)) = held {
                indexed += 1;
                if !self.set_ref(gpu).contains(key) {
                    return Err(format!("node {}: key {key:?} missing from its set", n.idx.0));
                }
            }
        }
        if indexed != self.len() {
            return Err(format!("index has {} entries for {indexed} alive nodes", self.len()));
        }
        for (name, set) in [("CPU-only", &self.cpu_nodes), ("GPU", &self.gpu_nodes)] {
            let held = self.keys.iter().flatten().filter(|(_, gpu, _)| *gpu == (name == "GPU"));
            let (mut with_cpu, mut fractional, mut len) = (0, 0, 0);
            for (key, _, frac) in held {
                len += 1;
                with_cpu += usize::from(!key.0);
                fractional += usize::from(*frac);
            }
            if (set.len, set.with_cpu, set.fractional) != (len, with_cpu, fractional) {
                return Err(format!(
                    "{name} set counts (nodes, with CPU, fractional) {:?} != {:?}",
                    (set.len, set.with_cpu, set.fractional),
                    (len, with_cpu, fractional)
                ));
            }
        }
        Ok(())
    }

    pub fn is_below_threshold(&self, idx: NodeIdx) -> bool {
        matches!(self.keys.get(idx.index()), Some(Some(((_, 0, _), _, _))))
    }

    pub fn len(&self) -> usize {
        self.cpu_nodes.len + self.gpu_nodes.len
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len_of(&self, gpu: Option<bool>) -> usize {
        match gpu {
            Some(gpu) => self.set_ref(gpu).len,
            None => self.len(),
        }
    }

    /// When every node of the set with free CPU fits `req`, the number of them; `None`
    /// when that is not known without looking at each node.
    pub fn all_with_cpu_fit(&self, gpu: bool, req: &ResourceRequest) -> Option<usize> {
        let set = self.set_ref(gpu);
        (set.fractional == 0 && at_most_one_cpu(req)).then_some(set.with_cpu)
    }

    /// The `n`-th node (from 0) of the set with free CPU, in policy order.
    pub fn nth_with_cpu(&self, gpu: bool, n: usize) -> Option<NodeIdx> {
        self.set_ref(gpu).nth_with_cpu(n).map(NodeIdx)
    }

    /// Nodes in policy order: by score bucket, then node order; nodes without free CPU
    /// last. `None` merges both sets. Yields (node, has no CPU available).
    pub fn iter(&self, gpu: Option<bool>) -> Box<dyn Iterator<Item = (NodeIdx, bool)> + '_> {
        match gpu {
            Some(gpu) => Box::new(self.set_ref(gpu).keys().map(|(f, _, i)| (NodeIdx(i), f))),
            None => Box::new(MergeByKey { a: self.cpu_nodes.keys().peekable(), b: self.gpu_nodes.keys().peekable() }),
        }
    }
}

struct MergeByKey<A: Iterator<Item = Key>, B: Iterator<Item = Key>> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<A: Iterator<Item = Key>, B: Iterator<Item = Key>> Iterator for MergeByKey<A, B> {
    type Item = (NodeIdx, bool);
    fn next(&mut self) -> Option<(NodeIdx, bool)> {
        let take_a = match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) => x <= y,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let item = if take_a { self.a.next() } else { self.b.next() };
        item.map(|(f, _, i)| (NodeIdx(i), f))
    }
}

#[cfg(test)]
mod tests {
    use super::NodeBits;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// A group's bitset reads as the sorted set of its nodes: the policy's order
        /// within a group is node order, and its n-th node is the set's n-th.
        #[test]
        fn a_groups_bits_read_as_its_sorted_nodes(ops in prop::collection::vec((any::<bool>(), 0u32..3000), 1..400)) {
            let (mut bits, mut set) = (NodeBits::default(), BTreeSet::new());
            for (add, idx) in ops {
                if add {
                    prop_assert_eq!(bits.insert(idx), set.insert(idx));
                } else {
                    prop_assert_eq!(bits.remove(idx), set.remove(&idx));
                }
                prop_assert_eq!(bits.len, set.len());
                prop_assert_eq!(bits.contains(idx), set.contains(&idx));
            }
            prop_assert_eq!(bits.iter().collect::<Vec<_>>(), set.iter().copied().collect::<Vec<_>>());
            for n in 0..=set.len() {
                prop_assert_eq!(bits.nth(n), set.iter().nth(n).copied());
            }
        }
    }
}
