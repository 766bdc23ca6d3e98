//! Waits Ray does not record, read from the times its task rows do record, for an
//! observed job's records (`flow`): a caller's waits in `ray.get`, and a call's wait
//! for the argument a sibling produced.
//!
//! Owns: the rules of those inferences and their slack for Ray's whole-ms clocks.
//! Must never: invent a wait the times cannot show (a caller that ended before its
//! children did not wait for them all), or read anything but the rows' times and the
//! call graph already built.

use super::flow::Pending;
use super::store::TaskEntry;
use crate::snapshot::flow::Rec;
use rustc_hash::FxHashMap;

/// A caller that submitted again within this of a child's end, with none of its
/// children still running, was waiting for them.
const GET_SLACK_US: u64 = 2_000;

/// Waits in `ray.get` Ray's rows imply. Ray records no `ray.get`, so a caller would
/// read as executing while it waits. Between two of its submits, a caller that
/// submitted again within [`GET_SLACK_US`] of the end of a child it had already
/// submitted, with none of the children it had submitted still running, was waiting
/// for them, from the first submit until that end (the shape `futures = [...];
/// ray.get(futures); f.remote(...)`). A child still running tells apart a caller that
/// only happened to submit just after one of its children ended, as one that submits
/// every 50 ms while its calls end every 500 ms now and then does: a wait read there
/// would hold its later submits back in a replay until every call it had made ended.
/// After its last submit, a caller that outlived all of its children was waiting for
/// them until the last one ended (`ray.get` at the end). Work a caller did between a
/// submit and its `ray.get` reads as waiting; a caller that ended before its children
/// did not wait for them all and is left as it was.
pub(super) fn get_waits(pending: &[Pending]) -> Vec<Pending> {
    // Per span: its end and depth; per caller: each child's submit and end.
    let mut end: FxHashMap<u64, (u64, u32)> = FxHashMap::default();
    for p in pending {
        if let Rec::End { span, t, .. } = p.3 {
            end.insert(span, (t, p.2));
        }
    }
    let mut children: FxHashMap<u64, Vec<(u64, Option<u64>)>> = FxHashMap::default();
    for p in pending {
        if let Rec::Submit { span, parent, t, .. } = p.3 {
            if parent != 0 {
                children.entry(parent).or_default().push((t, end.get(&span).map(|e| e.0)));
            }
        }
    }
    let mut out = Vec::new();
    for (caller, kids) in children {
        let Some(&(caller_end, depth)) = end.get(&caller) else { continue };
        let mut submits: Vec<u64> = kids.iter().map(|k| k.0).collect();
        submits.sort_unstable();
        submits.dedup();
        for (k, &at) in submits.iter().enumerate() {
            let last = k + 1 == submits.len();
            let next = submits.get(k + 1).copied().unwrap_or(caller_end);
            // Children submitted by then that ended before the next submit (or the end).
            let ended =
                kids.iter().filter(|(s, _)| *s <= at).filter_map(|(_, e)| *e).filter(|e| *e > at && *e <= next).max();
            let Some(until) = ended else { continue };
            let waited = if last {
                // It waited for all of them only if none outlived it.
                kids.iter().all(|(_, e)| e.is_some_and(|e| e <= caller_end))
            } else {
                next - until <= GET_SLACK_US
                    && kids.iter().filter(|(s, _)| *s <= at).all(|(_, e)| e.is_some_and(|e| e <= next))
            };
            // A µs after the submit: the submit is part of the stretch before the wait.
            let from = at + 1;
            if waited && from < until {
                out.push((from, 3, depth, Rec::Block { span: caller, t: from }));
                out.push((until, 5, depth, Rec::Unblock { span: caller, t: until }));
            }
        }
    }
    out
}

/// Slack on "ended by the time the arguments were ready": Ray's times are whole ms,
/// written by different processes.
const ARGS_SLACK_MS: u64 = 2;

/// Argument waits Ray's rows imply. A call whose arguments were not ready when it was
/// submitted stays in PENDING_ARGS_AVAIL until the last of them is; the call it waited
/// for is then the one of the same caller, submitted before it, that ended last by
/// that instant. Ray's rows do not name a task's arguments, so this is inferred, and
/// only the last producer is named (the one the critical path steps into).
pub(super) fn argument_waits(order: &[&TaskEntry], parents: &FxHashMap<u64, (u64, u32, u64)>) -> Vec<Pending> {
    // Calls by caller, in submit order, with their end (ms).
    let mut by_caller: FxHashMap<u64, Vec<(u64, u64, Option<u64>)>> = FxHashMap::default();
    for t in order {
        let Some(&(parent, _, _)) = parents.get(&t.id) else { continue };
        let submitted = t.attempts[0].submitted_ms().unwrap_or(0);
        by_caller.entry(parent).or_default().push((t.id, submitted, t.last().ended_ms()));
    }
    let mut out = Vec::new();
    for t in order {
        let first = &t.attempts[0];
        let (Some(asked), Some(ready)) =
            (first.event_ms("PENDING_ARGS_AVAIL"), first.event_ms("PENDING_NODE_ASSIGNMENT"))
        else {
            continue;
        };
        if ready < asked + ARGS_SLACK_MS {
            continue;
        }
        let Some(&(parent, depth, submit_us)) = parents.get(&t.id) else { continue };
        let producer = by_caller[&parent]
            .iter()
            .filter(|(id, submitted, end)| {
                *id != t.id && *submitted <= asked && end.is_some_and(|e| e > asked && e <= ready + ARGS_SLACK_MS)
            })
            .max_by_key(|(_, _, end)| *end)
            .map(|(id, _, _)| *id);
        if let Some(on) = producer {
            out.push((submit_us, 2, depth, Rec::Dep { span: t.id, on, t: submit_us }));
        }
    }
    out
}
