//! A job's records replayed up to an instant: one [`Span`] per call, with its
//! parent, its last attempt and its bytes. Every view starts here.
//!
//! Owns: the replay ([`Spans::replay`]), a pure function of the snapshot's records
//! and an instant.
//! Must never: change the records, or keep spans past the view that asked for them.

use crate::snapshot::flow::{JobRecord, Rec};
use rustc_hash::FxHashMap;

/// One call as replayed up to an instant.
#[derive(Clone, Debug)]
pub struct Span {
    pub span: u64,
    /// Index of the calling span in [`Spans::spans`] (`None`: the driver).
    pub parent: Option<usize>,
    pub target: u32,
    pub submit: u64,
    /// Start of its last attempt, if it started by the instant.
    pub start: Option<u64>,
    /// When it ended, if it ended by the instant.
    pub end: Option<u64>,
    pub ok: bool,
    /// Node index and worker pid of its last attempt (`u32::MAX`: not placed yet).
    pub node: u32,
    pub pid: u32,
    pub arg_bytes: u64,
    pub return_bytes: u64,
    pub put_bytes: u64,
}

impl Span {
    pub fn in_flight(&self) -> bool {
        self.end.is_none()
    }
}

/// A job's spans as of `at`.
#[derive(Debug)]
pub struct Spans {
    pub spans: Vec<Span>,
    pub index: FxHashMap<u64, usize>,
    pub at: u64,
}

impl Spans {
    /// Replay `job`'s records made at or before `at` (µs) into spans, in submit order.
    pub fn replay(job: &JobRecord, at: u64) -> Spans {
        let mut out = Spans { spans: Vec::new(), index: FxHashMap::default(), at };
        for r in job.records.iter() {
            if r.time() > at {
                break;
            }
            match *r {
                Rec::Submit { span, parent, target, t, arg_bytes } => {
                    let parent = out.index.get(&parent).copied();
                    out.index.insert(span, out.spans.len());
                    out.spans.push(Span {
                        span,
                        parent,
                        target,
                        submit: t,
                        start: None,
                        end: None,
                        ok: true,
                        node: u32::MAX,
                        pid: 0,
                        arg_bytes,
                        return_bytes: 0,
                        put_bytes: 0,
                    });
                }
                Rec::Begin { span, t, node, pid } => {
                    if let Some(&i) = out.index.get(&span) {
                        let s = &mut out.spans[i];
                        s.start = Some(t);
                        s.node = node;
                        s.pid = pid;
                    }
                }
                Rec::End { span, t, ok, return_bytes } => {
                    if let Some(&i) = out.index.get(&span) {
                        let s = &mut out.spans[i];
                        s.end = Some(t);
                        s.ok = ok;
                        s.return_bytes = return_bytes;
                    }
                }
                Rec::Put { span, bytes, .. } => {
                    if let Some(&i) = out.index.get(&span) {
                        out.spans[i].put_bytes += bytes;
                    }
                }
            }
        }
        out
    }

    /// Each span's children, by index, in submit order.
    pub fn children(&self) -> Vec<Vec<usize>> {
        let mut c = vec![Vec::new(); self.spans.len()];
        for (i, s) in self.spans.iter().enumerate() {
            if let Some(p) = s.parent {
                c[p].push(i);
            }
        }
        c
    }

    /// Index of the driver span (the first one recorded).
    pub fn root(&self) -> Option<usize> {
        self.spans.iter().position(|s| s.parent.is_none())
    }

    /// End of a span as seen at the instant (still running: the instant).
    pub fn end_or_at(&self, i: usize) -> u64 {
        self.spans[i].end.unwrap_or(self.at).max(self.spans[i].submit)
    }
}
