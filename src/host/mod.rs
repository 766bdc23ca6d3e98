//! The head node's real hardware: CPU, memory, disk, network, GPUs and this process,
//! read from the machine rayscope runs on, for the `ray_node_*` and `ray_component_*`
//! families a real head node's dashboard agent exports.
//!
//! Owns: [`HostSampler`] (one read of the machine, rates from the previous read),
//! [`HostMonitor`] (a shared cache that reads at most once a second however often
//! scrapes ask), the [`GpuSource`] seam with NVML behind it, and the pure /proc
//! parsers they use.
//!
//! Must never: block the simulation thread (it never calls in here; scrape and API
//! handlers do, and pay at most one read of a few milliseconds); fail or panic because
//! hardware information is missing (a missing file, platform or NVIDIA driver reads
//! as zero, `None` or no GPUs, and a missing driver is said once, at `info`); or know
//! about Prometheus (metric names and labels belong to `metrics`, which reads a
//! [`HostReading`]; the one unit Ray's wire needs that a reading lacks, GPU memory in
//! whole MiB, is a helper on [`GpuReading`]).

mod disk;
mod gpu;
mod monitor;
mod procfs;
mod reading;
mod sampler;

pub use gpu::{detect_gpus, gpus_or_off, GpuSource, NoGpus, NvmlGpus, GPU_READINGS_OFF};
pub use monitor::{Clock, HostMonitor, ReadHost, SystemClock};
pub use reading::{GpuReading, HostReading, ProcessReading, MIB};
pub use sampler::HostSampler;
