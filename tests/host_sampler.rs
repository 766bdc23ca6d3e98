//! HostSampler on this real machine, and its GPU paths without a GPU: NVML missing
//! (logged once, never an error) and a fake source standing in for two GPUs.

use std::sync::{Arc, Mutex};

use rayscope::host::{gpus_or_off, GpuReading, GpuSource, HostSampler, NoGpus, GPU_READINGS_OFF, MIB};
use tracing::field::{Field, Visit};
use tracing::Level;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// Every event logged while a closure runs, as (level, message).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<(Level, String)>>>);

impl Captured {
    fn during<T>(&self, f: impl FnOnce() -> T) -> T {
        let subscriber = tracing_subscriber::registry().with(self.clone());
        tracing::subscriber::with_default(subscriber, f)
    }

    fn count(&self, level: Level, prefix: &str) -> usize {
        let events = self.0.lock().unwrap();
        events.iter().filter(|(l, m)| *l == level && m.starts_with(prefix)).count()
    }

    fn count_at(&self, level: Level) -> usize {
        self.count(level, "")
    }
}

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Captured {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0.lock().unwrap().push((*event.metadata().level(), message.0));
    }
}

#[test]
fn real_machine_readings_are_sane() {
    let mut sampler = HostSampler::new();
    let first = sampler.read();
    let r = sampler.read();

    assert!(r.cpu_count >= 1);
    assert!((0.0..=100.0).contains(&r.cpu_utilization_percent), "{}", r.cpu_utilization_percent);

    assert!(r.mem_total_bytes > 0);
    assert!(r.host_mem_total_bytes >= r.mem_total_bytes);
    assert!(r.mem_used_bytes <= r.mem_total_bytes);
    assert_eq!(r.mem_available_bytes, r.mem_total_bytes - r.mem_used_bytes);
    assert_eq!(r.cgroup_mem_used_bytes.is_some(), r.cgroup_mem_limit_bytes.is_some());
    if let Some(limit) = r.cgroup_mem_limit_bytes {
        assert_eq!(r.mem_total_bytes, limit, "a container's limit is Ray's node memory");
    }

    assert!(r.disk_total_bytes > 0, "statvfs(\"/\") should work on any Unix host");
    assert!(r.disk_used_bytes <= r.disk_total_bytes);
    assert!((0.0..=100.0).contains(&r.disk_utilization_percent));

    // Cumulative counters never go backwards between two reads; rates are finite.
    assert!(r.disk_io_read_bytes >= first.disk_io_read_bytes);
    assert!(r.disk_io_write_count >= first.disk_io_write_count);
    assert!(r.network_received_bytes >= first.network_received_bytes);
    for rate in [
        r.disk_io_read_speed_bytes_per_s,
        r.disk_io_write_speed_bytes_per_s,
        r.disk_read_iops,
        r.disk_write_iops,
        r.network_send_speed_bytes_per_s,
        r.network_receive_speed_bytes_per_s,
    ] {
        assert!(rate.is_finite() && rate >= 0.0, "{rate}");
    }

    assert_eq!(r.process.pid, std::process::id());
    assert!(r.process.cpu_percent >= 0.0);
    assert!(r.sampled_at_unix_ms >= first.sampled_at_unix_ms);
    if cfg!(target_os = "linux") {
        assert!(r.process.rss_bytes > 0);
        assert!(r.process.num_fds > 0, "stdin/stdout/stderr at least");
        let uss = r.process.uss_bytes.expect("smaps_rollup is readable on Linux >= 4.14");
        assert!(uss > 0 && uss <= r.process.rss_bytes);
    }

    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["cpu_count"], r.cpu_count);
}

#[test]
fn without_nvml_gpus_are_empty_and_said_once() {
    let nvml_loads = nvml_wrapper::Nvml::init().is_ok();
    let log = Captured::default();
    let readings = log.during(|| {
        let mut sampler = HostSampler::new();
        (0..5).map(|_| sampler.read()).collect::<Vec<_>>()
    });
    if nvml_loads {
        // A GPU machine: the off message must not appear.
        assert_eq!(log.count(Level::INFO, GPU_READINGS_OFF), 0);
        return;
    }
    assert!(readings.iter().all(|r| r.gpus.is_empty()));
    assert_eq!(log.count(Level::INFO, GPU_READINGS_OFF), 1, "once, not once per read");
    assert_eq!(log.count_at(Level::WARN) + log.count_at(Level::ERROR), 0);
}

#[test]
fn a_gpu_source_that_fails_to_open_is_one_info_line_and_no_gpus() {
    let log = Captured::default();
    let gpus = log.during(|| {
        let source = gpus_or_off::<NoGpus, _>(Err("libnvidia-ml.so.1: cannot open shared object file"));
        let mut sampler = HostSampler::with_gpu_source(source);
        (0..3).flat_map(|_| sampler.read().gpus).count()
    });
    assert_eq!(gpus, 0);
    assert_eq!(log.count(Level::INFO, GPU_READINGS_OFF), 1);
    let events = log.0.lock().unwrap();
    let (_, message) = events.iter().find(|(_, m)| m.starts_with(GPU_READINGS_OFF)).unwrap();
    assert!(message.contains("cannot open shared object file"), "says why: {message}");
    drop(events);
    assert_eq!(log.count_at(Level::WARN) + log.count_at(Level::ERROR), 0);
}

/// Two GPUs as NVML would describe them, reported out of index order.
struct TwoFakeGpus {
    reads: u32,
}

impl GpuSource for TwoFakeGpus {
    fn read_gpus(&mut self) -> Vec<GpuReading> {
        self.reads += 1;
        vec![
            GpuReading {
                index: 1,
                name: "NVIDIA L4".into(),
                uuid: "GPU-bbbbbbbb-0000-0000-0000-000000000001".into(),
                utilization_percent: 0.0,
                memory_used_bytes: 0,
                memory_total_bytes: 23034 * MIB,
                power_milliwatts: None,
                temperature_celsius: None,
            },
            GpuReading {
                index: 0,
                name: "NVIDIA A10G".into(),
                uuid: "GPU-aaaaaaaa-0000-0000-0000-000000000000".into(),
                utilization_percent: f64::from(40 + self.reads),
                memory_used_bytes: 1536 * MIB + 123,
                memory_total_bytes: 23028 * MIB,
                power_milliwatts: Some(61_250),
                temperature_celsius: Some(47),
            },
        ]
    }
}

#[test]
fn fake_gpus_come_through_in_index_order_with_ray_units() {
    let log = Captured::default();
    let reading = log.during(|| {
        let mut sampler = HostSampler::with_gpu_source(Box::new(TwoFakeGpus { reads: 0 }));
        sampler.read()
    });
    assert_eq!(log.count(Level::INFO, GPU_READINGS_OFF), 0);

    let [a10g, l4] = reading.gpus.as_slice() else {
        panic!("expected 2 GPUs, got {:?}", reading.gpus);
    };
    assert_eq!((a10g.index, a10g.name.as_str()), (0, "NVIDIA A10G"));
    assert_eq!((l4.index, l4.name.as_str()), (1, "NVIDIA L4"));
    assert_eq!(a10g.uuid, "GPU-aaaaaaaa-0000-0000-0000-000000000000");
    // Read once to prime, once here: the source is asked on every read.
    assert_eq!(a10g.utilization_percent, 42.0);

    // ray_node_gram_used / _available are whole MiB.
    assert_eq!(a10g.memory_used_mib(), 1536);
    assert_eq!(a10g.memory_available_mib(), 23028 - 1536);
    assert_eq!(l4.memory_used_mib(), 0);
    assert_eq!(l4.memory_available_mib(), 23034);

    assert_eq!(a10g.power_milliwatts, Some(61_250));
    assert_eq!(a10g.temperature_celsius, Some(47));
    assert_eq!((l4.power_milliwatts, l4.temperature_celsius), (None, None));

    let json = serde_json::to_value(&reading.gpus).unwrap();
    assert_eq!(json[0]["power_milliwatts"], 61_250);
    assert!(json[1]["power_milliwatts"].is_null());
}
