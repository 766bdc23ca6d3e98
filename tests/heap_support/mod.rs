//! The heap tests' counting allocator: each test binary that measures what a record
//! costs installs it (`#[global_allocator] static ALLOC: heap_support::Counting =
//! heap_support::Counting;`) and reads its own thread's live bytes with [`live`].
//!
//! It counts the bytes each allocation asked for and the blocks live, per thread, so
//! work on other threads (a table's prefault, the test harness) is not counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the bytes (as requested) and blocks live on each thread.
pub struct Counting;

thread_local! {
    static LIVE: Cell<(isize, isize)> = const { Cell::new((0, 0)) };
}

fn count(bytes: isize, blocks: isize) {
    // `try_with`: during thread teardown the slot may be gone; those frees do not matter.
    let _ = LIVE.try_with(|c| {
        let (b, n) = c.get();
        c.set((b + bytes, n + blocks));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            count(l.size() as isize, 1);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            count(l.size() as isize, 1);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        count(-(l.size() as isize), -1);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            count(new as isize - l.size() as isize, 0);
        }
        q
    }
}

/// This thread's live heap: (bytes asked for, blocks).
pub fn live() -> (isize, isize) {
    LIVE.with(|c| c.get())
}

/// A config from `yaml` (named `name` in its errors), or the test fails saying why.
pub fn config(yaml: &str, name: &str) -> rayscope::config::Config {
    match rayscope::config::load_str(yaml, name) {
        Ok(c) => c,
        Err(e) => panic!("config does not load:\n{e}"),
    }
}

/// What one record costs in live heap: the difference between two runs' live heap
/// (bytes, blocks) over the `records` more that the second held.
pub struct PerRecord {
    /// Bytes asked for, and blocks, per record.
    pub bytes: f64,
    pub blocks: f64,
    /// What an allocator really holds is more than what was asked for: each block
    /// counted at 16 bytes of header and rounding, as glibc's malloc and mimalloc's small
    /// size classes roughly do.
    pub footprint: f64,
}

pub fn per_record(few: (isize, isize), many: (isize, isize), records: usize) -> PerRecord {
    let n = records as f64;
    let bytes = (many.0 - few.0) as f64 / n;
    let blocks = (many.1 - few.1) as f64 / n;
    PerRecord { bytes, blocks, footprint: bytes + 16.0 * blocks }
}
