//! How much of each function's held time was CPU, from the workers' CPU time the
//! observer read beside them (`observe::cpu_times`).
//!
//! A worker's CPU time moves while it computes, and a little while it waits or sleeps.
//! Between two readings of one worker, its CPU time is the share of each function it
//! ran times the time it ran it, and a small idle rate for the rest. One least-squares
//! fit over every worker's intervals gives each function's share and its standard
//! error. A share holds what Ray's worker does around the body too (reading the
//! arguments, serialising the return): a fixed cost per call is not told apart from a
//! share over intervals a few calls long, and the model's own per-call costs are a
//! fraction of a ms.
//! Intervals that hold a worker's first call of a function are left out: a first call
//! also loads the function, which the model charges as first-call work.
//!
//! Owns: that fit and its thresholds. Must never: call a share measured when its error
//! leaves it indistinguishable from none, or read anything but the job's rows and the
//! readings.

use crate::observe::rows::ObservedTask;
use crate::observe::store::Store;
use std::collections::BTreeMap;

/// Intervals fitted at least, beyond the fit's unknowns.
const MIN_SPARE_INTERVALS: usize = 5;
/// A function's share is read only over this much of its calls' time, ms, and this many
/// calls beyond the first on each worker.
const MIN_HELD_MS: f64 = 300.0;
const MIN_CALLS: usize = 3;
/// A share under this, or under twice its error, is no measured CPU: its calls hold.
const MIN_SHARE: f64 = 0.02;
/// Readings this far (ms) outside the job's first start and last end are not the job's.
const MARGIN_MS: u64 = 1_000;

/// One function's CPU share of its calls' held time.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Body {
    /// `Class.method` or the function's name, as `--cpu` takes it.
    pub name: String,
    /// CPU time over held time, 0 to 1.
    pub share: f64,
    /// Its standard error.
    pub error: f64,
    /// Calls and their held time the fit read it over.
    pub calls: usize,
    pub held_ms: f64,
    /// Whether it is told from none (at least [`MIN_SHARE`] and twice its error).
    pub computes: bool,
}

/// What the readings say of a job's calls.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bodies {
    /// Each function read, by name.
    pub bodies: Vec<Body>,
    /// Worker processes and intervals the fit read.
    pub workers: usize,
    pub intervals: usize,
    /// Why no share was read, where none was.
    pub why_none: Option<String>,
}

impl Bodies {
    /// The bodies' CPU in words: what a replay of this job computes on the cores. They
    /// belong to the job, not to a config: a costs file carries them as comments only.
    pub fn text(&self) -> Vec<String> {
        if let Some(why) = &self.why_none {
            return vec![format!("bodies' CPU: not read ({why}); a replay holds each call's time")];
        }
        let mut out =
            vec![format!("bodies' CPU, from {} workers' CPU time over {} intervals:", self.workers, self.intervals)];
        for b in &self.bodies {
            let verdict = if b.computes { "computes" } else { "holds (no CPU told apart)" };
            out.push(format!(
                "  {} {:.0} % ± {:.0} of {:.0} ms over {} calls: {verdict}",
                b.name,
                100.0 * b.share,
                100.0 * b.error,
                b.held_ms,
                b.calls
            ));
        }
        out
    }

    /// The shares told from none, by name.
    pub fn computing(&self) -> impl Iterator<Item = &Body> {
        self.bodies.iter().filter(|b| b.computes)
    }
}

/// One call's run on its worker.
struct Run {
    start: u64,
    end: u64,
    name: usize,
    first: bool,
}

/// Read the shares of `tasks` (one job's calls' last attempts) from `store`'s readings.
pub(super) fn read(store: &Store, tasks: &[&ObservedTask]) -> Bodies {
    let readings = store.cpu.by_pid();
    if readings.is_empty() {
        return none(
            "the trace holds no CPU readings of the workers: record with `rayscope observe --record` on the \
             machine the workers run on",
        );
    }
    let mut names: Vec<String> = Vec::new();
    let mut runs: BTreeMap<u32, Vec<Run>> = BTreeMap::new();
    let (mut from, mut to) = (u64::MAX, 0);
    for t in tasks {
        let (Some(pid), Some(start), Some(end)) = (t.worker_pid, t.started_ms(), t.ended_ms()) else { continue };
        if end < start {
            continue;
        }
        let name = crate::observe::flow::call_name(store, t);
        let k = names.iter().position(|n| *n == name).unwrap_or_else(|| {
            names.push(name);
            names.len() - 1
        });
        runs.entry(pid).or_default().push(Run { start, end, name: k, first: false });
        (from, to) = (from.min(start), to.max(end));
    }
    for list in runs.values_mut() {
        list.sort_by_key(|r| r.start);
        let mut seen = vec![false; names.len()];
        for r in list.iter_mut() {
            r.first = !seen[r.name];
            seen[r.name] = true;
        }
    }
    // Columns: each function's held ms, then idle ms.
    let (idle_col, width) = (names.len(), names.len() + 1);
    let mut rows: Vec<(Vec<f64>, f64)> = Vec::new();
    let mut workers = 0;
    for (pid, list) in &runs {
        let Some(read) = readings.get(pid) else { continue };
        let mut used = false;
        for pair in read.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if b.at_ms <= a.at_ms || b.at_ms + MARGIN_MS < from || a.at_ms > to + MARGIN_MS || b.cpu_ms < a.cpu_ms {
                continue;
            }
            let mut x = vec![0.0; width];
            let mut clean = true;
            for r in list.iter().filter(|r| r.start < b.at_ms && r.end > a.at_ms) {
                if r.first {
                    clean = false;
                    break;
                }
                x[r.name] += (r.end.min(b.at_ms) - r.start.max(a.at_ms)) as f64;
            }
            if !clean {
                continue;
            }
            let span = (b.at_ms - a.at_ms) as f64;
            x[idle_col] = (span - x[..idle_col].iter().sum::<f64>()).max(0.0);
            rows.push((x, (b.cpu_ms - a.cpu_ms) as f64));
            used = true;
        }
        workers += usize::from(used);
    }
    // The fit's unknowns: the columns some interval holds (a function whose every call
    // was a first call on its worker is none).
    let unknowns: Vec<usize> = (0..width).filter(|&j| rows.iter().any(|(x, _)| x[j] != 0.0)).collect();
    if rows.len() < unknowns.len() + MIN_SPARE_INTERVALS {
        return none(&format!(
            "{} intervals between readings show the job's calls cleanly, {} needed",
            rows.len(),
            unknowns.len() + MIN_SPARE_INTERVALS
        ));
    }
    let Some((beta, errors)) = least_squares(&rows, width, &unknowns) else {
        return none("the readings do not tell the functions apart (every interval holds them alike)");
    };
    let mut bodies = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let held_ms: f64 = rows.iter().map(|(x, _)| x[k]).sum();
        let calls = runs.values().flatten().filter(|r| r.name == k && !r.first).count();
        if held_ms < MIN_HELD_MS || calls < MIN_CALLS {
            continue;
        }
        let share = beta[k].clamp(0.0, 1.0);
        let computes = share >= MIN_SHARE && share >= 2.0 * errors[k];
        bodies.push(Body { name: name.clone(), share, error: errors[k], calls, held_ms, computes });
    }
    if bodies.is_empty() {
        return none(&format!(
            "no function ran {MIN_CALLS} calls beyond each worker's first, {MIN_HELD_MS:.0} ms in all, between readings"
        ));
    }
    bodies.sort_by(|a, b| a.name.cmp(&b.name));
    Bodies { bodies, workers, intervals: rows.len(), why_none: None }
}

fn none(why: &str) -> Bodies {
    Bodies { why_none: Some(why.to_string()), ..Default::default() }
}

/// The least-squares fit of `y = x·β` over the columns `used` (those some row holds) and
/// each coefficient's standard error; `None` where those columns are not independent. A
/// column not used gets 0.
fn least_squares(rows: &[(Vec<f64>, f64)], width: usize, used: &[usize]) -> Option<(Vec<f64>, Vec<f64>)> {
    let p = used.len();
    let mut xtx = vec![vec![0.0; p]; p];
    let mut xty = vec![0.0; p];
    for (x, y) in rows {
        for (i, &a) in used.iter().enumerate() {
            xty[i] += x[a] * y;
            for (j, &b) in used.iter().enumerate() {
                xtx[i][j] += x[a] * x[b];
            }
        }
    }
    let inverse = invert(xtx)?;
    let fit: Vec<f64> = (0..p).map(|i| (0..p).map(|j| inverse[i][j] * xty[j]).sum()).collect();
    let rss: f64 = rows
        .iter()
        .map(|(x, y)| {
            let predicted: f64 = used.iter().enumerate().map(|(i, &a)| x[a] * fit[i]).sum();
            (y - predicted).powi(2)
        })
        .sum();
    let variance = rss / (rows.len().saturating_sub(p).max(1)) as f64;
    let (mut beta, mut errors) = (vec![0.0; width], vec![0.0; width]);
    for (i, &a) in used.iter().enumerate() {
        beta[a] = fit[i];
        errors[a] = (variance * inverse[i][i]).max(0.0).sqrt();
    }
    Some((beta, errors))
}

/// Gauss-Jordan with partial pivoting; `None` for a singular matrix.
fn invert(mut m: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let n = m.len();
    let scale = m.iter().flatten().fold(0.0f64, |s, v| s.max(v.abs())).max(1.0);
    let mut inv: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect()).collect();
    for c in 0..n {
        let pivot = (c..n).max_by(|&a, &b| m[a][c].abs().total_cmp(&m[b][c].abs()))?;
        if m[pivot][c].abs() <= 1e-12 * scale {
            return None;
        }
        m.swap(c, pivot);
        inv.swap(c, pivot);
        let d = m[c][c];
        for j in 0..n {
            m[c][j] /= d;
            inv[c][j] /= d;
        }
        for r in 0..n {
            if r != c {
                let f = m[r][c];
                if f != 0.0 {
                    for j in 0..n {
                        m[r][j] -= f * m[c][j];
                        inv[r][j] -= f * inv[c][j];
                    }
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::cpu_times::WorkerCpu;
    use crate::observe::store::{Change, StoreLimits};

    fn call(id: &str, name: &str, pid: u32, start: u64, end: u64) -> ObservedTask {
        ObservedTask {
            task_id: id.into(),
            job_id: "01000000".into(),
            name: name.into(),
            kind: "NORMAL_TASK".into(),
            state: "FINISHED".into(),
            worker_pid: Some(pid),
            start_time_ms: Some(start),
            end_time_ms: Some(end),
            ..Default::default()
        }
    }

    /// Two workers alternate `crunch` (200 ms, 40 % CPU) and `nap` (150 ms, no CPU),
    /// each call's end costs 1 ms, idle 1 %, read every 100 ms as whole 10 ms ticks.
    fn job(first_call_cpu_ms: f64) -> (Store, Vec<ObservedTask>) {
        let mut store = Store::new(StoreLimits::default());
        let mut tasks = Vec::new();
        let t0 = 1_800_000_000_000u64;
        let mut cpu = [0.0f64; 2];
        let mut runs: Vec<(u32, u64, u64, f64, f64)> = Vec::new(); // pid, start, end, share, extra
        for (w, pid) in [(0usize, 100u32), (1, 200)] {
            let mut at = t0 + 50 + 30 * w as u64;
            for k in 0..30 {
                let (name, len, share) = if (k + w) % 2 == 0 { ("crunch", 200, 0.4) } else { ("nap", 150, 0.0) };
                let extra = if k < 2 { first_call_cpu_ms } else { 0.0 };
                tasks.push(call(&format!("{pid}-{k}"), name, pid, at, at + len));
                runs.push((pid, at, at + len, share, extra));
                at += len + 20;
            }
        }
        let mut readings = Vec::new();
        for step in 0..120u64 {
            let at = t0 + step * 100;
            let mut round = WorkerCpu { at_ms: at, cpu_ms: vec![] };
            for (w, pid) in [(0usize, 100u32), (1, 200)] {
                // CPU up to `at`: each run's share of its time so far, its end's 3 ms,
                // a first call's extra, and 1 % of the rest.
                let mut total = 0.0;
                let mut busy = 0.0;
                for &(p, s, e, share, extra) in runs.iter().filter(|r| r.0 == pid && r.1 < at) {
                    let held = (e.min(at) - s) as f64;
                    busy += held;
                    total += share * held + extra + if e <= at { 1.0 } else { 0.0 };
                    let _ = p;
                }
                total += 0.01 * ((at - t0) as f64 - busy).max(0.0);
                let ticks = (total / 10.0).floor() * 10.0;
                if ticks != cpu[w] || step == 0 {
                    cpu[w] = ticks;
                    round.cpu_ms.push((pid, ticks as u64));
                }
            }
            readings.push(round);
        }
        for r in readings {
            store.apply(&Change::WorkerCpu(r));
        }
        (store, tasks)
    }

    #[test]
    fn a_functions_share_is_read_from_its_workers_cpu_time_and_a_sleeper_reads_as_none() {
        let (store, tasks) = job(0.0);
        let refs: Vec<&ObservedTask> = tasks.iter().collect();
        let b = read(&store, &refs);
        assert_eq!(b.why_none, None);
        assert_eq!(b.workers, 2);
        let crunch = b.bodies.iter().find(|x| x.name == "crunch").expect("crunch read");
        let nap = b.bodies.iter().find(|x| x.name == "nap").expect("nap read");
        assert!((crunch.share - 0.4).abs() < 0.03, "{crunch:?}");
        assert!(crunch.computes, "{crunch:?}");
        assert!(nap.share < 0.02 && !nap.computes, "{nap:?}");
    }

    #[test]
    fn a_workers_first_call_of_a_function_is_left_out_of_its_share() {
        // 300 ms of loading on each worker's first two calls would be 5 % of every
        // call's time if it counted.
        let (store, tasks) = job(300.0);
        let refs: Vec<&ObservedTask> = tasks.iter().collect();
        let crunch = read(&store, &refs).bodies.into_iter().find(|x| x.name == "crunch").unwrap();
        assert!((crunch.share - 0.4).abs() < 0.03, "{crunch:?}");
    }

    #[test]
    fn no_readings_or_too_few_say_why() {
        let (_, tasks) = job(0.0);
        let refs: Vec<&ObservedTask> = tasks.iter().collect();
        let b = read(&Store::new(StoreLimits::default()), &refs);
        assert!(b.why_none.unwrap().contains("no CPU readings"));
        let (store, _) = job(0.0);
        let b = read(&store, &refs[..3]);
        assert!(b.why_none.unwrap().contains("beyond each worker's first"), "three calls are too few");
        let mut two = Store::new(StoreLimits::default());
        for (at, ms) in [(1_800_000_000_000, 0), (1_800_000_000_100, 10)] {
            two.apply(&Change::WorkerCpu(WorkerCpu { at_ms: at, cpu_ms: vec![(100, ms)] }));
        }
        let b = read(&two, &refs);
        assert!(b.why_none.unwrap().contains("intervals between readings"), "two readings are too few");
    }

    #[test]
    fn the_fit_recovers_known_coefficients_and_refuses_dependent_columns() {
        let rows: Vec<(Vec<f64>, f64)> =
            (0..20).map(|i| (vec![i as f64, 1.0], 2.0 * i as f64 + 5.0)).collect::<Vec<_>>();
        let (beta, err) = least_squares(&rows, 2, &[0, 1]).unwrap();
        assert!((beta[0] - 2.0).abs() < 1e-9 && (beta[1] - 5.0).abs() < 1e-9, "{beta:?}");
        assert!(err.iter().all(|e| *e < 1e-6));
        let same: Vec<(Vec<f64>, f64)> = (0..20).map(|i| (vec![i as f64, 2.0 * i as f64], 1.0)).collect();
        assert_eq!(least_squares(&same, 2, &[0, 1]), None);
    }
}
