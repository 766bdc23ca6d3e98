//! The Gantt's overview: the whole job (or a window of it) in a fixed number of time
//! buckets, one lane per function or method (or per node), each bucket saying how many
//! of the lane's calls were executing, blocked in `ray.get`, and queued, on average.
//! The page draws it above the per-worker Gantt, and the window picked on it is what
//! that Gantt (`timeline.json?from=&to=`) shows.
//!
//! Owns: bucketing each call's phase intervals ([`Spans`]) into lanes, and cutting the
//! lanes to the [`MAX_LANES`] with the most execution (the rest summed in one lane).
//! Cost is one pass over the spans, O(1) per phase interval (a difference array for the
//! buckets it covers whole), so a job of any length answers in one size.
//! Must never: read anything but the job's records and the nodes' ids (a pure function
//! of them, the instant and the window), or answer more than [`MAX_BUCKETS`] buckets.

use super::spans::{Phase, Spans};
use crate::snapshot::flow::JobRecord;
use crate::snapshot::NodeView;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// Buckets an answer has unless asked otherwise: a point per ~5 px of the page's chart.
pub const DEFAULT_BUCKETS: usize = 200;
/// The most buckets a request may ask for.
pub const MAX_BUCKETS: usize = 2_000;
/// Lanes an answer holds at most (then one lane sums the rest).
pub const MAX_LANES: usize = 30;

/// What a lane is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// A function, or an actor method (`Class.method`); the driver is `_main`.
    Function,
    /// The node the call ran on (a call queued before it was placed is on none).
    Node,
}

impl By {
    pub fn parse(s: &str) -> Option<By> {
        match s {
            "function" => Some(By::Function),
            "node" => Some(By::Node),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            By::Function => "function",
            By::Node => "node",
        }
    }
}

/// The window and the resolution asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ask {
    /// µs of virtual time; `None`: the job's start.
    pub from_us: Option<u64>,
    /// µs; `None` (or past the instant): the job's end, or the instant while it runs.
    pub to_us: Option<u64>,
    pub buckets: usize,
    pub by: By,
}

impl Default for Ask {
    fn default() -> Self {
        Ask { from_us: None, to_us: None, buckets: DEFAULT_BUCKETS, by: By::Function }
    }
}

#[derive(Serialize)]
struct Lane {
    name: String,
    /// The node's id, for a lane by node.
    #[serde(skip_serializing_if = "Option::is_none")]
    node_id: Option<String>,
    /// Calls with any time in the window.
    calls: u64,
    executing_s: f64,
    blocked_s: f64,
    /// Mean calls in each phase per bucket (executing time in the bucket / its width).
    executing: Vec<f64>,
    blocked: Vec<f64>,
    /// A node has no queued calls (they are not placed yet): `null` by node.
    queued: Option<Vec<f64>>,
}

#[derive(Serialize)]
struct Answer<'a> {
    job_id: &'a str,
    at_s: f64,
    from_s: f64,
    to_s: f64,
    by: &'static str,
    buckets: usize,
    bucket_s: f64,
    lanes_total: usize,
    /// How many lanes were summed into the last one (`0`: none).
    lanes_merged: usize,
    recording_truncated: bool,
    lanes: Vec<Lane>,
}

/// Per-bucket sums for one lane and phase: whole buckets through a difference array,
/// the partial ones at either end directly.
struct Series {
    partial: Vec<f64>,
    diff: Vec<f64>,
    total_us: f64,
}

impl Series {
    fn new(n: usize) -> Series {
        Series { partial: vec![0.0; n], diff: vec![0.0; n + 1], total_us: 0.0 }
    }

    /// Add `[a, b)`, given in buckets from the window's start (already clipped to it).
    fn add(&mut self, a: f64, b: f64, width_us: f64) {
        let n = self.partial.len();
        let (ia, ib) = ((a.floor() as usize).min(n - 1), (b.floor() as usize).min(n - 1));
        self.total_us += (b - a) * width_us;
        if ia == ib {
            self.partial[ia] += b - a;
        } else {
            self.partial[ia] += (ia + 1) as f64 - a;
            self.partial[ib] += b - ib as f64;
            if ia + 1 < ib {
                self.diff[ia + 1] += 1.0;
                self.diff[ib] -= 1.0;
            }
        }
    }

    fn add_series(&mut self, o: &Series) {
        for (a, b) in self.partial.iter_mut().zip(&o.partial) {
            *a += b;
        }
        for (a, b) in self.diff.iter_mut().zip(&o.diff) {
            *a += b;
        }
        self.total_us += o.total_us;
    }

    /// Mean calls per bucket, to 3 decimals (the chart needs no more, and the answer
    /// stays small).
    fn values(&self) -> Vec<f64> {
        let mut run = 0.0;
        self.partial
            .iter()
            .zip(&self.diff)
            .map(|(p, d)| {
                run += d;
                ((p + run) * 1000.0).round() / 1000.0
            })
            .collect()
    }
}

struct Acc {
    name: String,
    node_id: Option<String>,
    calls: u64,
    by_phase: [Series; 3],
}

fn phase_index(p: Phase) -> usize {
    match p {
        Phase::Executing => 0,
        Phase::Blocked => 1,
        Phase::Queued => 2,
    }
}

/// The overview as JSON (see the module doc and `docs/flow-api.md`).
pub fn lanes_json(job: &JobRecord, spans: &Spans, nodes: &[Arc<NodeView>], ask: &Ask) -> Vec<u8> {
    let end = job.end_us.unwrap_or(spans.at).min(spans.at);
    let from = ask.from_us.unwrap_or(job.start_us).min(end);
    let to = ask.to_us.map_or(end, |t| t.min(spans.at)).max(from + 1);
    let n = ask.buckets.clamp(1, MAX_BUCKETS);
    let width = (to - from) as f64 / n as f64;
    let node_ids: HashMap<u32, &str> = nodes.iter().map(|v| (v.idx, &*v.node_id)).collect();

    // Lanes by key: a target's class-level name, or a node index.
    let mut accs: Vec<Acc> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut lane_of_target: Vec<Option<usize>> = vec![None; job.targets.len()];
    let mut lane_of_node: HashMap<u32, usize> = HashMap::new();
    let new_acc = |accs: &mut Vec<Acc>, name: String, node_id: Option<String>| {
        accs.push(Acc { name, node_id, calls: 0, by_phase: [Series::new(n), Series::new(n), Series::new(n)] });
        accs.len() - 1
    };
    for (i, s) in spans.spans.iter().enumerate() {
        let (span_from, span_to) = (s.submit, spans.end_or_at(i));
        if span_to < from || span_from > to {
            continue;
        }
        let lane = match ask.by {
            By::Function => *lane_of_target[s.target as usize].get_or_insert_with(|| {
                let name = job.target(s.target).class_name();
                *by_key.entry(name.clone()).or_insert_with(|| new_acc(&mut accs, name, None))
            }),
            By::Node if s.node == u32::MAX => continue,
            By::Node => *lane_of_node.entry(s.node).or_insert_with(|| {
                new_acc(&mut accs, format!("node {}", s.node), node_ids.get(&s.node).map(|id| id.to_string()))
            }),
        };
        let acc = &mut accs[lane];
        acc.calls += 1;
        for (phase, a, b) in s.intervals(span_to) {
            if ask.by == By::Node && phase == Phase::Queued {
                continue;
            }
            let (a, b) = (a.max(from), b.min(to));
            if b > a {
                let (fa, fb) = ((a - from) as f64 / width, (b - from) as f64 / width);
                acc.by_phase[phase_index(phase)].add(fa, fb, width);
            }
        }
    }

    // The lanes with the most execution first (then by name); past the cap, one sum.
    accs.sort_by(|a, b| b.by_phase[0].total_us.total_cmp(&a.by_phase[0].total_us).then_with(|| a.name.cmp(&b.name)));
    let lanes_total = accs.len();
    let mut merged = 0;
    if accs.len() > MAX_LANES {
        let rest: Vec<Acc> = accs.split_off(MAX_LANES - 1);
        merged = rest.len();
        let mut other = Acc {
            name: format!("{merged} more"),
            node_id: None,
            calls: 0,
            by_phase: [Series::new(n), Series::new(n), Series::new(n)],
        };
        for r in &rest {
            other.calls += r.calls;
            for k in 0..3 {
                other.by_phase[k].add_series(&r.by_phase[k]);
            }
        }
        accs.push(other);
    }
    let secs = |us: f64| us / 1e6;
    let lanes = accs
        .into_iter()
        .map(|a| Lane {
            name: a.name,
            node_id: a.node_id,
            calls: a.calls,
            executing_s: secs(a.by_phase[0].total_us),
            blocked_s: secs(a.by_phase[1].total_us),
            executing: a.by_phase[0].values(),
            blocked: a.by_phase[1].values(),
            queued: (ask.by == By::Function).then(|| a.by_phase[2].values()),
        })
        .collect();
    let answer = Answer {
        job_id: &job.job_hex,
        at_s: secs(spans.at as f64),
        from_s: secs(from as f64),
        to_s: secs(to as f64),
        by: ask.by.as_str(),
        buckets: n,
        bucket_s: secs(width),
        lanes_total,
        lanes_merged: merged,
        recording_truncated: job.truncated(),
        lanes,
    };
    serde_json::to_vec(&answer).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_spreads_an_interval_over_the_buckets_it_covers() {
        let mut s = Series::new(4);
        // From the middle of bucket 0 to a quarter into bucket 3: 0.5, 1, 1, 0.25.
        s.add(0.5, 3.25, 10.0);
        assert_eq!(s.values(), vec![0.5, 1.0, 1.0, 0.25]);
        assert_eq!(s.total_us, 27.5);
        // Inside one bucket.
        s.add(1.2, 1.7, 10.0);
        assert_eq!(s.values(), vec![0.5, 1.5, 1.0, 0.25]);
        // To the window's end exactly.
        s.add(3.0, 4.0, 10.0);
        assert_eq!(s.values(), vec![0.5, 1.5, 1.0, 1.25]);
    }
}
