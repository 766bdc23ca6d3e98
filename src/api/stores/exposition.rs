//! The latest `/metrics` render, which concurrent scrapes share (`exposition.rs` serves
//! it and says for how long one render is reused).
//!
//! Must never: know a handler or `App`; hold more than one render.

use axum::body::Bytes;
use std::time::Instant;

/// The latest `/metrics` render, shared by scrapes (see the module doc).
#[derive(Default)]
pub(crate) struct ExpositionCache {
    pub(in crate::api) latest: tokio::sync::Mutex<Option<Rendered>>,
}

pub(in crate::api) struct Rendered {
    pub(in crate::api) seq: u64,
    pub(in crate::api) at: Instant,
    pub(in crate::api) body: Bytes,
    pub(in crate::api) gzip: Option<Bytes>,
}
