//! Process-wide setup shared by the commands: the allocator and when it gives memory
//! back, the priority of threads that must yield to the engine, and the shutdown
//! signals.
//!
//! Owns: the global allocator (mimalloc) and its purge delay per command, lowering a
//! thread's priority, and the SIGINT/SIGTERM future a server stops on.
//! Must never: need privileges (a nice value is only ever raised).

/// Raise this thread's nice value by 5 (never needs privileges; a no-op where unsupported).
pub(super) fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread's own id; no memory is shared.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (current + 5).min(19));
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM. The handlers are installed when this is
/// called (inside the runtime), not when the future is first polled, so a signal
/// that arrives once the server answers is never missed.
#[cfg(unix)]
pub(super) fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => tracing::info!("SIGINT received"),
            _ = term.recv() => tracing::info!("SIGTERM received"),
        }
    })
}

#[cfg(not(unix))]
pub(super) fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("Ctrl-C received");
    })
}

// The engine allocates and frees millions of small records (tasks, objects, events);
// mimalloc's thread-local free lists measurably beat glibc malloc here (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_e` (libmimalloc-sys names no
/// constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// When mimalloc gives freed pages back to the OS, in milliseconds (`-1`: never).
///
/// A server runs for days: it gives them back at once instead of after the default
/// delay (1 s), or RSS creeps up while bounded stores churn (the A7 soak: 0.49 MB/min
/// with the default delay, flat with 0; BENCHMARKS.md). A `simulate` run is a batch
/// whose footprint is its peak anyway: it never gives them back, since every page given
/// back and taken again is zeroed again by the kernel (scale.yaml gave back and
/// re-faulted 314 MB, about 0.2 s of system time). An explicit `MIMALLOC_PURGE_DELAY`
/// in the environment wins.
pub(super) fn set_purge_delay(ms: std::ffi::c_long) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option; mimalloc reads options atomically.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms) };
    }
}

/// Turn transparent huge pages off for this process (`prctl(PR_SET_THP_DISABLE)`).
///
/// A `simulate` batch faults in its ~300 MB as it grows. With huge pages the kernel
/// zeroes 2 MiB at a time and now and then compacts memory to find one: scale.yaml
/// spent 0.1–0.8 s of system time, varying run to run, against a steady ~0.2 s with
/// 4 KiB pages. The median wall time is the same; the slow tail and ~30 MiB of peak
/// RSS go (BENCHMARKS.md). mimalloc
/// reads `MIMALLOC_ALLOW_THP` before `main`; this does the same from inside. Failure
/// (an old kernel) changes nothing but speed, so it is ignored.
pub(super) fn disable_transparent_huge_pages() {
    // SAFETY: prctl with integer arguments only; it sets a flag on this process.
    let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

pub(super) const PURGE_AT_ONCE: std::ffi::c_long = 0;
pub(super) const PURGE_NEVER: std::ffi::c_long = -1;

#[cfg(test)]
mod allocator_tests {
    use super::{set_purge_delay, MI_OPTION_PURGE_DELAY, PURGE_AT_ONCE, PURGE_NEVER};

    #[test]
    fn the_purge_delay_option_is_the_one_serve_and_simulate_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // purge_delay's default in the vendored mimalloc 3 (src/options.c) is 1000 ms, and
        // no neighbouring option defaults to 1000: the index names it.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }, 1000);
        set_purge_delay(PURGE_NEVER);
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }, -1);
        set_purge_delay(PURGE_AT_ONCE);
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }, 0);
    }
}
