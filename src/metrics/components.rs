//! `ray_component_*`: each node's Ray processes, as its reporter exports them (labels
//! `ip`, `pid`, `Component`).
//!
//! System processes have a pid: `raylet` and `agent` on every node, `gcs` on the head.
//! Workers are aggregated by process title with `pid=""`, as Ray does: `ray::<Class>`
//! for each alive actor class on the node, `ray::<name>` for normal tasks running
//! there, and `ray::IDLE` for the pool of idle workers (one per free logical CPU).
//! Actor method calls (`Class.method`) run inside their actor's process, so they add
//! no process of their own. With a [`crate::host::HostReading`], the head's `gcs`
//! series are this process's real readings (rayscope plays the GCS); everything else
//! is modelled from what runs on the node.
//!
//! `ray_component_gpu_percentage` and `ray_component_gpu_memory_mb` (labels `ip` and
//! `Component`, no `pid`, and only for components using a GPU, as Ray reports them):
//! a node's GPUs in use are shared among its actor processes by count (actors hold
//! GPUs for their life), or among its busy task workers when no actor runs there.
//!
//! Owns: the `ray_component_*` families and the modelled processes behind them. Must
//! never: import another collector (a GPU's memory comes from `shared`, as `node` reads
//! it), or give a worker series its own pid (workers stay aggregated by title).

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;

use super::labels::{ComponentLabels, ProcessLabels, Title};
use super::scrape::{Family, RayVersion, Scrape};
use super::shared::{gpu_memory_mib, rows_of, GPU_MEMORY_BUSY_SHARE};
use crate::host::ProcessReading;
use crate::snapshot::{ActorExecutorCount, NodeView, RunningCount};

const MB: f64 = 1e6;
/// Resident memory of a Python worker before it holds any data.
const WORKER_RSS: f64 = 250e6;
const USS_SHARE: f64 = 0.8;
const WORKER_FDS: f64 = 45.0;
const IDLE_WORKER_CPU: f64 = 0.2;

/// A system process: title, pid, cpu %, rss, fds.
const RAYLET: (&str, u32, f64, f64, f64) = ("raylet", 4242, 2.0, 300e6, 120.0);
const AGENT: (&str, u32, f64, f64, f64) = ("agent", 4300, 1.0, 200e6, 60.0);
const GCS: (&str, u32, f64, f64, f64) = ("gcs", 4100, 1.5, 400e6, 200.0);

/// One process title on one node.
#[derive(Clone, Copy)]
struct Proc<'a> {
    title: Title<'a>,
    pid: Option<u32>,
    cpu_percent: f64,
    rss: f64,
    uss: f64,
    shared: f64,
    fds: f64,
    /// (GPU utilization percent summed over its GPUs, GPU memory MB), when it uses one.
    gpu: Option<(f64, f64)>,
}

impl<'a> Proc<'a> {
    fn system((name, pid, cpu, rss, fds): (&'static str, u32, f64, f64, f64)) -> Proc<'a> {
        Proc {
            title: Title::System(name),
            pid: Some(pid),
            cpu_percent: cpu,
            rss,
            uss: rss * USS_SHARE,
            shared: rss * (1.0 - USS_SHARE),
            fds,
            gpu: None,
        }
    }

    fn real(name: &'static str, p: &ProcessReading) -> Proc<'a> {
        let rss = p.rss_bytes as f64;
        let uss = p.uss_bytes.map(|u| u as f64).unwrap_or(rss);
        Proc {
            title: Title::System(name),
            pid: Some(p.pid),
            cpu_percent: p.cpu_percent,
            rss,
            uss,
            shared: p.shared_bytes.map(|b| b as f64).unwrap_or(rss - uss),
            fds: p.num_fds as f64,
            gpu: None,
        }
    }

    /// `workers` processes under one title, `busy` of them running, each busy one
    /// holding `heap` bytes besides its base.
    fn workers(name: &'a str, workers: f64, busy: f64, heap: f64) -> Proc<'a> {
        let rss = workers * WORKER_RSS + busy * heap;
        Proc {
            title: Title::Worker(name),
            pid: None,
            cpu_percent: busy * 100.0 + (workers - busy) * IDLE_WORKER_CPU,
            rss,
            uss: rss * USS_SHARE,
            shared: rss * (1.0 - USS_SHARE),
            fds: workers * WORKER_FDS,
            gpu: None,
        }
    }
}

/// Worker titles of one node: (name, processes, busy processes, actor processes).
type Workers<'a> = Vec<(&'a str, f64, f64, f64)>;

/// The processes of the node at `pos` in the scrape, appended to `out`.
fn processes<'a>(s: &Scrape<'a>, pos: usize, out: &mut Vec<(usize, Proc<'a>)>, workers: &mut Workers<'a>) {
    let n: &'a NodeView = s.nodes[pos];
    out.push((pos, Proc::system(RAYLET)));
    out.push((pos, Proc::system(AGENT)));
    if n.is_head {
        let gcs = match s.host_for(n) {
            Some(h) => Proc::real(GCS.0, &h.process),
            None => Proc::system(GCS),
        };
        out.push((pos, gcs));
    }

    workers.clear();
    for a in rows_of(&s.snap.actor_executor_counts, n.idx, |a: &ActorExecutorCount| a.node) {
        let busy = if a.running { a.count as f64 } else { 0.0 };
        workers.push((a.class.as_str(), a.count as f64, busy, a.count as f64));
    }
    for t in rows_of(&s.snap.running_counts, n.idx, |t: &RunningCount| t.node) {
        if !t.name.contains('.') {
            workers.push((t.name.as_str(), t.count as f64, t.count as f64, 0.0));
        }
    }
    let free_cpus = n.resources.iter().find(|r| &*r.0 == "CPU").map(|r| r.2.floor()).unwrap_or(0.0);
    workers.push(("IDLE", free_cpus, 0.0, 0.0));
    workers.sort_unstable_by(|a, b| a.0.cmp(b.0));
    workers.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 += later.1;
            kept.2 += later.2;
            kept.3 += later.3;
        }
        same
    });
    // Worker heaps (and memory pressure) are held by the busy workers.
    let busy: f64 = workers.iter().map(|w| w.2).sum();
    let heap = if busy > 0.0 { n.memory_used.saturating_sub(n.store_used).as_f64() / busy } else { 0.0 };
    let (gpus_in_use, gpu_mib) = gpus_in_use(n);
    let actors: f64 = workers.iter().map(|w| w.3).sum();
    let weight = |w: &(&str, f64, f64, f64)| if actors > 0.0 { w.3 } else { w.2 };
    let weights: f64 = workers.iter().map(weight).sum();
    out.extend(workers.iter().filter(|w| w.1 > 0.0).map(|w| {
        let mut p = Proc::workers(w.0, w.1, w.2, heap);
        if gpus_in_use > 0.0 && weight(w) > 0.0 {
            let gpus = gpus_in_use * weight(w) / weights;
            p.gpu = Some((gpus * 100.0, gpus * GPU_MEMORY_BUSY_SHARE * gpu_mib));
        }
        (pos, p)
    }));
}

/// GPUs in use on `n` (logical, fractional) and each GPU's memory in MiB.
fn gpus_in_use(n: &NodeView) -> (f64, f64) {
    let in_use = n.resources.iter().find(|r| &*r.0 == "GPU").map_or(0.0, |r| r.1 - r.2);
    (in_use, gpu_memory_mib(n) as f64)
}

/// A family: name, help, whether the emulated Ray version has it, reading.
type Reading = (&'static str, &'static str, fn(&RayVersion) -> bool, fn(&Proc) -> f64);

#[rustfmt::skip]
const FAMILIES: &[Reading] = &[
    ("ray_component_cpu_percentage", "CPU use of a component, percent of one core.", |_| true, |p| p.cpu_percent),
    ("ray_component_rss_mb", "Resident memory of a component, in MB.", |_| true, |p| p.rss / MB),
    ("ray_component_uss_mb", "Unique memory of a component, in MB.", |_| true, |p| p.uss / MB),
    ("ray_component_rss_bytes", "Resident memory of a component, in bytes.", |v| *v >= RayVersion(2, 60), |p| p.rss),
    ("ray_component_uss_bytes", "Unique memory of a component, in bytes.", |v| *v >= RayVersion(2, 60), |p| p.uss),
    ("ray_component_shared_bytes", "Shared memory of a component, in bytes.", |v| *v >= RayVersion(2, 60), |p| p.shared),
    ("ray_component_mem_shared_bytes", "Shared memory of a component, in bytes.", |v| *v < RayVersion(2, 60), |p| p.shared),
    ("ray_component_num_fds", "Open file descriptors of a component.", |_| true, |p| p.fds),
];

pub(crate) fn encode(s: &Scrape<'_>, enc: &mut DescriptorEncoder<'_>) -> fmt::Result {
    let mut procs = Vec::with_capacity(s.nodes.len() * 6);
    let mut scratch = Workers::new();
    for pos in 0..s.nodes.len() {
        processes(s, pos, &mut procs, &mut scratch);
    }
    for &(name, help, _, read) in FAMILIES.iter().filter(|f| (f.2)(&s.version)) {
        let mut f = Family::gauge(enc, name, help);
        for (pos, p) in &procs {
            let labels = ProcessLabels { at: s.target(s.nodes[*pos]), pid: p.pid, title: p.title };
            f.sample(&labels, read(p))?;
        }
    }
    if s.version >= RayVersion(2, 60) {
        for (name, help, read) in GPU_FAMILIES {
            let mut f = Family::gauge(enc, name, help);
            for (pos, p) in &procs {
                if let Some(gpu) = p.gpu {
                    f.sample(&ComponentLabels { at: s.target(s.nodes[*pos]), title: p.title }, read(gpu))?;
                }
            }
        }
    }
    Ok(())
}

/// A GPU family: name, help, reading of (percent, MB).
type GpuReading = (&'static str, &'static str, fn((f64, f64)) -> f64);

#[rustfmt::skip]
const GPU_FAMILIES: [GpuReading; 2] = [
    ("ray_component_gpu_percentage", "GPU usage of all components on the node.", |g| g.0),
    ("ray_component_gpu_memory_mb", "GPU memory usage of all components on the node.", |g| g.1),
];

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn every_node_has_a_raylet_and_an_agent_and_the_head_a_gcs() {
        let e = all();
        let alive = cluster().nodes.iter().filter(|n| n.state == crate::model::NodeState::Alive).count();
        let titles = |c: &str| e.of("ray_component_rss_bytes").filter(|s| s.label("Component") == c).count();
        assert_eq!(titles("raylet"), alive);
        assert_eq!(titles("agent"), alive);
        assert_eq!(titles("gcs"), 1);
        let gcs = e.of("ray_component_rss_bytes").find(|s| s.label("Component") == "gcs").unwrap();
        assert_eq!(gcs.label("ip"), &*head().ip);
        assert!(!gcs.label("pid").is_empty());
    }

    #[test]
    fn workers_are_titled_by_actor_class_or_task_name_without_pid() {
        let e = all();
        let workers: Vec<_> =
            e.of("ray_component_cpu_percentage").filter(|s| s.label("Component").starts_with("ray::")).collect();
        assert!(workers.iter().any(|s| s.label("Component") == "ray::TrainWorker"));
        assert!(workers.iter().any(|s| s.label("Component") == "ray::map"));
        assert!(workers.iter().all(|s| s.label("pid").is_empty() && s.has("pid")));
        assert!(
            !workers.iter().any(|s| s.label("Component").contains('.')),
            "actor calls run in their actor's process"
        );
    }

    #[test]
    fn gpu_components_share_the_nodes_gpus_in_use() {
        let snap = cluster();
        let in_use: f64 = snap
            .nodes
            .iter()
            .filter(|n| n.state == crate::model::NodeState::Alive)
            .map(|n| super::gpus_in_use(n).0)
            .sum();
        assert!(in_use > 0.0, "the test cluster uses GPUs");
        let e = all();
        let total = e.sum("ray_component_gpu_percentage", &[]);
        assert!((total - in_use * 100.0).abs() < 1e-6, "{total} vs {in_use} GPUs");
        assert!(e.of("ray_component_gpu_memory_mb").all(|s| s.value > 0.0 && !s.has("pid")));
        assert!(e.of("ray_component_gpu_percentage").any(|s| s.label("Component") == "ray::TrainWorker"));
    }

    #[test]
    fn free_cpus_hold_idle_workers() {
        // At 3 s the map-reduce has not started: CPUs are free.
        let early = snapshot_at(CLUSTER_YAML, 3);
        let e = parse(&crate::metrics::render_all(&std::sync::Arc::new(early.clone()), None, &ctx()));
        let idle = e.sum("ray_component_num_fds", &[("Component", "ray::IDLE")]) / super::WORKER_FDS;
        let free: f64 = early
            .nodes
            .iter()
            .filter(|n| n.state == crate::model::NodeState::Alive)
            .flat_map(|n| n.resources.iter().filter(|r| &*r.0 == "CPU").map(|r| r.2.floor()))
            .sum();
        assert!(free > 0.0);
        assert_eq!(idle, free);
    }

    #[test]
    fn the_heads_gcs_is_this_process_when_the_host_is_read() {
        let host = crate::host::HostReading {
            process: crate::host::ProcessReading { pid: 77, rss_bytes: 5_000_000, num_fds: 9, ..Default::default() },
            ..Default::default()
        };
        let e = parse(
            &crate::metrics::render_node(cluster(), &head().ip, Some(&std::sync::Arc::new(host.clone())), &ctx())
                .unwrap(),
        );
        let gcs = e.of("ray_component_rss_mb").find(|s| s.label("Component") == "gcs").unwrap();
        assert_eq!((gcs.label("pid"), gcs.value), ("77", 5.0));
    }
}
