//! The memory that large responses in flight may take together
//! (`server.limits.response_budget`).
//!
//! Owns: reserving an estimate of a response's peak memory before it is built, and
//! answering 503 with `Retry-After` when the budget is spent. Why: a connection cap
//! alone let 96 timeline requests of 40 MB each take more than 6 GB at once.
//!
//! Must never: wait for room (a request that does not fit is refused at once, so a flood
//! cannot queue work), or let an estimate of zero through unreserved.

use super::error::ApiError;
use axum::http::StatusCode;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Reservations are counted in KiB, so a `u32` of permits covers terabytes.
const UNIT: u64 = 1024;

pub(crate) struct ResponseBudget {
    permits: Arc<Semaphore>,
    total_units: u32,
}

/// A reservation; dropping it gives the memory back.
pub(crate) struct Reserved(#[allow(dead_code)] OwnedSemaphorePermit);

impl ResponseBudget {
    pub fn new(bytes: u64) -> ResponseBudget {
        let total_units = (bytes / UNIT).clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize) as u64) as u32;
        ResponseBudget { permits: Arc::new(Semaphore::new(total_units as usize)), total_units }
    }

    /// Reserve `bytes` (at least one unit) for a response being built, or 503.
    pub fn reserve(&self, bytes: u64, what: &str) -> Result<Reserved, ApiError> {
        let units = bytes.div_ceil(UNIT).clamp(1, self.total_units as u64) as u32;
        self.permits.clone().try_acquire_many_owned(units).map(Reserved).map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the server is building other large responses; {what} (about {} KiB) does not fit in \
                     server.limits.response_budget ({} KiB) now: retry shortly, or ask for less",
                    units, self.total_units
                ),
            )
            .retry_after(1)
        })
    }

    /// KiB reserved now.
    #[cfg(test)]
    pub fn in_use_kib(&self) -> u32 {
        self.total_units - self.permits.available_permits() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_past_the_budget_are_refused_at_once_and_given_back_on_drop() {
        let budget = ResponseBudget::new(100 * 1024);
        let a = budget.reserve(60 * 1024, "a").unwrap();
        let e = budget.reserve(60 * 1024, "b").err().expect("over budget");
        assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(e.message.contains("server.limits.response_budget"), "{}", e.message);
        assert_eq!(budget.in_use_kib(), 60);
        drop(a);
        assert_eq!(budget.in_use_kib(), 0);
        let _b = budget.reserve(60 * 1024, "b").unwrap();
        // A request larger than the whole budget takes all of it rather than never fitting.
        drop(_b);
        let _all = budget.reserve(1 << 40, "c").unwrap();
        assert_eq!(budget.in_use_kib(), 100);
    }
}
