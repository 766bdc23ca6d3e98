//! The logical view: the call graph of one job, at class or instance level.
//!
//! Owns: nodes (driver, functions, actor methods) with their calls and times, groups
//! (actor classes or instances, with the workload's attributes), and caller → callee
//! edges with calls, completed calls, bytes and times. A mean (`mean_s`) is of
//! execution: the time the call's body ran. What the calls spent queued and blocked in
//! `ray.get` is beside it (`mean_queued_s`, `mean_blocked_s`), and the caller's view,
//! submit to end, is `mean_wall_s`. Every time is over completed calls. An answer holds
//! at most [`MAX_NODES`] nodes, the most called, and only edges between nodes it holds
//! (`nodes_total` and `edges_total` say how many there were); a callee seen only in the
//! aggregates of a capped job is a node too (`recorded: false`), so no edge dangles.
//! Must never: read anything but the job's records (pure function of records + instant).

use super::spans::{PhaseTimes, Spans};
use crate::snapshot::flow::{actor_hex, JobRecord, TargetKind};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Nodes an answer holds at most: the most called (the driver always); the edges are
/// those among them. A drawing of more is unreadable, and at 20,000 actors the instance
/// graph would be megabytes.
pub const MAX_NODES: usize = 300;

/// Class level (`Worker.process`) or instance level (`Worker:<actor>.process`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Class,
    Instance,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "class" => Some(Level::Class),
            "instance" => Some(Level::Instance),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Class => "class",
            Level::Instance => "instance",
        }
    }

    /// The level that shows a job's shape when none is asked for: classes, unless a
    /// class calls itself (an actor tree of one class, as the seed's `Worker`s), where
    /// classes would fold the whole tree into one self-loop and instances show it.
    pub fn default_for(job: &JobRecord) -> Level {
        match job.edges.keys().any(|(caller, callee)| caller == callee) {
            true => Level::Instance,
            false => Level::Class,
        }
    }
}

#[derive(Default)]
struct Stat {
    calls: u64,
    completed: u64,
    /// Submit to end, completed calls.
    total_us: u64,
    /// By phase, completed calls (`None`: not known, from the aggregates of a cut job).
    phases: Option<PhaseTimes>,
    bytes: u64,
    /// Calls of an observed job whose outcome Ray did not report (not completed).
    ended_with_job: u64,
}

impl Stat {
    fn complete(&mut self, wall: u64, phases: PhaseTimes) {
        self.completed += 1;
        self.total_us += wall;
        let p = self.phases.get_or_insert_with(PhaseTimes::default);
        p.queued += phases.queued;
        p.executing += phases.executing;
        p.blocked += phases.blocked;
    }

    /// Calls, times and means as JSON fields.
    fn fields(&self) -> serde_json::Map<String, Value> {
        let secs = |us: u64| us as f64 / 1e6;
        let mean = |us: u64| if self.completed > 0 { secs(us) / self.completed as f64 } else { 0.0 };
        let p = self.phases.unwrap_or_default();
        let known = |v: f64| if self.phases.is_some() || self.completed == 0 { json!(v) } else { Value::Null };
        let mut m = serde_json::Map::new();
        m.insert("calls".into(), json!(self.calls));
        m.insert("completed".into(), json!(self.completed));
        if self.ended_with_job > 0 {
            m.insert("ended_with_job".into(), json!(self.ended_with_job));
        }
        m.insert("total_s".into(), known(secs(p.executing)));
        m.insert("mean_s".into(), known(mean(p.executing)));
        m.insert("mean_queued_s".into(), known(mean(p.queued)));
        m.insert("mean_blocked_s".into(), known(mean(p.blocked)));
        m.insert("wall_s".into(), json!(secs(self.total_us)));
        m.insert("mean_wall_s".into(), json!(mean(self.total_us)));
        m
    }
}

/// The call graph as of the spans' instant. `latest`: the instant is "now", so a
/// truncated job's class-level edges come from the aggregates kept for every call.
pub fn graph(job: &JobRecord, spans: &Spans, level: Level, latest: bool) -> Value {
    // Each target's node name, interned once (a job has far fewer targets than calls).
    let mut ids: rustc_hash::FxHashMap<String, usize> = rustc_hash::FxHashMap::default();
    let mut key_names: Vec<(String, u32)> = Vec::new();
    let key_of: Vec<usize> = (0..job.targets.len() as u32)
        .map(|i| {
            let t = job.target(i);
            let k = match level {
                Level::Class => t.class_name(),
                Level::Instance => t.instance_name(),
            };
            *ids.entry(k.clone()).or_insert_with(|| {
                key_names.push((k, i));
                key_names.len() - 1
            })
        })
        .collect();
    let mut stats: Vec<Stat> = (0..key_names.len()).map(|_| Stat::default()).collect();
    let mut by_edge: rustc_hash::FxHashMap<(usize, usize), Stat> = rustc_hash::FxHashMap::default();
    let unreported = job.observed.as_ref().map(|o| &o.ended_with_job);
    for (i, s) in spans.spans.iter().enumerate() {
        let k = key_of[s.target as usize];
        let n = &mut stats[k];
        n.calls += 1;
        // A call that ended with its job has an end (its caller's) but no outcome.
        let unreported = unreported.is_some_and(|u| s.end.is_some() && u.contains_key(&s.span));
        if unreported {
            n.ended_with_job += 1;
        }
        let phases = s.end.filter(|_| !unreported).map(|_| spans.times(i));
        if let (Some(end), Some(p)) = (s.end, phases) {
            n.complete(end - s.submit, p);
        }
        if let Some(p) = s.parent {
            let e = by_edge.entry((key_of[spans.spans[p].target as usize], k)).or_default();
            e.calls += 1;
            e.ended_with_job += u64::from(unreported);
            e.bytes += s.arg_bytes;
            if let (Some(end), Some(p)) = (s.end, phases) {
                e.complete(end - s.submit, p);
                e.bytes += s.return_bytes;
            }
        }
    }
    let mut nodes: BTreeMap<String, (Option<u32>, Stat)> = BTreeMap::new();
    for ((name, t), st) in key_names.into_iter().zip(stats) {
        if st.calls > 0 {
            nodes.insert(name, (Some(t), st));
        }
    }
    let name_of: Vec<&String> = {
        let mut v: Vec<(&String, usize)> = ids.iter().map(|(k, i)| (k, *i)).collect();
        v.sort_by_key(|(_, i)| *i);
        v.into_iter().map(|(k, _)| k).collect()
    };
    let mut edges: BTreeMap<(String, String), Stat> =
        by_edge.into_iter().map(|((a, b), st)| ((name_of[a].clone(), name_of[b].clone()), st)).collect();
    if latest && job.truncated() && level == Level::Class {
        edges.clear();
        for (&(a, b), agg) in &job.edges {
            edges.insert(
                (job.frames[a as usize].clone(), job.frames[b as usize].clone()),
                Stat {
                    calls: agg.calls,
                    completed: agg.completed,
                    total_us: agg.total_us,
                    phases: None,
                    bytes: agg.bytes,
                    ended_with_job: 0,
                },
            );
        }
        // A callee only the aggregates saw (past the cap) is a node too: no edge dangles.
        for ((_, b), st) in &edges {
            let n = nodes.entry(b.clone()).or_insert_with(|| (None, Stat::default()));
            if n.0.is_none() {
                n.1.calls += st.calls;
                n.1.completed += st.completed;
                n.1.total_us += st.total_us;
            }
        }
    }
    // Capped at the most called nodes (the driver always kept), with the edges among them.
    let nodes_total = nodes.len();
    let edges_total = edges.len();
    if nodes.len() > MAX_NODES {
        let mut by_calls: Vec<(u64, String)> =
            nodes.iter().map(|(k, (_, st))| (if k == "_main" { u64::MAX } else { st.calls }, k.clone())).collect();
        by_calls.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let keep: std::collections::BTreeSet<String> = by_calls.into_iter().take(MAX_NODES).map(|(_, k)| k).collect();
        nodes.retain(|k, _| keep.contains(k));
        edges.retain(|(a, b), _| keep.contains(a) && keep.contains(b));
    }
    let secs = |us: u64| us as f64 / 1e6;
    let mut groups: BTreeMap<String, Value> = BTreeMap::new();
    let mut instances: BTreeMap<String, std::collections::BTreeSet<u64>> = BTreeMap::new();
    let node_values: Vec<Value> = nodes
        .iter()
        .map(|(k, (t, st))| {
            let Some(t) = t.map(|t| job.target(t)) else {
                // Known from the aggregates only: named, counted, nothing recorded.
                let kind = if k.contains('.') { "method" } else { "function" };
                let (group, name) = k.split_once('.').map_or((None, k.as_str()), |(g, m)| (Some(g), m));
                let mut v = json!({"id": k, "kind": kind, "name": name, "group": group, "recorded": false});
                v.as_object_mut().expect("an object").extend(st.fields());
                return v;
            };
            let group = match (t.kind, level) {
                (TargetKind::Method, Level::Class) => Some(t.class.clone()),
                (TargetKind::Method, Level::Instance) => t.actor_id(),
                _ => None,
            };
            if let (Some(g), Some(a)) = (&group, t.actor) {
                instances.entry(t.class.clone()).or_default().insert(a);
                groups.entry(g.clone()).or_insert_with(|| match level {
                    Level::Class => json!({"id": g, "kind": "actor_class", "class": t.class, "actor_id": null,
                        "instances": 0, "node": null, "level": null, "program_flag": null}),
                    Level::Instance => json!({"id": g, "kind": "actor", "class": t.class, "actor_id": g,
                        "instances": 1, "node": null, "level": t.level, "program_flag": t.flag}),
                });
            }
            let kind = match t.kind {
                TargetKind::Driver => "driver",
                TargetKind::Function => "function",
                TargetKind::Method => "method",
            };
            let mut v = json!({"id": k, "kind": kind, "name": t.method, "group": group, "recorded": true});
            v.as_object_mut().expect("an object").extend(st.fields());
            v
        })
        .collect();
    // Instances per class, and where each instance runs (its last attempt's node).
    for (class, ids) in &instances {
        if let Some(g) = groups.get_mut(class) {
            if level == Level::Class {
                g["instances"] = json!(ids.len());
            }
        }
    }
    if level == Level::Instance {
        for s in spans.spans.iter() {
            let t = job.target(s.target);
            if let (Some(a), true) = (t.actor, s.node != u32::MAX) {
                if let Some(g) = groups.get_mut(&actor_hex(a, t.job)) {
                    g["node"] = json!(s.node);
                }
            }
        }
    }
    let edge_values: Vec<Value> = edges
        .iter()
        .map(|((a, b), st)| {
            let mut v = json!({"source": a, "target": b, "bytes": st.bytes});
            v.as_object_mut().expect("an object").extend(st.fields());
            v
        })
        .collect();
    json!({
        "job_id": job.job_hex, "at_s": secs(spans.at), "level": level.as_str(), "truncated": job.truncated(),
        "nodes_total": nodes_total, "edges_total": edges_total,
        "nodes": node_values, "groups": groups.into_values().collect::<Vec<_>>(), "edges": edge_values,
        "observed": crate::flow::observed::observed_json(job),
    })
}
