//! `rayscope_*`: the exporter and the simulation about themselves. Served with the
//! cluster-wide families (by `render_all` and the head's endpoint); these series carry
//! `Version` but not `SessionName` (see the `metrics` module docs), and
//! `rayscope_session_info{session_name}` names the session.
//!
//! Runs last, so `rayscope_scrape_collector_duration_seconds` covers every other
//! collector of this very render, and `rayscope_scrape_duration_seconds` the render up
//! to here.
//!
//! Owns: the `rayscope_*` families but Flow Insight's (`flow`). Must never: import
//! another collector, or carry `SessionName` (promtool's linter flags it).

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::scrape::{Family, Scrape};
use crate::snapshot::ObservedView;

const NO_LABELS: [(&str, &str); 0] = [];

/// The HTTP server's limits and what they refused, as `rayscope_http_*` and
/// `rayscope_stream_*` report them (filled by the API, which owns the server).
#[derive(Clone, Debug, Default)]
pub struct HttpServerStats {
    /// `server.max_connections`.
    pub max_connections: u64,
    pub open_connections: u64,
    pub connections_accepted: u64,
    /// Refused with 503 because `max_connections` were open.
    pub connections_rejected: u64,
    /// `server.header_read_timeout`.
    pub header_read_timeout_seconds: f64,
    /// Connections closed because their request headers did not arrive in time.
    pub header_read_timeouts: u64,
    /// Largest WebSocket frame or message accepted from a live-stream client.
    pub stream_message_limit_bytes: u64,
    /// Live-stream clients dropped for sending more than that.
    pub stream_clients_dropped: u64,
}

fn encode_http(h: &HttpServerStats, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    Family::gauge(enc, "rayscope_http_max_connections", "Open HTTP connections allowed (server.max_connections).")
        .sample(&NO_LABELS, h.max_connections)?;
    Family::gauge(enc, "rayscope_http_open_connections", "HTTP connections open now.")
        .sample(&NO_LABELS, h.open_connections)?;
    Family::counter(enc, "rayscope_http_connections_accepted_total", "HTTP connections accepted.")
        .sample(&NO_LABELS, h.connections_accepted)?;
    Family::counter(
        enc,
        "rayscope_http_connections_rejected_total",
        "HTTP connections refused with 503 because server.max_connections were open.",
    )
    .sample(&NO_LABELS, h.connections_rejected)?;
    Family::gauge(
        enc,
        "rayscope_http_header_read_timeout_seconds",
        "Time a request's headers may take to arrive (server.header_read_timeout).",
    )
    .sample(&NO_LABELS, h.header_read_timeout_seconds)?;
    Family::counter(
        enc,
        "rayscope_http_header_read_timeouts_total",
        "HTTP connections closed because request headers did not arrive within server.header_read_timeout.",
    )
    .sample(&NO_LABELS, h.header_read_timeouts)?;
    Family::gauge(
        enc,
        "rayscope_stream_client_message_limit_bytes",
        "Largest WebSocket frame or message a live-stream client may send.",
    )
    .sample(&NO_LABELS, h.stream_message_limit_bytes)?;
    Family::counter(
        enc,
        "rayscope_stream_clients_dropped_oversize_total",
        "Live-stream clients dropped for sending a frame or message over the limit.",
    )
    .sample(&NO_LABELS, h.stream_clients_dropped)?;
    Ok(())
}

/// Observe mode's own work: `rayscope_observe_*` (the model's snapshots carry none),
/// each cluster's labelled by its name when several are observed.
fn encode_observed(views: &[(Option<&str>, &ObservedView)], enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let mut info =
        Family::gauge(enc, "rayscope_observe_info", "What rayscope observes (mode: pull or trace); always 1.");
    for (cluster, o) in views {
        match cluster {
            Some(c) => info.sample(&[("cluster", *c), ("mode", o.mode), ("source", o.source.as_str())], 1u64)?,
            None => info.sample(&[("mode", o.mode), ("source", o.source.as_str())], 1u64)?,
        }
    }
    for (name, help, value) in counters() {
        per_cluster(Family::counter(enc, name, help), views, value)?;
    }
    for (name, help, value) in gauges() {
        per_cluster(Family::gauge(enc, name, help), views, value)?;
    }
    Ok(())
}

/// One sample of `family` per observed cluster, labelled by its name where it has one.
fn per_cluster<V: prometheus_client::encoding::EncodeGaugeValue>(
    mut family: Family<'_, '_>,
    views: &[(Option<&str>, &ObservedView)],
    value: fn(&ObservedView) -> V,
) -> fmt::Result {
    for (cluster, o) in views {
        match cluster {
            Some(c) => family.sample(&[("cluster", *c)], value(o))?,
            None => family.sample(&NO_LABELS, value(o))?,
        }
    }
    Ok(())
}

type Counter = (&'static str, &'static str, fn(&ObservedView) -> u64);
type Gauge = (&'static str, &'static str, fn(&ObservedView) -> f64);

fn counters() -> [Counter; 19] {
    [
        ("rayscope_observe_polls_total", "Poll rounds of Ray's State and Jobs APIs.", |o| o.polls),
        ("rayscope_observe_poll_failures_total", "Poll rounds in which a request failed.", |o| o.poll_failures),
        ("rayscope_observe_requests_total", "Requests sent to Ray's dashboard.", |o| o.requests),
        ("rayscope_observe_failed_requests_total", "Requests to Ray's dashboard that failed.", |o| o.failed_requests),
        ("rayscope_observe_rows_read_total", "Rows read from Ray's listings (or trace lines read).", |o| o.rows_read),
        ("rayscope_observe_bad_rows_total", "Rows or trace lines that could not be read.", |o| o.bad_rows),
        ("rayscope_observe_events_received_total", "Events taken from Ray's Event Export.", |o| o.events_received),
        ("rayscope_observe_events_refused_total", "Pushed events that could not be read.", |o| o.events_refused),
        (
            "rayscope_observe_batches_refused_total",
            "Pushed batches refused (malformed, or the observer was behind).",
            |o| o.batches_refused,
        ),
        (
            "rayscope_observe_push_in_flight_refused_total",
            "Pushed bodies refused unread (503) because the bytes being read across connections were at their cap.",
            |o| o.pushes_over_in_flight,
        ),
        (
            "rayscope_observe_push_too_large_total",
            "Pushed bodies refused (413) past the batch size limit, declared or as they came.",
            |o| o.push_bodies_too_large,
        ),
        (
            "rayscope_observe_push_body_timeouts_total",
            "Pushed bodies not sent whole within the body deadline (408).",
            |o| o.push_body_timeouts,
        ),
        (
            "rayscope_observe_transitions_dropped_total",
            "Task state transitions dropped past the per-attempt cap (or with a name longer than Ray's).",
            |o| o.transitions_dropped,
        ),
        ("rayscope_observe_bad_job_ids_total", "Records refused: a job id not of Ray's 4 bytes.", |o| o.bad_job_ids),
        (
            "rayscope_observe_implausible_times_total",
            "Records refused: a time before the cluster's start or after now, past the margin.",
            |o| o.implausible_times,
        ),
        (
            "rayscope_observe_jobs_refused_total",
            "New jobs refused because the job cap was full of jobs still running.",
            |o| o.jobs_refused,
        ),
        (
            "rayscope_observe_late_records_total",
            "Task records refused because their job had ended and was forgotten past the job cap.",
            |o| o.late_records,
        ),
        ("rayscope_observe_record_failures_total", "Writes to the --record trace that failed.", |o| o.record_failures),
        (
            "rayscope_observe_unrecorded_records_total",
            "Records the --record trace could not take while its writes failed.",
            |o| o.unrecorded_records,
        ),
    ]
}

fn gauges() -> [Gauge; 12] {
    [
        ("rayscope_observe_last_poll_seconds", "Wall-clock seconds the last poll round took.", |o| o.last_poll_seconds),
        (
            "rayscope_observe_unlisted_tasks",
            "Tasks Ray had that its listings did not return (past its 10,000 limit), last round.",
            |o| o.unlisted_tasks as f64,
        ),
        ("rayscope_observe_tasks_held", "Task attempts held in memory.", |o| o.tasks_held as f64),
        ("rayscope_observe_tasks_dropped", "Task attempts refused past the cap while their job ran.", |o| {
            o.tasks_dropped as f64
        }),
        (
            "rayscope_observe_tasks_forgotten",
            "Task attempts forgotten with the oldest ended jobs, to stay under the cap.",
            |o| o.tasks_forgotten as f64,
        ),
        ("rayscope_observe_trace_bytes", "Bytes in the --record trace directory.", |o| o.trace_bytes as f64),
        ("rayscope_observe_trace_lines", "Records appended to the --record trace by this process.", |o| {
            o.trace_lines as f64
        }),
        (
            "rayscope_observe_push_in_flight_bytes",
            "Bytes of pushed bodies being read now (capped across connections).",
            |o| o.push_in_flight_bytes as f64,
        ),
        ("rayscope_observe_jobs_held", "Jobs held in memory.", |o| o.jobs_held as f64),
        ("rayscope_observe_max_jobs", "The cap on jobs held.", |o| o.max_jobs as f64),
        (
            "rayscope_observe_jobs_cap_full",
            "1 while the job cap is full of jobs still running (new jobs are refused), else 0.",
            |o| if o.jobs_full_of_running { 1.0 } else { 0.0 },
        ),
        (
            "rayscope_observe_record_failing",
            "1 while the --record trace cannot be written (the error is on /api/observe), else 0.",
            |o| if o.record_error.is_some() { 1.0 } else { 0.0 },
        ),
    ]
}

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    if !s.cluster {
        return Ok(());
    }
    let snap = s.snap;
    Family::gauge(enc, "rayscope_session_info", "The simulated (or observed) Ray session; always 1.")
        .sample(&[("session_name", snap.session_name.as_str())], 1u64)?;
    if let Some(o) = &snap.observed {
        let views: Vec<(Option<&str>, &ObservedView)> = if s.ctx.observed_clusters.is_empty() {
            vec![(None, o)]
        } else {
            s.ctx.observed_clusters.iter().map(|(name, v)| (Some(name.as_str()), &**v)).collect()
        };
        encode_observed(&views, enc)?;
        return encode_server(s, enc);
    }
    Family::gauge(
        enc,
        "rayscope_sim_time_seconds",
        "Virtual time of the snapshot, in seconds since the simulation started.",
    )
    .sample(&NO_LABELS, snap.sim_time_us.as_secs_f64())?;
    Family::gauge(
        enc,
        "rayscope_sim_lag_seconds",
        "How far virtual time trails where the wall clock says it should be, in seconds.",
    )
    .sample(&NO_LABELS, snap.lag_seconds)?;
    Family::gauge(enc, "rayscope_sim_speed", "Virtual seconds per wall-clock second the simulation aims for.")
        .sample(&NO_LABELS, snap.speed)?;
    Family::counter(enc, "rayscope_sim_events_processed_total", "Simulation events processed.")
        .sample(&NO_LABELS, snap.events_processed)?;

    encode_server(s, enc)
}

/// What the server and this scrape did, in either mode.
fn encode_server(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let snap = s.snap;
    Family::gauge(enc, "rayscope_snapshot_sequence", "Sequence number of the snapshot rendered.")
        .sample(&NO_LABELS, snap.seq)?;
    if let Some(taken) = s.ctx.snapshot_taken_at {
        Family::gauge(enc, "rayscope_snapshot_age_seconds", "Wall-clock age of the snapshot rendered, in seconds.")
            .sample(&NO_LABELS, taken.elapsed().as_secs_f64())?;
    }
    let mut f = Family::counter(
        enc,
        "rayscope_alert_notifications_received_total",
        "Alertmanager notifications received, by alert and status.",
    );
    for (alert, status, count) in &s.ctx.alerts_received {
        f.sample(&[("alertname", alert.as_str()), ("status", status.as_str())], *count)?;
    }

    if let Some(h) = &s.ctx.http {
        encode_http(h, enc)?;
    }

    let mut f = Family::gauge(
        enc,
        "rayscope_scrape_collector_duration_seconds",
        "Wall-clock seconds each collector took in this scrape.",
    );
    let measured = s.timings();
    for (name, seconds) in &measured {
        f.sample(&[("collector", *name)], *seconds)?;
    }
    // Timings from outside the renderer; a name measured here wins (one series per name).
    for (name, seconds) in &s.ctx.collector_seconds {
        if !measured.iter().any(|m| m.0 == name) {
            f.sample(&[("collector", name.as_str())], *seconds)?;
        }
    }
    Family::gauge(enc, "rayscope_scrape_duration_seconds", "Wall-clock seconds this scrape took to render.")
        .sample(&NO_LABELS, s.elapsed())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::metrics::{render_all, RenderContext};

    #[test]
    fn self_metrics_report_time_collectors_and_alerts_without_session_name() {
        let ctx = RenderContext {
            alerts_received: vec![("RayNodeDown".into(), "firing".into(), 2)],
            collector_seconds: vec![("host".into(), 0.5), ("tasks".into(), 9.0)],
            snapshot_taken_at: Some(std::time::Instant::now()),
            ..ctx()
        };
        let e = parse(&render_all(cluster(), None, &ctx));
        assert_eq!(e.sum("rayscope_sim_time_seconds", &[]), 40.0);
        assert_eq!(
            e.sum("rayscope_alert_notifications_received_total", &[("alertname", "RayNodeDown"), ("status", "firing")]),
            2.0
        );
        let collectors: Vec<&str> =
            e.of("rayscope_scrape_collector_duration_seconds").map(|s| s.label("collector")).collect();
        for name in ["tasks", "node", "cluster", "host"] {
            assert!(collectors.contains(&name), "{name} missing from {collectors:?}");
        }
        assert_eq!(collectors.iter().filter(|c| **c == "tasks").count(), 1, "one series per collector");
        assert!(e.of("rayscope_snapshot_age_seconds").next().is_some());
        assert_eq!(e.of("rayscope_session_info").next().unwrap().label("session_name"), cluster().session_name);
        for s in e.samples.iter().filter(|s| s.name.starts_with("rayscope_")) {
            assert!(!s.has("SessionName") && s.has("Version"), "{s:?}");
        }
    }

    #[test]
    fn disabled_collectors_do_not_run() {
        let ctx = RenderContext { disabled_collectors: vec!["node".into(), "rayscope".into(), "flow".into()], ..ctx() };
        let e = parse(&render_all(cluster(), None, &ctx));
        assert!(!e.samples.iter().any(|s| s.name.starts_with("ray_node_cpu") || s.name.starts_with("rayscope_")));
        assert!(e.of("ray_tasks").next().is_some());
    }
}
