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
