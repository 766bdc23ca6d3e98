//! The Gantt: each actor's and worker's executions over time, as Chrome trace-event
//! JSON (opens in Perfetto and `chrome://tracing`, as `ray timeline` output does).
//!
//! Owns: one complete (`"ph": "X"`) event per execution (`pid` = node index, `tid` =
//! worker pid, times in virtual µs) and the metadata events naming rows. Written
//! straight into a string (a recorded job can have 100,000 executions: building a
//! JSON tree first would cost more than the answer's budget).
//! Must never: read anything but the job's records (pure function of records + instant).

use super::record::{actor_hex, JobRecord, Spans, TargetKind};
use std::collections::BTreeMap;
use std::fmt::Write;

/// A JSON string literal.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The trace-event array as JSON text.
pub fn timeline_json(job: &JobRecord, spans: &Spans) -> String {
    let mut rows: BTreeMap<(u32, u32), String> = BTreeMap::new();
    let mut names: Vec<Option<(String, String)>> = Vec::new();
    let mut events = String::with_capacity(spans.spans.len() * 220);
    for (i, s) in spans.spans.iter().enumerate() {
        let Some(start) = s.start else { continue };
        let t = job.target(s.target);
        let ti = s.target as usize;
        if names.len() <= ti {
            names.resize(ti + 1, None);
        }
        let (name, actor) = names[ti]
            .get_or_insert_with(|| (quote(&t.class_name()), t.actor.map(|a| quote(&actor_hex(a))).unwrap_or_else(|| "null".into())));
        rows.entry((s.node, s.pid)).or_insert_with(|| match (t.kind, t.actor) {
            (TargetKind::Method, Some(a)) => format!("{} {}", t.class, actor_hex(a)),
            (TargetKind::Driver, _) => "driver".to_string(),
            _ => format!("worker {}", s.pid),
        });
        let end = spans.end_or_at(i);
        let caller = s.parent.map(|p| format!("\"{:016x}\"", spans.spans[p].span)).unwrap_or_else(|| "null".into());
        let _ = write!(
            events,
            ",{{\"name\":{name},\"cat\":\"task\",\"ph\":\"X\",\"ts\":{start},\"dur\":{},\"pid\":{},\"tid\":{},\"args\":{{\"span\":\"{:016x}\",\"caller\":{caller},\"actor_id\":{actor},\"submit_us\":{},\"ok\":{},\"running\":{}}}}}",
            end.saturating_sub(start),
            s.node,
            s.pid,
            s.span,
            s.submit,
            s.ok,
            s.end.is_none()
        );
    }
    let mut out = String::with_capacity(events.len() + rows.len() * 100 + 2);
    out.push('[');
    let mut named = std::collections::BTreeSet::new();
    let mut first = true;
    for ((node, pid), row) in &rows {
        let mut item = |s: String| {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&s);
        };
        if named.insert(*node) {
            item(format!("{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{node},\"args\":{{\"name\":\"node {node}\"}}}}"));
        }
        item(format!("{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{node},\"tid\":{pid},\"args\":{{\"name\":{}}}}}", quote(row)));
    }
    if first {
        out.push_str(events.trim_start_matches(','));
    } else {
        out.push_str(&events);
    }
    out.push(']');
    out
}

/// The same, parsed (for tests and callers that want a tree).
pub fn timeline(job: &JobRecord, spans: &Spans) -> serde_json::Value {
    serde_json::from_str(&timeline_json(job, spans)).unwrap_or(serde_json::Value::Null)
}
