//! Cache hints: asking the CPU to bring memory in ahead of a read.
//!
//! Owns: the one unsafe instruction, and how many lines of a value it asks for. Must
//! never: read or write what it points at, or be needed for a result (a hint that does
//! nothing, as on another architecture, changes only the speed).

/// At most this many bytes of one value are asked for (a node's record is 392 bytes, a
/// task's 200): a hint per line costs an instruction.
const MAX_BYTES: usize = 512;

/// Bring the first lines of `value` (up to `MAX_BYTES`) into cache.
#[inline]
pub(crate) fn prefetch<T>(value: *const T) {
    prefetch_bytes(value as *const u8, std::mem::size_of::<T>());
}

/// Bring the first lines of what `items` holds (up to `MAX_BYTES`) into cache: a
/// buffer whose record is already in cache, or cheap to reach.
#[inline]
pub(crate) fn prefetch_slice<T>(items: &[T]) {
    prefetch_bytes(items.as_ptr() as *const u8, std::mem::size_of_val(items));
}

#[inline]
fn prefetch_bytes(at: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..len.min(MAX_BYTES)).step_by(64) {
        // SAFETY: a prefetch neither reads nor faults; `at + line` stays inside the value.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.wrapping_add(line) as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, len);
}
