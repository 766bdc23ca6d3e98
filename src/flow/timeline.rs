//! The Gantt: each actor's and worker's executions over time, as Chrome trace-event
//! JSON (opens in Perfetto and `chrome://tracing`, as `ray timeline` output does).
//!
//! Owns: one complete (`"ph": "X"`) event per execution (`pid` = node index, `tid` =
//! worker pid, times in virtual µs) and the metadata events naming rows.
//! Must never: read anything but the job's records (pure function of records + instant).

use super::record::{actor_hex, span_hex, JobRecord, Spans, TargetKind};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub fn timeline(job: &JobRecord, spans: &Spans) -> Value {
    let mut events = Vec::new();
    let mut rows: BTreeMap<(u32, u32), String> = BTreeMap::new();
    for s in &spans.spans {
        let Some(start) = s.start else { continue };
        let t = job.target(s.target);
        let end = spans.end_or_at(spans.index[&s.span]);
        let row = match (t.kind, t.actor) {
            (TargetKind::Method, Some(a)) => format!("{} {}", t.class, actor_hex(a)),
            (TargetKind::Driver, _) => "driver".to_string(),
            _ => format!("worker {}", s.pid),
        };
        rows.entry((s.node, s.pid)).or_insert(row);
        let caller = s.parent.map(|p| span_hex(spans.spans[p].span));
        events.push(json!({"name": t.class_name(), "cat": "task", "ph": "X", "ts": start, "dur": end.saturating_sub(start),
            "pid": s.node, "tid": s.pid, "args": {"span": span_hex(s.span), "caller": caller,
            "actor_id": t.actor.map(actor_hex), "submit_us": s.submit, "ok": s.ok, "running": s.end.is_none()}}));
    }
    let mut meta = Vec::new();
    let mut named = std::collections::BTreeSet::new();
    for ((node, pid), row) in &rows {
        if named.insert(*node) {
            meta.push(json!({"name": "process_name", "ph": "M", "pid": node, "args": {"name": format!("node {node}")}}));
        }
        meta.push(json!({"name": "thread_name", "ph": "M", "pid": node, "tid": pid, "args": {"name": row}}));
    }
    meta.extend(events);
    Value::Array(meta)
}
