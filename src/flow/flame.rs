//! The flame graph: time per call path, as folded stacks and as SVG (rendered by
//! `inferno`), in two modes.
//!
//! Owns: both attributions. **Execution** (the default): each call's path holds the
//! time its body ran, nothing it spent queued or blocked in `ray.get`; parallel calls
//! add up, as in a CPU profile. **Wall**: each instant of a call goes either to the call
//! itself or to the one child it is waiting on then (of the children in flight, the one
//! that ends last), recursively from the driver, and a call's own instants are split by
//! what it was doing: running (its frame), queued (`[queued]` under it) or blocked with
//! no child in flight (`[blocked]`). So a path's children never hold more than the path,
//! values are never negative, and the root `_main` total is exactly the driver's wall
//! time (to the instant, if it still runs). Values are virtual µs.
//! Must never: read anything but the job's records (pure function of records + instant).

use super::spans::{Phase, Spans};
use crate::snapshot::flow::JobRecord;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// What a frame's width measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Time the call's body ran.
    #[default]
    Execution,
    /// The driver's wall time, split down the calls it waited on.
    Wall,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "execution" => Some(Mode::Execution),
            "wall" => Some(Mode::Wall),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Execution => "execution",
            Mode::Wall => "wall",
        }
    }
}

/// Folded stacks in `mode`: call path (`_main;Worker.process`) → µs.
pub fn folded(job: &JobRecord, spans: &Spans, mode: Mode) -> BTreeMap<String, u64> {
    match mode {
        Mode::Execution => folded_execution(job, spans),
        Mode::Wall => folded_wall(job, spans),
    }
}

/// Each call's executing time at its call path.
fn folded_execution(job: &JobRecord, spans: &Spans) -> BTreeMap<String, u64> {
    // Paths interned per (parent path, class-level frame): a job has far fewer than
    // calls or actor instances. A parent is always submitted, so replayed, before its
    // children.
    let mut ids: rustc_hash::FxHashMap<(u32, u32), u32> = rustc_hash::FxHashMap::default();
    let mut paths: Vec<(String, u64)> = Vec::new();
    let mut path_of: Vec<u32> = Vec::with_capacity(spans.spans.len());
    for (i, s) in spans.spans.iter().enumerate() {
        let parent = s.parent.map(|p| path_of[p]).unwrap_or(u32::MAX);
        let id = *ids.entry((parent, job.target(s.target).frame)).or_insert_with(|| {
            let name = job.target(s.target).class_name();
            let path = match parent {
                u32::MAX => name,
                p => format!("{};{name}", paths[p as usize].0),
            };
            paths.push((path, 0));
            (paths.len() - 1) as u32
        });
        path_of.push(id);
        paths[id as usize].1 += spans.times(i).executing;
    }
    paths.into_iter().collect()
}

/// A call still to fold: its span, the (start, end) pieces of time it owns, its path.
type Pending = (usize, Vec<(u64, u64)>, String);

/// The driver's wall time down the calls waited on, each call's own share split by phase.
fn folded_wall(job: &JobRecord, spans: &Spans) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    let Some(root) = spans.root() else { return out };
    let children = spans.children();
    let window = |i: usize| (spans.spans[i].submit, spans.end_or_at(i));
    let mut work: Vec<Pending> = vec![(root, vec![window(root)], job.target(spans.spans[root].target).class_name())];
    while let Some((i, pieces, path)) = work.pop() {
        let mut owned: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
        let mut own = super::spans::PhaseTimes::default();
        let end = spans.end_or_at(i);
        // Children's windows, and every boundary where the owner may change.
        let mut wins: Vec<(u64, u64, usize)> = children[i]
            .iter()
            .map(|&c| {
                let (s, e) = window(c);
                (s, e, c)
            })
            .filter(|(s, e, _)| e > s)
            .collect();
        wins.sort();
        let mut points: Vec<u64> = wins.iter().flat_map(|(s, e, _)| [*s, *e]).collect();
        points.extend(pieces.iter().flat_map(|(s, e)| [*s, *e]));
        points.sort_unstable();
        points.dedup();
        let mut heap: BinaryHeap<(u64, Reverse<usize>)> = BinaryHeap::new();
        let (mut next_win, mut piece) = (0usize, 0usize);
        for w in points.windows(2) {
            let (a, b) = (w[0], w[1]);
            while next_win < wins.len() && wins[next_win].0 <= a {
                heap.push((wins[next_win].1, Reverse(wins[next_win].2)));
                next_win += 1;
            }
            while heap.peek().is_some_and(|(e, _)| *e <= a) {
                heap.pop();
            }
            while piece < pieces.len() && pieces[piece].1 <= a {
                piece += 1;
            }
            if piece >= pieces.len() || pieces[piece].0 > a {
                continue;
            }
            match heap.peek() {
                Some((_, Reverse(c))) => {
                    let v = owned.entry(*c).or_default();
                    match v.last_mut() {
                        Some(last) if last.1 == a => last.1 = b,
                        _ => v.push((a, b)),
                    }
                }
                None => {
                    let s = &spans.spans[i];
                    let (queued, blocked) = (s.overlap(Phase::Queued, a, b, end), s.overlap(Phase::Blocked, a, b, end));
                    own.add(Phase::Queued, queued);
                    own.add(Phase::Blocked, blocked);
                    own.add(Phase::Executing, (b - a).saturating_sub(queued + blocked));
                }
            }
        }
        if own.executing > 0 || owned.is_empty() {
            *out.entry(path.clone()).or_default() += own.executing;
        }
        for (phase, us) in [("[queued]", own.queued), ("[blocked]", own.blocked)] {
            if us > 0 {
                *out.entry(format!("{path};{phase}")).or_default() += us;
            }
        }
        for (c, p) in owned {
            let name = job.target(spans.spans[c].target).class_name();
            work.push((c, p, format!("{path};{name}")));
        }
    }
    out
}

/// The folded stacks as text, one `path value` line each.
pub fn folded_text(folded: &BTreeMap<String, u64>) -> String {
    let mut s = String::new();
    for (path, v) in folded {
        if *v > 0 {
            s.push_str(path);
            s.push(' ');
            s.push_str(&v.to_string());
            s.push('\n');
        }
    }
    s
}

/// Why a flame graph could not be drawn (the drawing library's error, as it says it).
#[derive(Debug, thiserror::Error)]
pub enum FlameError {
    #[error(transparent)]
    Draw(#[from] std::io::Error),
    #[error(transparent)]
    NotUtf8(#[from] std::string::FromUtf8Error),
}

/// Render folded stacks as an SVG flame graph.
pub fn svg(title: &str, folded: &BTreeMap<String, u64>) -> Result<String, FlameError> {
    let text = folded_text(folded);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "µs (virtual)".to_string();
    let mut buf = Vec::new();
    if text.is_empty() {
        // inferno refuses empty input; an empty graph is still a valid answer.
        return Ok(format!(
            "<?xml version=\"1.0\" standalone=\"no\"?><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" height=\"60\"><text x=\"10\" y=\"30\">{}: no calls yet</text></svg>",
            xml_escape(title)
        ));
    }
    inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut buf)?;
    Ok(String::from_utf8(buf)?)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
