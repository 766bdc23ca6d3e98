//! Waits Ray does not record, read from the times its task rows do record, for an
//! observed job's records (`flow`): a caller's waits in `ray.get`, and a call's wait
//! for the argument a sibling produced.
//!
//! Owns: the rules of those inferences and their slack for Ray's whole-ms clocks.
//! Must never: invent a wait the times cannot show (a caller that ended before its
//! children did not wait for them all), or read anything but the rows' times and the
//! call graph already built.

use super::store::TaskEntry;
use crate::snapshot::flow::Rec;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included};

/// One span's records, before they are put in time order: (time µs, rank, depth, record).
pub(super) type Pending = (u64, u8, u32, Rec);

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
    let mut children: FxHashMap<u64, Vec<(u64, u64)>> = FxHashMap::default();
    for p in pending {
        if let Rec::Submit { span, parent, t, .. } = p.3 {
            if parent != 0 {
                // A child still running ends "never".
                children.entry(parent).or_default().push((t, end.get(&span).map_or(u64::MAX, |e| e.0)));
            }
        }
    }
    let mut out = Vec::new();
    for (caller, mut kids) in children {
        let Some(&(caller_end, depth)) = end.get(&caller) else { continue };
        // One pass over the children in submit order: at each distinct submit, the
        // latest end of those submitted by then (`u64::MAX` if one still runs) says
        // both whether all of them ended by the next submit (or the caller's end) and,
        // if so, the end it waited until. O(k log k) in a caller's k children.
        kids.sort_unstable();
        let mut latest = 0u64;
        let mut i = 0;
        while i < kids.len() {
            let at = kids[i].0;
            while i < kids.len() && kids[i].0 == at {
                latest = latest.max(kids[i].1);
                i += 1;
            }
            let last = i == kids.len();
            let next = if last { caller_end } else { kids[i].0 };
            // The wait ends at the latest end, if it fell after this submit; a caller
            // waited only if every child it had submitted ended by `next`, and, before
            // its last submit, if it submitted again within the slack of that end.
            let until = latest;
            let waited = until > at && until <= next && (last || next - until <= GET_SLACK_US);
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
    // Per caller, its calls (position in `order`, id, submit ms, end ms) in submit
    // order, and the calls that waited for arguments: (asked, ready, position).
    type Call = (usize, u64, u64, Option<u64>);
    type Waiting = (u64, u64, usize);
    let mut by_caller: FxHashMap<u64, (Vec<Call>, Vec<Waiting>)> = FxHashMap::default();
    for (pos, t) in order.iter().enumerate() {
        let Some(&(parent, _, _)) = parents.get(&t.id) else { continue };
        let first = &t.attempts[0];
        let calls = by_caller.entry(parent).or_default();
        calls.0.push((pos, t.id, first.submitted_ms().unwrap_or(0), t.last().ended_ms()));
        if let (Some(asked), Some(ready)) =
            (first.event_ms("PENDING_ARGS_AVAIL"), first.event_ms("PENDING_NODE_ASSIGNMENT"))
        {
            if ready >= asked + ARGS_SLACK_MS {
                calls.1.push((asked, ready, pos));
            }
        }
    }
    // (position, record): put back in `order`'s order at the end.
    let mut found: Vec<(usize, Pending)> = Vec::new();
    for (calls, mut waiting) in by_caller.into_values() {
        if waiting.is_empty() {
            continue;
        }
        let mut calls = calls;
        calls.sort_by_key(|c| (c.2, c.0));
        waiting.sort_unstable();
        // A sweep by the instant the arguments were asked for: the calls submitted by
        // then, by (end, position), give the one that ended last before they were ready
        // in O(log k).
        let mut ended: BTreeMap<(u64, usize), u64> = BTreeMap::new();
        let mut next = 0;
        for (asked, ready, pos) in waiting {
            while next < calls.len() && calls[next].2 <= asked {
                let (p, id, _, end) = calls[next];
                if let Some(e) = end {
                    ended.insert((e, p), id);
                }
                next += 1;
            }
            let t = order[pos];
            let range = (Excluded((asked, usize::MAX)), Included((ready + ARGS_SLACK_MS, usize::MAX)));
            let producer = ended.range(range).rev().map(|(_, &id)| id).find(|&id| id != t.id);
            if let Some(on) = producer {
                let (_, depth, submit_us) = parents[&t.id];
                found.push((pos, (submit_us, 2, depth, Rec::Dep { span: t.id, on, t: submit_us })));
            }
        }
    }
    found.sort_unstable_by_key(|f| f.0);
    found.into_iter().map(|f| f.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule as first written, one child at a time (quadratic), to hold the linear
    /// one to.
    fn get_waits_by_definition(pending: &[Pending]) -> Vec<Pending> {
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
                let ended = kids
                    .iter()
                    .filter(|(s, _)| *s <= at)
                    .filter_map(|(_, e)| *e)
                    .filter(|e| *e > at && *e <= next)
                    .max();
                let Some(until) = ended else { continue };
                let waited = if last {
                    kids.iter().all(|(_, e)| e.is_some_and(|e| e <= caller_end))
                } else {
                    next - until <= GET_SLACK_US
                        && kids.iter().filter(|(s, _)| *s <= at).all(|(_, e)| e.is_some_and(|e| e <= next))
                };
                let from = at + 1;
                if waited && from < until {
                    out.push((from, 3, depth, Rec::Block { span: caller, t: from }));
                    out.push((until, 5, depth, Rec::Unblock { span: caller, t: until }));
                }
            }
        }
        out
    }

    #[test]
    fn the_linear_get_waits_reads_what_the_rule_says() {
        // Random call trees on a coarse clock (so times tie often), some calls unended.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut checked = 0;
        for _ in 0..300 {
            let spans = 2 + rand(40);
            let mut pending = Vec::new();
            for span in 1..=spans {
                let parent = if span == 1 { 0 } else { 1 + rand(span - 1) };
                let submit = rand(20) * 1_000;
                pending.push((submit, 0, 1, Rec::Submit { span, parent, target: 0, t: submit, arg_bytes: 0 }));
                if rand(8) != 0 {
                    let end = submit + rand(30) * 1_000 + rand(3) * 500;
                    pending.push((end, 6, 1, Rec::End { span, t: end, ok: true, return_bytes: 0 }));
                }
            }
            let text = |w: Vec<Pending>| {
                let mut v: Vec<String> = w.iter().map(|p| format!("{p:?}")).collect();
                v.sort();
                v
            };
            let slow = text(get_waits_by_definition(&pending));
            assert_eq!(text(get_waits(&pending)), slow, "{pending:?}");
            checked += slow.len();
        }
        assert!(checked > 100, "the cases hold waits to compare: {checked}");
    }
}
