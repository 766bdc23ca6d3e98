//! The autoscaler's own `autoscaler_*` families (ray-facts.md §3.11).
//!
//! In Ray the autoscaler serves its metrics from a separate HTTP server on the head
//! (port 44217), so its series carry that target's `instance`; being a Python
//! prometheus_client registry, they carry `SessionName` but not `Version` (measured on
//! Ray 2.60, tests/fixtures/ray-2.60/differential.json), so this group is registered
//! apart from the other `ray_*` groups. Counters the model does not track (node updater
//! and exception counters) read 0, as on a healthy cluster.
//!
//! Owns: the `autoscaler_*` families. Must never: import another collector, or report
//! `ray_cluster_*` (the head reporter's, in `cluster`).

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, LabelSetEncoder};

use super::labels::{put, Instance, AUTOSCALER_METRIC_PORT};
use super::scrape::{Family, Scrape};
use crate::snapshot::AutoscalerTypeView;

/// A per-node-type count: family, help, reading.
type PerType = (&'static str, &'static str, fn(&AutoscalerTypeView) -> u32);

/// The autoscaler's target: `instance="<head ip>:44217"`.
#[derive(Clone, Copy)]
struct Autoscaler<'a>(&'a str, &'a str);

impl EncodeLabelSet for Autoscaler<'_> {
    fn encode(&self, enc: &mut LabelSetEncoder) -> fmt::Result {
        put(enc, "instance", Instance(self.0, self.1))
    }
}

/// Counters of `autoscaler_*` the model does not track.
const UNTRACKED_COUNTERS: &[(&str, &str)] = &[
    ("autoscaler_failed_updates_total", "Node updaters that failed."),
    ("autoscaler_failed_recoveries_total", "Node recoveries that failed."),
    ("autoscaler_successful_recoveries_total", "Node recoveries that succeeded."),
    ("autoscaler_update_loop_exceptions_total", "Exceptions in the autoscaler's update loop."),
    ("autoscaler_node_launch_exceptions_total", "Exceptions while launching nodes."),
    ("autoscaler_reset_exceptions_total", "Exceptions while resetting the autoscaler."),
    ("autoscaler_config_validation_exceptions_total", "Exceptions while validating the autoscaler config."),
    ("autoscaler_drain_node_exceptions_total", "Exceptions while draining nodes."),
];

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let (true, Some(head)) = (s.cluster, s.head_target()) else {
        return Ok(());
    };
    let types = &s.snap.autoscaler.types;
    let port = AUTOSCALER_METRIC_PORT.to_string();
    let at = Autoscaler(head.ip, &port);
    let per_type: [PerType; 3] = [
        ("autoscaler_active_nodes", "Number of nodes in the cluster, by node type.", |t| t.active),
        ("autoscaler_pending_nodes", "Number of nodes pending launch, by node type.", |t| t.pending),
        ("autoscaler_recently_failed_nodes", "Number of nodes that recently failed to launch, by node type.", |t| {
            t.recently_failed
        }),
    ];
    for (name, help, read) in per_type {
        let mut f = Family::gauge(enc, name, help);
        for t in types {
            f.sample(&(at, [("NodeType", t.name.as_str())]), read(t))?;
        }
    }
    let mut f =
        Family::gauge(enc, "autoscaler_cluster_resources", "Total logical resources of the cluster, by resource.");
    for (name, amount) in &s.snap.autoscaler.cluster_resources {
        f.sample(&(at, [("resource", name.as_str())]), *amount)?;
    }
    let mut f =
        Family::gauge(enc, "autoscaler_pending_resources", "Logical resources of nodes pending launch, by resource.");
    for (name, amount) in &s.snap.autoscaler.pending_resources {
        f.sample(&(at, [("resource", name.as_str())]), *amount)?;
    }
    Family::gauge(enc, "autoscaler_updating_nodes", "Nodes being updated.").sample(&at, 0u64)?;
    Family::gauge(enc, "autoscaler_recovering_nodes", "Nodes being recovered.").sample(&at, 0u64)?;
    let workers: u64 = types.iter().skip(1).map(|t| t.active as u64).sum();
    Family::gauge(enc, "autoscaler_running_workers_nodes", "Worker nodes running.").sample(&at, workers)?;

    let started: u64 = types.iter().map(|t| t.started_total).sum();
    let totals = [
        ("autoscaler_started_nodes_total", "Nodes started.", started),
        ("autoscaler_stopped_nodes_total", "Nodes stopped.", types.iter().map(|t| t.stopped_total).sum()),
        (
            "autoscaler_failed_create_nodes_total",
            "Nodes that failed to be created.",
            types.iter().map(|t| t.failed_create_total).sum(),
        ),
        // Every started node's setup (node updater) succeeds in the model.
        ("autoscaler_successful_updates_total", "Node updaters that succeeded.", started),
    ];
    for (name, help, value) in totals {
        Family::counter(enc, name, help).sample(&at, value)?;
    }
    for &(name, help) in UNTRACKED_COUNTERS {
        Family::counter(enc, name, help).sample(&at, 0u64)?;
    }
    Ok(())
}
