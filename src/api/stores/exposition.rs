//! The latest `/metrics` render, which concurrent scrapes share (`exposition.rs` serves
//! it and says for how long one render is reused, and for how long it is served while
//! the next is made).
//!
//! Must never: know a handler or `App`; hold more than one render (plus the one being
//! made and the one before, kept for its buffer); let two renders run at once.

use axum::body::Bytes;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// The latest `/metrics` render, shared by scrapes (see the module doc).
#[derive(Default)]
pub(crate) struct ExpositionCache {
    /// Read without waiting: a scrape never queues behind a render to see this.
    latest: Mutex<Option<Arc<Rendered>>>,
    /// Held while a render is made: one at a time (single flight).
    pub(in crate::api) rendering: Arc<tokio::sync::Mutex<()>>,
    /// A render was started in the background for scrapes that did not wait for it.
    pub(in crate::api) refreshing: AtomicBool,
    /// The render before the latest: the next render writes into its buffer (about
    /// 40 MB at 2,000 nodes, already mapped) if no answer still holds it by then.
    retired: Mutex<Option<Arc<Rendered>>>,
}

impl ExpositionCache {
    pub(in crate::api) fn latest(&self) -> Option<Arc<Rendered>> {
        self.latest.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Make `r` the latest; the one it replaces is kept for its buffer.
    pub(in crate::api) fn store(&self, r: Arc<Rendered>) {
        let replaced = self.latest.lock().unwrap_or_else(PoisonError::into_inner).replace(r);
        *self.retired.lock().unwrap_or_else(PoisonError::into_inner) = replaced;
    }

    /// A buffer to render into: the retired render's, emptied, when nothing else holds
    /// it (a render's answers are long sent by the time the render after it is stored).
    pub(in crate::api) fn take_spare(&self) -> String {
        let retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(old) = retired.and_then(|old| Arc::try_unwrap(old).ok()) else {
            return String::new();
        };
        match old.body.try_into_mut() {
            Ok(buffer) => {
                let mut bytes = Vec::<u8>::from(buffer);
                bytes.clear();
                String::from_utf8(bytes).unwrap_or_default()
            }
            Err(_) => String::new(),
        }
    }
}

pub(in crate::api) struct Rendered {
    pub(in crate::api) seq: u64,
    pub(in crate::api) at: Instant,
    pub(in crate::api) body: Bytes,
    /// Made once per render, by the first scrape that asks for gzip (or with the
    /// render, when the last scrape asked for it).
    pub(in crate::api) gzip: tokio::sync::OnceCell<Bytes>,
}
