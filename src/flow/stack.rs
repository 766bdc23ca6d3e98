//! The distributed stack: the chains of calls in flight at an instant, driver first —
//! a cluster-wide stack dump.
//!
//! Owns: which calls are in flight (submitted at or before the instant, not ended by
//! it), how they form chains, and what each frame is doing. A chain ends at a call in
//! flight that started and has no started call in flight below it: one stack per such
//! call. Calls still queued are not chains of their own: each frame counts those it
//! submitted (`queued_calls`). A frame is `running` (its body executes), `blocked` (in
//! `ray.get`) or `queued`, and names the node it is placed on.
//! Must never: read anything but the job's records and the node views it is given
//! (pure function of records + instant).

use super::spans::{Phase, Spans};
use crate::snapshot::flow::{span_hex, JobRecord};
use crate::snapshot::NodeView;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Spans in flight at the instant (the driver excluded), by index, in span order.
pub fn in_flight(spans: &Spans) -> Vec<usize> {
    let mut v: Vec<usize> =
        (0..spans.spans.len()).filter(|&i| spans.spans[i].parent.is_some() && spans.spans[i].in_flight()).collect();
    v.sort_by_key(|&i| spans.spans[i].span);
    v
}

pub fn stack(job: &JobRecord, spans: &Spans, nodes: &[Arc<NodeView>]) -> Value {
    let node_ids: BTreeMap<u32, &str> = nodes.iter().map(|n| (n.idx, &*n.node_id)).collect();
    let flying = in_flight(spans);
    // Per call in flight: its started children in flight, and its queued ones.
    let mut started_below = vec![false; spans.spans.len()];
    let mut queued_below = vec![0u64; spans.spans.len()];
    for &i in &flying {
        let s = &spans.spans[i];
        if let Some(p) = s.parent {
            match s.start {
                Some(_) => started_below[p] = true,
                None => queued_below[p] += 1,
            }
        }
    }
    let frame = |i: usize| {
        let s = &spans.spans[i];
        let t = job.target(s.target);
        let state = match s.phase() {
            Phase::Executing => "running",
            Phase::Blocked => "blocked",
            Phase::Queued => "queued",
        };
        let placed = s.node != u32::MAX;
        json!({"span": span_hex(s.span), "name": t.class_name(), "actor_id": t.actor_id(),
            "node": placed.then_some(s.node), "node_id": placed.then(|| node_ids.get(&s.node).copied()).flatten(),
            "pid": (s.pid != 0).then_some(s.pid), "state": state, "queued_calls": queued_below[i]})
    };
    // A chain ends at a started call with no started call in flight below it. With none
    // (everything in flight is queued), the driver's own frame is the one stack.
    let mut tips: Vec<usize> =
        flying.iter().copied().filter(|&i| spans.spans[i].start.is_some() && !started_below[i]).collect();
    if tips.is_empty() && !flying.is_empty() {
        tips.extend(spans.root());
    }
    let stacks: Vec<Value> = tips
        .iter()
        .map(|&i| {
            let mut chain = vec![i];
            let mut cur = i;
            while let Some(p) = spans.spans[cur].parent {
                chain.push(p);
                cur = p;
            }
            chain.reverse();
            let frames: Vec<Value> = chain.iter().map(|&c| frame(c)).collect();
            json!({"span": span_hex(spans.spans[i].span), "frames": frames})
        })
        .collect();
    json!({"job_id": job.job_hex, "at_s": spans.at as f64 / 1e6, "truncated": job.truncated(),
        "in_flight": flying.len(), "stacks": stacks})
}
