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

/// Positions of every key and value in a document's first YAML document.
#[derive(Debug, Default)]
pub struct PosMap {
    entries: HashMap<String, Entry>,
    /// Keys that appear twice in one mapping: (path, first, second).
    duplicates: Vec<(String, Pos, Pos)>,
    /// The field being read when the parser gave up, if it did.
    error_path: Option<String>,
}

/// Which end of a `key: value` pair an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The key itself (unknown or duplicate keys).
    Key,
    /// The value (wrong type, out of range).
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

    /// The position of `path`, or of its nearest ancestor present in the document
    /// (a field left at its default is reported where its parent is written).
    pub fn locate(&self, path: &str, target: Target) -> (usize, usize) {
        if let Some(e) = self.entries.get(path) {
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
            if let Some(p) = self.entries.get(parent).and_then(|e| e.key.or(e.value)) {
                return (p.line, p.column);
            }
            cur = parent;
        }
        (1, 1)
    }

    /// Whether the document writes `path` (as opposed to leaving it to a default).
    #[cfg(test)]
    pub fn contains(&self, path: &str) -> bool {
        self.entries.contains_key(path)
    }

    pub fn duplicates(&self) -> &[(String, Pos, Pos)] {
        &self.duplicates
    }

    pub fn error_path(&self) -> Option<&str> {
        self.error_path.as_deref()
    }
}

enum Frame {
    Map {
        path: String,
        pending_key: Option<String>,
        seen: HashSet<String>,
        first: bool,
    },
    Seq {
        path: String,
        next: usize,
    },
    /// Inside a non-scalar mapping key, which has no field path.
    Skip {
        depth: usize,
    },
}

struct Builder {
    map: PosMap,
    stack: Vec<Frame>,
}

impl Builder {
    fn current_path(&self) -> String {
        match self.stack.last() {
            Some(Frame::Map { path, pending_key: Some(k), .. }) => join_key(path, k),
            Some(Frame::Map { path, .. }) | Some(Frame::Seq { path, .. }) => path.clone(),
            _ => String::new(),
        }
    }

    fn widen(&mut self, path: &str, pos: Pos) {
        // A block collection's own marker can sit after its first key; the first
        // child is where a reader sees it start.
        let e = self.map.entries.entry(path.to_string()).or_default();
        match e.value {
            Some(v) if v.index <= pos.index => {}
            _ => e.value = Some(pos),
        }
    }

    /// The path of the value this event starts, advancing the parent's state.
    fn value_path(&mut self, pos: Pos) -> String {
        let (path, parent, first) = match self.stack.last_mut() {
            None => (String::new(), None, false),
            Some(Frame::Map { path, pending_key, .. }) => {
                (join_key(path, &pending_key.take().unwrap_or_default()), None, false)
            }
            Some(Frame::Seq { path, next }) => {
                let p = join_index(path, *next);
                *next += 1;
                (p, Some(path.clone()), *next == 1)
            }
            Some(Frame::Skip { .. }) => unreachable!("skip frames are handled before"),
        };
        if first {
            if let Some(parent) = parent {
                self.widen(&parent, pos);
            }
        }
        self.widen(&path, pos);
        path
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
        // Is this event a mapping key?
        if let Some(Frame::Map { path, pending_key: pending @ None, seen, first }) = self.stack.last_mut() {
            match &ev {
                Event::Scalar(key, ..) => {
                    let full = join_key(path, key);
                    let parent = path.clone();
                    let was_first = std::mem::replace(first, false);
                    if !seen.insert(key.clone()) {
                        let prev = self.map.entries.get(&full).and_then(|e| e.key).unwrap_or(pos);
                        self.map.duplicates.push((full.clone(), prev, pos));
                    }
                    *pending = Some(key.clone());
                    if was_first {
                        self.widen(&parent, pos);
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
                let path = self.value_path(pos);
                self.stack.push(Frame::Map { path, pending_key: None, seen: HashSet::new(), first: true });
            }
            Event::SequenceStart(..) => {
                let path = self.value_path(pos);
                self.stack.push(Frame::Seq { path, next: 0 });
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
