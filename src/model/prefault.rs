//! Faulting large, freshly reserved buffers in ahead of use, beside the simulation.
//!
//! Owns: the advice to the kernel and the thread that gives it. Must never: touch a
//! byte of the buffers, or hold anything once it is done (the thread ends by itself).

/// Below this, first-touch faults cost too little to be worth a thread.
pub(crate) const PREFAULT_MIN_BYTES: usize = 16 << 20;

/// Have the kernel fault in freshly reserved buffers, each `(start address, bytes)`, on
/// a thread of their own, in the order given, when together they are large: so the
/// simulation's first writes to a big table (scale.yaml's million live objects: 150 MB)
/// do not each stop it while the kernel zeroes a page, which was about 7% of the run.
/// `MADV_POPULATE_WRITE` only fills page tables, as a write would, and never changes a
/// byte, so racing with the owner's own writes, or a buffer having been freed in the
/// meantime, is harmless; so is a kernel without it (each call fails and the faults
/// happen on first touch, as before). A buffer is done in steps, front to back, ahead
/// of a table that fills it from the front.
pub(crate) fn prefault_all(ranges: Vec<(usize, usize)>) {
    #[cfg(target_os = "linux")]
    if ranges.iter().map(|r| r.1).sum::<usize>() >= PREFAULT_MIN_BYTES {
        const STEP: usize = 8 << 20;
        let page = 4096;
        let spawned = std::thread::Builder::new().name("table-prefault".into()).spawn(move || {
            for (start, len) in ranges {
                let mut at = start.next_multiple_of(page);
                let end = (start + len) & !(page - 1);
                while at < end {
                    let n = STEP.min(end - at);
                    // SAFETY: advice only; the range is page-aligned and inside one allocation.
                    if unsafe { libc::madvise(at as *mut libc::c_void, n, libc::MADV_POPULATE_WRITE) } != 0 {
                        break;
                    }
                    at += n;
                }
            }
        });
        drop(spawned);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = ranges;
}
