//! The Gantt: each actor's and worker's executions over time, as Chrome trace-event
//! JSON (opens in Perfetto and `chrome://tracing`, as `ray timeline` output does).
//!
//! Owns: choosing the executions a time window shows ([`Window`]: those overlapping
//! it, earliest start first, at most `limit`), and writing them as the JSON-object form
//! of the trace-event format: `displayTimeUnit`, `otherData` (the window, `total`,
//! `returned`, `truncated` and where the rest starts), then `traceEvents`: the
//! metadata events naming rows, one complete (`"ph": "X"`) event per execution
//! (`pid` = node index, `tid` = worker pid, times in virtual µs: its last attempt's
//! start to its end), and inside it one `"cat": "blocked"` event named `ray.get` per
//! interval it spent blocked in `ray.get` (not executing), its `args.inferred` true
//! where the wait was read from other times rather than measured (observe mode). A call
//! whose end Ray lost when its job ended carries `args.end_lost`: its bar runs to the
//! latest it can have ended, its caller's end.
//! Written straight into one pre-sized string, each callee's name quoted once (a
//! recorded job can have 100,000 executions: building a JSON tree first would cost
//! more than the answer's budget).
//! Must never: read anything but the job's records (pure function of records, instant
//! and window), or put a key Perfetto does not know before `traceEvents` (its JSON
//! reader stops at an unknown top-level key).

use super::spans::{Phase, Spans};
use crate::snapshot::flow::{actor_hex, JobRecord, TargetKind};
use serde_json::json;

/// Executions an interactive answer holds unless the request says otherwise: at
/// `examples/scale.yaml` size that is about 1.5 MB of JSON (under an answer's 2 MB
/// budget, the `ray.get` waits included), written in a few ms.
pub const DEFAULT_LIMIT: usize = 5_000;
/// The most a request may ask for: the default recording cap per job, ~30 MB.
pub const MAX_LIMIT: usize = 100_000;

/// Which executions a timeline shows: those overlapping `[from, to]` (started at or
/// before `to`, ended, or still running, at or after `from`), the earliest-starting
/// `limit` of them (ties in submit order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// µs of virtual time; `None`: from the job's start.
    pub from_us: Option<u64>,
    /// µs of virtual time; `None`, or past the view's instant: the instant.
    pub to_us: Option<u64>,
    /// `None`: every execution in the window (`rayscope flow`'s file).
    pub limit: Option<usize>,
}

impl Window {
    /// Everything: the whole job up to the instant.
    pub const ALL: Window = Window { from_us: None, to_us: None, limit: None };
    /// The whole job, cut at [`DEFAULT_LIMIT`] executions.
    pub const DEFAULT: Window = Window { from_us: None, to_us: None, limit: Some(DEFAULT_LIMIT) };
}

/// The executions a window selects.
#[derive(Debug)]
pub struct Selection {
    /// Span indexes of the executions kept, earliest start first.
    pub kept: Vec<usize>,
    /// Executions in the window, kept or not.
    pub total: usize,
    /// Start (µs) of the earliest execution left out, when the limit cut the answer.
    pub next_from_us: Option<u64>,
    /// The window as applied (µs).
    pub from_us: u64,
    pub to_us: u64,
}

impl Selection {
    pub fn truncated(&self) -> bool {
        self.kept.len() < self.total
    }
}

/// Choose the window's executions.
pub fn select(job: &JobRecord, spans: &Spans, w: &Window) -> Selection {
    let from = w.from_us.unwrap_or(job.start_us);
    let to = w.to_us.map_or(spans.at, |t| t.min(spans.at));
    // (start, index): unique, so the choice and the order are the same every time.
    let mut hits: Vec<(u64, usize)> = spans
        .spans
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let start = s.start?;
            (start <= to && spans.end_or_at(i) >= from).then_some((start, i))
        })
        .collect();
    let total = hits.len();
    let limit = w.limit.unwrap_or(usize::MAX);
    let mut next_from_us = None;
    if total > limit {
        // Only the kept ones need sorting: partition around the first one left out.
        let (_, first_out, _) = hits.select_nth_unstable(limit);
        next_from_us = Some(first_out.0);
        hits.truncate(limit);
    }
    hits.sort_unstable();
    Selection { kept: hits.into_iter().map(|(_, i)| i).collect(), total, next_from_us, from_us: from, to_us: to }
}

/// A rendered timeline and what it holds.
#[derive(Debug)]
pub struct Timeline {
    pub json: String,
    /// Executions in the window.
    pub total: usize,
    /// Executions in the answer.
    pub returned: usize,
}

impl Timeline {
    pub fn truncated(&self) -> bool {
        self.returned < self.total
    }
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn push_int(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// A span or actor id as the API shows it (`{:016x}`), without a formatter per event.
fn push_hex16(out: &mut String, v: u64) {
    let mut buf = [0u8; 16];
    for (k, b) in buf.iter_mut().enumerate() {
        *b = crate::model::HEX_DIGITS[((v >> (60 - 4 * k)) & 0xf) as usize];
    }
    out.push_str(std::str::from_utf8(&buf).expect("hex digits are ASCII"));
}

/// An event's `<ts>,"dur":…,"pid":…,"tid":…,"args":{"span":"<span>` (the span's closing
/// quote and the rest are the caller's).
fn push_placed(out: &mut String, ts: u64, dur: u64, node: u32, pid: u32, span: u64) {
    push_int(out, ts);
    out.push_str(",\"dur\":");
    push_int(out, dur);
    out.push_str(",\"pid\":");
    push_int(out, node);
    out.push_str(",\"tid\":");
    push_int(out, pid);
    out.push_str(",\"args\":{\"span\":\"");
    push_hex16(out, span);
}

/// Per callee, the event text that does not change between its executions.
struct Callee {
    /// `{"name":"Class.method","cat":"task","ph":"X","ts":`
    head: String,
    /// `,"actor_id":"…"` or `,"actor_id":null`
    actor: String,
}

/// The window's trace events as JSON text (the object form; see the module doc).
pub fn timeline_json(job: &JobRecord, spans: &Spans, window: &Window) -> Timeline {
    let sel = select(job, spans, window);
    let ended_with_job = job.observed.as_ref().map(|o| &o.ended_with_job);
    let mut callees: Vec<Option<Callee>> = Vec::new();
    let mut events = String::with_capacity(sel.kept.len() * 260);
    for &i in &sel.kept {
        let s = &spans.spans[i];
        let Some(start) = s.start else { continue };
        let t = job.target(s.target);
        let ti = s.target as usize;
        if callees.len() <= ti {
            callees.resize_with(ti + 1, || None);
        }
        let callee = callees[ti].get_or_insert_with(|| Callee {
            head: format!("{{\"name\":{},\"cat\":\"task\",\"ph\":\"X\",\"ts\":", quote(&t.class_name())),
            actor: match t.actor_id() {
                Some(a) => format!(",\"actor_id\":\"{a}\""),
                None => ",\"actor_id\":null".to_string(),
            },
        });
        events.push(',');
        events.push_str(&callee.head);
        push_placed(&mut events, start, spans.end_or_at(i).saturating_sub(start), s.node, s.pid, s.span);
        match s.parent {
            Some(p) => {
                events.push_str("\",\"caller\":\"");
                push_hex16(&mut events, spans.spans[p].span);
                events.push('"');
            }
            None => events.push_str("\",\"caller\":null"),
        }
        events.push_str(&callee.actor);
        events.push_str(",\"submit_us\":");
        push_int(&mut events, s.submit);
        events.push_str(if s.ok { ",\"ok\":true" } else { ",\"ok\":false" });
        if ended_with_job.is_some_and(|e| e.contains_key(&s.span)) {
            // Ray lost this call's end when its job ended: the bar is drawn to the
            // latest it can have ended (its caller's end), and says so.
            events.push_str(",\"end_lost\":true");
        }
        events.push_str(if s.end.is_none() { ",\"running\":true}}" } else { ",\"running\":false}}" });
        // An observed call's waits without Ray's profile events are read from other
        // times: each says so.
        let close = if job.waits_inferred(s.span) { "\",\"inferred\":true}}" } else { "\",\"inferred\":false}}" };
        for (_, from, to) in
            s.intervals(spans.end_or_at(i)).filter(|(p, from, _)| *p == Phase::Blocked && *from >= start)
        {
            events.push_str(",{\"name\":\"ray.get\",\"cat\":\"blocked\",\"ph\":\"X\",\"ts\":");
            push_placed(&mut events, from, to - from, s.node, s.pid, s.span);
            events.push_str(close);
        }
    }
    let returned = sel.kept.len();
    let secs = |us: u64| us as f64 / 1e6;
    let truncated = sel.truncated();
    let more = sel.next_from_us.map(|n| {
        format!(
            "{} more executions in the window: ask from={} for the next ones (executions still running then are repeated: match args.span), narrow from/to, or raise limit (at most {MAX_LIMIT})",
            sel.total - returned,
            secs(n)
        )
    });
    let other = json!({
        "job_id": job.job_hex, "at_s": secs(spans.at), "from_s": secs(sel.from_us), "to_s": secs(sel.to_us),
        "limit": window.limit, "total": sel.total, "returned": returned, "truncated": truncated,
        "selection": "executions overlapping [from_s, to_s], earliest start first",
        "next_from_s": sel.next_from_us.map(secs), "more": more, "recording_truncated": job.truncated(),
    });

    // One row per (node, worker pid), named after the earliest execution kept there. A
    // task worker is a row of its own, so rows can be as many as executions: named
    // without building a string per row.
    let mut rows: Vec<(u32, u32, u32)> =
        sel.kept.iter().map(|&i| &spans.spans[i]).map(|s| (s.node, s.pid, s.target)).collect();
    rows.sort_by_key(|r| (r.0, r.1));
    rows.dedup_by_key(|r| (r.0, r.1));

    let mut out = String::with_capacity(events.len() + rows.len() * 110 + 1024);
    // Perfetto reads displayTimeUnit and otherData only before traceEvents.
    out.push_str("{\"displayTimeUnit\":\"ms\",\"otherData\":");
    out.push_str(&other.to_string());
    out.push_str(",\"traceEvents\":[");
    let mut first = true;
    let mut last_node = None;
    for &(node, pid, target) in &rows {
        if last_node != Some(node) {
            last_node = Some(node);
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
            push_int(&mut out, node);
            out.push_str(",\"args\":{\"name\":\"node ");
            push_int(&mut out, node);
            out.push_str("\"}}");
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
        push_int(&mut out, node);
        out.push_str(",\"tid\":");
        push_int(&mut out, pid);
        out.push_str(",\"args\":{\"name\":");
        let t = job.target(target);
        match (t.kind, t.actor) {
            (TargetKind::Method, Some(a)) => out.push_str(&quote(&format!("{} {}", t.class, actor_hex(a, t.job)))),
            (TargetKind::Driver, _) => out.push_str("\"driver\""),
            _ => {
                out.push_str("\"worker ");
                push_int(&mut out, pid);
                out.push('"');
            }
        }
        out.push_str("}}");
    }
    out.push_str(if first { events.strip_prefix(',').unwrap_or("") } else { &events });
    out.push_str("]}");
    Timeline { json: out, total: sel.total, returned }
}

/// The same, parsed (for tests and callers that want a tree).
pub fn timeline(job: &JobRecord, spans: &Spans, window: &Window) -> serde_json::Value {
    serde_json::from_str(&timeline_json(job, spans, window).json).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex16_is_the_formatter_s() {
        for v in [0, 1, 0xdead_beef, u64::MAX, 0x0123_4567_89ab_cdef] {
            let mut s = String::new();
            push_hex16(&mut s, v);
            assert_eq!(s, format!("{v:016x}"));
        }
    }
}
