//! What several views derive from one replay and only its records decide: the
//! critical-path ranking (bottlenecks, and the what-ifs' candidates), the wall-time
//! flame graph's folded stacks, the what-if ranking, what making each of the path's
//! top entries instant saves, and the findings. Each is computed on first
//! need and then shared, so a server answering the page's six views (and its refresh
//! every 3 s) computes each once per set of records, and `rayscope flow` ranks once for
//! two files.
//!
//! Owns: the pieces, each behind a `OnceLock` (a second asker waits for the first
//! result instead of computing it again).
//! Must never: be shared between replays, or between instants of a replay with a call
//! still open (an open call's time grows with the instant: [`Spans::any_open`]): its
//! owner decides that.

use super::spans::Spans;
use super::{critical_path, findings, flame, whatif};
use crate::snapshot::flow::JobRecord;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The what-ifs, most saved first, and the makespan they are measured against.
pub type Impacts = Option<(Vec<whatif::Impact>, u64)>;

#[derive(Default)]
pub struct Derived {
    path: OnceLock<Arc<critical_path::Ranked>>,
    wall: OnceLock<Arc<BTreeMap<String, u64>>>,
    impacts: OnceLock<Arc<Impacts>>,
    instant: OnceLock<Arc<Option<whatif::Instant>>>,
    findings: OnceLock<Arc<Vec<findings::Finding>>>,
}

impl Derived {
    /// The critical-path ranking (`critical_path::rank`).
    pub fn path(&self, job: &JobRecord, spans: &Spans) -> Arc<critical_path::Ranked> {
        self.path.get_or_init(|| Arc::new(critical_path::rank(job, spans))).clone()
    }

    /// The wall-time flame graph's folded stacks.
    pub fn wall(&self, job: &JobRecord, spans: &Spans) -> Arc<BTreeMap<String, u64>> {
        self.wall.get_or_init(|| Arc::new(flame::folded(job, spans, flame::Mode::Wall))).clone()
    }

    /// Whether the what-ifs were ranked already (the last piece a prewarm makes).
    pub fn has_impacts(&self) -> bool {
        self.impacts.get().is_some()
    }

    /// What making each of the path's top entries instant saves (`whatif::instant_with`).
    pub fn instant(&self, job: &JobRecord, spans: &Spans) -> Arc<Option<whatif::Instant>> {
        self.instant.get_or_init(|| Arc::new(whatif::instant_with(job, spans, &self.path(job, spans)))).clone()
    }

    /// The findings, each with what its fix saves (`findings::findings`).
    pub fn findings(&self, job: &JobRecord, spans: &Spans) -> Arc<Vec<findings::Finding>> {
        self.findings.get_or_init(|| Arc::new(findings::findings(job, spans))).clone()
    }

    /// The what-if ranking (`whatif::rank`).
    pub fn impacts(&self, job: &JobRecord, spans: &Spans) -> Arc<Impacts> {
        self.impacts.get_or_init(|| Arc::new(whatif::rank_with(job, spans, &self.path(job, spans)))).clone()
    }
}
