//! Compatibility with Ant's `flow-insight` 1.1.1: its query answers' JSON shapes
//! (`CallGraphData`, the flame span tree, `PhysicalViewData`), and its ingest record
//! types (`call_submit`, `call_begin`, `call_end`) for `rayscope flow --emit`.
//!
//! Owns: naming as Ant does (services = actor class + instance id, methods numbered
//! `methodN` and functions `functionN` in order of first submit, the driver `_main`,
//! timestamps in integer ms, durations in float seconds).
//! Must never: read anything but the job's records and the node views it is given.

use super::record::{actor_hex, span_hex, JobRecord, Rec, Spans, Target, TargetKind};
use crate::snapshot::NodeView;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

fn ms(us: u64) -> u64 {
    us / 1000
}

/// Ant's service of a target (`None` for functions and the driver).
fn service(t: &Target) -> Value {
    match (t.kind, t.actor) {
        (TargetKind::Method, Some(a)) => json!({"service_name": t.class, "instance_id": actor_hex(a)}),
        _ => Value::Null,
    }
}

/// (service instance or "", method or function name): Ant's method key.
fn key(t: &Target) -> (String, String) {
    match (t.kind, t.actor) {
        (TargetKind::Method, Some(a)) => (actor_hex(a), t.method.clone()),
        _ => (String::new(), t.class.clone()),
    }
}

/// `GET /get_call_graph_data`'s `data`.
pub fn call_graph(job: &JobRecord, spans: &Spans, stack_mode: bool) -> Value {
    let mut ids: BTreeMap<(String, String), String> = BTreeMap::new();
    let (mut methods, mut functions, mut services) = (Vec::new(), Vec::new(), Vec::new());
    let mut service_seen = std::collections::BTreeSet::new();
    let (mut method_n, mut function_n) = (0u32, 0u32);
    // Edge (source id, target id) → (count, last submit ms, calls in flight), first-seen order.
    let mut edges: Vec<((String, String), (u64, u64, u64))> = Vec::new();
    let mut edge_at: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut data: BTreeMap<(String, String, i64), (u64, u64)> = BTreeMap::new();
    let mut register = |t: &Target, ids: &mut BTreeMap<(String, String), String>, services: &mut Vec<Value>, methods: &mut Vec<(String, Value)>, functions: &mut Vec<(String, Value)>| -> String {
        let k = key(t);
        if let Some(id) = ids.get(&k) {
            return id.clone();
        }
        let id = match t.kind {
            TargetKind::Method => {
                if service_seen.insert(k.0.clone()) {
                    services.push(service(t));
                }
                method_n += 1;
                let id = format!("method{method_n}");
                methods.push((k.0.clone(), json!({"id": id, "method": {"name": t.method}, "service": service(t)})));
                id
            }
            _ if t.class == "_main" => {
                functions.push((String::new(), json!({"id": "_main", "method": {"name": "_main"}, "service": null})));
                "_main".to_string()
            }
            _ => {
                function_n += 1;
                let id = format!("function{function_n}");
                functions.push((String::new(), json!({"id": id, "method": {"name": t.class}, "service": null})));
                id
            }
        };
        ids.insert(k, id.clone());
        id
    };
    for s in &spans.spans {
        let Some(p) = s.parent else { continue };
        let (src, dst) = (job.target(spans.spans[p].target), job.target(s.target));
        let a = register(src, &mut ids, &mut services, &mut methods, &mut functions);
        let b = register(dst, &mut ids, &mut services, &mut methods, &mut functions);
        let at = *edge_at.entry((a.clone(), b.clone())).or_insert_with(|| {
            edges.push(((a.clone(), b.clone()), (0, 0, 0)));
            edges.len() - 1
        });
        let e = &mut edges[at].1;
        e.0 += 1;
        e.1 = ms(s.submit);
        e.2 += s.in_flight() as u64;
        if s.arg_bytes > 0 {
            let d = data.entry((a.clone(), b.clone(), 0)).or_default();
            d.0 += s.arg_bytes;
            d.1 = ms(s.submit);
        }
        if let (Some(end), true) = (s.end, s.return_bytes > 0) {
            let d = data.entry((b, a, -1)).or_default();
            d.0 += s.return_bytes;
            d.1 = ms(end);
        }
    }
    let kept: Vec<&((String, String), (u64, u64, u64))> = edges.iter().filter(|(_, e)| !stack_mode || e.2 > 0).collect();
    let reachable: std::collections::BTreeSet<&String> = kept.iter().flat_map(|((a, b), _)| [a, b]).collect();
    let keep_id = |id: &str| !stack_mode || reachable.contains(&id.to_string());
    let methods: Vec<Value> = methods.into_iter().filter(|(_, m)| keep_id(m["id"].as_str().unwrap_or(""))).map(|(_, m)| m).collect();
    let mut functions: Vec<Value> =
        functions.into_iter().filter(|(_, f)| keep_id(f["id"].as_str().unwrap_or(""))).map(|(_, f)| f).collect();
    if !functions.iter().any(|f| f["id"] == "_main") {
        functions.push(json!({"id": "_main", "method": {"name": "_main"}, "service": null}));
    }
    let live_services: std::collections::BTreeSet<String> =
        methods.iter().filter_map(|m| m["service"]["instance_id"].as_str().map(String::from)).collect();
    let services: Vec<Value> = services
        .into_iter()
        .filter(|s| !stack_mode || s["instance_id"].as_str().is_some_and(|i| live_services.contains(i)))
        .collect();
    let call_flows: Vec<Value> = kept
        .iter()
        .map(|((a, b), (count, start, _))| json!({"source_id": a, "target_id": b, "count": count, "start_time": start}))
        .collect();
    let data_flows: Vec<Value> = data
        .iter()
        .filter(|((a, b, _), _)| keep_id(a) && keep_id(b))
        .map(|((a, b, pos), (bytes, t))| {
            json!({"source_id": a, "target_id": b, "argpos": pos, "duration": 0.0, "size": *bytes as f64 / (1024.0 * 1024.0), "timestamp": t})
        })
        .collect();
    json!({"services": services, "methods": methods, "functions": functions, "callFlows": call_flows, "dataFlows": data_flows})
}

/// `GET /get_flame_graph_data`'s `data`: the span tree from the driver, calls that
/// began by the instant, children in order of start.
pub fn flame_tree(job: &JobRecord, spans: &Spans) -> Value {
    let Some(root) = spans.root() else {
        return json!({"span_id": "_main", "id": "_main", "start_time": 0, "end_time": -1, "children": []});
    };
    let mut children = spans.children();
    for c in &mut children {
        c.retain(|&i| spans.spans[i].start.is_some());
        c.sort_by_key(|&i| (spans.spans[i].start, spans.spans[i].span));
    }
    // Build bottom-up without recursion: children before parents (reverse submit order).
    let mut built: Vec<Option<Value>> = vec![None; spans.spans.len()];
    for i in (0..spans.spans.len()).rev() {
        let s = &spans.spans[i];
        let Some(start) = s.start.or((i == root).then_some(s.submit)) else { continue };
        let kids: Vec<Value> = children[i].iter().filter_map(|&c| built[c].take()).collect();
        let end = s.end.map(|e| ms(e) as i64).unwrap_or(-1);
        built[i] = Some(json!({"span_id": span_hex(s.span), "id": job.target(s.target).class_name(),
            "start_time": ms(start), "end_time": end, "children": kids}));
    }
    built[root].take().unwrap_or(Value::Null)
}

/// `GET /get_physical_view_data`'s `data`.
pub fn physical(job: &JobRecord, spans: &Spans, nodes: &[Arc<NodeView>]) -> Value {
    let mut services: BTreeMap<u64, Value> = BTreeMap::new();
    let by_idx: BTreeMap<u32, &Arc<NodeView>> = nodes.iter().map(|n| (n.idx, n)).collect();
    for s in &spans.spans {
        let t = job.target(s.target);
        let (Some(a), Some(_)) = (t.actor, s.start) else { continue };
        let node_id = by_idx.get(&s.node).map(|n| n.node_id.clone()).unwrap_or_default();
        services.insert(a, json!({"service": service(t), "stats": {"node_id": node_id, "pid": s.pid,
            "state": if s.end.is_none() { "running" } else { "waiting" }, "required_resources": {}, "placement_id": null,
            "cpu_percent": 0.0, "memory_info": {"rss": 0, "vms": 0, "shared": 0, "text": 0, "lib": 0, "data": 0, "dirty": 0},
            "devices": {}}}));
    }
    let mut out = Map::new();
    for n in nodes.iter().filter(|n| n.died_at_us.is_none()) {
        let resources: Map<String, Value> =
            n.resources.iter().map(|(name, t, a)| (name.to_string(), json!({"total": t, "available": a}))).collect();
        let cpu = n.resources.iter().find(|r| &*r.0 == "CPU").map(|(_, t, a)| if *t > 0.0 { 100.0 * (t - a) / t } else { 0.0 });
        out.insert(n.node_id.to_string(), json!({"node_id": n.node_id, "devices": {}, "resources": resources,
            "cpu_percent": cpu.unwrap_or(0.0), "memory_info": {"total": n.memory_total,
            "available": n.memory_total.saturating_sub(n.memory_used), "used": n.memory_used}}));
    }
    json!({"services": services.into_values().collect::<Vec<_>>(), "nodes": out})
}

/// The job's records as Ant's ingest records (`{record_type, record}`), in order:
/// a submit, the last attempt's begin, and the end of every call the driver made,
/// directly or not (the driver itself is Ant's implicit root `_main`).
pub fn records(job: &JobRecord, spans: &Spans) -> Vec<Value> {
    let flow = &job.job_hex;
    let fields = |prefix: &str, t: &Target| -> Vec<(String, Value)> {
        let mut v = vec![(format!("{prefix}_method"), json!(if t.kind == TargetKind::Method { &t.method } else { &t.class }))];
        if let (TargetKind::Method, Some(a)) = (t.kind, t.actor) {
            v.push((format!("{prefix}_service"), json!(t.class)));
            v.push((format!("{prefix}_instance_id"), json!(actor_hex(a))));
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
            Rec::Put { .. } => continue,
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
    out
}
