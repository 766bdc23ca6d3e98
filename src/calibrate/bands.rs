//! What a replay's predicted makespan is worth: the error the model had on Ray for that
//! kind of change, and a warning for a change far past what was measured.
//!
//! The bands are the replays measured against real Ray so far, as docs/observe.md and
//! docs/fidelity.md record them ("Replay on another shape", "What-ifs on a recorded job"); each
//! names where it comes from. A prediction is printed with the range Ray's makespan
//! would have had, were the model off by as much as it was then.
//!
//! Owns: the recorded job's shape, the kinds of change and their bands, and the
//! warnings. Must never: widen or narrow a band to suit a prediction (a band is a
//! measurement; a new one is measured, and docs/observe.md updated).

use crate::config::Config;
use crate::observe::store::Store;
use serde::Serialize;
use std::collections::BTreeSet;

/// The cluster a job was recorded on: the nodes its calls ran on and the head.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Shape {
    /// Logical CPUs of each node, largest first.
    pub node_cpus: Vec<f64>,
    /// Resource kinds (beyond CPU and memory) any of those nodes offered, e.g. GPU.
    pub resource_kinds: BTreeSet<String>,
}

impl Shape {
    pub fn cpus(&self) -> f64 {
        self.node_cpus.iter().sum()
    }
}

/// Resources every Ray node lists that say nothing of its kind.
fn plain(resource: &str) -> bool {
    matches!(resource, "CPU" | "memory" | "object_store_memory")
        || resource.starts_with("node:")
        || resource.starts_with("accelerator_type:")
}

/// The shape `store`'s job `job` ran on.
pub fn recorded_shape(store: &Store, job: &str) -> Shape {
    let used: BTreeSet<&str> = store
        .tasks
        .values()
        .map(|e| e.last())
        .filter(|t| t.job_id == job)
        .filter_map(|t| t.node_id.as_deref())
        .collect();
    let mut shape = Shape::default();
    for n in store.nodes.iter().filter(|n| n.is_head_node || used.contains(n.node_id.as_str())) {
        let cpu = n.resources_total.iter().find(|(k, _)| k == "CPU").map_or(0.0, |r| r.1);
        shape.node_cpus.push(cpu);
        shape.resource_kinds.extend(n.resources_total.iter().filter(|(k, _)| !plain(k)).map(|(k, _)| k.clone()));
    }
    shape.node_cpus.sort_by(|a, b| b.total_cmp(a));
    shape
}

/// The shape a config's cluster starts with.
pub fn config_shape(cfg: &Config) -> Shape {
    let c = &cfg.cluster;
    let mut shape = Shape::default();
    shape.node_cpus.push(c.head.cpu);
    shape.resource_kinds.extend(kinds(c.head.gpu, &c.head.resources));
    for t in &c.node_types {
        for _ in 0..t.count.unwrap_or(0) {
            shape.node_cpus.push(t.cpu);
        }
        if t.count.unwrap_or(0) > 0 {
            shape.resource_kinds.extend(kinds(t.gpu, &t.resources));
        }
    }
    shape.node_cpus.sort_by(|a, b| b.total_cmp(a));
    shape
}

fn kinds(gpu: f64, resources: &std::collections::BTreeMap<String, f64>) -> Vec<String> {
    let mut out: Vec<String> = resources.keys().filter(|k| !plain(k)).cloned().collect();
    if gpu > 0.0 {
        out.push("GPU".into());
    }
    out
}

/// What a replay changes of the recorded job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The recorded job on the recorded shape.
    SameShape,
    /// Calls' held time changed (`--fix`) on the recorded shape.
    Fix,
    /// More or fewer CPUs or nodes.
    Shape,
    /// Both.
    ShapeAndFix,
}

impl Change {
    pub fn classify(recorded: &Shape, cfg: &Config, fixes: usize) -> Change {
        let same = config_shape(cfg).node_cpus == recorded.node_cpus;
        match (same, fixes > 0) {
            (true, false) => Change::SameShape,
            (true, true) => Change::Fix,
            (false, false) => Change::Shape,
            (false, true) => Change::ShapeAndFix,
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            Change::SameShape => "the recorded job on the recorded shape",
            Change::Fix => "a call's held time changed (--fix) on the recorded shape",
            Change::Shape => "more or fewer CPUs or nodes than recorded",
            Change::ShapeAndFix => "a shape change and a --fix together",
        }
    }
}

/// The model's error on real Ray for one kind of change: (model − Ray) / Ray.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Band {
    pub low: f64,
    pub high: f64,
    /// Where it was measured.
    pub source: &'static str,
}

const SAME_SHAPE: Band = Band {
    low: -0.022,
    high: 0.013,
    source: "docs/observe.md, \"Replay on another shape\": the seed job replayed on its recorded 2-CPU node, \
             six runs on two VMs, 2026-11-27 to 11-30 (-2.2 … +1.3 %); docs/fidelity.md, \"What-ifs on a \
             recorded job\": three programs on their recorded 2-CPU head, ten series on two VMs (-2.2 … +1.2 %)",
};
const FIX: Band = Band {
    low: -0.070,
    high: -0.008,
    source: "docs/observe.md, \"Replay on another shape\": the seed job with its flagged sleep removed against \
             real runs of the changed program, 2026-11-27 to 11-30",
};
/// The range of the errors in `scripts/ray-whatif/runs/whatif.json` against each of
/// Ray's runs, not only their median (a user's job runs once: where one run of Ray lands
/// is the claim), rounded out to 0.1 % (`tests/fidelity.rs` holds them to the record).
const SHAPE: Band = Band {
    low: -0.166,
    high: 0.138,
    source: "docs/fidelity.md, \"What-ifs on a recorded job\" (scripts/ray-whatif/runs/whatif.json): three \
             programs recorded on a 2-CPU head, predicted on 1 and 6 CPUs and with a second node on the same \
             machine, against each of Ray's runs there (ten series: three and five runs a shape on a quiet \
             2-core Intel Xeon VM, 2026-12-02; six of three on a 2-core AMD EPYC VM, 2026-12-04 to 12-07, \
             the last five with the bodies' CPU read from the workers; the last three replayed with Ray's \
             worker pool; two of three on the Intel Xeon VM, 2026-12-07, with all of these)",
};

impl Change {
    /// The band measured for this kind of change. Two kinds at once were never measured
    /// together: their bands are added.
    pub fn band(self) -> Band {
        match self {
            Change::SameShape => SAME_SHAPE,
            Change::Fix => FIX,
            Change::Shape => SHAPE,
            Change::ShapeAndFix => Band {
                low: SHAPE.low + FIX.low,
                high: SHAPE.high + FIX.high,
                source: "the shape change's and the fix's bands added (never measured together; docs/observe.md)",
            },
        }
    }
}

/// A predicted makespan with its band.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    pub makespan: f64,
    pub change: Change,
    pub error_low: f64,
    pub error_high: f64,
    /// Ray's makespan, were the model off by as much as the band says.
    pub ray_low: f64,
    pub ray_high: f64,
    pub band_source: &'static str,
}

impl Prediction {
    pub fn new(makespan: f64, change: Change) -> Prediction {
        let band = change.band();
        Prediction {
            makespan,
            change,
            error_low: band.low,
            error_high: band.high,
            ray_low: makespan / (1.0 + band.high),
            ray_high: makespan / (1.0 + band.low),
            band_source: band.source,
        }
    }

    pub fn line(&self) -> String {
        format!(
            "predicted makespan {:.3} s ({}): the model was {:+.1} … {:+.1} % off Ray there, so Ray's would be \
             {:.3}–{:.3} s [{}]",
            self.makespan,
            self.change.words(),
            self.error_low * 100.0,
            self.error_high * 100.0,
            self.ray_low,
            self.ray_high,
            self.band_source
        )
    }
}

/// The largest shape change measured against Ray: 2 to 6 CPUs.
const MEASURED_RATIO: f64 = 3.0;
/// A change past this many times (or this share of) the recorded CPUs or nodes is warned.
const FAR_RATIO: f64 = 4.0;

/// Each way `cfg` is far past what was measured for a replay of a job recorded on
/// `recorded`, one line each. `start_measured`: whether the run's worker start is this
/// cluster's (read from the trace, a file or the config) rather than the reference
/// machine's.
pub fn warnings(recorded: &Shape, cfg: &Config, start_measured: bool) -> Vec<String> {
    let now = config_shape(cfg);
    let mut out = Vec::new();
    // A node of more CPUs than any recorded starts task workers the recording never
    // started: on a loaded 2-core VM Ray's starts took 1.8 to 4 s where the reference
    // machine's is 0.47 s, and a 2-CPU recording's replay on 6 CPUs came out 36 % short.
    let largest_recorded = recorded.node_cpus.first().copied().unwrap_or(0.0);
    if !start_measured && now.node_cpus.first().is_some_and(|c| *c > largest_recorded) {
        out.push(format!(
            "nodes of {} CPUs start task workers the recording (nodes of at most {largest_recorded}) never started, \
             at the reference machine's worker start: the trace shows no start of this cluster's (record a job \
             that starts workers, or set scheduler.worker_start_cpu); where starts are slower, Ray's makespan is \
             longer",
            now.node_cpus[0]
        ));
    }
    let far = |ratio: f64| !(1.0 / FAR_RATIO..=FAR_RATIO).contains(&ratio);
    if recorded.cpus() > 0.0 && far(now.cpus() / recorded.cpus()) {
        out.push(format!(
            "{:.3}× the recorded CPUs ({} against {}): far past the largest change measured against Ray ({}×); \
             read the prediction as a guess",
            now.cpus() / recorded.cpus(),
            now.cpus(),
            recorded.cpus(),
            MEASURED_RATIO
        ));
    }
    let (n_now, n_rec) = (now.node_cpus.len() as f64, recorded.node_cpus.len().max(1) as f64);
    if far(n_now / n_rec) {
        out.push(format!(
            "{n_now} nodes where the job was recorded on {n_rec}: far past the nodes measured; the GCS's own work, \
             which grows with the nodes, is not charged"
        ));
    }
    let largest = recorded.node_cpus.first().copied().unwrap_or(0.0);
    if let Some(big) = now.node_cpus.first().filter(|c| largest > 0.0 && **c > largest * FAR_RATIO) {
        out.push(format!(
            "nodes of {big} CPUs where the recorded calls ran on nodes of at most {largest}: no call was recorded \
             on a node like them"
        ));
    }
    let new: Vec<&String> = now.resource_kinds.difference(&recorded.resource_kinds).collect();
    if !new.is_empty() {
        out.push(format!(
            "node types offering {} that no node of the recording had: no call was recorded on such a node, and \
             no cost of one was measured",
            new.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    out
}

/// The recorded calls no node type of `cfg` can ever hold, by function and request
/// (e.g. "4 calls of sleeper ask for {CPU: 1.5}; the largest CPU is 1"): on Ray they
/// would stay infeasible, and the job would never end.
pub fn unplaceable(job: &crate::config::replay::ReplayJob, cfg: &Config) -> Vec<String> {
    let c = &cfg.cluster;
    let head = (c.head.cpu, c.head.gpu, c.head.memory.0 as f64, &c.head.resources);
    let nodes: Vec<_> = std::iter::once(head)
        .chain(c.node_types.iter().map(|t| (t.cpu, t.gpu, t.memory.0 as f64, &t.resources)))
        .collect();
    let has = |n: &(f64, f64, f64, &std::collections::BTreeMap<String, f64>), r: &str| match r {
        "CPU" => n.0,
        "GPU" => n.1,
        "memory" => n.2,
        other => n.3.get(other).copied().unwrap_or(0.0),
    };
    let mut by_call: std::collections::BTreeMap<(String, String), (usize, String)> = Default::default();
    for call in job.calls.iter().skip(1) {
        if nodes.iter().any(|n| call.resources.iter().all(|(r, x)| *x <= has(n, r))) {
            continue;
        }
        let request: Vec<String> = call.resources.iter().map(|(r, x)| format!("{r}: {x}")).collect();
        let short = call
            .resources
            .iter()
            .find(|(r, x)| nodes.iter().all(|n| has(n, r) < *x))
            .map(|(r, _)| {
                let largest = nodes.iter().map(|n| has(n, r)).fold(0.0, f64::max);
                format!("the largest {r} of a node type is {largest}")
            })
            .unwrap_or_else(|| "no node type holds all of it at once".into());
        let e = by_call.entry((call.name.clone(), format!("{{{}}}", request.join(", ")))).or_insert((0, short));
        e.0 += 1;
    }
    by_call
        .into_iter()
        .map(|((name, request), (n, short))| {
            format!("{n} call(s) of {name} ask for {request}, which no node of this cluster holds ({short}): on Ray they would stay infeasible and the job would never end")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(yaml: &str) -> Config {
        crate::config::load_str(yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn two_cpus() -> Shape {
        Shape { node_cpus: vec![2.0], resource_kinds: BTreeSet::new() }
    }

    #[test]
    fn the_recorded_shape_is_the_same_shape_and_more_cpus_a_shape_change() {
        let same = cfg("cluster:\n  head: {cpu: 2}\n");
        assert_eq!(Change::classify(&two_cpus(), &same, 0), Change::SameShape);
        assert_eq!(Change::classify(&two_cpus(), &same, 1), Change::Fix);
        let six = cfg("cluster:\n  head: {cpu: 6}\n");
        assert_eq!(Change::classify(&two_cpus(), &six, 0), Change::Shape);
        assert!(warnings(&two_cpus(), &six, true).is_empty(), "3× is within what was measured");
        let w = warnings(&two_cpus(), &six, false);
        assert!(w.len() == 1 && w[0].contains("never started"), "a start the trace did not show: {w:?}");
    }

    #[test]
    fn a_prediction_carries_rays_range_from_its_band() {
        let p = Prediction::new(8.7, Change::Shape);
        let band = Change::Shape.band();
        // The model was off by band.low … band.high: Ray's makespan 8.7 / (1 + error).
        assert!(
            (p.ray_low - 8.7 / (1.0 + band.high)).abs() < 1e-9 && (p.ray_high - 8.7 / (1.0 + band.low)).abs() < 1e-9,
            "{p:?}"
        );
        let edges = format!("{:+.1} … {:+.1} %", band.low * 100.0, band.high * 100.0);
        assert!(p.line().contains(&edges) && p.line().contains("docs/fidelity.md"), "{}", p.line());
    }

    #[test]
    fn a_hundred_times_the_cpus_or_a_gpu_node_type_is_warned() {
        let big = cfg("cluster:\n  head: {cpu: 200}\n");
        let w = warnings(&two_cpus(), &big, true);
        assert!(w.iter().any(|l| l.starts_with("100.000× the recorded CPUs")), "{w:?}");
        let gpu =
            cfg("cluster:\n  head: {cpu: 2}\n  node_types:\n    - {name: g, cpu: 2, gpu: 1, memory: 8GiB, ip_range: \
             10.1.0.0/16, count: 1}\n");
        let w = warnings(&two_cpus(), &gpu, true);
        assert!(w.iter().any(|l| l.contains("offering GPU")), "{w:?}");
    }
}
