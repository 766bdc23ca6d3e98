//! Observe mode: the snapshot contract's second producer. It runs no engine; it reads
//! a live Ray cluster (or a trace recorded from one) and publishes the same
//! [`Snapshot`](crate::snapshot::Snapshot) the model's engine does, so the pages, the
//! State API and Flow Insight read a real cluster as they read the model.
//!
//! Owns: the observed records and reading them from Ray's JSON (`rows.rs`), merging
//! them under caps (`store.rs`), pull from the State and Jobs APIs (`pull.rs`), push
//! from Ray's Event Export (`push.rs`), the trace on disk (`trace.rs`), the snapshot
//! and Flow Insight's records made from them (`publish.rs`, `flow.rs`; the waits Ray
//! does not record are inferred in `inferred.rs`, the calls' arguments matched from the
//! object listing in `args.rs`), the workers' CPU time read beside them (`cpu_times.rs`), and the thread that runs it all
//! (`runner.rs`), one per observed cluster, kept apart by the registry of clusters
//! (`clusters.rs`).
//! Must never: import `sim` for anything but the handle readers already hold
//! (`sim::runner::EngineHandle`), a reader (`metrics`, `api`, `flow`), or write to
//! Ray: observing changes nothing on the cluster.

pub mod args;
pub mod clusters;
pub mod cpu_times;
pub mod flow;
mod inferred;
pub mod loss;
mod measured;
pub mod merge;
pub mod outcome;
pub mod profile;
pub mod publish;
pub mod pull;
pub mod push;
pub mod rows;
pub mod runner;
pub mod store;
pub mod trace;
pub mod workers;

pub use clusters::{spawn, Cluster, Clusters, Observer};
pub use runner::{ObserveOptions, Source, DEFAULT_CLUSTER};

/// The wall clock in Unix ms: an observed cluster's time is the wall's.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
