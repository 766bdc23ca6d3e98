//! Where each field of a YAML document sits: a map from dotted field path
//! (`cluster.node_types[1].cpu`) to the line and column of its key and its value.
//!
//! Owns: turning any field path (from serde or from semantic validation) into a
//! position. serde_yaml forgets positions inside buffered values (internally tagged
//! enums), so positions come from a separate pass with yaml-rust2's event parser,
//! whose markers are exact. Must never: fail; a document it cannot fully parse still
//! yields the positions seen before the error.

use std::collections::{HashMap, HashSet};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
    index: usize,
}

impl Pos {
    fn from_marker(m: Marker) -> Pos {
        // yaml-rust2 lines are 1-based, columns 0-based.
        Pos { line: m.line(), column: m.col() + 1, index: m.index() }
    }
}

/// The child path `parent.key` (or `key` at the root).
pub fn join_key(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// The child path `parent[index]`.
pub fn join_index(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// Concatenate a path and a path relative to it (`a.b` + `c[0].d`).
pub fn join_path(parent: &str, rel: &str) -> String {
    if rel.is_empty() {
        parent.to_string()
    } else if parent.is_empty() || rel.starts_with('[') {
        format!("{parent}{rel}")
    } else {
        format!("{parent}.{rel}")
    }
}

/// The enclosing path: `a.b[2]` → `a.b` → `a` → ``.
pub fn parent_path(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    if path.ends_with(']') {
        if let Some(i) = path.rfind('[') {
            return Some(&path[..i]);
        }
    }
    Some(path.rfind('.').map_or("", |i| &path[..i]))
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    key: Option<Pos>,
    value: Option<Pos>,
}

/// A path's identity: FNV-1a over its text, extendable by a child's segment, so that no
/// node's full path is ever built. Keeping a `String` per node made locating an error
/// quadratic in memory (each node held every ancestor's keys): a 199 KB body took 2.5 GB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct PathId(u64);

impl PathId {
    const ROOT: PathId = PathId(0xcbf2_9ce4_8422_2325);

    fn extend(self, bytes: &[u8]) -> PathId {
        PathId(bytes.iter().fold(self.0, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)))
    }

    /// The id of `join_key(self's path, key)`.
    fn key(self, key: &str) -> PathId {
        if self == PathId::ROOT {
            PathId::ROOT.extend(key.as_bytes())
        } else {
            self.extend(b".").extend(key.as_bytes())
        }
    }

    /// The id of `join_index(self's path, index)`.
    fn index(self, index: usize) -> PathId {
        self.extend(format!("[{index}]").as_bytes())
    }

    fn of(path: &str) -> PathId {
        PathId::ROOT.extend(path.as_bytes())
    }
}

/// Duplicate keys recorded at most; only the first is reported.
const MAX_DUPLICATES: usize = 16;

#[derive(Debug, Default)]
pub struct PosMap {
    entries: HashMap<PathId, Entry>,
    duplicates: Vec<(String, Pos, Pos)>,
    error_path: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Key,
    Value,
}

impl PosMap {
    pub fn build(text: &str) -> PosMap {
        let mut b = Builder { map: PosMap::default(), stack: Vec::new() };
        let result = Parser::new_from_str(text).load(&mut b, false);
        if result.is_err() {
            b.map.error_path = Some(b.current_path());
        }
        b.map
    }

    pub fn locate(&self, path: &str, target: Target) -> (usize, usize) {
        if let Some(e) = self.entries.get(&PathId::of(path)) {
            let pos = match target {
                Target::Key => e.key.or(e.value),
                Target::Value => e.value.or(e.key),
            };
            if let Some(p) = pos {
                return (p.line, p.column);
            }
        }
        let mut cur = path;
        while let Some(parent) = parent_path(cur) {
            if let Some(p) = self.entries.get(&PathId::of(parent)).and_then(|e| e.key.or(e.value)) {
                return (p.line, p.column);
            }
            cur = parent;
        }
        (1, 1)
    }

    #[cfg(test)]
    pub fn contains(&self, path: &str) -> bool {
        self.entries.contains_key(&PathId::of(path))
    }

    pub fn duplicates(&self) -> &[(String, Pos, Pos)] {
        &self.duplicates
    }

    pub fn error_path(&self) -> Option<&str> {
        self.error_path.as_deref()
    }
}

/// One step of a path: a key of a mapping or an index of a sequence.
enum Segment {
    Root,
    Key(String),
    Index(usize),
}

/// An open container: its own segment and its path's id (the full path is only ever
/// spelled out from the stack, for an error).
enum Frame {
    Map { segment: Segment, id: PathId, pending_key: Option<String>, seen: HashSet<String>, first: bool },
    Seq { segment: Segment, id: PathId, next: usize },
    Skip { depth: usize },
}

struct Builder {
    map: PosMap,
    stack: Vec<Frame>,
}

impl Builder {
    /// The path of the innermost open container, spelled out.
    fn container_path(&self) -> String {
        let mut path = String::new();
        for frame in &self.stack {
            match frame {
                Frame::Map { segment: Segment::Key(k), .. } | Frame::Seq { segment: Segment::Key(k), .. } => {
                    path = join_key(&path, k)
                }
                Frame::Map { segment: Segment::Index(i), .. } | Frame::Seq { segment: Segment::Index(i), .. } => {
                    path = join_index(&path, *i)
                }
                _ => {}
            }
        }
        path
    }

    fn current_path(&self) -> String {
        match self.stack.last() {
            Some(Frame::Map { pending_key: Some(k), .. }) => join_key(&self.container_path(), k),
            _ => self.container_path(),
        }
    }

    fn widen(&mut self, id: PathId, pos: Pos) {
        let e = self.map.entries.entry(id).or_default();
        match e.value {
            Some(v) if v.index <= pos.index => {}
            _ => e.value = Some(pos),
        }
    }

    /// The segment and id of the value starting at `pos`, recording its position.
    fn value_path(&mut self, pos: Pos) -> (Segment, PathId) {
        let (segment, id, parent, first) = match self.stack.last_mut() {
            None => (Segment::Root, PathId::ROOT, None, false),
            Some(Frame::Map { id, pending_key, .. }) => {
                let key = pending_key.take().unwrap_or_default();
                let child = id.key(&key);
                (Segment::Key(key), child, None, false)
            }
            Some(Frame::Seq { id, next, .. }) => {
                let child = id.index(*next);
                let segment = Segment::Index(*next);
                *next += 1;
                (segment, child, Some(*id), *next == 1)
            }
            Some(Frame::Skip { .. }) => unreachable!("skip frames are handled before"),
        };
        if first {
            if let Some(parent) = parent {
                self.widen(parent, pos);
            }
        }
        self.widen(id, pos);
        (segment, id)
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let pos = Pos::from_marker(mark);
        if let Some(Frame::Skip { depth }) = self.stack.last_mut() {
            match ev {
                Event::MappingStart(..) | Event::SequenceStart(..) => *depth += 1,
                Event::MappingEnd | Event::SequenceEnd => {
                    *depth -= 1;
                    if *depth == 0 {
                        self.stack.pop();
                        if let Some(Frame::Map { pending_key, .. }) = self.stack.last_mut() {
                            *pending_key = Some("?".into());
                        }
                    }
                }
                _ => {}
            }
            return;
        }
        if let Some(Frame::Map { id, pending_key: pending @ None, seen, first, .. }) = self.stack.last_mut() {
            match &ev {
                Event::Scalar(key, ..) => {
                    let (parent, full) = (*id, id.key(key));
                    let was_first = std::mem::replace(first, false);
                    let duplicate = !seen.insert(key.clone());
                    *pending = Some(key.clone());
                    if duplicate && self.map.duplicates.len() < MAX_DUPLICATES {
                        let prev = self.map.entries.get(&full).and_then(|e| e.key).unwrap_or(pos);
                        self.map.duplicates.push((self.current_path(), prev, pos));
                    }
                    if was_first {
                        self.widen(parent, pos);
                    }
                    let e = self.map.entries.entry(full).or_default();
                    e.key.get_or_insert(pos);
                    return;
                }
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    *first = false;
                    self.stack.push(Frame::Skip { depth: 1 });
                    return;
                }
                _ => {}
            }
        }
        match ev {
            Event::Scalar(..) | Event::Alias(..) => {
                self.value_path(pos);
            }
            Event::MappingStart(..) => {
                let (segment, id) = self.value_path(pos);
                self.stack.push(Frame::Map { segment, id, pending_key: None, seen: HashSet::new(), first: true });
            }
            Event::SequenceStart(..) => {
                let (segment, id) = self.value_path(pos);
                self.stack.push(Frame::Seq { segment, id, next: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
cluster:
  head: {ip: 10.0.0.1, cpu: 8}
  node_types:
    - name: cpu
      cpu: 16
    -
      name: gpu
      resources:
        accelerator: 1
workloads: []
";

    #[test]
    fn keys_and_values_are_located_exactly() {
        let m = PosMap::build(DOC);
        assert_eq!(m.locate("cluster.head.cpu", Target::Key), (2, 24));
        assert_eq!(m.locate("cluster.head.cpu", Target::Value), (2, 29));
        assert_eq!(m.locate("cluster.node_types[0].cpu", Target::Value), (5, 12));
        assert_eq!(m.locate("cluster.node_types[1].name", Target::Key), (7, 7));
        assert_eq!(m.locate("cluster.node_types[1].resources.accelerator", Target::Key), (9, 9));
        assert_eq!(m.locate("workloads", Target::Value), (10, 12));
    }

    #[test]
    fn collections_start_at_their_first_child() {
        let m = PosMap::build(DOC);
        assert_eq!(m.locate("cluster.node_types[0]", Target::Value), (4, 7));
        assert_eq!(m.locate("cluster.node_types", Target::Value), (4, 5));
        assert_eq!(m.locate("cluster", Target::Value), (2, 3));
        assert_eq!(m.locate("cluster.head", Target::Value), (2, 9));
    }

    #[test]
    fn absent_fields_fall_back_to_the_nearest_written_ancestor() {
        let m = PosMap::build(DOC);
        assert!(!m.contains("cluster.node_types[1].memory"));
        assert_eq!(m.locate("cluster.node_types[1].memory", Target::Value), (7, 7));
        assert_eq!(m.locate("scheduler.top_k_fraction", Target::Value), (1, 1));
    }

    #[test]
    fn duplicate_keys_and_parse_failures_are_recorded() {
        let m = PosMap::build("a: 1\nb:\n  c: 2\n  c: 3\n");
        assert_eq!(m.duplicates().len(), 1);
        let (path, first, second) = &m.duplicates()[0];
        assert_eq!((path.as_str(), first.line, second.line, second.column), ("b.c", 3, 4, 3));
        let m = PosMap::build("a:\n  b: [1, 2\n");
        assert_eq!(m.error_path(), Some("a.b"));
    }

    #[test]
    fn paths_join_and_split() {
        assert_eq!(join_path("workloads[0]", "templates[1].workload"), "workloads[0].templates[1].workload");
        assert_eq!(join_path("a", "[2]"), "a[2]");
        assert_eq!(parent_path("a.b[2]"), Some("a.b"));
        assert_eq!(parent_path("a"), Some(""));
        assert_eq!(parent_path(""), None);
    }
}
