//! Disks: host-wide IO counters from /proc/diskstats and space on "/" from statvfs.
//!
//! sysinfo's per-process disk usage is not host-wide, and its disk list offers only
//! `f_bavail`, so used space would count root-reserved and quota'd blocks as used.
//! Ray (through psutil) reports `used = (f_blocks - f_bfree) * f_frsize` and
//! `free = f_bavail * f_frsize`; we read statvfs ourselves to report the same numbers.
//!
//! Parsing is pure and tested on fixture text; only [`read_diskstats`] and
//! [`root_fs_usage`] touch the machine, and both answer "nothing" rather than fail.

use std::path::Path;

/// /proc/diskstats counts in 512-byte sectors whatever the device's real sector size.
const DISKSTATS_SECTOR_BYTES: u64 = 512;

/// Cumulative IO of a set of block devices since boot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskIoCounters {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_count: u64,
    pub write_count: u64,
}

impl DiskIoCounters {
    fn add(&mut self, other: &DiskIoCounters) {
        self.read_bytes = self.read_bytes.saturating_add(other.read_bytes);
        self.write_bytes = self.write_bytes.saturating_add(other.write_bytes);
        self.read_count = self.read_count.saturating_add(other.read_count);
        self.write_count = self.write_count.saturating_add(other.write_count);
    }
}

/// Parses /proc/diskstats into `(device name, counters)`, skipping malformed lines.
///
/// Fields after the name: reads completed, reads merged, sectors read, ms reading,
/// writes completed, writes merged, sectors written, … (kernel iostats.rst).
pub fn parse_diskstats(text: &str) -> Vec<(&str, DiskIoCounters)> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 10 {
                return None;
            }
            let num = |i: usize| fields[i].parse::<u64>().ok();
            let counters = DiskIoCounters {
                read_count: num(3)?,
                read_bytes: num(5)?.saturating_mul(DISKSTATS_SECTOR_BYTES),
                write_count: num(7)?,
                write_bytes: num(9)?.saturating_mul(DISKSTATS_SECTOR_BYTES),
            };
            Some((fields[2], counters))
        })
        .collect()
}

/// Sums the devices `is_whole_disk` accepts. A whole disk's counters already include
/// its partitions', so summing partitions too would count every byte twice.
pub fn sum_whole_disks(text: &str, is_whole_disk: impl Fn(&str) -> bool) -> DiskIoCounters {
    let mut total = DiskIoCounters::default();
    for (name, counters) in parse_diskstats(text) {
        if is_whole_disk(name) {
            total.add(&counters);
        }
    }
    total
}

/// Devices that are not physical disks: RAM-backed (`ram`, `zram`), file-backed
/// (`loop`), or stacked on other disks (`dm-`, `md`), whose IO the underlying
/// disks already count.
pub fn is_virtual_block_device(name: &str) -> bool {
    ["loop", "ram", "zram", "dm-", "md"].iter().any(|prefix| name.starts_with(prefix))
}

/// Whether a device name is a partition, by the kernel's naming rule: a disk whose
/// name ends in a digit gets `p<N>` partitions (`nvme0n1p1`, `mmcblk0p2`), the
/// letter-suffixed families get a bare number (`sda1`, `vdb2`, `xvda1`, `hda3`).
pub fn looks_like_partition(name: &str) -> bool {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if stem.len() == name.len() || stem.is_empty() {
        return false;
    }
    if let Some(before_p) = stem.strip_suffix('p') {
        if before_p.ends_with(|c: char| c.is_ascii_digit()) {
            return true;
        }
    }
    ["sd", "hd", "vd", "xvd"].iter().any(|family| stem.starts_with(family))
        && stem.ends_with(|c: char| c.is_ascii_alphabetic())
}

/// Whether to count a device by its name alone: a physical disk, not a partition.
pub fn is_whole_disk_name(name: &str) -> bool {
    !is_virtual_block_device(name) && !looks_like_partition(name)
}

/// Whether to count a device on this machine. /sys/block lists exactly the whole
/// devices (psutil's test), so use it when present and the naming rule otherwise.
fn is_whole_disk_here(name: &str) -> bool {
    let sys_block = Path::new("/sys/block");
    if sys_block.is_dir() {
        // Names with a slash (cciss/c0d0) appear in sysfs with `!` instead.
        !is_virtual_block_device(name) && sys_block.join(name.replace('/', "!")).exists()
    } else {
        is_whole_disk_name(name)
    }
}

/// Host-wide disk IO since boot; zeros where /proc/diskstats is unreadable.
pub fn read_diskstats() -> DiskIoCounters {
    match std::fs::read_to_string("/proc/diskstats") {
        Ok(text) => sum_whole_disks(&text, is_whole_disk_here),
        Err(_) => DiskIoCounters::default(),
    }
}

/// Space on one filesystem, with psutil's `disk_usage` semantics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FsUsage {
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    pub utilization_percent: f64,
}

impl FsUsage {
    /// From statvfs fields: fragment size, total blocks, free blocks, and blocks free
    /// to unprivileged users.
    pub fn from_statvfs(frsize: u64, blocks: u64, bfree: u64, bavail: u64) -> FsUsage {
        let total_bytes = blocks.saturating_mul(frsize);
        let used_bytes = blocks.saturating_sub(bfree).saturating_mul(frsize);
        let free_bytes = bavail.saturating_mul(frsize);
        let visible = used_bytes as f64 + free_bytes as f64;
        let utilization_percent = if visible > 0.0 { used_bytes as f64 / visible * 100.0 } else { 0.0 };
        FsUsage { total_bytes, used_bytes, free_bytes, utilization_percent }
    }
}

/// Space on "/"; zeros if statvfs fails.
pub fn root_fs_usage() -> FsUsage {
    fs_usage(Path::new("/")).unwrap_or_default()
}

#[cfg(unix)]
fn fs_usage(path: &Path) -> Option<FsUsage> {
    use std::os::unix::ffi::OsStrExt;

    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is NUL-terminated and outlives the call; `stat` is a valid
    // out-pointer that statvfs fills completely when it returns 0.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it initialised `stat`.
    let stat = unsafe { stat.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the field widths differ between platforms
    Some(FsUsage::from_statvfs(stat.f_frsize as u64, stat.f_blocks as u64, stat.f_bfree as u64, stat.f_bavail as u64))
}

#[cfg(not(unix))]
fn fs_usage(_path: &Path) -> Option<FsUsage> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real 5.x kernel's /proc/diskstats shape (20 fields), with every kind of device
    /// the filter has to sort out.
    const DISKSTATS: &str = "\
   7       0 loop0 100 0 800 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   1       0 ram0 5 0 40 0 5 0 40 0 0 0 0 0 0 0 0 0 0
   8       0 sda 1000 10 20000 300 500 20 8000 100 0 400 400 0 0 0 0 0 0
   8       1 sda1 990 10 19900 290 499 20 7990 99 0 390 390 0 0 0 0 0 0
 259       0 nvme0n1 2000 0 40000 10 3000 0 60000 20 0 30 30 0 0 0 0 0 0
 259       1 nvme0n1p1 1999 0 39990 9 2999 0 59990 19 0 29 29 0 0 0 0 0 0
 253       0 dm-0 1500 0 30000 5 700 0 9000 5 0 10 10 0 0 0 0 0 0
 252       0 zram0 7 0 56 0 7 0 56 0 0 0 0 0 0 0 0 0 0
 not a diskstats line
";

    #[test]
    fn parses_counters_in_512_byte_sectors() {
        let parsed = parse_diskstats(DISKSTATS);
        let (name, sda) = parsed[2];
        assert_eq!(name, "sda");
        assert_eq!(
            sda,
            DiskIoCounters { read_count: 1000, read_bytes: 20000 * 512, write_count: 500, write_bytes: 8000 * 512 }
        );
        assert_eq!(parsed.len(), 8, "the malformed line is skipped");
    }

    #[test]
    fn sums_whole_disks_only() {
        let total = sum_whole_disks(DISKSTATS, is_whole_disk_name);
        assert_eq!(
            total,
            DiskIoCounters {
                read_count: 1000 + 2000,
                read_bytes: (20000 + 40000) * 512,
                write_count: 500 + 3000,
                write_bytes: (8000 + 60000) * 512,
            }
        );
    }

    #[test]
    fn tells_whole_disks_from_partitions() {
        for disk in ["sda", "sdaa", "vda", "xvdb", "hda", "nvme0n1", "mmcblk0", "sr0", "nbd0"] {
            assert!(is_whole_disk_name(disk), "{disk} is a whole disk");
        }
        for part in ["sda1", "sdaa12", "vda2", "xvdb1", "hda3", "nvme0n1p1", "mmcblk0p2", "nbd0p1"] {
            assert!(!is_whole_disk_name(part), "{part} is a partition");
        }
    }

    #[test]
    fn skips_loop_ram_and_stacked_devices() {
        for name in ["loop0", "loop12", "ram0", "zram0", "dm-0", "md0", "md127"] {
            assert!(!is_whole_disk_name(name), "{name} is not a physical disk");
        }
    }

    #[test]
    fn empty_or_unreadable_diskstats_sum_to_zero() {
        assert_eq!(sum_whole_disks("", is_whole_disk_name), DiskIoCounters::default());
    }

    #[test]
    fn fs_usage_follows_psutil_not_total_minus_available() {
        // A volume where root-reserved and quota'd blocks make bfree much larger than
        // bavail: used is what is written, not total - available.
        let usage = FsUsage::from_statvfs(4096, 66_053_021, 62_298_898, 20_067_349);
        assert_eq!(usage.total_bytes, 66_053_021 * 4096);
        assert_eq!(usage.used_bytes, (66_053_021 - 62_298_898) * 4096);
        assert_eq!(usage.free_bytes, 20_067_349 * 4096);
        assert!((usage.utilization_percent - 15.76).abs() < 0.01, "{}", usage.utilization_percent);
    }

    #[test]
    fn fs_usage_of_an_empty_filesystem_is_zero_percent() {
        assert_eq!(FsUsage::from_statvfs(4096, 0, 0, 0).utilization_percent, 0.0);
    }
}
