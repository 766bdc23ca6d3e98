//! The HTTP server: what `rayscope serve` answers on its port (being built: the
//! pieces that need no server come first).

// The server that uses these arrives in the next commit.
#![allow(dead_code)]

mod entrypoint;
mod error;
mod query;
mod rows;

pub use entrypoint::{parse_entrypoint, parse_workload_yaml, WorkloadError};

/// Largest request body accepted; larger ones get 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
