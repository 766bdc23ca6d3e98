//! `ray_node_*`: each node's hardware, as its dashboard agent's reporter exports it
//! (labels `ip`, `IsHeadNode`, `RayNodeType`; GPU families add `GpuIndex`,
//! `GpuDeviceName`, `GpuUuid`). Dead nodes export nothing.
//!
//! The head's readings come from the real machine when a [`HostReading`] is given.
//! Every other node (and the head without one) is derived from what runs there:
//! * CPU utilization is the share of logical CPUs in use (0–100); the CPU count is
//!   the node's logical CPUs.
//! * Memory used is [`OS_MEMORY`] plus the model's worker heaps, object store and any
//!   memory pressure, capped at the node's memory; `/dev/shm` holds the object store.
//! * The root disk holds [`DISK_BASE`] of OS and Ray install, task logs
//!   ([`LOG_BYTES_PER_TASK`]) and spilled objects; its size is the larger of
//!   [`MIN_DISK`] and four times the node's memory. Disk IO is spilling (writes),
//!   restoring (reads) and logs, one operation per [`IO_BLOCK`] or log write.
//! * Network counters are the object manager's bytes sent and received.
//! * One GPU device per (started) logical GPU: GPU `i` is busy for the share of the
//!   `i`-th logical GPU in use; memory, power and temperature follow that share.
//!   Nodes without GPUs have no GPU series.
//!
//! The IO and network counters ([`counters`]) and a GPU's memory are derived in
//! [`super::shared`], where `components` and the rate baselines read them too; rates
//! (speeds, IOPS) come from [`super::rate_baseline`].
//!
//! Owns: the `ray_node_*` families and the modelled readings only they use. Must
//! never: import another collector, or export a dead node's series.
//!
//! [`IO_BLOCK`]: super::shared::IO_BLOCK

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::{GpuLabels, NodeLabels, Uuid};
use super::scrape::{Family, RayVersion, Scrape};
use super::shared::{counters, gpu_memory_mib, Counters, Rates, GPU_MEMORY_BUSY_SHARE, LOG_BYTES_PER_TASK};
use crate::host::{GpuReading, HostReading, MIB};
use crate::snapshot::NodeView;

const GIB: u64 = 1024 * MIB;
/// Memory the OS and Ray's system processes (raylet, agent, GCS) occupy.
pub const OS_MEMORY: u64 = 2 * GIB;
/// Root disk used before any work: OS, Python, Ray.
pub const DISK_BASE: u64 = 24 * GIB;
/// Smallest root disk of a modelled node.
pub const MIN_DISK: u64 = 256 * GIB;
const GPU_IDLE_MILLIWATTS: f64 = 60_000.0;
const GPU_BUSY_MILLIWATTS: f64 = 300_000.0;
const GPU_IDLE_CELSIUS: f64 = 35.0;
const GPU_BUSY_CELSIUS: f64 = 75.0;
const DEFAULT_GPU_NAME: &str = "NVIDIA GPU";

/// One node's readings, in Ray's units.
struct Hw<'a> {
    cpu_count: f64,
    cpu_utilization: f64,
    mem_total: f64,
    mem_used: f64,
    mem_shared: f64,
    host_mem_total: f64,
    host_mem_used: f64,
    cgroup: Option<(f64, f64)>,
    disk_used: f64,
    disk_free: f64,
    disk_utilization: f64,
    io: Counters,
    net_sent: f64,
    net_received: f64,
    rates: Rates,
    gpus: Gpus<'a>,
}

enum Gpus<'a> {
    Host(&'a [GpuReading]),
    Modelled { count: u32, in_use: f64, name: &'a str, node_id: &'a str, memory_mib: u64 },
}

/// One GPU's readings.
struct Gpu<'a> {
    labels: GpuLabels<'a>,
    utilization: f64,
    used_mib: u64,
    available_mib: u64,
    milliwatts: Option<f64>,
    celsius: Option<f64>,
}

impl<'a> Gpus<'a> {
    fn each(&self, mut f: impl FnMut(Gpu<'a>) -> fmt::Result) -> fmt::Result {
        match *self {
            Gpus::Host(gpus) => {
                for g in gpus {
                    f(Gpu {
                        labels: GpuLabels { index: g.index, name: &g.name, uuid: Uuid::Real(&g.uuid) },
                        utilization: g.utilization_percent,
                        used_mib: g.memory_used_mib(),
                        available_mib: g.memory_available_mib(),
                        milliwatts: g.power_milliwatts.map(|p| p as f64),
                        celsius: g.temperature_celsius.map(f64::from),
                    })?;
                }
            }
            Gpus::Modelled { count, in_use, name, node_id, memory_mib } => {
                for index in 0..count {
                    let busy = (in_use - index as f64).clamp(0.0, 1.0);
                    let used_mib = (busy * GPU_MEMORY_BUSY_SHARE * memory_mib as f64) as u64;
                    f(Gpu {
                        labels: GpuLabels { index, name, uuid: Uuid::Modelled { node_id, index } },
                        utilization: busy * 100.0,
                        used_mib,
                        available_mib: memory_mib - used_mib,
                        milliwatts: Some(GPU_IDLE_MILLIWATTS + busy * (GPU_BUSY_MILLIWATTS - GPU_IDLE_MILLIWATTS)),
                        celsius: Some(GPU_IDLE_CELSIUS + busy * (GPU_BUSY_CELSIUS - GPU_IDLE_CELSIUS)),
                    })?;
                }
            }
        }
        Ok(())
    }
}

fn resource(n: &NodeView, name: &str) -> (f64, f64) {
    n.resources.iter().find(|r| &*r.0 == name).map(|r| (r.1, r.2)).unwrap_or((0.0, 0.0))
}

fn modelled(n: &NodeView, rates: Rates) -> Hw<'_> {
    let (cpu_total, cpu_available) = resource(n, "CPU");
    let cpu_utilization =
        if cpu_total > 0.0 { (100.0 * (cpu_total - cpu_available) / cpu_total).clamp(0.0, 100.0) } else { 0.0 };
    let mem_total = n.memory_total.0;
    let mem_used = (OS_MEMORY + n.memory_used.0).min(mem_total);
    let disk_total = MIN_DISK.max(4 * mem_total);
    let disk_used = (DISK_BASE + n.store_spilled.0 + n.stats.tasks_started * LOG_BYTES_PER_TASK).min(disk_total);
    let (gpu_total, gpu_available) = resource(n, "GPU");
    let memory_mib = gpu_memory_mib(n);
    Hw {
        cpu_count: cpu_total.ceil(),
        cpu_utilization,
        mem_total: mem_total as f64,
        mem_used: mem_used as f64,
        mem_shared: n.store_used.0.min(mem_total) as f64,
        host_mem_total: mem_total as f64,
        host_mem_used: mem_used as f64,
        // A modelled node is a container (a pod) of its configured size, as Ray nodes
        // on Kubernetes are: its cgroup holds what the node uses.
        cgroup: Some((mem_used as f64, mem_total as f64)),
        disk_used: disk_used as f64,
        disk_free: (disk_total - disk_used) as f64,
        disk_utilization: 100.0 * disk_used as f64 / disk_total as f64,
        io: counters(n),
        net_sent: n.stats.bytes_sent as f64,
        net_received: n.stats.bytes_received as f64,
        rates,
        gpus: Gpus::Modelled {
            count: gpu_total.ceil() as u32,
            in_use: gpu_total - gpu_available,
            name: n.gpu_model.as_deref().unwrap_or(DEFAULT_GPU_NAME),
            node_id: &n.node_id,
            memory_mib,
        },
    }
}

fn real(h: &HostReading, rates: Rates) -> Hw<'_> {
    Hw {
        cpu_count: h.cpu_count as f64,
        cpu_utilization: h.cpu_utilization_percent,
        mem_total: h.mem_total_bytes as f64,
        mem_used: h.mem_used_bytes as f64,
        mem_shared: h.mem_shared_bytes as f64,
        host_mem_total: h.host_mem_total_bytes as f64,
        host_mem_used: h.host_mem_used_bytes as f64,
        // Ray caps the cgroup's limit at the host's memory (no limit reads as the host's).
        cgroup: h.cgroup_mem_used_bytes.map(|u| {
            let host = h.host_mem_total_bytes as f64;
            (u as f64, h.cgroup_mem_limit_bytes.map_or(host, |t| (t as f64).min(host)))
        }),
        disk_used: h.disk_used_bytes as f64,
        disk_free: h.disk_free_bytes as f64,
        disk_utilization: h.disk_utilization_percent,
        io: Counters {
            disk_read_bytes: h.disk_io_read_bytes,
            disk_write_bytes: h.disk_io_write_bytes,
            disk_read_ops: h.disk_io_read_count,
            disk_write_ops: h.disk_io_write_count,
            ..Counters::default()
        },
        net_sent: h.network_sent_bytes as f64,
        net_received: h.network_received_bytes as f64,
        rates,
        gpus: Gpus::Host(&h.gpus),
    }
}

type Scalar = (&'static str, &'static str, RayVersion, fn(&Hw) -> Option<f64>);
const ALL: RayVersion = RayVersion(0, 0);
const V2_60: RayVersion = RayVersion(2, 60);

/// The node-wide families: name, help, first Ray version with it, reading.
#[rustfmt::skip]
const SCALARS: &[Scalar] = &[
    ("ray_node_cpu_utilization", "Node CPU utilization, percent (0-100).", ALL, |h| Some(h.cpu_utilization)),
    ("ray_node_cpu_count", "Number of logical CPUs.", ALL, |h| Some(h.cpu_count)),
    ("ray_node_mem_used", "Used memory, in bytes.", ALL, |h| Some(h.mem_used)),
    ("ray_node_mem_available", "Available memory, in bytes.", ALL, |h| Some(h.mem_total - h.mem_used)),
    ("ray_node_mem_total", "Total memory, in bytes.", ALL, |h| Some(h.mem_total)),
    ("ray_node_mem_shared_bytes", "Shared memory (/dev/shm), in bytes.", ALL, |h| (h.mem_shared > 0.0).then_some(h.mem_shared)),
    ("ray_node_mem_used_host", "Used memory of the host (not the container), in bytes.", V2_60, |h| Some(h.host_mem_used)),
    ("ray_node_mem_total_host", "Total memory of the host (not the container), in bytes.", V2_60, |h| Some(h.host_mem_total)),
    ("ray_node_cgroup_mem_used", "Memory used by the container's cgroup, in bytes.", V2_60, |h| h.cgroup.map(|c| c.0)),
    ("ray_node_cgroup_mem_total", "Memory limit of the container's cgroup, in bytes.", V2_60, |h| h.cgroup.map(|c| c.1)),
    ("ray_node_disk_usage", "Used space on the root filesystem, in bytes.", ALL, |h| Some(h.disk_used)),
    ("ray_node_disk_free", "Free space on the root filesystem, in bytes.", ALL, |h| Some(h.disk_free)),
    ("ray_node_disk_utilization_percentage", "Root filesystem utilization, percent.", ALL, |h| Some(h.disk_utilization)),
    ("ray_node_disk_io_read", "Bytes read from disk.", ALL, |h| Some(h.io.disk_read_bytes as f64)),
    ("ray_node_disk_io_write", "Bytes written to disk.", ALL, |h| Some(h.io.disk_write_bytes as f64)),
    ("ray_node_disk_io_read_count", "Disk read operations.", ALL, |h| Some(h.io.disk_read_ops as f64)),
    ("ray_node_disk_io_write_count", "Disk write operations.", ALL, |h| Some(h.io.disk_write_ops as f64)),
    ("ray_node_disk_io_read_speed", "Disk read throughput, in bytes per second.", ALL, |h| Some(h.rates.disk_read)),
    ("ray_node_disk_io_write_speed", "Disk write throughput, in bytes per second.", ALL, |h| Some(h.rates.disk_write)),
    ("ray_node_disk_read_iops", "Disk read operations per second.", ALL, |h| Some(h.rates.disk_read_iops)),
    ("ray_node_disk_write_iops", "Disk write operations per second.", ALL, |h| Some(h.rates.disk_write_iops)),
    ("ray_node_network_sent", "Bytes sent over the network.", ALL, |h| Some(h.net_sent)),
    ("ray_node_network_received", "Bytes received over the network.", ALL, |h| Some(h.net_received)),
    ("ray_node_network_send_speed", "Network send throughput, in bytes per second.", ALL, |h| Some(h.rates.net_send)),
    ("ray_node_network_receive_speed", "Network receive throughput, in bytes per second.", ALL, |h| Some(h.rates.net_receive)),
];

type PerGpu = (&'static str, &'static str, RayVersion, fn(&Gpu) -> Option<f64>);

/// The per-GPU families.
#[rustfmt::skip]
const GPUS: &[PerGpu] = &[
    ("ray_node_gpus_available", "GPUs on the node (1 per GPU).", ALL, |_| Some(1.0)),
    ("ray_node_gpus_utilization", "GPU utilization, percent (0-100).", ALL, |g| Some(g.utilization)),
    ("ray_node_gram_used", "GPU memory used, in MiB.", ALL, |g| Some(g.used_mib as f64)),
    ("ray_node_gram_available", "GPU memory available, in MiB.", ALL, |g| Some(g.available_mib as f64)),
    ("ray_node_gpu_power_milliwatts", "GPU power draw, in milliwatts.", V2_60, |g| g.milliwatts),
    ("ray_node_gpu_temperature_celsius", "GPU temperature, in degrees Celsius.", V2_60, |g| g.celsius),
];

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let readings: Vec<Hw> = s
        .nodes
        .iter()
        .zip(s.rates)
        .map(|(&n, &r)| match s.host_for(n) {
            Some(h) => real(h, r),
            None => modelled(n, r),
        })
        .collect();
    for &(name, help, _, read) in SCALARS.iter().filter(|f| s.version >= f.2) {
        let mut f = Family::gauge(enc, name, help);
        for (&n, hw) in s.nodes.iter().zip(&readings) {
            if let Some(v) = read(hw) {
                f.sample(&NodeLabels(s.target(n)), v)?;
            }
        }
    }
    for &(name, help, _, read) in GPUS.iter().filter(|f| s.version >= f.2) {
        let mut f = Family::gauge(enc, name, help);
        for (&n, hw) in s.nodes.iter().zip(&readings) {
            let node = NodeLabels(s.target(n));
            hw.gpus.each(|g| match read(&g) {
                Some(v) => f.sample(&(node, g.labels), v),
                None => Ok(()),
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::host::{GpuReading, HostReading};
    use crate::metrics::{render_all, render_node};

    #[test]
    fn every_alive_node_reports_hardware_and_dead_ones_do_not() {
        let e = all();
        let alive = cluster().nodes.iter().filter(|n| n.state == crate::model::NodeState::Alive).count();
        assert_eq!(e.of("ray_node_network_receive_speed").count(), alive);
        let hardware = |s: &&Sample| {
            super::SCALARS.iter().map(|f| f.0).chain(super::GPUS.iter().map(|f| f.0)).any(|f| f == s.name)
        };
        assert!(e.samples.iter().filter(hardware).all(|s| s.label("ip") != &*dead().ip));
        assert!(e.samples.iter().filter(hardware).count() > 20 * alive);
        for s in e.samples.iter().filter(hardware) {
            assert_eq!(s.label("instance"), format!("{}:8080", s.label("ip")));
            let head = s.label("ip") == &*head().ip;
            assert_eq!(s.label("IsHeadNode"), if head { "true" } else { "false" });
            assert_eq!(s.label("RayNodeType"), if head { "head" } else { "worker" });
        }
    }

    #[test]
    fn gpu_series_only_for_gpu_nodes() {
        let e = all();
        let gpu_ips: Vec<&str> = e.of("ray_node_gpus_available").map(|s| s.label("ip")).collect();
        assert!(!gpu_ips.is_empty());
        for ip in &gpu_ips {
            let n = cluster().nodes.iter().find(|n| &*n.ip == *ip).unwrap();
            assert!(n.resources.iter().any(|r| &*r.0 == "GPU"), "{ip} has GPU series but no GPUs");
        }
        assert!(!gpu_ips.contains(&&*worker(false).ip));
        let g = node(&worker(true).ip);
        assert_eq!(g.sum("ray_node_gpus_available", &[]), 4.0);
        let s = g.of("ray_node_gram_used").next().unwrap();
        assert_eq!(s.label("GpuDeviceName"), "NVIDIA A10G");
        assert!(s.label("GpuUuid").starts_with("GPU-"));
        let total: f64 = g.of("ray_node_gram_used").chain(g.of("ray_node_gram_available")).map(|s| s.value).sum();
        assert_eq!(total, 4.0 * 24.0 * 1024.0);
    }

    #[test]
    fn modelled_readings_stay_in_range() {
        let e = all();
        for s in e
            .of("ray_node_cpu_utilization")
            .chain(e.of("ray_node_disk_utilization_percentage"))
            .chain(e.of("ray_node_gpus_utilization"))
        {
            assert!((0.0..=100.0).contains(&s.value), "{s:?}");
        }
        for s in e.of("ray_node_mem_used") {
            let total = e.sum("ray_node_mem_total", &[("ip", s.label("ip"))]);
            assert!(s.value <= total && s.value > 0.0);
        }
    }

    #[test]
    fn the_heads_hardware_comes_from_the_host_when_given() {
        let host = HostReading {
            cpu_count: 3,
            cpu_utilization_percent: 42.5,
            mem_total_bytes: 1000,
            mem_used_bytes: 400,
            network_receive_speed_bytes_per_s: 77.0,
            ..HostReading::default()
        };
        let text = render_node(cluster(), &head().ip, Some(&std::sync::Arc::new(host.clone())), &ctx()).unwrap();
        let e = parse(&text);
        assert_eq!(e.sum("ray_node_cpu_count", &[]), 3.0);
        assert_eq!(e.sum("ray_node_cpu_utilization", &[]), 42.5);
        assert_eq!(e.sum("ray_node_mem_available", &[]), 600.0);
        assert_eq!(e.sum("ray_node_network_receive_speed", &[]), 77.0);
        assert!(!e.families.contains_key("ray_node_gpus_available"), "a host without GPUs has no GPU series");
        // Workers stay modelled.
        let all = parse(&render_all(cluster(), Some(&std::sync::Arc::new(host.clone())), &ctx()));
        assert_eq!(all.sum("ray_node_cpu_count", &[("ip", &worker(false).ip)]), 8.0);
    }

    #[test]
    fn a_hosts_gpus_are_reported_with_their_identity() {
        let gpu = GpuReading {
            index: 0,
            name: "NVIDIA H100".into(),
            uuid: "GPU-abc".into(),
            utilization_percent: 10.0,
            memory_used_bytes: 3 * crate::host::MIB,
            memory_total_bytes: 10 * crate::host::MIB,
            power_milliwatts: Some(5),
            temperature_celsius: None,
        };
        let host = HostReading { gpus: vec![gpu], ..HostReading::default() };
        let e = parse(&render_node(cluster(), &head().ip, Some(&std::sync::Arc::new(host.clone())), &ctx()).unwrap());
        let s = e.of("ray_node_gram_available").next().unwrap();
        assert_eq!((s.value, s.label("GpuUuid"), s.label("GpuIndex")), (7.0, "GPU-abc", "0"));
        assert_eq!(e.sum("ray_node_gpu_power_milliwatts", &[]), 5.0);
        assert!(!e.families.contains_key("ray_node_gpu_temperature_celsius"));
    }

    #[test]
    fn speeds_come_from_two_snapshots() {
        let early = snapshot_at(CLUSTER_YAML, 30);
        let ctx = ctx();
        let w = &worker(false).ip;
        parse(&render_node(&std::sync::Arc::new(early.clone()), w, None, &ctx).unwrap());
        let e = parse(&render_node(cluster(), w, None, &ctx).unwrap());
        let n = cluster().nodes.iter().find(|n| &n.ip == w).unwrap();
        let m = early.nodes.iter().find(|n| &n.ip == w).unwrap();
        let want = (n.stats.bytes_received - m.stats.bytes_received) as f64 / 10.0;
        assert_eq!(e.sum("ray_node_network_receive_speed", &[]), want);
    }
}
