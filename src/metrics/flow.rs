//! Flow Insight's metrics: `rayscope_flow_calls_total{caller, callee}` and
//! `rayscope_flow_call_duration_seconds{callee}` (submit to end, seconds).
//!
//! Served with the cluster-wide families, with `Version` and without `SessionName`
//! like every `rayscope_*` family. Labels are class and method names (`Worker.process`,
//! a remote function, `_main` for drivers), never actor, task or job ids, so the series
//! stay bounded by the program's names.
//! Owns: the `rayscope_flow_*` families. Must never: import another collector, or read
//! the per-call records (only the snapshot's cumulative aggregates).

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::scrape::{Family, Scrape};
use crate::snapshot::flow::DRIVER_NAME;

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    if !s.cluster {
        return Ok(());
    }
    let flow = &s.snap.flow;
    let name = |k: u32| if k == DRIVER_NAME { "_main" } else { s.snap.name(k) };
    let mut calls = Family::counter(
        enc,
        "rayscope_flow_calls_total",
        "Calls submitted from caller to callee (Flow Insight's call graph edges), by class and method name.",
    );
    for (&(caller, callee), n) in flow.calls.iter() {
        calls.sample(&[("caller", name(caller)), ("callee", name(callee))], *n)?;
    }
    let mut durations = Family::histogram(
        enc,
        "rayscope_flow_call_duration_seconds",
        "Time from a call's submit to its end (queueing included), by callee class and method name.",
    );
    for (&callee, h) in flow.durations.iter() {
        durations.histogram_sample(&[("callee", name(callee))], h.bounds, &h.counts, h.sum)?;
    }
    Ok(())
}
