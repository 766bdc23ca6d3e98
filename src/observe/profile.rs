//! Ray's own profile spans of `ray.get`, `ray.wait` and `ray.put`: the exact waits of
//! a job run with `RAY_PROFILING=1` (scripts/ray-observe/FINDINGS.md, §2b).
//!
//! Ray files each span under the task the calling process was running, beside its
//! `task:execute` phases: by pull in a row's `profiling_data.events` (Unix ms floats),
//! by push (Ray 2.60) in `TASK_PROFILE_EVENT`s (ns as strings). A task with a span that
//! only `RAY_PROFILING` writes ([`marks_profiling`]) was profiled: its waits are all
//! there, and a caller so profiled gets its waits in `ray.get`/`ray.wait` from them, not
//! inferred (`inferred`). Its phases alone (`task:execute`, ...) Ray files on any cluster.
//!
//! Owns: reading the spans and merging them (the blocked phases they give a caller are
//! `measured.rs`'s).
//! Must never: keep more than [`MAX_SPANS`] spans of one attempt, or place a wait
//! outside its caller's own run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most spans kept of one task attempt (a caller in a long loop of gets).
pub const MAX_SPANS: usize = 4_096;

/// The spans kept: the calls in which a caller waits, or puts.
const KEPT: [&str; 3] = ["ray.get", "ray.wait", "ray.put"];

/// One `ray.get`, `ray.wait` or `ray.put`, in Unix µs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProfiledCall {
    pub start_us: u64,
    pub end_us: u64,
    pub name: String,
}

/// Spans only `ray._private.profiling`'s wrappers write, so only with `RAY_PROFILING`
/// set. Ray files a task's own phases (`task:execute`, `task::NAME`, ...) and its
/// `submit_task` and `wait_for_function` spans on every cluster, profiled or not (seen
/// on Ray 2.60 without it): those say nothing of whether waits were recorded.
const PROFILING_ONLY: [&str; 4] = ["ray.get", "ray.wait", "ray.put", "ray._wait_generators_bulk"];

/// Whether a span named so shows that its process ran with `RAY_PROFILING`.
pub fn marks_profiling(name: &str) -> bool {
    PROFILING_ONLY.contains(&name)
}

fn kept(name: &str) -> Option<String> {
    KEPT.iter().find(|k| **k == name).map(|k| k.to_string())
}

/// Whether a task's phases, named so, stop before its execution ended: Ray has some of
/// them but not `task:execute`, which its worker files when the body returns. Its
/// worker was killed between two reports (seen on Ray 2.49 and 2.60: an `inner` call
/// with `task:deserialize_arguments` alone, its two `submit_task` spans and its calls'
/// definitions never sent).
pub fn execution_cut<'a>(names: impl Iterator<Item = &'a str>) -> bool {
    let mut names = names.peekable();
    names.peek().is_some() && !names.any(|n| n == "task:execute")
}

/// A pulled row's `profiling_data`: whether it holds any span, whether one shows
/// `RAY_PROFILING`, whether its execution's end is missing ([`execution_cut`]), and
/// its kept spans.
pub fn from_row(v: &Value) -> (bool, bool, bool, Vec<ProfiledCall>) {
    let Some(events) = v.get("profiling_data").and_then(|p| p.get("events")).and_then(Value::as_array) else {
        return (false, false, false, Vec::new());
    };
    let ms_to_us = |e: &Value, k: &str| {
        e.get(k).and_then(Value::as_f64).filter(|f| f.is_finite() && *f > 0.0).map(|f| (f * 1e3).round() as u64)
    };
    let spans = events
        .iter()
        .filter_map(|e| {
            let name = kept(e.get("event_name")?.as_str()?)?;
            let (start_us, end_us) = (ms_to_us(e, "start_time")?, ms_to_us(e, "end_time")?);
            (end_us >= start_us).then_some(ProfiledCall { start_us, end_us, name })
        })
        .take(MAX_SPANS)
        .collect();
    let names = || events.iter().filter_map(|e| e.get("event_name").and_then(Value::as_str));
    (!events.is_empty(), names().any(marks_profiling), execution_cut(names()), spans)
}

/// A pushed `TASK_PROFILE_EVENT`'s payload (`taskProfileEvents`, camelCase or
/// snake_case keys already resolved by `get`): its spans, ns strings.
pub fn from_push(events: &[Value], get: for<'a> fn(&'a Value, &str) -> Option<&'a Value>) -> Vec<ProfiledCall> {
    let ns_to_us = |e: &Value, k: &str| {
        let v = get(e, k)?;
        v.as_str().and_then(|s| s.parse::<u64>().ok()).or_else(|| v.as_u64()).map(|ns| ns / 1_000)
    };
    events
        .iter()
        .filter_map(|e| {
            let name = kept(get(e, "eventName")?.as_str()?)?;
            let (start_us, end_us) = (ns_to_us(e, "startTime")?, ns_to_us(e, "endTime")?);
            (end_us >= start_us).then_some(ProfiledCall { start_us, end_us, name })
        })
        .take(MAX_SPANS)
        .collect()
}

/// Both sides' spans, each once, in time order, under the cap.
pub fn merge(old: &[ProfiledCall], new: &[ProfiledCall]) -> Vec<ProfiledCall> {
    if new.is_empty() {
        return old.to_vec();
    }
    let mut all: Vec<ProfiledCall> = old.iter().chain(new).cloned().collect();
    all.sort_unstable();
    all.dedup();
    all.truncate(MAX_SPANS);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pulled_rows_gets_waits_and_puts_are_kept_and_they_mark_it_profiled() {
        let row = json!({"profiling_data": {"component_type": "worker", "events": [
            {"event_name": "task:execute", "start_time": 1000.5, "end_time": 1010.0, "extra_data": {}},
            {"event_name": "ray.get", "start_time": 1001.25, "end_time": 1004.0, "extra_data": {}},
            {"event_name": "ray.put", "start_time": 1004.5, "end_time": 1004.75, "extra_data": {}}]}});
        let (phases, profiled, cut, spans) = from_row(&row);
        assert!(phases && profiled && !cut);
        assert_eq!(
            spans,
            [
                ProfiledCall { start_us: 1_001_250, end_us: 1_004_000, name: "ray.get".into() },
                ProfiledCall { start_us: 1_004_500, end_us: 1_004_750, name: "ray.put".into() },
            ]
        );
        assert_eq!(from_row(&json!({"profiling_data": null})), (false, false, false, vec![]));
        // Ray files a task's own phases without RAY_PROFILING too: no sign of profiling.
        let unprofiled = json!({"profiling_data": {"component_type": "worker", "events": [
            {"event_name": "task:execute", "start_time": 1000.5, "end_time": 1010.0, "extra_data": {}},
            {"event_name": "task::Worker.process", "start_time": 1000.5, "end_time": 1010.0, "extra_data": {}}]}});
        assert_eq!(from_row(&unprofiled), (true, false, false, vec![]));
    }

    #[test]
    fn phases_that_stop_before_the_execution_ended_are_cut() {
        // Ray 2.49 and 2.60: a worker killed with its job after reporting only this.
        let cut = json!({"profiling_data": {"component_type": "worker", "events": [
            {"event_name": "task:deserialize_arguments", "start_time": 1000.5, "end_time": 1000.8, "extra_data": {}}]}});
        assert_eq!(from_row(&cut), (true, false, true, vec![]));
        assert!(!execution_cut(std::iter::empty()), "no phases at all is not a cut report");
        assert!(!execution_cut(["task:deserialize_arguments", "submit_task", "task:execute"].into_iter()));
    }
}
