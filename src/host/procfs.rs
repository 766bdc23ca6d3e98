//! Small /proc readings sysinfo does not offer: shared memory, and this process's
//! unique and shared set sizes. Parsers are pure; readers answer `None` when the
//! file is missing (not Linux, or a locked-down /proc).

/// `/proc/meminfo` and `smaps_rollup` say "kB" but mean KiB.
const KIB: u64 = 1024;

/// The value of `key` in a `Key:   123 kB` table, in bytes.
pub fn kib_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, rest) = line.split_once(':')?;
        if name.trim() != key {
            return None;
        }
        let kib = rest.split_whitespace().next()?.parse::<u64>().ok()?;
        Some(kib.saturating_mul(KIB))
    })
}

/// `Shmem` from /proc/meminfo: psutil's `virtual_memory().shared`, which Ray exports
/// as `ray_node_mem_shared_bytes`.
pub fn shmem_bytes(meminfo: &str) -> Option<u64> {
    kib_field(meminfo, "Shmem")
}

/// Unique set size as psutil computes it: the sum of the `Private_*` lines
/// (clean, dirty, hugetlb) of `/proc/<pid>/smaps_rollup`.
pub fn uss_bytes(smaps_rollup: &str) -> Option<u64> {
    let mut found = false;
    let mut total = 0u64;
    for line in smaps_rollup.lines().filter(|l| l.starts_with("Private_")) {
        let (_, rest) = line.split_once(':')?;
        let kib = rest.split_whitespace().next()?.parse::<u64>().ok()?;
        total = total.saturating_add(kib.saturating_mul(KIB));
        found = true;
    }
    found.then_some(total)
}

/// Resident shared pages from `/proc/<pid>/statm` (third field), in bytes.
pub fn statm_shared_bytes(statm: &str, page_size: u64) -> Option<u64> {
    let pages = statm.split_whitespace().nth(2)?.parse::<u64>().ok()?;
    Some(pages.saturating_mul(page_size))
}

pub fn read_shmem_bytes() -> Option<u64> {
    shmem_bytes(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

pub fn read_self_uss_bytes() -> Option<u64> {
    uss_bytes(&std::fs::read_to_string("/proc/self/smaps_rollup").ok()?)
}

pub fn read_self_shared_bytes() -> Option<u64> {
    statm_shared_bytes(&std::fs::read_to_string("/proc/self/statm").ok()?, page_size()?)
}

#[cfg(unix)]
fn page_size() -> Option<u64> {
    // SAFETY: sysconf only reads a constant; it has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0)
}

#[cfg(not(unix))]
fn page_size() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "\
MemTotal:       24682416 kB
MemFree:         1000000 kB
MemAvailable:   20000000 kB
Shmem:             12776 kB
ShmemHugePages:        0 kB
";

    const SMAPS_ROLLUP: &str = "\
55b35c6b9000-7fff8c320000 ---p 00000000 00:00 0                          [rollup]
Rss:                1620 kB
Pss:                 473 kB
Shared_Clean:       1420 kB
Shared_Dirty:          0 kB
Private_Clean:        88 kB
Private_Dirty:       112 kB
Private_Hugetlb:       4 kB
";

    #[test]
    fn shmem_is_read_in_kib_and_not_confused_with_shmem_hugepages() {
        assert_eq!(shmem_bytes(MEMINFO), Some(12776 * 1024));
        assert_eq!(kib_field(MEMINFO, "MemTotal"), Some(24682416 * 1024));
    }

    #[test]
    fn missing_fields_are_none() {
        assert_eq!(shmem_bytes("MemTotal: 1 kB\n"), None);
        assert_eq!(uss_bytes("Rss: 10 kB\n"), None);
        assert_eq!(statm_shared_bytes("1 2", 4096), None);
    }

    #[test]
    fn uss_sums_every_private_line() {
        assert_eq!(uss_bytes(SMAPS_ROLLUP), Some((88 + 112 + 4) * 1024));
    }

    #[test]
    fn statm_shared_is_pages_times_page_size() {
        assert_eq!(statm_shared_bytes("765 408 381 5 0 123 0\n", 4096), Some(381 * 4096));
    }
}
