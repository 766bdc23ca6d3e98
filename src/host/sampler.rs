//! [`HostSampler`]: reads the machine once per call and turns counters into rates.
//!
//! Rates (disk and network speeds, iops) are deltas since the previous call divided
//! by the wall time between them, so the caller decides the window by how often it
//! calls. The sampler takes one priming look when built, so the first `read` already
//! has a baseline. A counter that goes backwards (a device or interface removed)
//! gives a rate of 0 for that interval rather than a huge or negative number.
//!
//! CPU percentages are over the same interval. sysinfo skips a CPU refresh less than
//! 200 ms after the last, so reads closer together repeat the previous figure; and a
//! process that had used no whole clock tick when primed reads 0% once.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sysinfo::{Networks, Pid, ProcessRefreshKind, ProcessesToUpdate, System};

use super::disk::{self, DiskIoCounters};
use super::gpu::{detect_gpus, GpuSource};
use super::procfs;
use super::reading::{HostReading, ProcessReading};

/// Reads the head node's hardware. Owns the sysinfo state (CPU and process times
/// must persist between calls for utilisation to mean anything) and the GPU source.
pub struct HostSampler {
    /// `None` only on platforms sysinfo does not support; readings are then zero.
    system: Option<System>,
    networks: Option<Networks>,
    gpus: Box<dyn GpuSource>,
    pid: Option<Pid>,
    previous: Option<Counters>,
}

/// The cumulative counters rates are computed from, and when they were read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counters {
    pub at: Instant,
    pub disk: DiskIoCounters,
    pub network_sent_bytes: u64,
    pub network_received_bytes: u64,
}

/// Per-second rates between two [`Counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    pub disk_read_bytes_per_s: f64,
    pub disk_write_bytes_per_s: f64,
    pub disk_read_iops: f64,
    pub disk_write_iops: f64,
    pub network_send_bytes_per_s: f64,
    pub network_receive_bytes_per_s: f64,
}

impl Rates {
    /// Rates from `previous` to `current`; all zero without a previous reading.
    pub fn between(previous: Option<&Counters>, current: &Counters) -> Rates {
        let Some(prev) = previous else {
            return Rates::default();
        };
        let elapsed = current.at.saturating_duration_since(prev.at);
        let rate = |before: u64, after: u64| per_second(before, after, elapsed);
        Rates {
            disk_read_bytes_per_s: rate(prev.disk.read_bytes, current.disk.read_bytes),
            disk_write_bytes_per_s: rate(prev.disk.write_bytes, current.disk.write_bytes),
            disk_read_iops: rate(prev.disk.read_count, current.disk.read_count),
            disk_write_iops: rate(prev.disk.write_count, current.disk.write_count),
            network_send_bytes_per_s: rate(prev.network_sent_bytes, current.network_sent_bytes),
            network_receive_bytes_per_s: rate(prev.network_received_bytes, current.network_received_bytes),
        }
    }
}

/// How fast a cumulative counter grew; 0 if no time passed or it went backwards.
pub fn per_second(before: u64, after: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        return 0.0;
    }
    after.saturating_sub(before) as f64 / secs
}

/// Ray counts only interfaces whose name starts with `e` (eth0, ens5, enp3s0): its
/// reporter filters `net_io_counters(pernic=True)` on `name[0] == "e"`, which keeps
/// loopback and bridges out. We follow it so the numbers match a real head node.
pub fn counted_interface(name: &str) -> bool {
    name.starts_with('e')
}

/// Keeps a percentage sane whatever the platform hands back (NaN on a zero interval).
fn percent(value: f32) -> f64 {
    let value = f64::from(value);
    if value.is_finite() {
        value.clamp(0.0, 100.0)
    } else {
        0.0
    }
}

impl HostSampler {
    /// A sampler with NVML GPUs if NVML loads, no GPUs otherwise. Never fails.
    pub fn new() -> HostSampler {
        HostSampler::with_gpu_source(detect_gpus())
    }

    /// A sampler reading GPUs from `gpus` (a fake in tests, [`super::NoGpus`] to skip).
    pub fn with_gpu_source(gpus: Box<dyn GpuSource>) -> HostSampler {
        let mut sampler = HostSampler {
            system: System::new().ok(),
            networks: Networks::new().ok(),
            gpus,
            pid: sysinfo::get_current_pid().ok(),
            previous: None,
        };
        // Prime CPU times, process times and counters so the first real read has
        // something to difference against.
        sampler.read();
        sampler
    }

    /// Reads everything once. Costs a few milliseconds of /proc and sysfs reads
    /// (plus NVML calls when there are GPUs); never fails or panics.
    pub fn read(&mut self) -> HostReading {
        let at = Instant::now();
        let mut reading = HostReading {
            sampled_at_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            ..HostReading::default()
        };
        self.read_cpu_and_memory(&mut reading);
        reading.process = self.read_process();

        let fs = disk::root_fs_usage();
        reading.disk_total_bytes = fs.total_bytes;
        reading.disk_used_bytes = fs.used_bytes;
        reading.disk_free_bytes = fs.free_bytes;
        reading.disk_utilization_percent = fs.utilization_percent;

        let (network_sent_bytes, network_received_bytes) = self.read_network();
        let counters = Counters { at, disk: disk::read_diskstats(), network_sent_bytes, network_received_bytes };
        let rates = Rates::between(self.previous.as_ref(), &counters);
        self.previous = Some(counters);

        reading.disk_io_read_bytes = counters.disk.read_bytes;
        reading.disk_io_write_bytes = counters.disk.write_bytes;
        reading.disk_io_read_count = counters.disk.read_count;
        reading.disk_io_write_count = counters.disk.write_count;
        reading.disk_io_read_speed_bytes_per_s = rates.disk_read_bytes_per_s;
        reading.disk_io_write_speed_bytes_per_s = rates.disk_write_bytes_per_s;
        reading.disk_read_iops = rates.disk_read_iops;
        reading.disk_write_iops = rates.disk_write_iops;
        reading.network_sent_bytes = network_sent_bytes;
        reading.network_received_bytes = network_received_bytes;
        reading.network_send_speed_bytes_per_s = rates.network_send_bytes_per_s;
        reading.network_receive_speed_bytes_per_s = rates.network_receive_bytes_per_s;

        reading.gpus = self.gpus.read_gpus();
        reading.gpus.sort_by_key(|gpu| gpu.index);
        reading
    }

    fn read_cpu_and_memory(&mut self, reading: &mut HostReading) {
        let Some(system) = self.system.as_mut() else {
            reading.cpu_count = available_cpus(0);
            return;
        };
        system.refresh_cpu_usage();
        system.refresh_memory();
        reading.cpu_count = available_cpus(system.cpus().len());
        reading.cpu_utilization_percent = percent(system.global_cpu_usage());

        let host_total = system.total_memory();
        let host_used = system.used_memory();
        // sysinfo reports a cgroup only when some limit on our path is at most the
        // host's RAM; a limit equal to it is no limit at all.
        let cgroup = system.cgroup_limits().filter(|l| l.total_memory > 0 && l.total_memory < host_total);
        reading.host_mem_total_bytes = host_total;
        reading.host_mem_used_bytes = host_used;
        reading.cgroup_mem_limit_bytes = cgroup.as_ref().map(|l| l.total_memory);
        reading.cgroup_mem_used_bytes = cgroup.as_ref().map(|l| l.total_memory.saturating_sub(l.free_memory));
        // Ray's node memory is the container's view when there is a container.
        reading.mem_total_bytes = reading.cgroup_mem_limit_bytes.unwrap_or(host_total);
        reading.mem_used_bytes = reading.cgroup_mem_used_bytes.unwrap_or(host_used);
        reading.mem_available_bytes = reading.mem_total_bytes.saturating_sub(reading.mem_used_bytes);
        reading.mem_shared_bytes = procfs::read_shmem_bytes().unwrap_or(0);
    }

    fn read_process(&mut self) -> ProcessReading {
        let mut process = ProcessReading {
            pid: self.pid.map_or(std::process::id(), Pid::as_u32),
            uss_bytes: procfs::read_self_uss_bytes(),
            shared_bytes: procfs::read_self_shared_bytes(),
            ..ProcessReading::default()
        };
        if let (Some(system), Some(pid)) = (self.system.as_mut(), self.pid) {
            // After refresh_cpu_usage, so both sides of the CPU share use the same
            // interval (sysinfo skips a second CPU refresh within 200 ms).
            system.refresh_processes_specifics(
                ProcessesToUpdate::Some(&[pid]),
                true,
                ProcessRefreshKind::nothing().with_cpu().with_memory(),
            );
            if let Some(me) = system.process(pid) {
                let cpu = f64::from(me.cpu_usage());
                process.cpu_percent = if cpu.is_finite() { cpu.max(0.0) } else { 0.0 };
                process.rss_bytes = me.memory();
                process.num_fds = me.open_files().map_or(0, |n| n as u64);
            }
        }
        process
    }

    fn read_network(&mut self) -> (u64, u64) {
        let Some(networks) = self.networks.as_mut() else {
            return (0, 0);
        };
        networks.refresh(true);
        networks.iter().filter(|(name, _)| name.to_str().is_some_and(counted_interface)).fold(
            (0u64, 0u64),
            |(sent, received), (_, data)| {
                (sent.saturating_add(data.total_transmitted()), received.saturating_add(data.total_received()))
            },
        )
    }
}

impl Default for HostSampler {
    fn default() -> Self {
        HostSampler::new()
    }
}

/// CPUs this process may run on: std honours cgroup quota and affinity (as Ray's
/// own CPU count honours the container's quota); sysinfo's count is the fallback.
fn available_cpus(sysinfo_count: usize) -> u32 {
    let count = std::thread::available_parallelism().map_or(sysinfo_count, |n| n.get());
    u32::try_from(count.max(1)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(at: Instant, disk: DiskIoCounters, sent: u64, received: u64) -> Counters {
        Counters { at, disk, network_sent_bytes: sent, network_received_bytes: received }
    }

    #[test]
    fn first_reading_has_zero_rates() {
        let now = counters(Instant::now(), DiskIoCounters { read_bytes: 1 << 30, ..Default::default() }, 5, 5);
        assert_eq!(Rates::between(None, &now), Rates::default());
    }

    #[test]
    fn rates_are_deltas_over_elapsed_seconds() {
        let t0 = Instant::now();
        let before = counters(
            t0,
            DiskIoCounters { read_bytes: 1000, write_bytes: 2000, read_count: 10, write_count: 20 },
            100,
            1000,
        );
        let after = counters(
            t0 + Duration::from_secs(2),
            DiskIoCounters { read_bytes: 5000, write_bytes: 2000, read_count: 30, write_count: 26 },
            300,
            5000,
        );
        let rates = Rates::between(Some(&before), &after);
        assert_eq!(
            rates,
            Rates {
                disk_read_bytes_per_s: 2000.0,
                disk_write_bytes_per_s: 0.0,
                disk_read_iops: 10.0,
                disk_write_iops: 3.0,
                network_send_bytes_per_s: 100.0,
                network_receive_bytes_per_s: 2000.0,
            }
        );
    }

    #[test]
    fn sub_second_intervals_scale_up() {
        assert_eq!(per_second(0, 50, Duration::from_millis(250)), 200.0);
    }

    #[test]
    fn counter_reset_or_zero_interval_gives_zero_not_garbage() {
        assert_eq!(per_second(1000, 10, Duration::from_secs(1)), 0.0);
        assert_eq!(per_second(0, 10, Duration::ZERO), 0.0);
    }

    #[test]
    fn counts_interfaces_the_way_ray_does() {
        for name in ["eth0", "ens5", "enp3s0", "eno1"] {
            assert!(counted_interface(name), "{name}");
        }
        for name in ["lo", "docker0", "br-1a2b", "veth12", "ifb0", "wlan0"] {
            assert!(!counted_interface(name), "{name}");
        }
    }

    #[test]
    fn percentages_are_clamped_and_nan_free() {
        assert_eq!(percent(f32::NAN), 0.0);
        assert_eq!(percent(150.0), 100.0);
        assert_eq!(percent(-1.0), 0.0);
        assert_eq!(percent(42.5), 42.5);
    }
}
