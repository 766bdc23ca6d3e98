//! [`HostMonitor`]: a shared, cached view of the hardware for scrape handlers.
//!
//! Prometheus, Grafana and the API may ask many times a second; the machine is read
//! at most once per `max_age` however often they ask. The cached reading is published
//! through an `ArcSwap`, so a caller that finds it fresh takes no lock at all. When it
//! is stale, one caller refreshes under a mutex and any caller that arrives meanwhile
//! waits for that one read (a few milliseconds) and then shares its result, rather
//! than starting a second read: a reading is never older than `max_age` when handed
//! out, and the machine is never read twice for the same window.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;

use super::reading::HostReading;
use super::sampler::HostSampler;

/// Where the monitor gets "now"; injectable so tests never sleep.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
}

/// The real monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Anything that can take one reading: a [`HostSampler`], or a fake in tests.
pub type ReadHost = Box<dyn FnMut() -> HostReading + Send>;

/// A cheap-to-clone, thread-safe handle to the latest host reading.
#[derive(Clone)]
pub struct HostMonitor {
    shared: Arc<Shared>,
}

struct Shared {
    cached: ArcSwapOption<Cached>,
    /// Held while reading the machine; also serialises refreshes.
    source: Mutex<ReadHost>,
    clock: Arc<dyn Clock>,
    max_age: Duration,
}

struct Cached {
    /// When the read that produced `reading` started.
    taken_at: Instant,
    reading: Arc<HostReading>,
}

impl HostMonitor {
    /// How stale a reading may be when handed out, unless told otherwise: Ray's
    /// reporter samples about this often, and a scrape interval is never shorter.
    pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(1);

    /// Monitors this machine (NVML GPUs if present) with the real clock and a 1 s
    /// max age. Builds the sampler now, which takes one priming read; never fails.
    pub fn new() -> HostMonitor {
        let mut sampler = HostSampler::new();
        HostMonitor::with_source(Box::new(move || sampler.read()), Arc::new(SystemClock), HostMonitor::DEFAULT_MAX_AGE)
    }

    /// Monitors whatever `source` reads, refreshing when the cached reading is older
    /// than `max_age` by `clock`.
    pub fn with_source(source: ReadHost, clock: Arc<dyn Clock>, max_age: Duration) -> HostMonitor {
        HostMonitor {
            shared: Arc::new(Shared { cached: ArcSwapOption::empty(), source: Mutex::new(source), clock, max_age }),
        }
    }

    /// A reading no older than the max age, taking a new one only if the cached one
    /// has expired. Blocks only while one read of the machine is in progress.
    ///
    /// The read is synchronous /proc work: async handlers that cannot afford a few
    /// milliseconds should call this from `spawn_blocking`. The simulation thread
    /// must never call it.
    pub fn latest(&self) -> Arc<HostReading> {
        let shared = &*self.shared;
        if let Some(reading) = shared.fresh() {
            return reading;
        }
        // A panic in a previous read left the source usable (it holds no invariant
        // a half-finished read could break), so recover from poisoning.
        let mut source = shared.source.lock().unwrap_or_else(PoisonError::into_inner);
        // Whoever held the lock before us may have just refreshed.
        if let Some(reading) = shared.fresh() {
            return reading;
        }
        let taken_at = shared.clock.now();
        let reading = Arc::new(source());
        shared.cached.store(Some(Arc::new(Cached { taken_at, reading: Arc::clone(&reading) })));
        reading
    }

    /// The max age this monitor was built with.
    pub fn max_age(&self) -> Duration {
        self.shared.max_age
    }
}

impl std::fmt::Debug for HostMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostMonitor").field("max_age", &self.shared.max_age).finish_non_exhaustive()
    }
}

impl Default for HostMonitor {
    fn default() -> Self {
        HostMonitor::new()
    }
}

impl Shared {
    fn fresh(&self) -> Option<Arc<HostReading>> {
        let cached = self.cached.load();
        let cached = cached.as_ref()?;
        let age = self.clock.now().saturating_duration_since(cached.taken_at);
        (age <= self.max_age).then(|| Arc::clone(&cached.reading))
    }
}
