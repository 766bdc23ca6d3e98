//! Prometheus exposition of snapshots (in progress: see the metrics branch).

use crate::host::HostReading;
use crate::sim::snapshot::Snapshot;

/// Everything: every node's series with an `instance` label, plus cluster-wide families.
pub fn render_all(_snapshot: &Snapshot, _host: Option<&HostReading>, _ctx: &RenderContext) -> String {
    String::from("# EOF\n")
}

/// One node's endpoint (`/metrics/nodes/<ip>`): `None` if no alive node has that IP.
pub fn render_node(_snapshot: &Snapshot, _ip: &str, _host: Option<&HostReading>, _ctx: &RenderContext) -> Option<String> {
    None
}

/// What the exporter knows besides the snapshot.
#[derive(Clone, Debug, Default)]
pub struct RenderContext {
    /// Port used in each node's `instance` label (`<ip>:<port>`).
    pub metrics_export_port: u16,
    /// Alertmanager notifications received, by (alertname, status).
    pub alerts_received: Vec<(String, String, u64)>,
    /// Wall seconds the previous scrape spent in each collector.
    pub collector_seconds: Vec<(String, f64)>,
}
