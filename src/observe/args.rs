//! Which object-store arguments each observed call took, read from Ray's object
//! listing: no task row or event carries argument sizes, but while a call runs its
//! worker holds each argument it took from the store as a `PINNED_IN_MEMORY` object
//! whose call site is `(deserialize task arg) module.fn` (Ray 2.49 to 2.60, call sites
//! on or off).
//!
//! Owns: the sightings of such objects (worker pid, function, object, listing time)
//! until the call that held them is known, and matching each to that call: the attempt
//! on the same worker pid, of the same function, whose run (Ray's start to end) holds
//! the listing's time. A sighting waits until such an attempt has ended, so a row a
//! poll behind (a worker's previous call still shown running) never takes it.
//! Must never: grow past [`MAX_SIGHTINGS`], keep a sighting past [`SIGHTING_TTL_MS`],
//! or guess: a sighting no ended attempt's run holds is dropped at its end of life.
//! The listing's time is the observer's clock and the run's is the cluster's: on a
//! cluster whose clock is off by more than a call's length, calls get no arguments.

use super::rows::{ArgObject, ObservedObject, ObservedTask};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, VecDeque};

/// Sightings kept unmatched at most (the oldest go first).
pub const MAX_SIGHTINGS: usize = 10_000;
/// How long a sighting waits for its call's row to end.
pub const SIGHTING_TTL_MS: u64 = 30 * 60 * 1_000;

/// One running call's argument, seen in one object listing.
#[derive(Clone, Debug, PartialEq)]
struct Sighting {
    pid: u32,
    /// `module.fn` or `module.Class.method`, as the call site names it.
    function: String,
    object: ArgObject,
    at_ms: u64,
}

/// Arguments seen, waiting for their calls.
#[derive(Debug, Default)]
pub struct ArgSightings {
    waiting: VecDeque<Sighting>,
    /// Sightings dropped: past the cap, or never matched to an ended call.
    pub unmatched: u64,
}

impl ArgSightings {
    /// Note the call arguments among one listing's objects, listed at `at_ms`. Each
    /// listing's sighting is kept: one worker may hold the same object for two calls in
    /// turn (an `ObjectRef` passed to both).
    pub fn see(&mut self, objects: &[ObservedObject], at_ms: u64) {
        for o in objects {
            let (Some((pid, function)), Some(bytes)) = (o.as_call_argument(), o.object_size) else { continue };
            if self.waiting.len() >= MAX_SIGHTINGS {
                self.waiting.pop_front();
                self.unmatched += 1;
            }
            let object = ArgObject { object_id: o.object_id.clone(), bytes };
            self.waiting.push_back(Sighting { pid, function: function.to_string(), object, at_ms });
        }
    }

    /// Match what waits to ended attempts among `attempts` (every one held); the parts
    /// of task records to merge, each naming an attempt and the arguments it took that
    /// it did not hold yet. `now_ms` ages the rest.
    pub fn resolve<'a>(&mut self, attempts: impl Iterator<Item = &'a ObservedTask>, now_ms: u64) -> Vec<ObservedTask> {
        if self.waiting.is_empty() {
            return Vec::new();
        }
        // The ended attempts on each worker seen, by start.
        let pids: FxHashSet<u32> = self.waiting.iter().map(|s| s.pid).collect();
        let mut on_pid: FxHashMap<u32, Vec<(u64, u64, &ObservedTask)>> = FxHashMap::default();
        for a in attempts {
            if let (Some(pid), Some(start), Some(end)) = (a.worker_pid, a.started_ms(), a.ended_ms()) {
                if pids.contains(&pid) {
                    on_pid.entry(pid).or_default().push((start, end, a));
                }
            }
        }
        for runs in on_pid.values_mut() {
            runs.sort_unstable_by_key(|r| r.0);
        }
        let mut found: BTreeMap<(&str, u32), (&ObservedTask, Vec<ArgObject>)> = BTreeMap::new();
        let mut expired = 0u64;
        self.waiting.retain(|s| {
            let runs = on_pid.get(&s.pid).map(Vec::as_slice).unwrap_or_default();
            // Runs on one worker follow each other (an actor's concurrent calls may
            // overlap): the few latest to start by the listing's time.
            let upto = runs.partition_point(|r| r.0 <= s.at_ms);
            let held = runs[..upto]
                .iter()
                .rev()
                .take(8)
                .find(|(_, end, a)| s.at_ms <= *end && names_match(&s.function, a))
                .map(|r| r.2);
            match held {
                Some(a) => {
                    let (_, args) = found.entry((a.task_id.as_str(), a.attempt_number)).or_insert((a, Vec::new()));
                    if !a.args.contains(&s.object) && !args.contains(&s.object) {
                        args.push(s.object.clone());
                    }
                    false
                }
                None if s.at_ms.saturating_add(SIGHTING_TTL_MS) <= now_ms => {
                    expired += 1;
                    false
                }
                None => true,
            }
        });
        self.unmatched += expired;
        found
            .into_values()
            .filter(|(_, args)| !args.is_empty())
            .map(|(a, args)| ObservedTask {
                task_id: a.task_id.clone(),
                attempt_number: a.attempt_number,
                job_id: a.job_id.clone(),
                args,
                ..Default::default()
            })
            .collect()
    }

    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

/// Whether a call site's `module.fn` (or `module.Class.method`) names the attempt's
/// function: Ray's rows name it `fn` or `Class.method`.
fn names_match(function: &str, a: &ObservedTask) -> bool {
    [a.name.as_str(), a.func_or_class_name.as_str()]
        .into_iter()
        .filter(|n| !n.is_empty())
        .any(|n| function == n || function.strip_suffix(n).is_some_and(|m| m.ends_with('.')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argument(object_id: &str, pid: u32, bytes: u64, function: &str) -> ObservedObject {
        ObservedObject {
            object_id: object_id.into(),
            object_size: Some(bytes),
            pid: Some(pid),
            reference_type: "PINNED_IN_MEMORY".into(),
            call_site: format!("(deserialize task arg) {function}"),
            ..Default::default()
        }
    }

    fn attempt(id: &str, pid: u32, name: &str, start: u64, end: Option<u64>) -> ObservedTask {
        ObservedTask {
            task_id: id.into(),
            job_id: "01000000".into(),
            name: name.into(),
            func_or_class_name: name.into(),
            state: if end.is_some() { "FINISHED" } else { "RUNNING" }.into(),
            worker_pid: Some(pid),
            start_time_ms: Some(start),
            end_time_ms: end,
            ..Default::default()
        }
    }

    #[test]
    fn an_argument_goes_to_the_ended_call_whose_run_held_the_listing() {
        let mut s = ArgSightings::default();
        s.see(&[argument("aa", 7, 4 << 20, "suite.consume"), argument("bb", 8, 1, "suite.other")], 1_500);
        let mut tasks = BTreeMap::new();
        tasks.insert(1, attempt("t1", 7, "consume", 1_000, Some(1_400)));
        tasks.insert(2, attempt("t2", 7, "consume", 1_402, None));
        assert!(s.resolve(tasks.values(), 2_000).is_empty(), "the call that held it has not ended");
        assert_eq!(s.waiting(), 2);
        tasks.insert(2, attempt("t2", 7, "consume", 1_402, Some(2_500)));
        let parts = s.resolve(tasks.values(), 3_000);
        assert_eq!(parts.len(), 1);
        assert_eq!((parts[0].task_id.as_str(), parts[0].args[0].bytes), ("t2", 4 << 20));
        assert_eq!(s.waiting(), 1, "the other function's argument waits for its own call");
    }

    #[test]
    fn a_call_seen_in_two_listings_takes_its_argument_once_and_nothing_grows_past_the_cap() {
        let mut s = ArgSightings::default();
        s.see(&[argument("aa", 7, 10, "m.f")], 1_100);
        s.see(&[argument("aa", 7, 10, "m.f")], 1_600);
        // The same reference held by the next call on the same worker is its too.
        s.see(&[argument("aa", 7, 10, "m.f")], 2_200);
        let mut tasks = BTreeMap::new();
        tasks.insert(1, attempt("t1", 7, "f", 1_000, Some(2_000)));
        tasks.insert(2, attempt("t2", 7, "f", 2_001, Some(2_300)));
        let parts = s.resolve(tasks.values(), 2_400);
        let aa = vec![ArgObject { object_id: "aa".into(), bytes: 10 }];
        assert_eq!((parts.len(), &parts[0].args, &parts[1].args), (2, &aa, &aa));
        assert_eq!(s.waiting(), 0);
        for i in 0..MAX_SIGHTINGS + 5 {
            s.see(&[argument(&format!("{i:x}"), 9, 1, "m.g")], 5_000);
        }
        assert_eq!((s.waiting(), s.unmatched), (MAX_SIGHTINGS, 5));
        assert!(s.resolve(tasks.values(), 5_000 + SIGHTING_TTL_MS).is_empty());
        assert_eq!((s.waiting(), s.unmatched), (0, MAX_SIGHTINGS as u64 + 5), "aged out, counted");
    }

    #[test]
    fn an_actor_method_is_named_by_its_class() {
        let a = attempt("t", 1, "Worker.run", 0, Some(1));
        assert!(names_match("suite.Worker.run", &a));
        assert!(!names_match("suite.OtherWorker.run2", &a));
        assert!(!names_match("suite.XWorker.run", &a));
    }
}
