//! What `App` keeps beside the engine handle, one store per file: the received alerts,
//! the dashboard's history, the latest `/metrics` render, the live stream's hub and
//! Flow Insight's replays. (The state directory, `state_dir.rs`, and the connection
//! counts, `server.rs`, are kept by the modules that own them.)
//!
//! Owns: each store's state and bounds. Must never: import `App`, a handler or a
//! background task: those import the stores, never the reverse.

pub(crate) mod alerts;
pub(crate) mod dashboard_history;
pub(crate) mod exposition;
pub(crate) mod flow_cache;
pub(crate) mod hub;
