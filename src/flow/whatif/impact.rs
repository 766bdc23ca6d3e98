//! The impact ranking: which fixes of the recorded job's calls would save the most,
//! each re-run on the replay model, and how the ranking is written (JSON, text).

use super::*;

/// One what-if: the targets fixed together, what each stretch then takes, and the
/// makespan it leaves.
#[derive(Clone, Debug)]
pub struct Impact {
    pub targets: Vec<u32>,
    pub fixed_stretch_us: Vec<u64>,
    pub makespan_us: u64,
    pub saved_us: u64,
}

/// Each target's median executing stretch (targets that never executed: none).
fn stretches(m: &Model) -> BTreeMap<u32, u64> {
    let mut lens: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (i, steps) in m.steps.iter().enumerate() {
        for s in steps {
            if let Step::Exec(d) = s {
                if *d > 0 {
                    lens.entry(m.target[i]).or_default().push(*d);
                }
            }
        }
    }
    lens.into_iter().map(|(t, v)| (t, median(v))).collect()
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Each target's median stretch, and per class-level frame the sorted medians of its
/// targets: a target's siblings' median without scanning every target per target.
struct Stretches {
    own: BTreeMap<u32, u64>,
    by_frame: BTreeMap<u32, Vec<u64>>,
}

impl Stretches {
    fn of(job: &JobRecord, m: &Model) -> Stretches {
        let own = stretches(m);
        let mut by_frame: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for (&t, &d) in &own {
            by_frame.entry(job.target(t).frame).or_default().push(d);
        }
        for v in by_frame.values_mut() {
            v.sort_unstable();
        }
        Stretches { own, by_frame }
    }

    fn own(&self, target: u32) -> u64 {
        self.own.get(&target).copied().unwrap_or(0)
    }

    /// The length a target's executing stretches take when fixed: its siblings' (other
    /// instances of the same class and method), as the median of their medians, so
    /// that a few slow siblings do not set the bar; zero without siblings.
    fn sibling(&self, job: &JobRecord, target: u32) -> u64 {
        let Some(all) = self.by_frame.get(&job.target(target).frame) else { return 0 };
        // The frame's medians without this target's own (if it executed at all).
        let (n, skip) = match self.own.get(&target) {
            Some(d) => (all.len() - 1, Some(all.partition_point(|x| x < d))),
            None => (all.len(), None),
        };
        if n == 0 {
            return 0;
        }
        let k = n / 2;
        match skip {
            Some(p) if p <= k => all[k + 1],
            _ => all[k],
        }
    }
}

/// How many single fixes are tried: the top of the critical path, then slow outliers.
pub const CANDIDATES: usize = 8;

/// `f` over `items` on up to as many threads as the machine has cores, in order: each
/// what-if is a whole re-run of the job, independent of the others.
fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len()).max(1);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let per = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let f = &f;
        let parts: Vec<_> =
            items.chunks(per).map(|chunk| scope.spawn(move || chunk.iter().map(f).collect::<Vec<R>>())).collect();
        parts.into_iter().flat_map(|h| h.join().expect("a what-if re-run panicked")).collect()
    })
}

/// The what-ifs worth reporting, most saved first: each candidate alone, and "fix
/// both" for the two outliers that save most together when that beats either alone.
/// Also returns the recorded makespan the replay reproduced (µs).
pub fn rank(job: &JobRecord, spans: &Spans) -> Option<(Vec<Impact>, u64)> {
    rank_with(job, spans, &critical_path::rank(job, spans))
}

/// [`rank`], given the job's critical-path ranking (`critical_path::rank`).
pub fn rank_with(job: &JobRecord, spans: &Spans, path: &critical_path::Ranked) -> Option<(Vec<Impact>, u64)> {
    let m = Model::of(job, spans)?;
    let base = m.makespan(&Fix::new());
    let st = Stretches::of(job, &m);
    let entries = &path.0;
    // Candidates: the top of the path by execution, then any method whose stretches run
    // well past its siblings' (an outlier off the path now may be on it once the path's
    // top is fixed: its twin).
    let mut candidates: Vec<u32> = entries.iter().take(CANDIDATES / 2).map(|e| e.target).collect();
    let mut outliers: Vec<(u64, u32)> = (0..job.targets.len() as u32)
        .filter(|&t| job.target(t).kind != TargetKind::Driver)
        .filter_map(|t| {
            let (mine, sib) = (st.own(t), st.sibling(job, t));
            (mine > 0 && mine >= sib.saturating_mul(2)).then(|| (mine - sib, t))
        })
        .collect();
    outliers.sort_by(|a, b| b.cmp(a));
    for (_, t) in &outliers {
        if candidates.len() >= CANDIDATES {
            break;
        }
        if !candidates.contains(t) {
            candidates.push(*t);
        }
    }
    let impact = |targets: &[u32]| {
        let fix: Fix = targets.iter().map(|&t| (t, st.sibling(job, t))).collect();
        let makespan = m.makespan(&fix);
        Impact {
            targets: targets.to_vec(),
            fixed_stretch_us: targets.iter().map(|t| fix[t]).collect(),
            makespan_us: makespan,
            saved_us: base.saturating_sub(makespan),
        }
    };
    let mut out: Vec<Impact> = par_map(&candidates, |&t| impact(&[t]));
    // Twins: among the outliers, the pair that saves most together, when that is well
    // more than the best single fix.
    let best_single = out.iter().map(|i| i.saved_us).max().unwrap_or(0);
    let top: Vec<u32> = outliers.iter().take(4).map(|(_, t)| *t).collect();
    let pairs: Vec<[u32; 2]> =
        top.iter().enumerate().flat_map(|(k, &a)| top[k + 1..].iter().map(move |&b| [a, b])).collect();
    let mut best_pair: Option<Impact> = None;
    for p in par_map(&pairs, |pair| impact(pair)) {
        if best_pair.as_ref().is_none_or(|q| p.saved_us > q.saved_us) {
            best_pair = Some(p);
        }
    }
    // A fix that saves less than 0.1 % of the job is no finding, unless it is half of
    // a pair offered: then what each alone saves is the point.
    let pair = best_pair.filter(|p| p.saved_us > best_single.saturating_mul(3) / 2 + 1_000_000);
    out.retain(|i| i.saved_us > 0 && i.saved_us.saturating_mul(1000) >= base);
    if let Some(p) = pair {
        for &t in &p.targets {
            if !out.iter().any(|i| i.targets == [t]) {
                out.push(impact(&[t]));
            }
        }
        out.push(p);
    }
    out.sort_by(|a, b| b.saved_us.cmp(&a.saved_us).then(a.targets.len().cmp(&b.targets.len())));
    Some((out, base))
}

/// Critical-path entries re-run made instant, at most this many (the top of the path):
/// each is a whole re-run of the job.
pub const INSTANT_ENTRIES: usize = 8;

/// What making each of the path's top entries instant saves: one re-run per entry
/// with its executing stretches at zero.
#[derive(Clone, Debug, Default)]
pub struct Instant {
    /// The recorded job re-run unchanged, µs.
    pub base_us: u64,
    /// Per target re-run: the makespan it left, µs.
    pub makespan_us: BTreeMap<u32, u64>,
}

impl Instant {
    /// What making `target` instant saved, µs (`None`: not re-run).
    pub fn saved(&self, target: u32) -> Option<u64> {
        self.makespan_us.get(&target).map(|m| self.base_us.saturating_sub(*m))
    }
}

/// [`Instant`] for the top of `path` (`None`: the job has not ended).
pub fn instant_with(job: &JobRecord, spans: &Spans, path: &critical_path::Ranked) -> Option<Instant> {
    let m = Model::of(job, spans)?;
    let base_us = m.makespan(&Fix::new());
    let targets: Vec<u32> = path.0.iter().take(INSTANT_ENTRIES).map(|e| e.target).collect();
    let runs = par_map(&targets, |&t| (t, m.makespan(&Fix::from([(t, 0)]))));
    Some(Instant { base_us, makespan_us: runs.into_iter().collect() })
}

/// Why making an entry that holds `held_us` of the path instant saves only `saved_us`
/// (`None`: it saves at least half of it, or it holds too little to matter).
/// `beside`: the longest-executing other function or actor method, named as the
/// likely next-longest path.
pub fn why_less(held_us: u64, saved_us: u64, base_us: u64, beside: Option<(&str, u64)>) -> Option<String> {
    if held_us == 0 || saved_us.saturating_mul(2) >= held_us || held_us.saturating_mul(100) < base_us {
        return None;
    }
    let left = base_us.saturating_sub(saved_us) as f64 / 1e6;
    let next = match beside {
        Some((name, us)) => format!(": {name} executed {:.3} s of its own", us as f64 / 1e6),
        None => String::new(),
    };
    Some(format!(
        "made instant, it saves {:.3} s of the {:.3} s it holds: the job still takes {left:.3} s, as the next-longest path \
         (calls that did not wait for it{next}) runs beside it and becomes the critical path",
        saved_us as f64 / 1e6,
        held_us as f64 / 1e6
    ))
}

/// Run `f` over `items` in parallel (for the findings' re-runs).
pub(crate) fn par_runs<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    par_map(items, f)
}

/// The ranking as JSON (`/api/flow/impact`).
pub fn impact_json(job: &JobRecord, spans: &Spans) -> Value {
    impact_json_of(job, spans, rank(job, spans).as_ref())
}

/// [`impact_json`] of a ranking already made (`None`: the job has not ended).
pub fn impact_json_of(job: &JobRecord, spans: &Spans, ranked: Option<&(Vec<Impact>, u64)>) -> Value {
    let secs = |us: u64| us as f64 / 1e6;
    let Some((list, base)) = ranked.map(|(l, b)| (l, *b)) else {
        return json!({"job_id": job.job_hex, "at_s": secs(spans.at), "finished": false, "entries": [],
            "note": "the job has not ended: what a fix saves is computed on a finished job"});
    };
    let recorded = spans.root().map_or(0, |r| spans.end_or_at(r) - spans.spans[r].submit);
    let entries: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(r, i)| {
            let fixes: Vec<Value> = i
                .targets
                .iter()
                .zip(&i.fixed_stretch_us)
                .map(|(&t, &stretch)| {
                    let tg = job.target(t);
                    json!({"name": tg.class_name(), "actor_id": tg.actor_id(), "level": tg.level,
                        "program_flag": tg.flag, "stretch_s": secs(stretch)})
                })
                .collect();
            json!({"rank": r + 1, "fix": fixes, "together": i.targets.len() > 1,
                "makespan_s": secs(i.makespan_us), "saved_s": secs(i.saved_us),
                "saved_share": if base > 0 { i.saved_us as f64 / base as f64 } else { 0.0 }})
        })
        .collect();
    json!({"job_id": job.job_hex, "at_s": secs(spans.at), "finished": true, "truncated": job.truncated(),
        "makespan_s": secs(base), "recorded_makespan_s": secs(recorded), "entries": entries})
}

/// The ranking as text, after the critical path's (the CLI's `bottlenecks.txt`), of a
/// ranking already made (`None`: the job has not ended).
pub fn text_of(job: &JobRecord, ranked: Option<&(Vec<Impact>, u64)>) -> String {
    let Some((list, base)) = ranked.map(|(l, b)| (l, *b)) else {
        return "what fixing saves: the job has not ended\n".into();
    };
    let mut s = format!(
        "what fixing saves, each fix made as fast as its siblings (the job re-run in the model, {:.3} s as recorded):\n",
        base as f64 / 1e6
    );
    if list.is_empty() {
        s.push_str("  no single fix saves 0.1 % or more\n");
    }
    s.push_str("rank  saved_s       share   makespan_s    fix\n");
    for (r, i) in list.iter().enumerate() {
        let fixes: Vec<String> = i
            .targets
            .iter()
            .zip(&i.fixed_stretch_us)
            .map(|(&t, &stretch)| {
                let tg = job.target(t);
                format!(
                    "{} {} (stretches to {:.3} s{})",
                    tg.class_name(),
                    tg.actor_id().unwrap_or_else(|| "-".into()),
                    stretch as f64 / 1e6,
                    if tg.flag { ", flagged" } else { "" }
                )
            })
            .collect();
        s.push_str(&format!(
            "{:>4}  {:>12.3}  {:>5.1}%  {:>12.3}  {}{}\n",
            r + 1,
            i.saved_us as f64 / 1e6,
            if base > 0 { 100.0 * i.saved_us as f64 / base as f64 } else { 0.0 },
            i.makespan_us as f64 / 1e6,
            if i.targets.len() > 1 { "both: " } else { "" },
            fixes.join(" + ")
        ));
    }
    s
}
