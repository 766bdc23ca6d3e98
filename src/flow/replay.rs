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
use crate::config::replay::{ReplayCall, ReplayJob, ReplayKind, ReplayStep};
use crate::snapshot::flow::{JobRecord, TargetKind};
use std::collections::BTreeMap;

/// `NAME[@ACTOR]=DURATION`: every held stretch of the calls of `NAME` (`Class.method`
/// or a function), on the actor `ACTOR` only if given (its id as the API writes it),
/// takes at most `DURATION`.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    pub name: String,
    pub actor: Option<String>,
    pub at_most_us: u64,
}

/// Why a job cannot be replayed as asked: a `--fix` that does not parse or matches no
/// call, or a job that has not ended or recorded nothing.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("--fix {0:?}: write NAME[@ACTOR]=DURATION, e.g. Worker.process=50ms")]
    FixShape(String),
    #[error("--fix {0:?}: no method or function named")]
    FixUnnamed(String),
    #[error("--fix {0:?}: {1}")]
    FixDuration(String, crate::config::units::UnitError),
    #[error(
        "--fix {0}: no call of job {1} matches (names are Class.method or a function, actors as the API writes them)"
    )]
    FixMatchesNothing(String, String),
    #[error("job {0} has not ended: only a finished job can be replayed")]
    NotEnded(String),
    #[error("job {0} has no recorded calls")]
    NoCalls(String),
}

impl Fix {
    pub fn parse(s: &str) -> Result<Fix, ReplayError> {
        let (target, dur) = s.split_once('=').ok_or_else(|| ReplayError::FixShape(s.to_string()))?;
        let (name, actor) = match target.split_once('@') {
            Some((n, a)) => (n.trim(), Some(a.trim().to_ascii_lowercase())),
            None => (target.trim(), None),
        };
        if name.is_empty() {
            return Err(ReplayError::FixUnnamed(s.to_string()));
        }
        let d =
            crate::config::units::parse_duration(dur.trim()).map_err(|e| ReplayError::FixDuration(s.to_string(), e))?;
        Ok(Fix { name: name.to_string(), actor, at_most_us: d.as_micros() })
    }
}

/// The job in `job`'s records as a replay. `requests` gives each call's resource
/// request by span id (calls it lacks request nothing). Errors: a job not ended, or a
/// fix that matches no call (a typo must not pass for "no change").
pub fn replay_job(
    job: &JobRecord,
    source: &str,
    requests: &BTreeMap<u64, Vec<(String, f64)>>,
    fixes: &[Fix],
) -> Result<ReplayJob, ReplayError> {
    let at = job.end_us.ok_or_else(|| ReplayError::NotEnded(job.job_hex.to_string()))?;
    let spans = Spans::replay(job, at);
    let root = spans.root().ok_or_else(|| ReplayError::NoCalls(job.job_hex.to_string()))?;
    let children = spans.children();
    // Call 0 is the driver, then every other call in submit order.
    let mut order: Vec<usize> = vec![root];
    order.extend((0..spans.spans.len()).filter(|&i| i != root));
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
            .filter(|(_, f)| {
                f.name == target.class_name()
                    && f.actor.as_deref().is_none_or(|a| target.actor_id().as_deref() == Some(a))
            })
            .map(|(k, f)| {
                matched[k] = true;
                f.at_most_us
            })
            .min();
        let steps = match first_start(&spans, i) {
            Some(start) => timeline(&spans, i, start, &children[i])
                .into_iter()
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
        });
    }
    if let Some(k) = matched.iter().position(|m| !m) {
        let f = &fixes[k];
        let actor = f.actor.as_deref().map(|a| format!("@{a}")).unwrap_or_default();
        return Err(ReplayError::FixMatchesNothing(format!("{}{actor}", f.name), job.job_hex.to_string()));
    }
    Ok(ReplayJob {
        source: format!("{source} job {}", job.job_hex),
        calls,
        actors: slots.len() as u32,
        recorded_makespan_us: spans.end_or_at(root) - spans.spans[root].submit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
