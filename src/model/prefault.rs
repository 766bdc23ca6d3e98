//! Faulting a large, freshly reserved buffer in ahead of use, beside the simulation.
//!
//! Owns: the advice to the kernel and the thread that gives it. Must never: touch a
//! byte of the buffer, or hold anything once it is done (the thread ends by itself).

/// An empty buffer for `capacity` slots of `T` whose pages, when it is large, are being
/// faulted in beside the caller (push into it, or turn it into a `VecDeque`, which keeps
/// the buffer).
pub(crate) fn prefaulted_vec<T>(capacity: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(capacity);
    prefault(v.as_ptr().cast(), v.capacity() * std::mem::size_of::<T>());
    v
}

/// Below this, first-touch faults cost too little to be worth a thread.
pub(crate) const PREFAULT_MIN_BYTES: usize = 16 << 20;

/// Have the kernel fault in `len` bytes at `start` on a thread of their own, so the
/// simulation's first writes to a big buffer (scale.yaml's million live objects: 150 MB)
/// do not each stop it while the kernel zeroes a page: that was about 7% of the run.
/// `MADV_POPULATE_WRITE` only fills page tables, as a write would, and never changes a
/// byte, so racing with the owner's own writes, or the buffer having been freed in the
/// meantime, is harmless; so is a kernel without it (the call fails and the faults
/// happen on first touch, as before). Runs front to back in steps, ahead of a table
/// that fills from the front.
pub(crate) fn prefault(start: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    if len >= PREFAULT_MIN_BYTES {
        const STEP: usize = 8 << 20;
        let page = 4096;
        let first = (start as usize).next_multiple_of(page);
        let end = (start as usize + len) & !(page - 1);
        let spawned = std::thread::Builder::new().name("table-prefault".into()).spawn(move || {
            let mut at = first;
            while at < end {
                let n = STEP.min(end - at);
                // SAFETY: advice only; the range is page-aligned and inside one allocation.
                if unsafe { libc::madvise(at as *mut libc::c_void, n, libc::MADV_POPULATE_WRITE) } != 0 {
                    return;
                }
                at += n;
            }
        });
        drop(spawned);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}
