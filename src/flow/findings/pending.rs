//! The `pending_on_resources` finding: calls that waited for a CPU (or never started),
//! told apart from those that waited for a worker process to start on their node.

use super::*;

/// Calls that waited, after their arguments were ready, well past what starting a call
/// costs, for a share of the job that matters, or that never started:
/// `pending_on_resources`.
pub(super) fn pending(job: &JobRecord, spans: &Spans, model: Option<&Model>, out: &mut Vec<Finding>) {
    let Some(root) = spans.root() else { return };
    let makespan = spans.end_or_at(root).saturating_sub(spans.spans[root].submit);
    // Never started: still queued at the instant, for long.
    let never: Vec<usize> = (0..spans.spans.len())
        .filter(|&i| i != root && spans.spans[i].start.is_none() && spans.spans[i].end.is_none())
        .filter(|&i| {
            let waited = spans.at.saturating_sub(spans.spans[i].submit);
            waited >= 10_000_000 && waited.saturating_mul(2) >= makespan
        })
        .collect();
    if !never.is_empty() {
        let names: std::collections::BTreeSet<String> =
            never.iter().map(|&i| job.target(spans.spans[i].target).class_name()).collect();
        let ended = spans.spans[root].end.is_some();
        out.push(Finding {
            kind: Kind::PendingOnResources,
            title: if ended {
                format!("{} call(s) never started: no node had the resources they ask for", never.len())
            } else {
                format!("{} call(s) have not started: no node has had the resources they ask for", never.len())
            },
            place: names.into_iter().collect::<Vec<_>>().join(", "),
            evidence: format!(
                "queued for {:.3} s and more with nothing to wait for but resources: a shape no node has \
                 (infeasible), or resources held by other calls the whole time. Ray's docs: {}",
                secs(never.iter().map(|&i| spans.at.saturating_sub(spans.spans[i].submit)).min().unwrap_or(0)),
                Kind::PendingOnResources.doc()
            ),
            calls: never.iter().copied().take(5).collect(),
            saves_us: None,
            fix: "none re-run: the calls never ran".into(),
            weight_us: u64::MAX,
            change: Change::default(),
        });
    }
    let Some(model) = model else { return };
    // Per function or method: the calls' start latency past the overhead floor, on the
    // critical path only (waiting elsewhere cost the job nothing).
    let (on_path, total) = crate::flow::critical_path::critical_path(spans, job);
    let mut by_target: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate() {
        if i != root && s.start.is_some() {
            by_target.entry(s.target).or_default().push(i);
        }
    }
    // Ray starts a job's worker processes as its calls need them (a second or more
    // each on a loaded machine): that wait is the machine's, not the resources'.
    let starting = if job.observed.is_some() { worker_starts(spans, root, model) } else { BTreeMap::new() };
    // Where Ray lost calls' starts (a driver that exited at once), the workers started
    // for those calls are missing from `starting`: a wait then counts only while
    // another of the job's calls ran on the node, as a wait for resources held needs.
    // Seen on Ray 2.49's push of `nested`: an inner call queued 1.6 s for a worker
    // while every other call was blocked, read as a wait for resources.
    let lost_starts = job.observed.is_some()
        && spans.spans.iter().enumerate().any(|(i, s)| i != root && s.start.is_none() && s.end.is_some());
    let busy = if lost_starts { executing(job, spans, root) } else { BTreeMap::new() };
    let waited = |i: usize| {
        let s = &spans.spans[i];
        let (latency, start) = (model.latency(i), s.start.unwrap_or(0));
        let from = start.saturating_sub(latency);
        let on_start = starting.get(&s.node).map_or(0, |w| overlap(w, from, start));
        let waited = latency.saturating_sub(on_start);
        if lost_starts {
            waited.min(busy.get(&s.node).map_or(0, |b| overlap(b, from, start)))
        } else {
            waited
        }
    };
    let mut waited_path = 0u64;
    let mut calls = Vec::new();
    let mut change = Change::default();
    let mut arg_wait = 0u64;
    for list in by_target.values() {
        let floor = list.iter().map(|&c| waited(c)).filter(|&l| l > 0).min().unwrap_or(0);
        for &i in list {
            let excess = waited(i).saturating_sub(floor);
            if excess == 0 {
                continue;
            }
            // Every such call starts at the floor in the re-run (one alone would only
            // hand the path to its siblings), its workers' starts kept; the share is
            // what the path spent so.
            change.latency.push((i, model.latency(i) - excess));
            if on_path[i].queued > 0 {
                waited_path += on_path[i].queued.min(excess);
                calls.push(i);
                let s = &spans.spans[i];
                let dep_end = s.deps.iter().filter_map(|&d| spans.spans[d].end).max().unwrap_or(s.submit);
                arg_wait += dep_end.saturating_sub(s.submit);
            }
        }
    }
    if total == 0 || waited_path.saturating_mul(10) < total || waited_path < 500_000 {
        return;
    }
    let names: std::collections::BTreeSet<String> =
        calls.iter().map(|&i| job.target(spans.spans[i].target).class_name()).collect();
    let mut names: Vec<String> = names.into_iter().collect();
    if names.len() > 4 {
        let more = names.len() - 4;
        names.truncate(4);
        names.push(format!("and {more} more"));
    }
    out.push(Finding {
        kind: Kind::PendingOnResources,
        title: format!(
            "the job waits for resources: {:.1}% of its critical path is calls queued after their arguments were ready",
            100.0 * waited_path as f64 / total as f64
        ),
        place: names.join(", "),
        evidence: format!(
            "{} calls on the critical path queued {:.3} s in all for a worker and its resources (CPUs, GPUs, memory \
             or a custom resource) past what starting a call costs; their arguments had kept them {:.3} s before \
             that{}. Ray's docs: {}",
            calls.len(),
            secs(waited_path),
            secs(arg_wait),
            match starting.values().map(Vec::len).sum::<usize>() {
                0 => String::new(),
                n => format!("; waits while the job's {n} worker process start(s) ran are not counted"),
            },
            Kind::PendingOnResources.doc()
        ),
        calls: {
            let mut v = calls.clone();
            v.sort_by_key(|&i| (std::cmp::Reverse(on_path[i].queued), i));
            v.truncate(5);
            v
        },
        saves_us: None,
        fix: "resources free when the calls were ready (each started as fast as its fastest siblings)".into(),
        weight_us: waited_path,
        change,
    });
}

/// Per node, the intervals in which a worker process was starting for the job: from
/// when the first call a worker ran could have started until it did. Merged, in order.
/// Only an observed job's pids are its workers' (the model numbers a process per call).
fn worker_starts(spans: &Spans, root: usize, model: &Model) -> BTreeMap<u32, Vec<(u64, u64)>> {
    let mut first: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate() {
        let Some(start) = s.start else { continue };
        // A node not known (Ray 2.49's pushes carry none) is one more key: pids are
        // the host's.
        if i == root || s.pid == 0 {
            continue;
        }
        let e = first.entry((s.node, s.pid)).or_insert(i);
        if (start, i) < (spans.spans[*e].start.unwrap_or(u64::MAX), *e) {
            *e = i;
        }
    }
    let mut by_node: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for (&(node, _), &i) in &first {
        let start = spans.spans[i].start.unwrap_or(0);
        let from = start.saturating_sub(model.latency(i));
        if from < start {
            by_node.entry(node).or_default().push((from, start));
        }
    }
    for w in by_node.values_mut() {
        merge(w);
    }
    by_node
}

/// Per node, the intervals in which some call of the job (not the driver) executed.
/// Merged, in order. A call that ended with the job has no end from Ray (it is given
/// its caller's): its last phase, up to that end, is not known to have run.
fn executing(job: &JobRecord, spans: &Spans, root: usize) -> BTreeMap<u32, Vec<(u64, u64)>> {
    let ended_with_job = |span: u64| job.observed.as_ref().is_some_and(|o| o.ended_with_job.contains_key(&span));
    let mut by_node: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for (i, s) in spans.spans.iter().enumerate().filter(|&(i, _)| i != root) {
        let mut phases: Vec<(Phase, u64, u64)> = s.intervals(spans.end_or_at(i)).collect();
        if ended_with_job(s.span) {
            phases.pop();
        }
        let ran = phases.into_iter().filter(|(p, _, _)| *p == Phase::Executing);
        by_node.entry(s.node).or_default().extend(ran.map(|(_, from, to)| (from, to)));
    }
    for w in by_node.values_mut() {
        merge(w);
    }
    by_node
}

/// Sorts `intervals` and merges those that overlap or touch.
fn merge(intervals: &mut Vec<(u64, u64)>) {
    intervals.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(intervals.len());
    for &(a, b) in intervals.iter() {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    *intervals = merged;
}

/// How much of `[a, b)` the merged `intervals` cover.
fn overlap(intervals: &[(u64, u64)], a: u64, b: u64) -> u64 {
    intervals.iter().map(|&(from, to)| to.min(b).saturating_sub(from.max(a))).sum()
}
