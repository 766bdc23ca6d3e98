//! The distributed stack: every call in flight at an instant, with the chain of calls
//! waiting on it, driver first — a cluster-wide stack dump.
//!
//! Owns: which calls are in flight (submitted at or before the instant, not ended by
//! it) and each one's chain of callers.
//! Must never: read anything but the job's records (pure function of records + instant).

use super::spans::Spans;
use crate::snapshot::flow::{actor_hex, span_hex, JobRecord};
use serde_json::{json, Value};

/// Spans in flight at the instant (the driver excluded), by index, in span order.
pub fn in_flight(spans: &Spans) -> Vec<usize> {
    let mut v: Vec<usize> =
        (0..spans.spans.len()).filter(|&i| spans.spans[i].parent.is_some() && spans.spans[i].in_flight()).collect();
    v.sort_by_key(|&i| spans.spans[i].span);
    v
}

pub fn stack(job: &JobRecord, spans: &Spans) -> Value {
    let frame = |i: usize, top: bool| {
        let s = &spans.spans[i];
        let t = job.target(s.target);
        let state = if !top {
            "waiting"
        } else if s.start.is_some() {
            "running"
        } else {
            "queued"
        };
        json!({"span": span_hex(s.span), "name": t.class_name(), "actor_id": t.actor.map(actor_hex),
            "node": (s.node != u32::MAX).then_some(s.node), "pid": (s.pid != 0).then_some(s.pid), "state": state})
    };
    let flying = in_flight(spans);
    let stacks: Vec<Value> = flying
        .iter()
        .map(|&i| {
            let mut chain = vec![i];
            let mut cur = i;
            while let Some(p) = spans.spans[cur].parent {
                chain.push(p);
                cur = p;
            }
            chain.reverse();
            let frames: Vec<Value> = chain.iter().map(|&c| frame(c, c == i)).collect();
            json!({"span": span_hex(spans.spans[i].span), "frames": frames})
        })
        .collect();
    json!({"job_id": job.job_hex, "at_s": spans.at as f64 / 1e6, "truncated": job.truncated(),
        "in_flight": flying.len(), "stacks": stacks})
}
