//! How many bytes a client may make the server keep or build (`server.limits`).
//!
//! Owns: the byte limits of every store the HTTP API keeps for clients (received alerts,
//! submitted jobs' metadata), the sizes of the strings that become label values on
//! `/metrics`, the memory all large responses in flight may take together, and the idle
//! deadline of WebSocket tails.
//!
//! Why: counts alone did not bound memory. 1,000 alerts of 1 MB each kept 1.4 GB, a
//! 500 KB alert name grew every scrape to 500 MB, and 96 timeline requests at once took
//! more than 6 GB. The defaults are far above what Alertmanager, `ray job submit` and the
//! built-in pages send, and keep each store within tens of MiB.
//!
//! Must never: refuse something without naming the limit and the setting that raises it.

use super::units::DurationSpec;
use crate::model::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerLimits {
    /// One alert label (name and value together). Alert names become label values on
    /// `/metrics` (`rayscope_alerts_received_total`).
    #[serde(default = "default_label_bytes")]
    pub alert_label_bytes: Bytes,
    /// One alert annotation (name and value together): summaries and runbook links.
    #[serde(default = "default_annotation_bytes")]
    pub alert_annotation_bytes: Bytes,
    /// All received alerts kept together; the oldest go first.
    #[serde(default = "default_alerts_bytes")]
    pub alerts_bytes: Bytes,
    /// One submission's `metadata`, `runtime_env` and `entrypoint_resources` together.
    #[serde(default = "default_job_metadata_bytes")]
    pub job_metadata_bytes: Bytes,
    /// A submission's `entrypoint`, `submission_id` or a job name (names become labels).
    #[serde(default = "default_job_string_bytes")]
    pub job_string_bytes: Bytes,
    /// All kept submissions' metadata together; the oldest are forgotten first.
    #[serde(default = "default_submissions_bytes")]
    pub submissions_bytes: Bytes,
    /// Memory that large responses (flow views, State API lists) may take together while
    /// they are built; beyond it a request gets 503 with `Retry-After`.
    #[serde(default = "default_response_budget")]
    pub response_budget: Bytes,
    /// A WebSocket client (job-log tail) that answers no ping for this long is dropped.
    #[serde(default = "default_idle_timeout")]
    pub websocket_idle_timeout: DurationSpec,
}

fn default_label_bytes() -> Bytes {
    Bytes(1024)
}
fn default_job_string_bytes() -> Bytes {
    Bytes(4 * 1024)
}
fn default_annotation_bytes() -> Bytes {
    Bytes(16 * 1024)
}
fn default_alerts_bytes() -> Bytes {
    Bytes(16 << 20)
}
fn default_job_metadata_bytes() -> Bytes {
    Bytes(64 * 1024)
}
fn default_submissions_bytes() -> Bytes {
    Bytes(16 << 20)
}
fn default_response_budget() -> Bytes {
    Bytes(512 << 20)
}
fn default_idle_timeout() -> DurationSpec {
    DurationSpec::secs(60.0)
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            alert_label_bytes: default_label_bytes(),
            alert_annotation_bytes: default_annotation_bytes(),
            alerts_bytes: default_alerts_bytes(),
            job_metadata_bytes: default_job_metadata_bytes(),
            job_string_bytes: default_job_string_bytes(),
            submissions_bytes: default_submissions_bytes(),
            response_budget: default_response_budget(),
            websocket_idle_timeout: default_idle_timeout(),
        }
    }
}
