//! Each recorded workload put to the model: the config that stands for what real Ray
//! ran (the same cluster shape and program, every cost at its default but where a timed
//! job stands for a driver Ray had warmed up: [`WARM_DRIVER`]), the figure the
//! model gives for what was measured, and what the model leaves out of it.
//!
//! Owns: the mapping from a suite workload to a model run, and the bound each kind of
//! workload is held to. Must never: read a run's result to build the model's config
//! (only its parameters), or fit anything: a default that came from a run is marked
//! as fitted on it by `runs/fit.json`'s `fitted_on`.

use super::runs::Run;
use crate::config::{self, Config, Override};
use crate::sim;
use serde_json::Value;

/// How far the model may be from real Ray for a kind of workload.
pub fn bound(workload: &str) -> f64 {
    match workload {
        "seed_tree" => 0.005,
        _ => 0.05,
    }
}

/// The model's figure for a run's workload and parameters, or why there is none.
#[derive(Clone, Copy, Debug)]
pub enum Prediction {
    /// Seconds, from a run of the model.
    Model(f64),
    /// The model has no part that does what was measured.
    NotModeled,
}

/// What was measured, in words (the column the report names).
pub fn measured(workload: &str) -> &'static str {
    match workload {
        "noop_tasks" => "submit N no-op tasks, ray.get all",
        "noop_submit" => "the driver's loop of those N .remote() calls, before its ray.get",
        "actor_creation" => "create N actors, one ping each",
        "actor_calls" => "N calls to one warm actor",
        "object_local" => "ray.put of S bytes into a store that keeps every object (median of 21, after one untimed)",
        "object_get" => "ray.get of those S bytes right after each put, in the same process (median of 21)",
        "object_transfer" => "S bytes read by a task on another node, beyond a small call",
        "task_retries" => "time to the error of a task that always raises",
        "actor_restart" => "an actor's process exits: time to its next answer",
        "node_death" => "a node killed: time until the GCS marks it dead",
        "placement_group" => "one group of two 1-CPU bundles, to ready",
        "spillback" => "2C 100 ms tasks, head of C CPUs beside a worker of C",
        "seed_tree" => "the seed's actor tree (sleeps ×0.01), root create to return",
        _ => "",
    }
}

/// The report's rows a run gives figures to: its workload's, for a put run the
/// `ray.get` it timed after each put too (`object_get`), and for a no-op run its
/// submit loop (`noop_submit`).
pub fn row_workloads(run: &Run) -> Vec<String> {
    match run.workload.as_str() {
        "object_local" => vec!["object_local".into(), "object_get".into()],
        "noop_tasks" => vec!["noop_tasks".into(), "noop_submit".into()],
        other => vec![other.into()],
    }
}

/// The figure of a run's result that the model is compared on in `workload`'s row
/// (one of [`row_workloads`]).
pub fn real_figure(workload: &str, run: &Run) -> Option<f64> {
    match workload {
        "object_local" => run.figure("put_seconds"),
        "object_get" => run.figure("get_seconds"),
        "noop_submit" => run.figure("submit_seconds"),
        "object_transfer" => run.figure("transfer_seconds"),
        "placement_group" => run.figure("seconds_per_group"),
        _ => run.figure("seconds"),
    }
}

/// The smallest figure a run can tell from nothing (seconds), where its figure is a
/// difference of two measured medians: twice the standard error of that difference
/// (each median's from its samples' spread, σ ≈ IQR / 1.349, SE ≈ 1.2533 σ / √n).
/// None where the figure is measured directly.
pub fn resolution(run: &Run) -> Option<f64> {
    let samples = |key: &str| -> Option<Vec<f64>> {
        let mut v: Vec<f64> =
            run.result.get("samples")?.get(key)?.as_array()?.iter().filter_map(Value::as_f64).collect();
        v.sort_by(f64::total_cmp);
        (v.len() >= 4).then_some(v)
    };
    let median_se = |v: &[f64]| {
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        1.2533 * (q(0.75) - q(0.25)) / 1.349 / (v.len() as f64).sqrt()
    };
    match run.workload.as_str() {
        "object_transfer" => {
            let (moved, small) = (samples("call")?, samples("small_call")?);
            Some(2.0 * (median_se(&moved).powi(2) + median_se(&small).powi(2)).sqrt())
        }
        _ => None,
    }
}

/// What the model leaves out of a kind of workload, in one line.
pub fn leaves_out(workload: &str) -> &'static str {
    match workload {
        "noop_tasks" => {
            "the driver's `.remote()` loop is its main thread's (`scheduler.call_submit_cost`, after a one-time \
             `scheduler.first_submit_cost`); each task's push and reply are its io thread's \
             (`scheduler.owner_push_cost`, one thread per owner, then `scheduler.task_push_latency`), a worker's \
             part is `scheduler.call_start_cost` and `scheduler.task_worker_cost` before the body and \
             `scheduler.task_reply_cost` after its reply (the owner does not wait for that, the lease's next task \
             does), the owner's side held at the share of the workers' CPU that Ray's driver burned \
             (cpu_by_process.py: 0.43-0.53 ms a task against 0.72-0.89, the raylet's 0.01-0.02); Ray's per-task \
             cost rises a little with the run (at 1 CPU 0.780 ms a task at 10,000, 0.800 at 100,000), not by its \
             driver's garbage collector (batch_growth.py: warm batches alike with it on and off) nor by the tasks \
             its cluster ran before (session_growth.py: twelve batches of 10,000 in turn on one cluster, no trend, \
             task events on or off) or by how many a driver holds outstanding (outstanding.py: 30,000 or 50,000 at \
             once cost what windows of 1,000 did), where the model's is one figure; at 4 CPUs on 2 cores, while \
             the two workers beyond the prestarted two start, Ray's prestarted ones began their first task \
             55-103 ms in and sat idle 490-800 ms after it (the started two 270-490 ms after theirs, when no start \
             ran, where the model's first call is 90.8 ms of work; lease_traces.py on the AMD EPYC VM the \
             calibration ran on before): the machine's cores shared among everything runnable, where the model's \
             cores serve one piece of work at a time, first come first served, but for the driver's loop and the \
             starts, which are time-sliced: its starts hold both cores for their 0.47 s and the pushes and the \
             first calls' work (`scheduler.worker_first_call_latency`) wait for them; Linux's priorities: Ray runs \
             a worker (task worker or actor) at nice 15 once it is up (`RAY_worker_niceness`) and everything else \
             at nice 0, a starting worker included, so the driver, the raylet and the starts take the cores ahead \
             of the task workers (first_call.py: a worker's first-call work, 79-135 ms of its CPU, took 82-169 ms \
             at 1 and 2 CPUs and up to 877 ms beside two starts), where the model's cores have no priority by default \
             (`scheduler.worker_niceness: 15` gives them Ray's; its costs are not fitted for it: BENCHMARKS.md, \
             \"Two priorities on a node's cores\"); and a raylet starting workers for a backlog starts one more than \
             its CPUs need, last, which runs no call (spare_worker.py: 5 task workers at 4 CPUs, 7 at 6, in 9 runs \
             of 9), where the model starts as many as its leases need: its pool can follow Ray's rules \
             (`scheduler.worker_prestart: true`, worker_pool_log.py), but its start then takes a core from the \
             calls' work for its 0.47 s, and 1,000 calls at 4 CPUs end 0.24 s later, where Ray's run pays little \
             for its spare (docs/benchmarks-history.md, \"Ray's worker pool, read from its own log\")"
        }
        "noop_submit" => {
            "the loop is `scheduler.call_submit_cost` a call after `scheduler.first_submit_cost` once, both \
             measured on the 1-CPU runs (first_submit.py: the driver's first `.remote()` took 78-92 ms and \
             returned before its task ran; another function's first took 2.5-3.7 ms); the model's loop hands its \
             calls over a thousand at a time, each thousand's work placed before the raylet's worker starts for \
             them; the loop is time-sliced with the starts (at 4 CPUs Ray's loop shares the 2 cores with two \
             starts: loop_share.py gave its thread 0.52-0.60 of a core over 10,000 calls) and loses \
             `scheduler.driver_slowdown_per_busy_worker` of a core to each busy task worker (loop_wait.py: over \
             100,000 calls Ray's loop was on a CPU 0.925, 0.857 and 0.775 of its time at 1, 2 and 4 CPUs and \
             waited runnable the rest), counting from a thousand's start the idle workers its calls lease (Ray's \
             first task ran 7-8 ms after the first `.remote()` returned), not the ones they start; at 4 CPUs \
             Ray's two starts begin after the first call returns and do not slow a 1,000-call loop \
             (loop_starts.py: past its first 100 calls it went at the 2-CPU pace), as the model's first \
             thousand, placed ahead of them, is not; a 1,000-call loop is mostly the \
             first call's one-time cost, and Ray's spread over it is the widest (its range); on the AMD EPYC VM the calibration ran on before, the \
             2-CPU loops lost less of a core (its 10,000-call loop was 8 % faster than its 1-CPU one, this VM's \
             10 % slower), which the share does not follow"
        }
        "actor_creation" => {
            "a start is fixed CPU work stretched by an idle share per live process, counted from its reservation, \
             and fitted to starts that share 2 cores with Ray's own processes: a lone actor started on a quiet \
             node answered its first call 0.36-0.45 s after its creation in four of call_costs.py's five samples \
             (the fifth 0.09 s; 0.48-0.53 s on the AMD EPYC VM the calibration ran on before, lease_traces.py), where the model's start alone is 0.47 s of \
             CPU; memory pressure of hundreds of processes; which looks of the \
             raylet see progress: default actors wait for a CPU, so from the second look in a row that sees \
             leases waiting and no worker progressing, every 10 s (`scheduler.debug_dump_period`), each \
             process on the node collects garbage (`scheduler.worker_gc_cpu`); Ray's looks sometimes see a \
             worker between its registration and its creation's end and skip (creation_window.py: that span \
             was 135 ms at the median and open 21-48 % of each 10 s): 200 default actors got 6 rounds in 154 \
             s, to 62-194 processes, and on another day 3 and 4 in 111-112 s (gc_rounds.py, \
             creation_window.py; `num_cpus=0` ones: none), where the model's creations end as they begin, \
             so its looks take that median span after a creation's run begins \
             (`scheduler.actor_creation_window`), not the span's growth with the processes up (a median of \
             56-64 ms in the first 20 s, 430-590 ms after 90 s), and it runs 7 rounds, at 20, 30, 40 and \
             70-100 s (to 75-194 processes), `worker_start_cpu` and `idle_worker_cpu` refitted with them; \
             so Ray's 200 default \
             actors took 95-141 s over six runs on two days, one of them as fast as the `num_cpus=0` ones, \
             where the model gives one figure (suite.py records each run's rounds from 2026-11-30 on)"
        }
        "actor_calls" => {
            "why a batch's time spreads: Ray's 1,000 sync calls took 145-206 ms in three quiet runs, where each of \
             the model's calls costs the same; an async actor's calls start one at a time on its event loop \
             (`scheduler.async_call_cost` with `call_start_cost`), one figure a call, where Ray's spreads: a \
             fresh cluster's first 1,000 async calls took 226-346 ms over six runs on two days, and batches of \
             1,000 in a row on one actor 256-509 ms (async_history.py), and on a third day 316-436 ms over 1,000 \
             and 330-374 µs a call over 10,000; neither the batch's size nor `max_concurrency` changed the cost a \
             call (async_scale.py), nor did task events, sent once a second after a short batch ends \
             (async_events.py: with them off 1,000 calls took 206-316 ms and 10,000 286-391 µs a call)"
        }
        "object_local" => {
            "how the copy's rate depends on the machine: a `bytes` value up to 1 MiB \
             (`object_store.put_parallel_threshold`, Ray's `kMemcopyDefaultThreshold`) is copied by one \
             `memcpy` at `object_store.put_bandwidth`, a bigger one by `parallel_memcopy`'s 6 threads, started \
             for that put (`put_parallel_start`, measured by put_threshold.py as the step across the \
             threshold), at `put_parallel_bandwidth`, each after `put_latency`; the threads' rate was \
             measured on 2 cores only, and the model does not scale it with a node's cores; bytes into pages \
             the store held before move at `object_store.put_reused_bandwidth` (put_release.py's 11.2 GB/s, \
             on the AMD EPYC VM the calibration ran on before); a put waiting on the release of the object \
             dropped just before it (put_release.py); on a fresh Intel Xeon VM of the same size \
             (runs/first-look/), 1 MB and 10 MB puts took 3.7 and 5.7 times these (4.4-4.5 ms, 27.6-27.8 \
             ms), where first touches of that VM's memory cost 0.6-2.5 ms a MiB"
        }
        "object_get" => {
            "a copy's rate that changes with its size below 32 MiB: the model's get is \
             `object_store.get_latency` plus the size at `object_store.get_bandwidth`, or at \
             `get_fresh_bandwidth` above `get_fresh_threshold` (glibc's largest mmap threshold, 32 MiB: a new \
             `bytes` that big lands in freshly mapped pages), fitted on 1 KB, 1 MB and 100 MB; Ray's 1 MB and \
             10 MB gets cost 111 and 108 µs a MB beyond its 1 KB one, where on the AMD EPYC VM the calibration \
             ran on before they cost 60 and 95, which one rate did not follow (CPython's copy of an mmap'd buffer \
             alone, copy_probe.py: 37-78 µs a MB at 1 MB, 74-88 at 10 MB, 604-770 at 34 MiB); a get of an object \
             on another node pulls it first, as a task's arguments (`object_transfer`), with no suite figure of \
             its own (get_pull.py: one object 2.7 ms at 256 KiB and 8.1 ms at 1 MB beyond a local get, 100 \
             together 1.1 and 2.1 ms each, where the model's pull is 0.9 and 1.9 ms an object); the suite's values \
             are `bytes`, and a numpy array comes back as a view of the store's memory, no copy (`value_type: \
             numpy`, at `object_store.zero_copy_get_latency`: numpy_get.py, 0.14-0.39 ms a get from 1 KB to 100 \
             MB, no suite run)"
        }
        "object_transfer" => {
            "the object manager's 5 MiB chunks and their pipelining: a transfer is `object_store.transfer_latency` \
             plus its size at the lower of `object_store.transfer_bandwidth` and `cluster.network_bandwidth`; an \
             object up to `object_store.inline_threshold` travels inside the call"
        }
        "task_retries" => {
            "the raised error costs the worker `scheduler.task_error_cost` of CPU whatever its traceback; a retry \
             waits for its owner's next heartbeat tick (`scheduler.core_worker_internal_heartbeat`), as Ray's does; \
             Ray's one driver warmed up and then timed, so the model's timed job, a second driver, is taken as set \
             up already (`scheduler.first_submit_cost` 0)"
        }
        "actor_restart" => {
            "the exit being noticed and the call's delivery: the model's call fails at the kill, and its retry \
             waits for the owner's next heartbeat tick while the actor restarts (on an idle worker if its node has \
             one, else a new start)"
        }
        "node_death" => {
            "a check's own round trip: a killed raylet fails each health check at once \
             (`cluster.health_check`); its objects and actors stay until the GCS marks it dead"
        }
        "placement_group" => {
            "the commit is `scheduler.placement_group_commit_latency` and `placement_group_node_latency` more for \
             each node beyond the first, at every number of nodes, where on this 2-core machine Ray's third and \
             fourth node each added about 1 ms (pg_nodes.py: 3.54 ms on one node, 3.79 on two, 4.85 on three, \
             5.80 on four), when its raylets outnumbered the cores; a removed group's CPUs come back at once, where Ray returns them asynchronously (the suite \
             waits for them before the next group)"
        }
        "spillback" => {
            "which node runs the last tasks: both keep their leases for 500 ms \
             (`scheduler.worker_lease_timeout`), and the head hears of the worker node's CPUs freed at a lease's \
             end at that node's next report (`scheduler.resource_report_period`); in lease_traces.py's runs (on \
             the AMD EPYC VM the calibration ran on before) each \
             of the worker node's workers then sat idle 92-95 ms once, and the head ran 20-22 of the 40 tasks (the \
             suite's runs: 21-22, 11 waves of 100 ms), where the model's workers there sit idle once for what is \
             left of a report period and it splits the tasks 20 and 20; as for task_retries, the timed job's \
             driver is taken as set up already (`scheduler.first_submit_cost` 0)"
        }
        "seed_tree" => {
            "nothing beyond the per-call costs above: the trees are dominated by their sleeps; each actor that \
             creates children sets up its submitting first, as a driver does (`scheduler.first_submit_cost`: \
             worker_first_submit.py, an actor's first creation 82-89 ms against its driver's first call \
             67-98 ms)"
        }
        _ => "",
    }
}

/// Why the model gives no figure for a recorded run: a parameter the run lacks, a
/// config the model refuses, or a model run that did not do what the figure needs.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    #[error("{file}: parameter `{key}` must be a count")]
    NotACount { file: String, key: &'static str },
    #[error("{file}: parameter `{key}` must be a number")]
    NotANumber { file: String, key: &'static str },
    #[error("{file}: parameter `{key}` must be given")]
    Missing { file: String, key: &'static str },
    #[error("{0}: no tree")]
    NoTree(String),
    #[error("{file}: unknown workload `{workload}`")]
    UnknownWorkload { file: String, workload: String },
    /// The model's config for the run (built here, with `--set`'s overrides).
    #[error(transparent)]
    Config(#[from] config::ConfigErrors),
    #[error(transparent)]
    Simulate(#[from] sim::SimulateError),
    #[error("the model ran no job")]
    NoJob,
    /// The job's status.
    #[error("the model's job did not finish ({0})")]
    Unfinished(String),
    #[error("the model's driver never waited on its calls")]
    DriverNeverWaited,
    #[error("the model has no worker node")]
    NoWorker,
    #[error("the model's worker node was not killed and marked dead")]
    WorkerNotKilled,
    #[error("the model created {created} of {groups} groups")]
    TooFewGroups { created: u64, groups: u64 },
}

fn int(run: &Run, key: &'static str) -> Result<u64, PredictError> {
    run.params.get(key).and_then(Value::as_u64).ok_or_else(|| PredictError::NotACount { file: run.file.clone(), key })
}

fn num(run: &Run, key: &'static str) -> Result<f64, PredictError> {
    run.params.get(key).and_then(Value::as_f64).ok_or_else(|| PredictError::NotANumber { file: run.file.clone(), key })
}

fn word(run: &Run, key: &'static str) -> Result<String, PredictError> {
    match run.params.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Err(PredictError::Missing { file: run.file.clone(), key }),
    }
}

/// A job of no-op tasks that starts the task workers a measured job then finds idle.
const WARM_UP: &str = "{kind: fan_out, name: warm-up, tasks: 8, task_duration: 0s, strategy: {kind: SPREAD}}";
/// After [`WARM_UP`], in the scheduler section: Ray's run warmed up and measured in one
/// driver, which had set up its submitting by then (`first_submit_cost`); each of the
/// model's jobs is a driver of its own.
const WARM_DRIVER: &str = "first_submit_cost: 0s";

/// The cluster Ray ran: a head of `cpus` logical CPUs plus `workers` more nodes like it,
/// all on the one machine of the run. Ray's nodes there share its cores; the model's
/// nodes cannot share, so each gets an equal part of them (at least one).
fn cluster(run: &Run, cpus: f64, workers: u32) -> String {
    let cores = (run.cores as u32 / (workers + 1)).max(1);
    let mut yaml = format!("cluster:\n  host_node: false\n  head: {{cpu: {cpus}, cores: {cores}, memory: 16GiB}}\n");
    if workers > 0 {
        yaml.push_str(&format!(
            "  node_types:\n    - {{name: worker, count: {workers}, cpu: {cpus}, cores: {cores}, memory: 16GiB, \
             ip_range: 10.0.1.0/24}}\n"
        ));
    }
    yaml
}

fn load(yaml: &str, run: &Run, overrides: &[Override]) -> Result<Config, PredictError> {
    Ok(config::load_str_with(yaml, &format!("model of {}", run.file), overrides)?)
}

/// The config of Ray's cluster for a figure the engine's cost functions give directly
/// (no run: its one workload is a placeholder).
fn costs_only(run: &Run, cpus: f64, workers: u32, overrides: &[Override]) -> Result<Config, PredictError> {
    load(&format!("{}workloads:\n  - {{kind: fan_out, tasks: 1}}\n", cluster(run, cpus, workers)), run, overrides)
}

/// The last job's makespan, in seconds (the one measured; an earlier one warms workers up).
fn makespan(cfg: Config) -> Result<f64, PredictError> {
    let (_, report) = sim::simulate(cfg, None, None, |_| {})?;
    last_makespan(&report)
}

fn last_makespan(report: &sim::Report) -> Result<f64, PredictError> {
    let job = report.jobs.last().ok_or(PredictError::NoJob)?;
    job.makespan.ok_or_else(|| PredictError::Unfinished(job.status.to_string()))
}

/// A no-op run's two figures from one run of the model: the job's makespan
/// (`noop_tasks`) and how long its driver took to submit the calls (`noop_submit`), from
/// its start to its first `ray.get` (Flow Insight's record of the driver blocking).
fn no_op_figures(run: &Run, overrides: &[Override]) -> Result<(f64, f64), PredictError> {
    let yaml = format!(
        "{}workloads:\n  - {{kind: fan_out, tasks: {}, task_duration: 0s}}\n",
        cluster(run, num(run, "cpus")?, 0),
        int(run, "tasks")?
    );
    let (engine, report) = sim::simulate(load(&yaml, run, overrides)?, None, None, |_| {})?;
    let recorded = engine.flow.publish();
    let job = recorded.jobs.values().last().ok_or(PredictError::NoJob)?;
    let blocked = job.records.iter().find_map(|r| match *r {
        crate::snapshot::flow::Rec::Block { span, t } if span == job.driver => Some(t),
        _ => None,
    });
    let submit = blocked.map(|t| t.saturating_sub(job.start_us) as f64 / 1e6).ok_or(PredictError::DriverNeverWaited)?;
    Ok((last_makespan(&report)?, submit))
}

/// The model's figure for each row `run` gives ([`row_workloads`]), the model run once
/// for a run whose rows come from the same run of it (a no-op run's).
pub fn predict_rows(run: &Run, overrides: &[Override]) -> Result<Vec<(String, Prediction)>, PredictError> {
    if run.workload == "noop_tasks" {
        let (whole, submit) = no_op_figures(run, overrides)?;
        return Ok(vec![
            ("noop_tasks".into(), Prediction::Model(whole)),
            ("noop_submit".into(), Prediction::Model(submit)),
        ]);
    }
    row_workloads(run).into_iter().map(|w| predict(&w, run, overrides).map(|p| (w, p))).collect()
}

/// The model's figure for what `run` measured in `workload`'s row (one of
/// [`row_workloads`]), with `overrides` applied to its config (as `--set` does: how
/// `scripts/ray-calibration/fit.py` tries cost values).
pub fn predict(workload: &str, run: &Run, overrides: &[Override]) -> Result<Prediction, PredictError> {
    if workload == "object_get" {
        // What the engine charges a getter for one object in its node's store.
        let cfg = costs_only(run, 2.0, 0, overrides)?;
        return Ok(Prediction::Model(sim::get_micros(&cfg, int(run, "size")?) / 1e6));
    }
    if workload == "noop_submit" {
        return no_op_figures(run, overrides).map(|(_, submit)| Prediction::Model(submit));
    }
    let p = |yaml: String| -> Result<Prediction, PredictError> {
        makespan(load(&yaml, run, overrides)?).map(Prediction::Model)
    };
    match run.workload.as_str() {
        "noop_tasks" => no_op_figures(run, overrides).map(|(whole, _)| Prediction::Model(whole)),
        "actor_creation" => {
            let cpus = match word(run, "num_cpus")?.as_str() {
                "default" => String::new(),
                n => format!(", num_cpus: {n}"),
            };
            p(format!(
                "{}workloads:\n  - {{kind: actor_pool, actors: {}, calls_per_actor: 1, call_duration: 0s{cpus}}}\n",
                cluster(run, 4.0, 0),
                int(run, "actors")?
            ))
        }
        "actor_calls" => {
            // Ray timed the calls to a warm actor (one call answered first): the model's
            // makespan with N calls after the warm-up less that with none.
            let concurrency = if word(run, "mode")? == "async" { 1000 } else { 1 };
            let job = |calls: u64| -> Result<f64, PredictError> {
                let yaml = format!(
                    "{}workloads:\n  - {{kind: actor_pool, actors: 1, warm_up: true, calls_per_actor: {calls}, \
                     call_duration: 0s, max_concurrency: {concurrency}}}\n",
                    cluster(run, 4.0, 0)
                );
                makespan(load(&yaml, run, overrides)?)
            };
            Ok(Prediction::Model(job(int(run, "calls")?)? - job(0)?))
        }
        // Ray's run warmed its workers up with a few no-op tasks first: so does the model's.
        // Ray's one driver did both, so its measured calls paid no first submit: the
        // model's measured job is a second driver, which would.
        "task_retries" => p(format!(
            "{}workloads:\n  - {WARM_UP}\n  - {{kind: fan_out, start: 10s, tasks: 1, task_duration: 0s, \
             max_retries: {}, retry_exceptions: true}}\n\
             faults:\n  - {{kind: task_failures, at: 10s, probability: 1.0, application_error: true}}\n\
             scheduler: {{core_worker_internal_heartbeat: {}ms, {WARM_DRIVER}}}\n",
            cluster(run, 2.0, 0),
            int(run, "retries")?,
            int(run, "heartbeat_ms")?
        )),
        // A worker node killed `kill_after_ms` after it joined, while a task keeps the
        // head busy: the time from the kill until the GCS marks it dead.
        "node_death" => {
            let yaml = format!(
                "{}  health_check: {{period: {}ms, failure_threshold: {}}}\n\
                 workloads:\n  - {{kind: fan_out, tasks: 1, task_duration: 60s, strategy: {{kind: NODE_AFFINITY, \
                 node: 10.0.0.1}}}}\n\
                 faults:\n  - {{kind: kill_node, at: {}ms, node_type: worker}}\n",
                cluster(run, 1.0, 1),
                int(run, "period_ms")?,
                int(run, "threshold")?,
                int(run, "kill_after_ms")?
            );
            let (engine, _) = sim::simulate(load(&yaml, run, overrides)?, None, None, |_| {})?;
            let worker = engine.model.nodes().iter().find(|n| !n.is_head).ok_or(PredictError::NoWorker)?;
            match (worker.crashed_at, worker.died_at) {
                (Some(crashed), Some(died)) => Ok(Prediction::Model((died - crashed) as f64 / 1e6)),
                _ => Err(PredictError::WorkerNotKilled),
            }
        }
        "spillback" => p(format!(
            "{}workloads:\n  - {WARM_UP}\n  - {{kind: fan_out, start: 10s, tasks: {}, task_duration: {}ms}}\n\
             scheduler: {{{WARM_DRIVER}}}\n",
            cluster(run, num(run, "cpus")?, 1),
            int(run, "tasks")?,
            num(run, "sleep")? * 1000.0
        )),
        "object_transfer" => {
            // What the engine charges a task's fetch of one object from another node.
            let cfg = costs_only(run, 1.0, 1, overrides)?;
            // An object up to `inline_threshold` travels inside the call (the engine fetches
            // nothing for it).
            let size = int(run, "size")?;
            if size <= cfg.object_store.inline_threshold.0 {
                return Ok(Prediction::Model(0.0));
            }
            Ok(Prediction::Model(sim::transfer_micros(&cfg, size) / 1e6))
        }
        // Groups of two 1-CPU bundles over two nodes of 2 CPUs, created one at a time:
        // the model's mean time from creation to CREATED.
        "placement_group" => {
            let groups = int(run, "groups")?;
            let yaml = format!(
                "{}workloads:\n  - {{kind: training, workers: 2, bundle_cpu: 1, bundle_gpu: 0, placement_strategy: {}, steps: 1, \
                 step_duration: 0s}}\n",
                cluster(run, 2.0, 1),
                word(run, "strategy")?
            );
            let mut cfg = load(&yaml, run, overrides)?;
            let one = cfg.workloads[0].clone();
            cfg.workloads = (0..groups)
                .map(|i| {
                    let mut w = one.clone();
                    if let config::WorkloadConfig::Training(t) = &mut w {
                        t.start = config::DurationSpec::secs(30.0 * i as f64);
                    }
                    w
                })
                .collect();
            let (engine, _) = sim::simulate(cfg, None, None, |_| {})?;
            let created = &engine.model.placement_ms[2];
            if created.count < groups {
                return Err(PredictError::TooFewGroups { created: created.count, groups });
            }
            Ok(Prediction::Model(created.sum / created.count as f64 / 1000.0))
        }
        "seed_tree" => {
            let tree = run.params.get("tree").ok_or_else(|| PredictError::NoTree(run.file.clone()))?;
            p(format!(
                "{}workloads:\n  - kind: flow_insight\n    sleep: {}ms\n    bottleneck_sleep: {}ms\n    tree: {tree}\n",
                cluster(run, num(run, "cpus")?, 0),
                num(run, "sleep_s")? * 1000.0,
                num(run, "bottleneck_sleep_s")? * 1000.0,
            ))
        }
        // Ray's figure runs from `die.remote()` to the answer of a ping sent right after
        // it, which failed with the process and was retried: the model kills the actor
        // (at a heartbeat tick, as Ray's later samples start just after one) while a
        // call of known length runs, and the figure is the job's end less that call and
        // the kill's time.
        "actor_restart" => {
            const CALL_S: f64 = 2.0;
            const KILL_S: f64 = 1.0;
            let total = makespan(load(
                &format!(
                    "{}workloads:\n  - {{kind: actor_pool, actors: 1, calls_per_actor: 1, call_duration: {CALL_S}s, \
                     max_restarts: -1, max_task_retries: -1, class: Phoenix}}\n\
                     faults:\n  - {{kind: kill_actor, at: {KILL_S}s, class: Phoenix}}\n",
                    cluster(run, 2.0, 0)
                ),
                run,
                overrides,
            )?)?;
            Ok(Prediction::Model(total - CALL_S - KILL_S))
        }
        // What the engine charges the writer of one object (`ray.put`, or a return over
        // the inline threshold) into fresh pages: the store keeps every object, as Ray's
        // run's did.
        "object_local" => {
            let cfg = costs_only(run, 2.0, 0, overrides)?;
            let size = int(run, "size")?;
            Ok(Prediction::Model(sim::put_micros(&cfg, size, size) / 1e6))
        }
        other => Err(PredictError::UnknownWorkload { file: run.file.clone(), workload: other.to_string() }),
    }
}
