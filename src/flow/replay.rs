//! A finished job's records as a workload the model can run (`rayscope simulate
//! --replay`): each recorded call with its own timeline (what it held, whom it called
//! and when, where it waited in `ray.get`), its arguments, its returns' bytes, its
//! resource request and its actor.
//!
//! Owns: the conversion ([`replay_job`]) and the fixes a person may make to it before it
//! runs ([`Fix`]: "this method's stretches take at most this long", as when a sleep is
//! removed from the program). The timelines are the what-ifs' (`whatif::timeline`): the
//! same reading of the records, so a replay on the recorded cluster and the what-if
//! agree on what the job did.
//! Must never: read anything but the job's records and the requests it is given.

use super::spans::Spans;
use super::whatif::{first_start, timeline, Step};
use crate::config::replay::{median_holds, Computes, ReplayCall, ReplayJob, ReplayKind, ReplayStep};
use crate::snapshot::flow::{JobRecord, TargetKind};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// `--fix NAME[@ACTOR]=DURATION`: every held stretch of the calls of `NAME`
/// (`Class.method` or a function), on the actor `ACTOR` only if given (its id as the API
/// writes it), takes at most `DURATION`.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    pub name: String,
    pub actor: Option<String>,
    pub at_most_us: u64,
}

/// `--cpu NAME[@ACTOR]=DURATION|PERCENT`: each call of `NAME` (on `ACTOR` only, if
/// given) computes for the first `DURATION` of its held time (at most all of it), or for
/// `PERCENT` of it: work on its node's cores, which waits for them as Ray's overheads do,
/// rather than time that holds the worker alone. `0%` says it only holds. Ray's task rows
/// do not say what share of a call was CPU: a trace recorded beside the workers does
/// (`calibrate::bodies`), and a replay takes those shares unless this says otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuBody {
    pub name: String,
    pub actor: Option<String>,
    pub computes: Computes,
}

/// Why a job cannot be replayed as asked: a `--fix` or `--cpu` (the flag, first) that
/// does not parse or matches no call, or a job that has not ended or recorded nothing.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{0} {1:?}: write {form}", form = form(.0))]
    ChangeShape(&'static str, String),
    #[error("{0} {1:?}: no method or function named")]
    ChangeUnnamed(&'static str, String),
    #[error("{0} {1:?}: {2}")]
    ChangeDuration(&'static str, String, crate::config::units::UnitError),
    #[error("--cpu {0:?}: a share is a percentage from 0 (only holds) to 100, e.g. produce=25%")]
    CpuShare(String),
    #[error(
        "{0} {1}: no call of job {2} matches (names are Class.method or a function, actors as the API writes them)"
    )]
    ChangeMatchesNothing(&'static str, String, String),
    #[error("job {0} has not ended: only a finished job can be replayed")]
    NotEnded(String),
    #[error("job {0} has no recorded calls")]
    NoCalls(String),
}

/// How `flag`'s value is written, with an example.
fn form(flag: &str) -> &'static str {
    match flag {
        "--cpu" => "NAME[@ACTOR]=DURATION or NAME[@ACTOR]=PERCENT, e.g. produce=40ms or Trainer.step=100%",
        _ => "NAME[@ACTOR]=DURATION, e.g. Worker.process=50ms",
    }
}

/// `NAME[@ACTOR]=VALUE` as (name, actor, value), for `flag`'s errors.
fn parse_target<'s>(flag: &'static str, s: &'s str) -> Result<(String, Option<String>, &'s str), ReplayError> {
    let (target, value) = s.split_once('=').ok_or_else(|| ReplayError::ChangeShape(flag, s.to_string()))?;
    let (name, actor) = match target.split_once('@') {
        Some((n, a)) => (n.trim(), Some(a.trim().to_ascii_lowercase())),
        None => (target.trim(), None),
    };
    if name.is_empty() {
        return Err(ReplayError::ChangeUnnamed(flag, s.to_string()));
    }
    Ok((name.to_string(), actor, value.trim()))
}

/// A change's DURATION in µs, for `flag`'s errors about `s`.
fn parse_us(flag: &'static str, s: &str, value: &str) -> Result<u64, ReplayError> {
    let d =
        crate::config::units::parse_duration(value).map_err(|e| ReplayError::ChangeDuration(flag, s.to_string(), e))?;
    Ok(d.as_micros())
}

/// A change's target as the command line wrote it: `NAME` or `NAME@ACTOR`.
pub fn target_text(name: &str, actor: Option<&str>) -> String {
    match actor {
        Some(a) => format!("{name}@{a}"),
        None => name.to_string(),
    }
}

/// Whether a change for `name` (on `actor`, if given) applies to a call of `target`.
fn applies(name: &str, actor: Option<&str>, target: &crate::snapshot::flow::Target) -> bool {
    name == target.class_name() && actor.is_none_or(|a| target.actor_id().as_deref() == Some(a))
}

impl Fix {
    pub fn parse(s: &str) -> Result<Fix, ReplayError> {
        let (name, actor, value) = parse_target("--fix", s)?;
        Ok(Fix { name, actor, at_most_us: parse_us("--fix", s, value)? })
    }
}

impl CpuBody {
    pub fn parse(s: &str) -> Result<CpuBody, ReplayError> {
        let (name, actor, value) = parse_target("--cpu", s)?;
        let computes = match value.strip_suffix('%') {
            Some(pct) => match pct.trim().parse::<f64>() {
                Ok(0.0) => Computes::Nothing,
                Ok(p) if p > 0.0 && p <= 100.0 => Computes::Share(p / 100.0),
                _ => return Err(ReplayError::CpuShare(s.to_string())),
            },
            None => Computes::First(parse_us("--cpu", s, value)?),
        };
        Ok(CpuBody { name, actor, computes })
    }
}

/// What a person changes of a recorded job before it runs, and what its trace measured
/// of it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Changes<'a> {
    pub fixes: &'a [Fix],
    pub cpu: &'a [CpuBody],
    /// The bodies' CPU the trace measured (`calibrate::bodies`), for the calls no `cpu`
    /// names: each matches its function by construction, so none is an error.
    pub measured: &'a [CpuBody],
}

/// The job in `job`'s records as a replay, with `changes` made to it. `requests` gives
/// each call's resource request by span id (calls it lacks request nothing). Errors: a
/// job not ended, or a change that matches no call (a typo must not pass for "no
/// change").
pub fn replay_job(
    job: &JobRecord,
    source: &str,
    requests: &BTreeMap<u64, Vec<(String, f64)>>,
    changes: Changes,
) -> Result<ReplayJob, ReplayError> {
    let fixes = changes.fixes;
    let at = job.end_us.ok_or_else(|| ReplayError::NotEnded(job.job_hex.to_string()))?;
    let spans = Spans::replay(job, at);
    let root = spans.root().ok_or_else(|| ReplayError::NoCalls(job.job_hex.to_string()))?;
    let children = spans.children();
    // Call 0 is the driver, then every other call in submit order; calls submitted in
    // one ms in the order they began running (`submit_key`).
    let key = submit_key(&spans);
    let mut order: Vec<usize> = vec![root];
    let mut rest: Vec<usize> = (0..spans.spans.len()).filter(|&i| i != root).collect();
    rest.sort_by_key(|&i| key(i));
    order.extend(rest);
    let mut call_of = vec![0u32; spans.spans.len()];
    for (k, &i) in order.iter().enumerate() {
        call_of[i] = k as u32;
    }
    // Each worker process's first call: the one that started there earliest.
    let mut first_on: BTreeMap<(u32, u32), (u64, usize)> = BTreeMap::new();
    for i in 0..spans.spans.len() {
        let s = &spans.spans[i];
        if let (Some(t), true) = (first_start(&spans, i), s.pid != 0 && s.node != u32::MAX) {
            let e = first_on.entry((s.node, s.pid)).or_insert((t, i));
            if t < e.0 {
                *e = (t, i);
            }
        }
    }
    let first_calls: std::collections::BTreeSet<usize> = first_on.values().map(|&(_, i)| i).collect();
    let mut slots: BTreeMap<u64, u32> = BTreeMap::new();
    let mut matched = vec![false; fixes.len()];
    let mut cpu_matched = vec![false; changes.cpu.len()];
    let mut calls = Vec::with_capacity(order.len());
    for &i in &order {
        let s = &spans.spans[i];
        let target = job.target(s.target);
        let kind = match target.kind {
            TargetKind::Driver => ReplayKind::Driver,
            TargetKind::Function => ReplayKind::Function,
            TargetKind::Method if target.method == "__init__" => ReplayKind::ActorCreation,
            TargetKind::Method => ReplayKind::Method,
        };
        let actor = target.actor.map(|a| {
            let next = slots.len() as u32;
            *slots.entry(a).or_insert(next)
        });
        let cap = fixes
            .iter()
            .enumerate()
            .filter(|(_, f)| applies(&f.name, f.actor.as_deref(), target))
            .map(|(k, f)| {
                matched[k] = true;
                f.at_most_us
            })
            .min();
        // Several that apply: the one for its actor, else the last given.
        let computes = changes
            .cpu
            .iter()
            .enumerate()
            .filter(|(_, c)| applies(&c.name, c.actor.as_deref(), target))
            .inspect(|(k, _)| cpu_matched[*k] = true)
            .max_by_key(|(k, c)| (c.actor.is_some(), *k))
            .map(|(_, c)| c.computes)
            .or_else(|| changes.measured.iter().find(|c| applies(&c.name, None, target)).map(|c| c.computes))
            .unwrap_or(Computes::Nothing);
        let steps = match first_start(&spans, i) {
            Some(start) => timeline(&spans, i, start, &children[i])
                .into_iter()
                .filter(|step| !matches!(step, Step::Exec(0) | Step::Gap(0)))
                .collect::<Vec<_>>()
                .chunk_by(|a, b| {
                    let submit = |c: &usize| spans.spans[*c].submit;
                    matches!((a, b), (Step::Submit(x), Step::Submit(y)) if submit(x) == submit(y))
                })
                .flat_map(|run| {
                    let mut run = run.to_vec();
                    run.sort_by_key(|step| if let Step::Submit(c) = step { key(*c) } else { (0, 0, 0) });
                    run
                })
                .filter_map(|step| match step {
                    Step::Exec(us) | Step::Gap(us) => (us > 0).then(|| ReplayStep::Hold(cap.map_or(us, |c| us.min(c)))),
                    Step::Submit(c) => Some(ReplayStep::Submit(call_of[c])),
                    Step::Wait(..) => Some(ReplayStep::Get),
                })
                .collect(),
            None => Vec::new(),
        };
        calls.push(ReplayCall {
            kind,
            name: target.class_name(),
            class: target.class.clone(),
            actor,
            resources: requests.get(&s.span).cloned().unwrap_or_default(),
            deps: s.deps.iter().map(|&d| call_of[d]).collect(),
            return_bytes: s.return_bytes,
            first_on_worker: first_calls.contains(&i) && i != root,
            steps,
            computes,
        });
    }
    let lost: Vec<bool> = order
        .iter()
        .map(|&i| job.observed.as_ref().is_some_and(|n| n.ended_with_job.contains_key(&spans.spans[i].span)))
        .collect();
    submit_producers_first(&mut calls);
    hold_lost_ends_as_typical(&mut calls, &lost);
    let unmatched = |flag, name: &str, actor: Option<&str>| {
        ReplayError::ChangeMatchesNothing(flag, target_text(name, actor), job.job_hex.to_string())
    };
    if let Some(k) = matched.iter().position(|m| !m) {
        return Err(unmatched("--fix", &fixes[k].name, fixes[k].actor.as_deref()));
    }
    if let Some(k) = cpu_matched.iter().position(|m| !m) {
        return Err(unmatched("--cpu", &changes.cpu[k].name, changes.cpu[k].actor.as_deref()));
    }
    Ok(ReplayJob {
        source: format!("{source} job {}", job.job_hex),
        calls,
        actors: slots.len() as u32,
        recorded_makespan_us: spans.end_or_at(root) - spans.spans[root].submit,
        ends_lost: lost.iter().filter(|l| **l).count() as u32,
    })
}

/// How calls are put in the order a caller submitted them: by their submit, then, among
/// calls submitted in one ms (Ray stamps whole ms and lists those by id, in no order of
/// their submits), by when each began running. Ray's owner hands its calls of one kind
/// to workers in the order it submitted them, so the order they ran in is that order;
/// a call that waited for another's return began after it. One never run goes last.
fn submit_key(spans: &Spans) -> impl Fn(usize) -> (u64, u64, usize) + '_ {
    move |i| (spans.spans[i].submit, first_start(spans, i).unwrap_or(u64::MAX), i)
}

/// Ray stamps a submit in whole ms, so the calls one caller submitted within a ms read
/// as submitted at once; they are put in the order they began running (`submit_key`),
/// which calls that never ran do not tell. A call that took another's return was
/// submitted after it: in each run of submits with nothing held between them, a call is
/// put after those whose returns it takes, the rest left as they are. A replay that
/// submitted the taker first would find no return to wait for and run it at once (a
/// reduce of reduces before the last of its inputs).
fn submit_producers_first(calls: &mut [ReplayCall]) {
    for i in 0..calls.len() {
        let mut steps = std::mem::take(&mut calls[i].steps);
        let mut start = 0;
        while start < steps.len() {
            let run = steps[start..].iter().take_while(|s| matches!(s, ReplayStep::Submit(_))).count();
            if run > 1 {
                order_run(&mut steps[start..start + run], calls);
            }
            start += run.max(1);
        }
        calls[i].steps = steps;
    }
}

/// Puts a run of submits (`ReplayStep::Submit` only) in an order where each call comes
/// after the calls of the run whose returns it takes, else in the run's order.
fn order_run(run: &mut [ReplayStep], calls: &[ReplayCall]) {
    let ids: Vec<u32> = run.iter().map(|s| if let ReplayStep::Submit(c) = s { *c } else { u32::MAX }).collect();
    let pos: FxHashMap<u32, usize> = ids.iter().enumerate().map(|(k, &c)| (c, k)).collect();
    let deps_in_run = |k: usize| {
        let c = calls.get(ids[k] as usize).map_or(&[][..], |c| &c.deps[..]);
        c.iter().filter_map(|d| pos.get(d).copied()).filter(move |&p| p != k)
    };
    if !(0..ids.len()).any(|k| deps_in_run(k).any(|p| p > k)) {
        return;
    }
    // Kahn's order, the earliest in the run first among those free to go.
    let mut waits_on = vec![0u32; ids.len()];
    let mut takers: Vec<Vec<usize>> = vec![Vec::new(); ids.len()];
    for (k, waits) in waits_on.iter_mut().enumerate() {
        for p in deps_in_run(k) {
            *waits += 1;
            takers[p].push(k);
        }
    }
    let mut free: BinaryHeap<Reverse<usize>> = (0..ids.len()).filter(|&k| waits_on[k] == 0).map(Reverse).collect();
    let mut ordered = Vec::with_capacity(ids.len());
    while let Some(Reverse(k)) = free.pop() {
        ordered.push(ids[k]);
        for &t in &takers[k] {
            waits_on[t] -= 1;
            if waits_on[t] == 0 {
                free.push(Reverse(t));
            }
        }
    }
    // A cycle cannot come from Ray's records; were there one, the run stays as it was.
    if ordered.len() == ids.len() {
        for (step, c) in run.iter_mut().zip(ordered) {
            *step = ReplayStep::Submit(c);
        }
    }
}

/// Calls of this name that Ray reported ending, at least, before their typical length
/// stands for one whose end it lost.
const TYPICAL_OF: usize = 3;

/// A call whose end Ray never reported ends at its caller's end in the records (the
/// latest it can have ended: `observe::flow`), which a caller waiting for several calls
/// reaches only after the last of them. A replay holding it that long runs a call of
/// 250 ms for 700. So a call that only held its worker (no submits, no waits), whose end
/// was lost, is held no longer than the median of its name's calls that Ray saw end.
fn hold_lost_ends_as_typical(calls: &mut [ReplayCall], lost: &[bool]) {
    let reported = calls.iter().zip(lost).filter(|(_, l)| !**l).map(|(c, _)| c);
    let typical = median_holds(reported, TYPICAL_OF);
    for (c, _) in calls.iter_mut().zip(lost).filter(|(_, l)| **l) {
        let (Some(total), Some(&cap)) = (c.held_only(), typical.get(&c.name)) else { continue };
        c.shorten_holds(total.saturating_sub(cap), true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_whose_end_ray_lost_is_held_no_longer_than_its_names_median() {
        let call = |name: &str, steps: Vec<ReplayStep>| ReplayCall {
            kind: ReplayKind::Function,
            name: name.into(),
            class: name.into(),
            actor: None,
            resources: Vec::new(),
            deps: Vec::new(),
            return_bytes: 0,
            first_on_worker: false,
            steps,
            computes: Default::default(),
        };
        let hold = |us| vec![ReplayStep::Hold(us)];
        let mut calls = vec![
            call("sleeper", hold(252)),
            call("sleeper", hold(250)),
            call("sleeper", hold(260)),
            call("sleeper", hold(723)),
            call("sleeper", hold(200)),
            call("parent", vec![ReplayStep::Hold(900), ReplayStep::Get]),
            call("lonely", hold(900)),
        ];
        let lost = [false, false, false, true, true, true, true];
        hold_lost_ends_as_typical(&mut calls, &lost);
        // Cut to the reported calls' median; a shorter one, a caller that waited, and a
        // name with too few reported calls are left as recorded.
        assert_eq!(calls[3].steps, hold(252));
        assert_eq!(calls[4].steps, hold(200));
        assert_eq!(calls[5].steps, vec![ReplayStep::Hold(900), ReplayStep::Get]);
        assert_eq!(calls[6].steps, hold(900));
    }

    #[test]
    fn calls_submitted_in_one_ms_go_after_the_calls_whose_returns_they_take() {
        let call = |deps: Vec<u32>, steps: Vec<ReplayStep>| ReplayCall {
            kind: ReplayKind::Function,
            name: "f".into(),
            class: "f".into(),
            actor: None,
            resources: Vec::new(),
            deps,
            return_bytes: 0,
            first_on_worker: false,
            steps,
            computes: Default::default(),
        };
        use ReplayStep::{Get, Hold, Submit};
        // The driver's records list a reduce of reduces (1) before the reduce it takes (2)
        // within one ms; 3 and 4 are in order already, 5 takes 2 across a held stretch.
        let driver = vec![Submit(1), Submit(2), Hold(10), Submit(3), Submit(4), Hold(5), Submit(5), Get];
        let mut calls = vec![
            call(vec![], driver),
            call(vec![2], vec![Hold(1)]),
            call(vec![], vec![Hold(1)]),
            call(vec![], vec![Hold(1)]),
            call(vec![3], vec![Hold(1)]),
            call(vec![2], vec![Hold(1)]),
        ];
        submit_producers_first(&mut calls);
        assert_eq!(calls[0].steps, vec![Submit(2), Submit(1), Hold(10), Submit(3), Submit(4), Hold(5), Submit(5), Get]);
        // A chain within one run comes out producers first, in the run's order otherwise.
        let mut chain = vec![
            call(vec![], vec![Submit(1), Submit(2), Submit(3), Submit(4)]),
            call(vec![3], vec![]),
            call(vec![], vec![]),
            call(vec![4], vec![]),
            call(vec![], vec![]),
        ];
        submit_producers_first(&mut chain);
        assert_eq!(chain[0].steps, vec![Submit(2), Submit(4), Submit(3), Submit(1)]);
    }

    #[test]
    fn a_fix_names_a_method_an_actor_and_a_duration() {
        assert_eq!(
            Fix::parse("Worker.process@ABC=50ms").unwrap(),
            Fix { name: "Worker.process".into(), actor: Some("abc".into()), at_most_us: 50_000 }
        );
        assert_eq!(Fix::parse("f=0s").unwrap().at_most_us, 0);
        assert!(Fix::parse("Worker.process").unwrap_err().to_string().contains("NAME[@ACTOR]=DURATION"));
        assert!(Fix::parse("=1s").unwrap_err().to_string().contains("no method"));
        assert!(Fix::parse("f=soon").is_err());
        assert_eq!(
            CpuBody::parse("produce@Ab=40ms").unwrap(),
            CpuBody { name: "produce".into(), actor: Some("ab".into()), computes: Computes::First(40_000) }
        );
        assert_eq!(CpuBody::parse("f=25%").unwrap().computes, Computes::Share(0.25));
        assert_eq!(CpuBody::parse("f= 100 %").unwrap().computes, Computes::Share(1.0));
        assert_eq!(
            CpuBody::parse("produce").unwrap_err().to_string(),
            "--cpu \"produce\": write NAME[@ACTOR]=DURATION or NAME[@ACTOR]=PERCENT, e.g. produce=40ms or \
             Trainer.step=100%"
        );
        assert_eq!(CpuBody::parse("f=0%").unwrap().computes, Computes::Nothing, "0 % holds, over a trace's share");
        for bad in ["f=101%", "f=much%", "f=-5%"] {
            assert!(CpuBody::parse(bad).unwrap_err().to_string().contains("a share is a percentage"), "{bad}");
        }
        assert!(CpuBody::parse("f=soon").unwrap_err().to_string().starts_with("--cpu \"f=soon\""));
    }
}
