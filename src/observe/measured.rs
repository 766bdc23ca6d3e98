//! The waits Ray measured: a profiled caller's blocked phases in `ray.get`/`ray.wait`,
//! from the spans `profile.rs` reads, where `inferred.rs` would otherwise guess them.
//! Must never: place a wait outside its caller's own run.

use super::inferred::Pending;
use super::rows::ObservedTask;
use crate::snapshot::flow::Rec;

/// A caller's blocked phases from its `ray.get`/`ray.wait` spans, within its own run
/// `[from, until]` (job µs); `to_job_us` turns Unix µs into the job's µs. Overlapping
/// spans (a get inside a wait's callback) are one wait.
pub(super) fn measured_waits(
    caller: &ObservedTask,
    span: u64,
    depth: u32,
    (from, until): (u64, u64),
    to_job_us: impl Fn(u64) -> u64,
) -> Vec<Pending> {
    let mut waits: Vec<(u64, u64)> = caller
        .profile
        .iter()
        .filter(|p| p.name != "ray.put")
        .map(|p| (to_job_us(p.start_us).clamp(from, until), to_job_us(p.end_us).clamp(from, until)))
        .filter(|(a, b)| a < b)
        .collect();
    waits.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(waits.len());
    for (a, b) in waits {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
        .into_iter()
        .flat_map(|(a, b)| [(a, 3, depth, Rec::Block { span, t: a }), (b, 5, depth, Rec::Unblock { span, t: b })])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::profile::ProfiledCall;

    #[test]
    fn waits_are_clamped_to_the_callers_run_merged_and_puts_are_not_waits() {
        let caller = ObservedTask {
            profile: vec![
                ProfiledCall { start_us: 100, end_us: 300, name: "ray.wait".into() },
                ProfiledCall { start_us: 250, end_us: 400, name: "ray.get".into() },
                ProfiledCall { start_us: 500, end_us: 600, name: "ray.put".into() },
                ProfiledCall { start_us: 700, end_us: 2_000, name: "ray.get".into() },
            ],
            ..Default::default()
        };
        let recs: Vec<(u64, bool)> = measured_waits(&caller, 7, 1, (150, 900), |u| u)
            .into_iter()
            .map(|p| (p.0, matches!(p.3, Rec::Block { .. })))
            .collect();
        assert_eq!(recs, [(150, true), (400, false), (700, true), (900, false)]);
    }
}
