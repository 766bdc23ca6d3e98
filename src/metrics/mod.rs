//! Prometheus exposition of snapshots: what every node's dashboard agent, the GCS and
//! the autoscaler of a real Ray cluster serve, so Ray's own Grafana dashboards and
//! alert rules work unchanged (names, types, label keys and units from ray-facts.md
//! Part C).
//!
//! Owns: the `/metrics` text. Must never: mutate or wait on the model (it reads one
//! immutable [`Snapshot`]), emit unbounded labels (task, object or actor ids), stamp
//! samples with timestamps, or keep state beyond [`RateBaselines`] (one baseline per
//! node for byte rates).
//!
//! # Layout
//! One family group per file, node_exporter style: each is a pure function from a
//! `scrape::Scrape` (the snapshot, the host reading and which nodes are asked for)
//! to encoded families, registered by name as a `prometheus_client` collector that
//! builds its metrics fresh on every render (`COLLECTORS`): `tasks`,
//! `actors`, `jobs` (placement groups and jobs), `resources`, `object_store` (plus
//! spilling and the object manager), `scheduler`, `workers` (OOM kills and failures),
//! `node` (`ray_node_*` hardware), `components` (`ray_component_*` processes),
//! `cluster` (`ray_cluster_*`), `autoscaler` (`autoscaler_*`), `flow` (Flow Insight's
//! `rayscope_flow_*`) and `rayscope` (our own `rayscope_*`).
//! A collector can be switched off by name ([`RenderContext::disabled_collectors`]).
//!
//! Collectors never import each other. What they share lives in the helpers: `scrape`
//! (the render's inputs, registration and the `scrape::Family` writer), `labels`
//! (Ray's label sets) and `shared` (a node's rows of the per-node tables, and the
//! modelled IO counters, rates and GPU memory that `node`, `components` and the rate
//! baselines must agree on). Only this file names the collectors.
//!
//! # Format served
//! The classic Prometheus text format 0.0.4 ([`CONTENT_TYPE`]), which is what Ray's
//! agents serve: counters carry `_total` in `# HELP`/`# TYPE` as well as in samples,
//! and there is no `# EOF`. `prometheus_client` writes OpenMetrics, so counters are
//! described under their full `_total` name and their values written as plain samples
//! (see `scrape::Family`); histograms, gauges and label escaping are the crate's.
//! Histogram `le` values come out as `"1.0"`, `"10.0"`, … as in Ray.
//!
//! # Labels
//! Every `ray_*` series carries `SessionName` and `Version`; `autoscaler_*` series only
//! `SessionName`, as Ray's autoscaler (a Python registry) writes them.
//! Raylet, GCS and core-worker series add `Component` and `NodeAddress`; reporter
//! series (`ray_node_*`, `ray_component_*`) add `ip`, and `ray_node_*` also `IsHeadNode`
//! and `RayNodeType`. Every node-scoped series carries `instance="<ip>:<port>"`, the
//! label Prometheus would give that node's own target, so one scrape of
//! [`render_all`] (with `honor_labels: true`) looks like one scrape per node; the
//! autoscaler's series carry the head's autoscaler target `<head ip>:44217`.
//!
//! `Version` is the imitated Ray release (`cluster.ray_version`, 2.49 to 2.60), whose
//! names and label keys the collectors follow where they changed. `ray_tasks` and
//! `ray_actors` follow `RAY_metric_cardinality_level` as that release applies it
//! (`RenderContext::metric_cardinality`, else the release's default): `WorkerId` at
//! legacy (one made-up id per node's workers: the model keeps per-node aggregates), no
//! `Name` at low; no other series carries `WorkerId`.
//!
//! `rayscope_*` series carry `Version` but not `SessionName`: promtool's linter flags
//! the CamelCase key on every family that has it, and our own families stay lint-clean;
//! `rayscope_session_info{session_name}` joins them to a session when needed.
//!
//! # Attribution simplifications
//! The model keeps cluster-wide aggregates where Ray has per-process ones, so some
//! series are attributed to one node:
//! * `ray_tasks{Source="owner"}` (every non-running state) is reported as if all
//!   owners ran on the head node (`NodeAddress` and `instance` of the head); executing
//!   nodes report `Source="executor"` with RUNNING / RUNNING_IN_RAY_GET. Summing over
//!   `Source` gives the model's exact counts (Ray's negative executor
//!   SUBMITTED_TO_WORKER and dependency-manager deltas are folded into the owner's).
//! * Cluster-wide scheduler queues (waiting for resources, infeasible, waiting for a
//!   placement-group bundle) and the OOM-kill / worker-failure counters by (Type, Name)
//!   are reported by the head's raylet; per-node leases (Dispatched, Executing) and
//!   spillbacks by each node's raylet.
//! * GCS families (`ray_actors{Source="gcs"}`, placement groups, jobs, Actor and
//!   PlacementGroup placement times) come from the head with `Component="gcs_server"`.
//! * Modelled nodes' hardware is derived from what runs there (see `node.rs`); the head's
//!   comes from the real machine when a [`HostReading`] is given, and that reading's
//!   process (rayscope itself) is reported as the head's `gcs` component.

mod actors;
mod autoscaler;
mod cluster;
mod components;
mod flow;
mod jobs;
mod labels;
mod node;
mod object_store;
mod rate_baseline;
mod rayscope;
mod resources;
mod scheduler;
mod scrape;
mod shared;
mod tasks;
mod workers;

#[cfg(test)]
pub(crate) mod testutil;

pub use labels::AUTOSCALER_METRIC_PORT;
pub use rate_baseline::RateBaselines;
pub mod openmetrics;
pub use rayscope::HttpServerStats;
use std::sync::Arc;

use crate::host::HostReading;
use crate::snapshot::Snapshot;
use scrape::{FamilyGroup, RegistryLabels};

/// Every family group, in exposition order. The `rayscope` group runs last so it can
/// report how long the others took.
const COLLECTORS: &[FamilyGroup] = &[
    ray("tasks", tasks::encode),
    ray("actors", actors::encode),
    ray("jobs", jobs::encode),
    ray("resources", resources::encode),
    ray("object_store", object_store::encode),
    ray("scheduler", scheduler::encode),
    ray("workers", workers::encode),
    ray("node", node::encode),
    ray("components", components::encode),
    ray("cluster", cluster::encode),
    // `SessionName` but no `Version`, as Ray's autoscaler writes.
    FamilyGroup { name: "autoscaler", encode: autoscaler::encode, labels: RegistryLabels::Session },
    // Our own groups: no `SessionName` (see the module docs, "Labels").
    FamilyGroup { name: "flow", encode: flow::encode, labels: RegistryLabels::Version },
    FamilyGroup { name: "rayscope", encode: rayscope::encode, labels: RegistryLabels::Version },
];

/// A `ray_*` group: `SessionName` and `Version` on every series.
const fn ray(name: &'static str, encode: scrape::EncodeFn) -> FamilyGroup {
    FamilyGroup { name, encode, labels: RegistryLabels::SessionAndVersion }
}

/// Names accepted by [`RenderContext::disabled_collectors`], those of `COLLECTORS`.
pub const COLLECTOR_NAMES: &[&str] = &[
    "tasks",
    "actors",
    "jobs",
    "resources",
    "object_store",
    "scheduler",
    "workers",
    "node",
    "components",
    "cluster",
    "autoscaler",
    "flow",
    "rayscope",
];

/// The `Content-Type` of what [`render_all`] and [`render_node`] return: the classic
/// Prometheus text format, as Ray's agents serve it.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Everything: every alive node's series with its `instance` label, plus the
/// cluster-wide families the head serves.
pub fn render_all(snapshot: &Arc<Snapshot>, host: Option<&Arc<HostReading>>, ctx: &RenderContext) -> String {
    scrape::render(snapshot, host, ctx, None, COLLECTORS)
}

/// [`render_all`] into `out`, cleared first; a server rendering again and again passes
/// its last buffer back, whose pages are already mapped.
pub fn render_all_into(
    out: &mut String,
    snapshot: &Arc<Snapshot>,
    host: Option<&Arc<HostReading>>,
    ctx: &RenderContext,
) {
    scrape::render_into(out, snapshot, host, ctx, None, COLLECTORS)
}

/// One node's endpoint (`/metrics/nodes/<ip>`): `None` if no alive, answering node has that IP.
/// The head's endpoint also carries the cluster-wide families (GCS, autoscaler,
/// `ray_cluster_*`, owner-side task counts and `rayscope_*`).
pub fn render_node(
    snapshot: &Arc<Snapshot>,
    ip: &str,
    host: Option<&Arc<HostReading>>,
    ctx: &RenderContext,
) -> Option<String> {
    let node = snapshot.nodes.iter().position(|n| n.answers() && *n.ip == *ip)?;
    Some(scrape::render(snapshot, host, ctx, Some(node), COLLECTORS))
}

/// What the exporter knows besides the snapshot.
#[derive(Clone, Debug, Default)]
pub struct RenderContext {
    /// Port used in each node's `instance` label (`<ip>:<port>`).
    pub metrics_export_port: u16,
    /// Alertmanager notifications received, by (alertname, status).
    pub alerts_received: Vec<(String, String, u64)>,
    /// Wall seconds spent in collectors that run outside the renderer (for example
    /// the host reading); reported beside the renderer's own per-collector timings.
    pub collector_seconds: Vec<(String, f64)>,
    /// When the snapshot was taken, for `rayscope_snapshot_age_seconds`.
    pub snapshot_taken_at: Option<std::time::Instant>,
    /// Collectors (by name, see [`COLLECTOR_NAMES`]) not to run.
    pub disabled_collectors: Vec<String>,
    /// Per-node baselines for byte and operation rates; clones share it, so keep one
    /// context (or clones of it) for the life of the server.
    pub rate_baselines: RateBaselines,
    /// The HTTP server's limits and what they refused (`rayscope_http_*`), when serving.
    pub http: Option<HttpServerStats>,
    /// Ray's `RAY_metric_cardinality_level` to imitate; `None`: the default of the
    /// snapshot's Ray version (legacy before 2.53, recommended from 2.53).
    pub metric_cardinality: Option<crate::config::MetricCardinality>,
    /// Observing several clusters: each one's name and work, for `rayscope_observe_*`
    /// labelled by `cluster` (empty: the snapshot's own, unlabelled).
    pub observed_clusters: Vec<(String, std::sync::Arc<crate::snapshot::ObservedView>)>,
}

impl RenderContext {
    /// Whether the collector `name` runs: it is not switched off, and for `flow`,
    /// whose `rayscope_flow_*` are `rayscope_*` families, neither is `rayscope`.
    fn runs(&self, name: &str) -> bool {
        let off = |n: &str| self.disabled_collectors.iter().any(|d| d == n);
        let part_of_off = name == "flow" && off("rayscope");
        !off(name) && !part_of_off
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn collector_names_are_the_registered_groups_in_order() {
        let names: Vec<&str> = COLLECTORS.iter().map(|c| c.name).collect();
        assert_eq!(names, COLLECTOR_NAMES);
    }

    #[test]
    fn serves_the_classic_text_format() {
        let text = render_all(cluster(), None, &ctx());
        assert!(CONTENT_TYPE.starts_with("text/plain; version=0.0.4"));
        assert!(!text.contains("# EOF"), "no OpenMetrics terminator in the classic format");
        assert!(
            text.contains("# TYPE ray_finished_jobs_total counter\n"),
            "counters are described under their _total name"
        );
        parse(&text); // rejects timestamps and malformed lines
    }

    #[test]
    fn unknown_and_dead_ips_have_no_endpoint() {
        assert!(render_node(cluster(), &dead().ip, None, &ctx()).is_none());
        assert!(render_node(cluster(), "192.0.2.7", None, &ctx()).is_none());
        assert!(render_node(cluster(), &worker(false).ip, None, &ctx()).is_some());
    }

    #[test]
    fn every_node_series_names_its_instance() {
        let e = node(&worker(true).ip);
        let want = format!("{}:8080", worker(true).ip);
        assert!(e.samples.iter().all(|s| s.label("instance") == want));
        assert!(!e.samples.is_empty());
    }

    #[test]
    fn renders_are_deterministic_for_the_same_snapshot() {
        let ctx = ctx();
        let strip = |t: String| t.lines().filter(|l| !l.starts_with("rayscope_scrape")).collect::<Vec<_>>().join("\n");
        assert_eq!(strip(render_all(cluster(), None, &ctx)), strip(render_all(cluster(), None, &ctx)));
    }

    #[test]
    fn a_dead_head_takes_the_cluster_families_with_it() {
        let mut snap = (**cluster()).clone();
        let head = snap.head as usize;
        Arc::make_mut(&mut snap.nodes[head]).state = crate::model::NodeState::Dead;
        let e = parse(&render_all(&std::sync::Arc::new(snap.clone()), None, &ctx()));
        assert!(e.of("ray_running_jobs").next().is_none());
        assert!(e.of("ray_resources").next().is_some());
    }
}
