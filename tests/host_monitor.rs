//! HostMonitor: scrapes at any rate read the machine at most once per max age.
//! A manual clock stands in for time, so nothing here waits for a second to pass.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rayscope::host::{Clock, HostMonitor, HostReading};

struct ManualClock {
    start: Instant,
    elapsed_ms: AtomicU64,
}

impl ManualClock {
    fn new() -> Arc<ManualClock> {
        Arc::new(ManualClock { start: Instant::now(), elapsed_ms: AtomicU64::new(0) })
    }

    fn advance(&self, by: Duration) {
        self.elapsed_ms.fetch_add(by.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + Duration::from_millis(self.elapsed_ms.load(Ordering::SeqCst))
    }
}

/// A monitor over a fake source that counts its reads and stamps each reading with
/// the read number (in `cpu_count`), optionally taking `read_time` per read.
fn counting_monitor(clock: Arc<ManualClock>, read_time: Duration) -> (HostMonitor, Arc<AtomicUsize>) {
    let reads = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&reads);
    let source = Box::new(move || {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        std::thread::sleep(read_time);
        HostReading { cpu_count: n as u32, ..HostReading::default() }
    });
    (HostMonitor::with_source(source, clock, Duration::from_secs(1)), reads)
}

#[test]
fn many_scrapes_within_max_age_read_the_machine_once() {
    let clock = ManualClock::new();
    let (monitor, reads) = counting_monitor(Arc::clone(&clock), Duration::ZERO);
    let first = monitor.latest();
    for _ in 0..1000 {
        clock.advance(Duration::from_micros(900)); // 0.9 s in all
        assert!(Arc::ptr_eq(&monitor.latest(), &first));
    }
    assert_eq!(reads.load(Ordering::SeqCst), 1);
}

#[test]
fn a_reading_is_replaced_once_older_than_max_age() {
    let clock = ManualClock::new();
    let (monitor, reads) = counting_monitor(Arc::clone(&clock), Duration::ZERO);
    assert_eq!(monitor.latest().cpu_count, 1);

    clock.advance(Duration::from_secs(1));
    assert_eq!(monitor.latest().cpu_count, 1, "exactly max age old is still fresh");

    clock.advance(Duration::from_millis(1));
    assert_eq!(monitor.latest().cpu_count, 2);
    assert_eq!(monitor.latest().cpu_count, 2);

    clock.advance(Duration::from_secs(60));
    assert_eq!(monitor.latest().cpu_count, 3, "a long idle gap costs one read, not sixty");
    assert_eq!(reads.load(Ordering::SeqCst), 3);
}

#[test]
fn concurrent_scrapes_of_a_stale_cache_share_one_read() {
    let clock = ManualClock::new();
    let (monitor, reads) = counting_monitor(clock, Duration::from_millis(50));
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let monitor = monitor.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                (0..100).map(|_| monitor.latest().cpu_count).max().unwrap()
            })
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap(), 1);
    }
    assert_eq!(reads.load(Ordering::SeqCst), 1);
}

#[test]
fn a_read_that_panics_does_not_break_the_monitor() {
    let clock = ManualClock::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let source = Box::new(move || {
        if counter.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("simulated failure inside a read");
        }
        HostReading { cpu_count: 7, ..HostReading::default() }
    });
    let monitor = HostMonitor::with_source(source, clock, Duration::from_secs(1));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| monitor.latest()));
    assert!(panicked.is_err());
    assert_eq!(monitor.latest().cpu_count, 7);
}

#[test]
fn the_real_monitor_serves_this_machine() {
    let monitor = HostMonitor::new();
    assert_eq!(monitor.max_age(), HostMonitor::DEFAULT_MAX_AGE);
    let reading = monitor.latest();
    assert!(reading.cpu_count >= 1);
    assert!(reading.mem_total_bytes > 0);
    let other_handle = monitor.clone();
    assert!(other_handle.latest().mem_total_bytes > 0);
}
