//! GPUs: a small [`GpuSource`] seam with NVML as the real implementation.
//!
//! Most machines that run rayscope have no NVIDIA driver. Then NVML fails to load
//! once, at start-up: we say so in one `info` line and read no GPUs from then on,
//! never retrying per scrape and never treating it as an error. Tests inject a fake
//! source to exercise GPU readings without a GPU.

use std::fmt::Display;

use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

use super::reading::GpuReading;

/// Where GPU readings come from. `Send` so a sampler can live behind a shared handle.
pub trait GpuSource: Send {
    /// One reading per GPU present now. Never fails: a device that cannot be read is
    /// left out or has its optional fields empty.
    fn read_gpus(&mut self) -> Vec<GpuReading>;
}

/// The source for machines without GPUs (or without NVML).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoGpus;

impl GpuSource for NoGpus {
    fn read_gpus(&mut self) -> Vec<GpuReading> {
        Vec::new()
    }
}

/// Prefix of the one line logged when GPU readings are off; tests look for it.
pub const GPU_READINGS_OFF: &str = "GPU readings off";

/// NVML if it loads on this machine, otherwise [`NoGpus`] after one `info` line.
pub fn detect_gpus() -> Box<dyn GpuSource> {
    gpus_or_off(NvmlGpus::init())
}

/// Uses an opened source, or explains once why there are no GPU readings.
pub fn gpus_or_off<S, E>(opened: Result<S, E>) -> Box<dyn GpuSource>
where
    S: GpuSource + 'static,
    E: Display,
{
    match opened {
        Ok(source) => Box::new(source),
        Err(why) => {
            tracing::info!("{GPU_READINGS_OFF}: NVML is unavailable ({why}); no ray_node_gpus_* or ray_node_gram_* series will be exported");
            Box::new(NoGpus)
        }
    }
}

/// NVIDIA GPUs through NVML. Devices are looked up by index on every read, so a GPU
/// that falls off the bus drops out instead of poisoning the source.
pub struct NvmlGpus {
    nvml: Nvml,
    /// Whether a failed read has been reported; later failures go to `debug`.
    warned: bool,
}

impl NvmlGpus {
    /// Loads NVML and checks it can count devices.
    pub fn init() -> Result<NvmlGpus, NvmlError> {
        let nvml = Nvml::init()?;
        let count = nvml.device_count()?;
        tracing::debug!(count, "NVML loaded");
        Ok(NvmlGpus { nvml, warned: false })
    }

    fn report(&mut self, what: &str, err: &NvmlError) {
        if self.warned {
            tracing::debug!(error = %err, "NVML: {what}");
        } else {
            self.warned = true;
            tracing::warn!(error = %err, "NVML: {what}; GPU readings may be incomplete (reported once)");
        }
    }
}

impl GpuSource for NvmlGpus {
    fn read_gpus(&mut self) -> Vec<GpuReading> {
        let count = match self.nvml.device_count() {
            Ok(count) => count,
            Err(err) => {
                self.report("cannot count GPUs", &err);
                return Vec::new();
            }
        };
        let mut gpus = Vec::with_capacity(count as usize);
        let mut failure = None;
        for index in 0..count {
            let device = match self.nvml.device_by_index(index) {
                Ok(device) => device,
                Err(err) => {
                    failure = Some(err);
                    continue;
                }
            };
            let memory = device.memory_info().ok();
            gpus.push(GpuReading {
                index,
                name: device.name().unwrap_or_default(),
                uuid: device.uuid().unwrap_or_default(),
                utilization_percent: device.utilization_rates().map_or(0.0, |u| f64::from(u.gpu)),
                memory_used_bytes: memory.as_ref().map_or(0, |m| m.used),
                memory_total_bytes: memory.as_ref().map_or(0, |m| m.total),
                power_milliwatts: device.power_usage().ok().map(u64::from),
                temperature_celsius: device.temperature(TemperatureSensor::Gpu).ok(),
            });
        }
        if let Some(err) = failure {
            self.report("cannot open a GPU", &err);
        }
        gpus
    }
}
