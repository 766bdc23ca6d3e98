//! The live stream's hub: one broadcast channel every client's queue reads, and the
//! count of client slots (the cap is `server.max_stream_clients`). The endpoint and
//! the ticker that feeds it are the stream's (`stream.rs`).
//!
//! Must never: know a handler or `App`; let a client take a slot past the cap.

use axum::extract::ws::Utf8Bytes;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// Messages a client may fall behind before it is dropped.
pub(crate) const QUEUE: usize = 4;

/// Largest frame or message accepted from a client: pongs and close frames are at most
/// 125 bytes of payload (RFC 6455 §5.5), so this leaves room for any well-meant client.
pub(crate) const MAX_CLIENT_MESSAGE: usize = 4 * 1024;

pub(crate) struct Hub {
    pub(in crate::api) tx: broadcast::Sender<Utf8Bytes>,
    clients: Arc<AtomicUsize>,
    /// Clients dropped for a frame or message over the limit (or otherwise invalid).
    pub(in crate::api) dropped: AtomicU64,
    pub interval: Duration,
    pub max_clients: usize,
}

/// A taken client slot; dropping it frees the slot.
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Hub {
    pub fn new(interval_us: u64, max_clients: usize) -> Hub {
        let (tx, _) = broadcast::channel(QUEUE);
        Hub {
            tx,
            clients: Arc::new(AtomicUsize::new(0)),
            dropped: AtomicU64::new(0),
            interval: Duration::from_micros(interval_us.max(10_000)),
            max_clients,
        }
    }

    pub(in crate::api) fn reserve(&self) -> Option<Slot> {
        let before = self.clients.fetch_add(1, Ordering::AcqRel);
        let slot = Slot(self.clients.clone());
        (before < self.max_clients).then_some(slot)
    }

    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Acquire)
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub(in crate::api) fn deadline(&self) -> Duration {
        (self.interval * 5).max(Duration::from_millis(500))
    }
}
