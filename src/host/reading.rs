//! What one look at the hardware yields: plain data, in the units Ray's reporter uses.
//!
//! Every field name ends in its unit (`_bytes`, `_percent`, `_bytes_per_s`, …) so a
//! reader never has to guess whether a number is bytes, MiB or a rate. Cumulative
//! counters are `u64`; rates and percentages are `f64`. Where Ray exports a different
//! unit (GPU memory in MiB), the conversion lives here, next to the number it converts.

use serde::Serialize;

/// Bytes in a mebibyte: Ray's `ray_node_gram_*` are whole MiB (`bytes // 2**20`).
pub const MIB: u64 = 1024 * 1024;

/// One reading of the head node's hardware, for `ray_node_*` and `ray_component_*`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostReading {
    /// Wall-clock time of the reading, milliseconds since the Unix epoch.
    pub sampled_at_unix_ms: u64,

    /// Logical CPUs this process may use (honours cgroup CPU quota and affinity).
    pub cpu_count: u32,
    /// Node-wide CPU busy time since the previous reading, 0–100.
    pub cpu_utilization_percent: f64,

    /// RAM as Ray reports it: the cgroup limit when one is set, else the host's RAM.
    pub mem_total_bytes: u64,
    /// Used RAM, cgroup-aware in the same way as `mem_total_bytes`.
    pub mem_used_bytes: u64,
    /// `mem_total_bytes - mem_used_bytes`.
    pub mem_available_bytes: u64,
    /// Shared memory (`Shmem` in /proc/meminfo: tmpfs such as /dev/shm, plus SysV and
    /// shared anonymous memory), which is what Ray's reporter exports; 0 if unknown.
    pub mem_shared_bytes: u64,
    /// The host's RAM, ignoring any container limit.
    pub host_mem_total_bytes: u64,
    /// The host's used RAM (`MemTotal - MemAvailable`), ignoring any container.
    pub host_mem_used_bytes: u64,
    /// Memory charged to our cgroup, when the cgroup has a memory limit.
    pub cgroup_mem_used_bytes: Option<u64>,
    /// Our cgroup's memory limit, when it has one below the host's RAM.
    pub cgroup_mem_limit_bytes: Option<u64>,

    /// Size of the root filesystem "/".
    pub disk_total_bytes: u64,
    /// Used space on "/" (blocks in use, as `df` and psutil count them).
    pub disk_used_bytes: u64,
    /// Space on "/" an unprivileged user may still write.
    pub disk_free_bytes: u64,
    /// `used / (used + free) * 100`, psutil's definition (reserved blocks excluded).
    pub disk_utilization_percent: f64,

    /// Bytes read from whole physical disks since boot.
    pub disk_io_read_bytes: u64,
    /// Bytes written to whole physical disks since boot.
    pub disk_io_write_bytes: u64,
    /// Completed reads since boot.
    pub disk_io_read_count: u64,
    /// Completed writes since boot.
    pub disk_io_write_count: u64,
    /// Read throughput since the previous reading.
    pub disk_io_read_speed_bytes_per_s: f64,
    /// Write throughput since the previous reading.
    pub disk_io_write_speed_bytes_per_s: f64,
    /// Reads per second since the previous reading.
    pub disk_read_iops: f64,
    /// Writes per second since the previous reading.
    pub disk_write_iops: f64,

    /// Bytes sent since boot over interfaces Ray counts (names starting with `e`).
    pub network_sent_bytes: u64,
    /// Bytes received since boot over the same interfaces.
    pub network_received_bytes: u64,
    /// Send throughput since the previous reading.
    pub network_send_speed_bytes_per_s: f64,
    /// Receive throughput since the previous reading.
    pub network_receive_speed_bytes_per_s: f64,

    /// One entry per GPU, ordered by index; empty when there are none or NVML is absent.
    pub gpus: Vec<GpuReading>,

    /// This process (the rayscope server), for `ray_component_*` of the head's own pid.
    pub process: ProcessReading,
}

/// One GPU, as NVML reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GpuReading {
    /// NVML's device index, Ray's `GpuIndex` label.
    pub index: u32,
    /// Product name such as `NVIDIA A10G`, Ray's `GpuDeviceName` label.
    pub name: String,
    /// `GPU-…` identifier, Ray's `GpuUuid` label.
    pub uuid: String,
    /// Share of the last sample period a kernel was running, 0–100.
    pub utilization_percent: f64,
    /// Framebuffer memory in use.
    pub memory_used_bytes: u64,
    /// Framebuffer memory installed.
    pub memory_total_bytes: u64,
    /// Board power draw, when the device reports it.
    pub power_milliwatts: Option<u64>,
    /// Core temperature, when the device reports it.
    pub temperature_celsius: Option<u32>,
}

impl GpuReading {
    /// `ray_node_gram_used`: whole MiB, rounded down as Ray does.
    pub fn memory_used_mib(&self) -> u64 {
        self.memory_used_bytes / MIB
    }

    /// `ray_node_gram_available`: Ray subtracts the already-rounded MiB figures.
    pub fn memory_available_mib(&self) -> u64 {
        (self.memory_total_bytes / MIB).saturating_sub(self.memory_used_mib())
    }
}

/// One process (this one), for the `ray_component_*` families.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProcessReading {
    pub pid: u32,
    /// CPU use since the previous reading; 100 means one full core.
    pub cpu_percent: f64,
    /// Resident set size.
    pub rss_bytes: u64,
    /// Unique set size (private pages), when /proc/self/smaps_rollup is readable.
    pub uss_bytes: Option<u64>,
    /// Resident pages shared with other processes (psutil's `memory_info().shared`).
    pub shared_bytes: Option<u64>,
    /// Open file descriptors; 0 if unknown.
    pub num_fds: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gram_mib_rounds_down_like_ray() {
        let gpu = GpuReading {
            memory_used_bytes: 3 * MIB + MIB / 2,
            memory_total_bytes: 10 * MIB + 1,
            ..GpuReading::default()
        };
        assert_eq!(gpu.memory_used_mib(), 3);
        assert_eq!(gpu.memory_available_mib(), 7);
    }

    #[test]
    fn gram_available_never_underflows() {
        let gpu = GpuReading { memory_used_bytes: 2 * MIB, memory_total_bytes: MIB, ..GpuReading::default() };
        assert_eq!(gpu.memory_available_mib(), 0);
    }
}
