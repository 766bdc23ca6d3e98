//! Compatibility with Ant's `flow-insight` 1.1.1: its query answers' JSON shapes
//! (`CallGraphData`, the flame span tree, `PhysicalViewData`, and what it answers for a
//! flow it does not know), and its ingest record types (`call_submit`, `call_begin`,
//! `call_end`, `service_physical_stats_add`, `node_physical_stats_add`) for
//! `rayscope flow --emit`.
//!
//! Owns: naming as Ant does (services = actor class + instance id, methods numbered
//! `methodN` and functions `functionN` in order of first submit, the driver `_main`,
//! timestamps in integer ms, durations in float seconds).
//! Must never: read anything but the job's records and the node views it is given.

use super::spans::Spans;
use crate::snapshot::flow::{actor_hex, span_hex, JobRecord, Rec, Target, TargetKind};
use crate::snapshot::NodeView;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

fn ms(us: u64) -> u64 {
    us / 1000
}

// The answers are typed, not `serde_json::Value` trees: at the 20,000-actor job they are
// megabytes of small objects, and a tree of maps cost most of a second to build.

#[derive(Serialize, Clone)]
struct Service<'a> {
    service_name: &'a str,
    instance_id: String,
}

/// Ant's service of a target (`None` for functions and the driver).
fn service(t: &Target) -> Option<Service<'_>> {
    match (t.kind, t.actor) {
        (TargetKind::Method, Some(a)) => Some(Service { service_name: &t.class, instance_id: actor_hex(a, t.job) }),
        _ => None,
    }
}

#[derive(Serialize)]
struct Name<'a> {
    name: &'a str,
}

/// A method or function of the call graph.
#[derive(Serialize)]
struct Entry<'a> {
    id: String,
    method: Name<'a>,
    service: Option<Service<'a>>,
}

#[derive(Serialize)]
struct CallFlow<'a> {
    source_id: &'a str,
    target_id: &'a str,
    count: u64,
    start_time: u64,
}

#[derive(Serialize)]
struct DataFlow<'a> {
    source_id: &'a str,
    target_id: &'a str,
    argpos: i64,
    duration: f64,
    size: f64,
    timestamp: u64,
}

#[derive(Serialize)]
struct CallGraph<'a> {
    services: Vec<Option<Service<'a>>>,
    methods: Vec<Entry<'a>>,
    functions: Vec<Entry<'a>>,
    #[serde(rename = "callFlows")]
    call_flows: Vec<CallFlow<'a>>,
    #[serde(rename = "dataFlows")]
    data_flows: Vec<DataFlow<'a>>,
}

/// The driver, Ant's implicit root.
fn main_entry() -> Entry<'static> {
    Entry { id: "_main".to_string(), method: Name { name: "_main" }, service: None }
}

/// (service instance or "", method or function name): Ant's method key.
fn key(t: &Target) -> (String, String) {
    match (t.kind, t.actor) {
        (TargetKind::Method, Some(a)) => (actor_hex(a, t.job), t.method.clone()),
        _ => (String::new(), t.class.clone()),
    }
}

/// Ant's ids for a job's targets, given in order of first appearance (`methodN`,
/// `functionN`, `_main`), with the entries they list.
#[derive(Default)]
struct Registry<'a> {
    /// Ant's method key → index into `names`.
    by_key: BTreeMap<(String, String), usize>,
    /// Recorded target → index into `names`: a target's key is built once, not per call.
    by_target: Vec<Option<usize>>,
    /// Ant id per index.
    names: Vec<String>,
    service_seen: std::collections::BTreeSet<String>,
    services: Vec<Option<Service<'a>>>,
    methods: Vec<Entry<'a>>,
    functions: Vec<Entry<'a>>,
    method_n: u32,
    function_n: u32,
}

impl<'a> Registry<'a> {
    fn node(&mut self, job: &'a JobRecord, target: u32) -> usize {
        if let Some(Some(n)) = self.by_target.get(target as usize) {
            return *n;
        }
        let t = job.target(target);
        let k = key(t);
        let n = match self.by_key.get(&k) {
            Some(n) => *n,
            None => {
                let id = match t.kind {
                    TargetKind::Method => {
                        if self.service_seen.insert(k.0.clone()) {
                            self.services.push(service(t));
                        }
                        self.method_n += 1;
                        let id = format!("method{}", self.method_n);
                        self.methods.push(Entry {
                            id: id.clone(),
                            method: Name { name: &t.method },
                            service: service(t),
                        });
                        id
                    }
                    _ if t.class == "_main" => {
                        self.functions.push(main_entry());
                        "_main".to_string()
                    }
                    _ => {
                        self.function_n += 1;
                        let id = format!("function{}", self.function_n);
                        self.functions.push(Entry { id: id.clone(), method: Name { name: &t.class }, service: None });
                        id
                    }
                };
                self.names.push(id);
                self.by_key.insert(k, self.names.len() - 1);
                self.names.len() - 1
            }
        };
        if self.by_target.len() <= target as usize {
            self.by_target.resize(target as usize + 1, None);
        }
        self.by_target[target as usize] = Some(n);
        n
    }
}

/// A call-graph edge: (source, target) node ids → (count, last submit ms, calls in flight).
type Edge = ((usize, usize), (u64, u64, u64));

/// `GET /get_call_graph_data`'s `data`.
pub fn call_graph(job: &JobRecord, spans: &Spans, stack_mode: bool) -> Vec<u8> {
    let mut reg = Registry::default();
    // Edge (source, target) → (count, last submit ms, calls in flight), first-seen order.
    let mut edges: Vec<Edge> = Vec::new();
    let mut edge_at: rustc_hash::FxHashMap<(usize, usize), usize> = Default::default();
    let mut data: rustc_hash::FxHashMap<(usize, usize, i64), (u64, u64)> = Default::default();
    for s in spans.spans.iter() {
        let Some(p) = s.parent else { continue };
        let a = reg.node(job, spans.spans[p].target);
        let b = reg.node(job, s.target);
        let at = *edge_at.entry((a, b)).or_insert_with(|| {
            edges.push(((a, b), (0, 0, 0)));
            edges.len() - 1
        });
        let e = &mut edges[at].1;
        e.0 += 1;
        e.1 = ms(s.submit);
        e.2 += s.in_flight() as u64;
        if s.arg_bytes > 0 {
            let d = data.entry((a, b, 0)).or_default();
            d.0 += s.arg_bytes;
            d.1 = ms(s.submit);
        }
        if let (Some(end), true) = (s.end, s.return_bytes > 0) {
            let d = data.entry((b, a, -1)).or_default();
            d.0 += s.return_bytes;
            d.1 = ms(end);
        }
    }
    let names = std::mem::take(&mut reg.names);
    let kept: Vec<&Edge> = edges.iter().filter(|(_, e)| !stack_mode || e.2 > 0).collect();
    let reachable: std::collections::BTreeSet<&str> =
        kept.iter().flat_map(|((a, b), _)| [names[*a].as_str(), names[*b].as_str()]).collect();
    let keep_id = |id: &str| !stack_mode || reachable.contains(id);
    let methods: Vec<Entry> = reg.methods.into_iter().filter(|m| keep_id(&m.id)).collect();
    let mut functions: Vec<Entry> = reg.functions.into_iter().filter(|f| keep_id(&f.id)).collect();
    if !functions.iter().any(|f| f.id == "_main") {
        functions.push(main_entry());
    }
    let live_services: std::collections::BTreeSet<&str> =
        methods.iter().filter_map(|m| m.service.as_ref().map(|s| s.instance_id.as_str())).collect();
    let services: Vec<Option<Service>> = reg
        .services
        .into_iter()
        .filter(|s| !stack_mode || s.as_ref().is_some_and(|s| live_services.contains(s.instance_id.as_str())))
        .collect();
    let call_flows: Vec<CallFlow> = kept
        .iter()
        .map(|((a, b), (count, start, _))| CallFlow {
            source_id: &names[*a],
            target_id: &names[*b],
            count: *count,
            start_time: *start,
        })
        .collect();
    // In order of (source id, target id, argument position), as Ant's server lists them.
    let mut flows: Vec<(&str, &str, i64, u64, u64)> = data
        .iter()
        .map(|((a, b, pos), (bytes, t))| (names[*a].as_str(), names[*b].as_str(), *pos, *bytes, *t))
        .collect();
    flows.sort_unstable_by(|x, y| (x.0, x.1, x.2).cmp(&(y.0, y.1, y.2)));
    let data_flows: Vec<DataFlow> = flows
        .into_iter()
        .filter(|(a, b, ..)| keep_id(a) && keep_id(b))
        .map(|(a, b, pos, bytes, t)| DataFlow {
            source_id: a,
            target_id: b,
            argpos: pos,
            duration: 0.0,
            size: bytes as f64 / (1024.0 * 1024.0),
            timestamp: t,
        })
        .collect();
    let graph = CallGraph { services, methods, functions, call_flows, data_flows };
    serde_json::to_vec(&graph).unwrap_or_default()
}

/// A span of the flame tree.
#[derive(Serialize)]
struct FlameSpan {
    span_id: String,
    id: String,
    start_time: u64,
    end_time: i64,
    children: Vec<FlameSpan>,
}

/// `GET /get_flame_graph_data`'s `data`: the span tree from the driver, calls that
/// began by the instant, children in order of start.
pub fn flame_tree(job: &JobRecord, spans: &Spans) -> Vec<u8> {
    let Some(root) = spans.root() else {
        let empty = FlameSpan {
            span_id: "_main".into(),
            id: "_main".into(),
            start_time: 0,
            end_time: -1,
            children: Vec::new(),
        };
        return serde_json::to_vec(&empty).unwrap_or_default();
    };
    let mut children = spans.children();
    for c in &mut children {
        c.retain(|&i| spans.spans[i].start.is_some());
        c.sort_by_key(|&i| (spans.spans[i].start, spans.spans[i].span));
    }
    // Build bottom-up without recursion: children before parents (reverse submit order).
    let mut built: Vec<Option<FlameSpan>> = (0..spans.spans.len()).map(|_| None).collect();
    for i in (0..spans.spans.len()).rev() {
        let s = &spans.spans[i];
        let Some(start) = s.start.or((i == root).then_some(s.submit)) else { continue };
        let kids: Vec<FlameSpan> = children[i].iter().filter_map(|&c| built[c].take()).collect();
        let end = s.end.map(|e| ms(e) as i64).unwrap_or(-1);
        built[i] = Some(FlameSpan {
            span_id: span_hex(s.span),
            id: job.target(s.target).class_name(),
            start_time: ms(start),
            end_time: end,
            children: kids,
        });
    }
    match built[root].take() {
        Some(tree) => serde_json::to_vec(&tree).unwrap_or_default(),
        None => b"null".to_vec(),
    }
}

#[derive(Serialize)]
struct MemoryInfo {
    rss: u64,
    vms: u64,
    shared: u64,
    text: u64,
    lib: u64,
    data: u64,
    dirty: u64,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
struct Stats<'a> {
    node_id: &'a str,
    pid: u32,
    state: &'static str,
    required_resources: Empty,
    placement_id: Option<()>,
    cpu_percent: f64,
    memory_info: MemoryInfo,
    devices: Empty,
}

#[derive(Serialize)]
struct ServiceStats<'a> {
    service: Option<Service<'a>>,
    stats: Stats<'a>,
}

#[derive(Serialize)]
struct Quantity {
    total: f64,
    available: f64,
}

#[derive(Serialize)]
struct NodeMemory {
    total: u64,
    available: u64,
    used: u64,
}

#[derive(Serialize)]
struct PhysicalNode<'a> {
    node_id: &'a str,
    devices: Empty,
    resources: BTreeMap<&'a str, Quantity>,
    cpu_percent: f64,
    memory_info: NodeMemory,
}

#[derive(Serialize)]
struct Physical<'a> {
    services: Vec<ServiceStats<'a>>,
    nodes: BTreeMap<&'a str, PhysicalNode<'a>>,
}

/// `GET /get_physical_view_data`'s `data`.
pub fn physical(job: &JobRecord, spans: &Spans, nodes: &[Arc<NodeView>]) -> Vec<u8> {
    let (services, nodes) = physical_parts(job, spans, nodes);
    serde_json::to_vec(&Physical { services, nodes }).unwrap_or_default()
}

/// `GET /get_physical_view_data`'s `data` for a flow it does not know: no services, and
/// the nodes (Ant keeps node stats apart from any flow).
pub fn physical_unknown(nodes: &[Arc<NodeView>]) -> Vec<u8> {
    serde_json::to_vec(&Physical { services: Vec::new(), nodes: node_stats(nodes) }).unwrap_or_default()
}

/// `GET /get_call_graph_data`'s `data` for a flow it does not know: the driver alone.
pub fn call_graph_unknown() -> Vec<u8> {
    br#"{"services":[],"methods":[],"functions":[{"id":"_main","method":{"name":"_main"},"service":null}],"callFlows":[],"dataFlows":[]}"#.to_vec()
}

/// `GET /get_flame_graph_data`'s `data` for a flow it does not know: `_main`, not ended,
/// wrapped in `root` (Ant answers a `FlameTree` there, and the bare node otherwise).
pub fn flame_unknown() -> Vec<u8> {
    br#"{"root":{"span_id":"_main","id":"_main","start_time":0,"end_time":-1,"children":[]}}"#.to_vec()
}

/// The services (each actor as its last started call saw it) and the nodes.
fn physical_parts<'a>(
    job: &'a JobRecord,
    spans: &Spans,
    nodes: &'a [Arc<NodeView>],
) -> (Vec<ServiceStats<'a>>, BTreeMap<&'a str, PhysicalNode<'a>>) {
    // Each actor as its last started call saw it.
    let mut last: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate() {
        if let (Some(a), Some(_)) = (job.target(s.target).actor, s.start) {
            last.insert(a, i);
        }
    }
    let by_idx: BTreeMap<u32, &Arc<NodeView>> = nodes.iter().map(|n| (n.idx, n)).collect();
    let services: Vec<ServiceStats> = last
        .into_values()
        .map(|i| {
            let s = &spans.spans[i];
            let t = job.target(s.target);
            let node_id = by_idx.get(&s.node).map_or("", |n| &*n.node_id);
            ServiceStats {
                service: service(t),
                stats: Stats {
                    node_id,
                    pid: s.pid,
                    state: if s.end.is_none() { "running" } else { "waiting" },
                    required_resources: Empty {},
                    placement_id: None,
                    cpu_percent: 0.0,
                    memory_info: MemoryInfo { rss: 0, vms: 0, shared: 0, text: 0, lib: 0, data: 0, dirty: 0 },
                    devices: Empty {},
                },
            }
        })
        .collect();
    (services, node_stats(nodes))
}

/// Every alive node, by node id.
fn node_stats(nodes: &[Arc<NodeView>]) -> BTreeMap<&str, PhysicalNode<'_>> {
    let mut out = BTreeMap::new();
    for n in nodes.iter().filter(|n| n.died_at_us.is_none()) {
        let resources =
            n.resources.iter().map(|(name, t, a)| (&**name, Quantity { total: *t, available: *a })).collect();
        let cpu = n
            .resources
            .iter()
            .find(|r| &*r.0 == "CPU")
            .map(|(_, t, a)| if *t > 0.0 { 100.0 * (t - a) / t } else { 0.0 });
        out.insert(
            &*n.node_id,
            PhysicalNode {
                node_id: &n.node_id,
                devices: Empty {},
                resources,
                cpu_percent: cpu.unwrap_or(0.0),
                memory_info: NodeMemory {
                    total: n.memory_total.0,
                    available: n.memory_total.saturating_sub(n.memory_used).0,
                    used: n.memory_used.0,
                },
            },
        );
    }
    out
}

/// The job's records as Ant's ingest records (`{record_type, record}`) under `flow`,
/// in order: a submit, the last attempt's begin, and the end of every call the driver
/// made, directly or not; then the end of the driver itself (Ant's implicit root
/// `_main`), if it ended by the instant; then the physical stats as of the instant
/// (the job's actors, and the nodes), so that Ant's physical view is the same.
pub fn records(job: &JobRecord, spans: &Spans, flow: &str, nodes: &[Arc<NodeView>]) -> Vec<Value> {
    let fields = |prefix: &str, t: &Target| -> Vec<(String, Value)> {
        let mut v =
            vec![(format!("{prefix}_method"), json!(if t.kind == TargetKind::Method { &t.method } else { &t.class }))];
        if let (TargetKind::Method, Some(a)) = (t.kind, t.actor) {
            v.push((format!("{prefix}_service"), json!(t.class)));
            v.push((format!("{prefix}_instance_id"), json!(actor_hex(a, t.job))));
        }
        v
    };
    let mut out = Vec::new();
    for r in job.records.iter() {
        if r.time() > spans.at {
            break;
        }
        let (span, kind) = match *r {
            Rec::Submit { span, .. } => (span, 0),
            Rec::Begin { span, .. } => (span, 1),
            Rec::End { span, .. } => (span, 2),
            Rec::Put { .. } | Rec::Dep { .. } | Rec::Block { .. } | Rec::Unblock { .. } | Rec::Requeue { .. } => {
                continue
            }
        };
        let Some(&i) = spans.index.get(&span) else { continue };
        let s = &spans.spans[i];
        let Some(p) = s.parent else { continue };
        let (src, dst) = (job.target(spans.spans[p].target), job.target(s.target));
        let mut rec = Map::new();
        rec.insert("flow_id".into(), json!(flow));
        let record_type = match (kind, r) {
            (0, _) => {
                rec.insert("parent_span_id".into(), json!(span_hex(spans.spans[p].span)));
                rec.extend(fields("source", src));
                rec.extend(fields("target", dst));
                rec.insert("timestamp".into(), json!(ms(s.submit)));
                "call_submit"
            }
            (1, Rec::Begin { t, .. }) if s.start == Some(*t) => {
                rec.insert("parent_span_id".into(), json!(span_hex(spans.spans[p].span)));
                rec.insert("span_id".into(), json!(span_hex(s.span)));
                rec.extend(fields("source", src));
                rec.extend(fields("target", dst));
                rec.insert("timestamp".into(), json!(ms(*t)));
                "call_begin"
            }
            (2, Rec::End { t, .. }) if s.start.is_some() => {
                rec.insert("span_id".into(), json!(span_hex(s.span)));
                rec.extend(fields("target", dst));
                let start = s.start.unwrap_or(*t);
                rec.insert("duration".into(), json!((ms(*t) - ms(start)) as f64 / 1e3));
                rec.insert("timestamp".into(), json!(ms(*t)));
                "call_end"
            }
            _ => continue,
        };
        out.push(json!({"record_type": record_type, "record": rec}));
    }
    if let Some((root, end)) = spans.root().and_then(|r| spans.spans[r].end.map(|e| (r, e))) {
        let s = &spans.spans[root];
        out.push(json!({"record_type": "call_end", "record": {
            "flow_id": flow, "span_id": span_hex(s.span), "target_method": "_main",
            "duration": (ms(end) - ms(s.submit)) as f64 / 1e3, "timestamp": ms(end)}}));
    }
    let (services, node_rows) = physical_parts(job, spans, nodes);
    let now = ms(spans.at);
    out.push(json!({"record_type": "service_physical_stats_add",
        "record": {"flow_id": flow, "stats": services, "timestamp": now}}));
    let node_rows: Vec<&PhysicalNode> = node_rows.values().collect();
    out.push(json!({"record_type": "node_physical_stats_add",
        "record": {"flow_id": flow, "stats": {"stats": node_rows}, "timestamp": now}}));
    out
}
