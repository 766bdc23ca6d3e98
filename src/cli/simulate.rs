//! `rayscope simulate`: run the model as fast as possible and print a report; with
//! `--sweep`, once per value of one setting and a comparison table; with
//! `--openmetrics`, also the cluster's metrics at every scrape instant of virtual time.
//!
//! With `--replay`, a recorded job runs at its trace's own costs (`--costs`, `costs.rs`)
//! and its predicted makespan is printed with the error band of its kind of change
//! (`calibrate::bands`).
//!
//! Owns: the command's flags, the progress bar, and the files it writes (`--events`,
//! `--openmetrics`). Exit statuses: 0 done, 2 bad input (config, an unbounded run), 1
//! anything else (a file that cannot be written).
//! Must never: change the run it reports on: the progress bar and the OpenMetrics
//! writer only look at the engine between events.

use super::costs::{CostsArg, Plan};
use super::process::{disable_transparent_huge_pages, set_purge_delay, PURGE_NEVER};
use anyhow::{Context, Result};
use clap::ValueEnum;
use rayscope::calibrate::bands;
use rayscope::config::{self, Config, Override};
use rayscope::model::VirtualTime;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(super) struct SimulateArgs {
    /// Config file (default: the embedded examples/default.yaml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Simulation seed (overrides sim.seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Stop after this much virtual time, e.g. 30m or 2h (default: when all workloads end).
    #[arg(long, value_parser = parse_duration_arg)]
    until: Option<u64>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    report: ReportFormat,
    /// Write the full event log to this file; `-` writes it to standard output, and the
    /// report to standard error.
    #[arg(long, value_name = "FILE", conflicts_with = "sweep")]
    events: Option<PathBuf>,
    /// Override a config value without editing the file (repeatable), e.g.
    /// `--set cluster.node_types[0].count=400` or `--set 'workloads[0].task_duration={min: 1s, max: 3s}'`.
    /// KEY is a dotted path as config errors write it; VALUE is YAML.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = Override::parse)]
    set: Vec<Override>,
    /// Run once per value of one setting and print a comparison table (makespan per job,
    /// CPU utilization per node type, spillbacks, failures, peak pending tasks) in the
    /// --report format, e.g. `--sweep cluster.node_types[0].count=100,200,400`.
    #[arg(long, value_name = "KEY=V1,V2,...", value_parser = parse_sweep_arg)]
    sweep: Option<SweepArg>,
    /// Never show the progress bar.
    #[arg(long)]
    quiet: bool,
    /// Also write the cluster's metrics at every scrape instant of virtual time to this
    /// file, as OpenMetrics with timestamps, for `promtool tsdb create-blocks-from
    /// openmetrics FILE DIR` (see the README, "A simulated day in Grafana").
    #[arg(long, value_name = "FILE", conflicts_with = "sweep")]
    openmetrics: Option<PathBuf>,
    /// Virtual time between two scrapes written with --openmetrics.
    #[arg(long, value_parser = parse_positive_duration_arg, default_value = "15s", requires = "openmetrics")]
    scrape_interval: u64,
    /// Run a job recorded from a real Ray cluster (`rayscope observe --record DIR`) on
    /// the cluster of --config instead of its workloads: its calls with their recorded
    /// execution, dependencies, resource requests and actors (see docs/observe.md).
    #[arg(long, value_name = "DIR")]
    replay: Option<PathBuf>,
    /// The recorded job to replay, e.g. 01000000 [default: the trace's only job].
    #[arg(long, value_name = "ID", requires = "replay")]
    job: Option<String>,
    /// Change the recorded job before it runs (repeatable): every held stretch of the
    /// calls of NAME (Class.method or a function; on actor ACTOR only, if given) takes at
    /// most DURATION, e.g. `--fix Worker.process@<actor id>=50ms` (a sleep removed).
    #[arg(long = "fix", value_name = "NAME[@ACTOR]=DURATION", requires = "replay", value_parser = rayscope::flow::replay::Fix::parse)]
    fix: Vec<rayscope::flow::replay::Fix>,
    /// Say what a recorded function computes (repeatable): each call of NAME (on actor
    /// ACTOR only, if given) spends the first DURATION of its held time, or PERCENT of
    /// it, as CPU work on its node's cores, so it slows where more runs than the machine
    /// has cores (`cores:`), e.g. `--cpu produce=40ms`, `--cpu Trainer.step=100%`. A
    /// trace recorded beside the workers gives each function's share itself (the report's
    /// `bodies' CPU`); this replaces it, and `--cpu NAME=0%` holds NAME's calls.
    #[arg(long = "cpu", value_name = "NAME[@ACTOR]=DURATION|PERCENT", requires = "replay", value_parser = rayscope::flow::replay::CpuBody::parse)]
    cpu: Vec<rayscope::flow::replay::CpuBody>,
    /// The costs the model runs with, beneath any the config sets itself: `trace` (the
    /// replayed job's own, read from its trace as `rayscope calibrate` reads them; the
    /// default with --replay), `reference` (the shipped defaults, one reference machine's;
    /// the default without), or a costs FILE (`rayscope calibrate --out`, or a fit's
    /// `fit.json`). The report says where each cost came from.
    #[arg(long, value_name = "trace|reference|FILE", value_parser = super::costs::parse)]
    costs: Option<super::costs::CostsArg>,
    /// Unix time (seconds) that virtual time zero maps to in the --openmetrics file
    /// [default: so that the run ends now, browsable as "the last N hours"].
    #[arg(long, value_name = "UNIX_SECONDS", requires = "openmetrics")]
    openmetrics_start: Option<i64>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ReportFormat {
    Text,
    Json,
}

/// The values of `--sweep`, one override each.
#[derive(Clone)]
struct SweepArg(Vec<Override>);

fn parse_sweep_arg(s: &str) -> Result<SweepArg, String> {
    config::overrides::parse_sweep(s).map(SweepArg).map_err(|e| e.to_string())
}

fn parse_duration_arg(s: &str) -> Result<u64, String> {
    config::units::parse_duration(s).map(|d| d.as_micros()).map_err(|e| e.to_string())
}

fn parse_positive_duration_arg(s: &str) -> Result<u64, String> {
    match parse_duration_arg(s)? {
        0 => Err("must be more than zero, e.g. 15s".into()),
        us => Ok(us),
    }
}

/// A replayed job: its calls, and the shape it was recorded on.
struct Replayed {
    job: std::sync::Arc<rayscope::config::replay::ReplayJob>,
    shape: bands::Shape,
}

/// A run whose engine is dropped once its report is made keeps nothing only a server's
/// readers ask for: the ring of finished tasks (the State API's) and Flow Insight's
/// recording (the flow views'). Neither reaches the report, the event log or a scrape,
/// and neither changes the run; at `examples/scale.yaml` they held about 35 MiB
/// (docs/benchmarks-history.md, issue 58). `rayscope flow` and `serve` keep both.
fn batch_only(mut cfg: Config) -> Config {
    cfg.sim.finished_task_capacity = 0;
    cfg.sim.flow_calls_per_job = 0;
    cfg
}

pub(super) fn simulate(args: SimulateArgs) -> Result<ExitCode> {
    set_purge_delay(PURGE_NEVER);
    disable_transparent_huge_pages();
    let (replay, trace_costs) = match &args.replay {
        Some(dir) => match recorded_job(dir, args.job.as_deref(), changes(&args)) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        None => (None, None),
    };
    let bodies = trace_costs.as_ref().map(|t| t.bodies.clone());
    let default_costs = if replay.is_some() { CostsArg::Trace } else { CostsArg::Reference };
    let plan = match Plan::new(args.costs.as_ref().unwrap_or(&default_costs), trace_costs) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    // The costs' account is printed where the costs were chosen: a replay, or --costs.
    let account = replay.is_some() || args.costs.is_some();
    if let Some(sweep) = &args.sweep {
        return sweep_runs(&args, &sweep.0, replay.as_ref(), &plan, account);
    }
    let (mut cfg, sourced, by_config) = match plan.load(|costs| {
        let overrides: Vec<Override> = costs.iter().chain(&args.set).cloned().collect();
        super::load_config(args.config.as_ref(), args.seed, &overrides)
    }) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let mut change = None;
    if let Some(Replayed { job, shape }) = &replay {
        replace_workloads(&mut cfg, job);
        let measured = start_measured(&sourced);
        let mut warnings = bands::warnings(shape, &cfg, measured);
        let unplaceable = bands::unplaceable(job, &cfg);
        eprintln!(
            "replaying {}: {} calls, {} actors; recorded makespan {:.3} s",
            job.source,
            job.calls.len(),
            job.actors,
            job.recorded_makespan_us as f64 / 1e6
        );
        let end_unknown = job.end_unknown();
        let computing = cpu_warning(&args);
        for w in unplaceable.iter().chain(&end_unknown).chain(&computing) {
            eprintln!("warning: {w}");
        }
        warnings.extend(unplaceable);
        warnings.extend(end_unknown);
        warnings.extend(computing);
        change = Some((bands::Change::classify(shape, &cfg, args.fix.len()), warnings));
    }
    let events_to_stdout = args.events.as_deref() == Some(std::path::Path::new("-"));
    let sink: Option<Box<dyn std::io::Write + Send>> = match &args.events {
        Some(_) if events_to_stdout => Some(Box::new(std::io::BufWriter::with_capacity(1 << 20, std::io::stdout()))),
        Some(p) => {
            let f = std::fs::File::create(p).with_context(|| format!("cannot create events file {}", p.display()))?;
            Some(Box::new(std::io::BufWriter::with_capacity(1 << 20, f)))
        }
        None => None,
    };
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let bar = if show_progress {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .expect("static progress template"),
        );
        Some(b)
    } else {
        None
    };
    let openmetrics = match &args.openmetrics {
        Some(path) => Some(open_openmetrics(path, &cfg, &args)?),
        None => None,
    };
    let mut writer = openmetrics.map(|(w, _)| w);
    let mut write_error: Option<std::io::Error> = None;
    let mut write_scrape = |snapshot: &std::sync::Arc<rayscope::snapshot::Snapshot>, at_us: u64| {
        if let (Some(w), None) = (writer.as_mut(), write_error.as_ref()) {
            write_error = w.write_scrape(snapshot, at_us).err();
        }
    };
    let sampler = args
        .openmetrics
        .as_ref()
        .map(|_| rayscope::sim::Sampler { every_us: args.scrape_interval, sample: &mut write_scrape });
    let result = rayscope::sim::simulate_sampled(
        batch_only(cfg),
        args.until.map(VirtualTime),
        sink,
        |e| {
            if let Some(b) = &bar {
                let c = &e.model.counters;
                b.set_message(format!(
                    "virtual {:.0}s · {} events · {} tasks finished · {} in flight",
                    e.now_us() as f64 / 1e6,
                    e.events_processed(),
                    c.tasks_finished,
                    e.model.tasks.len()
                ));
                b.tick();
            }
        },
        sampler,
    );
    let (_, mut report) = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    plan.adjust(&mut report, &by_config);
    let prediction = change.as_ref().and_then(|(kind, warnings)| {
        let makespan = report.jobs.first()?.makespan?;
        Some((bands::Prediction::new(makespan, *kind), warnings.clone()))
    });
    // A replayed job that did not end has no makespan to predict: say so, and why.
    let unended = change.as_ref().filter(|_| prediction.is_none()).map(|(_, warnings)| warnings);
    // The report goes to standard output, unless the event log took it (`--events -`).
    let mut text = String::new();
    match args.report {
        ReportFormat::Json if account => {
            let mut json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("the report is JSON");
            json["costs"] = serde_json::json!(sourced);
            json["costs_origin"] = plan.line().into();
            if let Some(b) = &bodies {
                json["bodies_cpu"] = serde_json::json!({
                    "measured": b.bodies,
                    "not_read": b.why_none,
                    "overridden_by": args.cpu.iter()
                        .map(|c| rayscope::flow::replay::target_text(&c.name, c.actor.as_deref()))
                        .collect::<Vec<_>>(),
                });
            }
            if let Some((p, warnings)) = &prediction {
                json["prediction"] = serde_json::json!(p);
                json["replay_warnings"] = serde_json::json!(warnings);
            }
            if let Some(warnings) = unended {
                json["prediction"] = serde_json::Value::Null;
                json["replay_warnings"] = serde_json::json!(warnings);
            }
            let _ = writeln!(text, "{}", serde_json::to_string_pretty(&json).expect("JSON"));
        }
        ReportFormat::Json => {
            let _ = writeln!(text, "{}", report.to_json());
        }
        ReportFormat::Text => {
            text.push_str(&report.to_text());
            if account {
                text.push_str(&super::costs::text(&sourced));
            }
            for line in bodies.iter().flat_map(|b| b.text()) {
                let _ = writeln!(text, "  {line}");
            }
            if !args.cpu.is_empty() && bodies.is_some() {
                let _ = writeln!(text, "  --cpu replaces the trace's share for the calls it names");
            }
            if let Some((p, warnings)) = &prediction {
                let _ = writeln!(text, "  prediction        {}", p.line());
                for w in warnings {
                    let _ = writeln!(text, "  WARNING: {w}");
                }
            }
            if let Some(warnings) = unended {
                let _ = writeln!(text, "  prediction        none: the replayed job did not end");
                for w in warnings {
                    let _ = writeln!(text, "  WARNING: {w}");
                }
            }
        }
    }
    if events_to_stdout {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if let Some(w) = writer {
        let path = args.openmetrics.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        if let Some(e) = write_error {
            eprintln!("error: writing the OpenMetrics file {path} failed: {e}");
            return Ok(ExitCode::from(1));
        }
        if let Err(e) = w.finish() {
            eprintln!("error: writing the OpenMetrics file {path} failed: {e}");
            return Ok(ExitCode::from(1));
        }
    }
    if let Some(e) = report.events_file_error {
        let to = if events_to_stdout { "standard output" } else { "the events file" };
        eprintln!("error: writing the event log to {to} failed: {e}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The band a prediction is printed with was measured on replays whose calls only held
/// their workers: one with `--cpu` says so.
fn cpu_warning(args: &SimulateArgs) -> Option<String> {
    let names: Vec<String> =
        args.cpu.iter().map(|c| rayscope::flow::replay::target_text(&c.name, c.actor.as_deref())).collect();
    (!names.is_empty()).then(|| {
        format!(
            "--cpu {}: calls that compute on the cores were not in the replays the band was measured on (each \
             call held its worker, docs/observe.md, \"Calls that compute\")",
            names.join(", ")
        )
    })
}

/// What `--fix` and `--cpu` change of the recorded job.
fn changes(args: &SimulateArgs) -> rayscope::flow::replay::Changes<'_> {
    rayscope::flow::replay::Changes { fixes: &args.fix, cpu: &args.cpu, measured: &[] }
}

/// The job `--replay DIR [--job ID] [--fix ...] [--cpu ...]` names, as a workload, with
/// the shape it was recorded on and the costs its trace shows.
fn recorded_job(
    dir: &std::path::Path,
    job: Option<&str>,
    changes: rayscope::flow::replay::Changes,
) -> Result<(Option<Replayed>, Option<rayscope::calibrate::TraceCosts>), String> {
    // One read serves the replay (the snapshot's calls) and the costs (the store's).
    let (snap, store) =
        rayscope::observe::runner::trace_snapshot_and_store(dir, Default::default()).map_err(|e| e.to_string())?;
    let record = match job {
        Some(j) => snap.flow.job(j).cloned().ok_or_else(|| {
            let known: Vec<&str> = snap.flow.jobs.values().map(|j| j.job_hex.as_str()).collect();
            format!("--job {j}: the trace has no such job (jobs: {})", known.join(", "))
        })?,
        None => match snap.flow.jobs.len() {
            1 => snap.flow.jobs.values().next().cloned().expect("one job"),
            0 => return Err(format!("--replay {}: the trace holds no job", dir.display())),
            _ => {
                let known: Vec<&str> = snap.flow.jobs.values().map(|j| j.job_hex.as_str()).collect();
                return Err(format!(
                    "--replay {}: name the job with --job (jobs: {})",
                    dir.display(),
                    known.join(", ")
                ));
            }
        },
    };
    rayscope::observe::flow::check_span(&record).map_err(|e| format!("--replay {}: {e}", dir.display()))?;
    // Each call's resource request, by its span id (the observed task's number).
    let requests: std::collections::BTreeMap<u64, Vec<(String, f64)>> = snap
        .tables
        .as_ref()
        .map(|t| {
            t.tasks.iter().map(|r| (r.id, t.spec_requests.get(r.spec as usize).cloned().unwrap_or_default())).collect()
        })
        .unwrap_or_default();
    let source = dir.display().to_string();
    let costs = rayscope::calibrate::from_store(&store, &record.job_hex, &format!("{source} job {}", record.job_hex));
    let measured: Vec<rayscope::flow::replay::CpuBody> = costs
        .bodies
        .computing()
        .map(|b| rayscope::flow::replay::CpuBody {
            name: b.name.clone(),
            actor: None,
            computes: rayscope::config::replay::Computes::Share(b.share),
        })
        .collect();
    let changes = rayscope::flow::replay::Changes { measured: &measured, ..changes };
    let job = rayscope::flow::replay::replay_job(&record, &source, &requests, changes)
        .map(std::sync::Arc::new)
        .map_err(|e| e.to_string())?;
    let shape = bands::recorded_shape(&store, &costs.job);
    Ok((Some(Replayed { job, shape }), Some(costs)))
}

/// The config's workloads replaced by the recorded job. Its recorded first calls give up
/// the first-call cost the model charges in their place, at this config's value
/// (`ReplayJob::for_first_call_cost`).
fn replace_workloads(cfg: &mut Config, job: &std::sync::Arc<rayscope::config::replay::ReplayJob>) {
    let first_call_us = cfg.scheduler.worker_first_call_latency.as_micros();
    cfg.workloads = vec![rayscope::config::WorkloadConfig::Replay(rayscope::config::replay::ReplayConfig {
        name: "replay".into(),
        job: std::sync::Arc::new(job.for_first_call_cost(first_call_us)),
    })];
}

/// `simulate --sweep`: every config is loaded (and so validated) before the first run.
fn sweep_runs(
    args: &SimulateArgs,
    values: &[Override],
    replay: Option<&Replayed>,
    plan: &Plan,
    account: bool,
) -> Result<ExitCode> {
    let mut configs = Vec::with_capacity(values.len());
    let mut sourced = Vec::new();
    for value in values {
        let loaded = plan.load(|costs| {
            let overrides: Vec<Override> = costs.iter().chain(&args.set).cloned().chain([value.clone()]).collect();
            super::load_config(args.config.as_ref(), args.seed, &overrides)
        });
        match loaded {
            Ok((mut c, costs, by_config)) => {
                let mut change = None;
                if let Some(Replayed { job, shape }) = replay {
                    replace_workloads(&mut c, job);
                    let measured = start_measured(&costs);
                    change = Some((
                        bands::Change::classify(shape, &c, args.fix.len()),
                        bands::warnings(shape, &c, measured)
                            .into_iter()
                            .chain(bands::unplaceable(job, &c))
                            .chain(cpu_warning(args))
                            .collect::<Vec<_>>(),
                    ));
                }
                if sourced.is_empty() {
                    sourced = costs;
                }
                configs.push((value.raw_value.clone(), c, by_config, change))
            }
            Err(code) => return Ok(code),
        }
    }
    let seed = configs.first().map_or(0, |(_, c, _, _)| c.sim.seed);
    let mut measured: Vec<rayscope::config::calibration::Measured> = Vec::new();
    if plan.quotes_the_suite() {
        for m in configs.iter().flat_map(|(_, c, _, _)| rayscope::config::calibration::measured_for(c)) {
            if !measured.iter().any(|known| known.workload == m.workload) {
                measured.push(m);
            }
        }
    }
    let mut sweep = rayscope::sim::sweep::Sweep {
        key: values[0].key.clone(),
        seed,
        calibration: plan.line(),
        measured,
        runs: Vec::new(),
    };
    let on_terminal = !args.quiet && std::io::stderr().is_terminal();
    let mut predictions = Vec::new();
    for (i, (value, cfg, by_config, change)) in configs.into_iter().enumerate() {
        if on_terminal {
            eprintln!("run {}/{}: {}={}", i + 1, values.len(), sweep.key, value);
        }
        match rayscope::sim::simulate(batch_only(cfg), args.until.map(VirtualTime), None, |_| {}) {
            Ok((_, mut report)) => {
                plan.adjust(&mut report, &by_config);
                if let (Some((kind, warnings)), Some(makespan)) = (change, report.jobs.first().and_then(|j| j.makespan))
                {
                    predictions.push((value.clone(), bands::Prediction::new(makespan, kind), warnings));
                }
                sweep.runs.push(rayscope::sim::sweep::SweepRun::new(&value, &report))
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    }
    match args.report {
        ReportFormat::Json if account => {
            let mut json: serde_json::Value = serde_json::from_str(&sweep.to_json()).expect("the sweep is JSON");
            json["costs"] = serde_json::json!(sourced);
            json["costs_origin"] = plan.line().into();
            if replay.is_some() {
                json["predictions"] = predictions
                    .iter()
                    .map(|(value, p, warnings)| serde_json::json!({"value": value, "prediction": p, "replay_warnings": warnings}))
                    .collect();
            }
            println!("{}", serde_json::to_string_pretty(&json).expect("JSON"));
        }
        ReportFormat::Json => println!("{}", sweep.to_json()),
        ReportFormat::Text => {
            print!("{}", sweep.to_text());
            if account {
                print!("{}", super::costs::text(&sourced));
            }
            for (value, p, warnings) in &predictions {
                println!("  {}={value}: {}", sweep.key, p.line());
                for w in warnings {
                    println!("    WARNING: {w}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

type OpenMetricsFile = rayscope::metrics::openmetrics::OpenMetricsWriter<std::io::BufWriter<std::fs::File>>;

/// The --openmetrics writer, and the Unix time (ms) virtual zero maps to.
fn open_openmetrics(path: &PathBuf, cfg: &Config, args: &SimulateArgs) -> Result<(OpenMetricsFile, i64)> {
    let start_ms = match args.openmetrics_start {
        Some(s) => s.saturating_mul(1000),
        None => {
            // End the run now, so Grafana's "last N hours" shows it. Without --until the
            // run's length is only known by running it: a first, silent pass (the engine
            // is deterministic, so the second pass is the same run).
            let length_us = match args.until.or(cfg.sim.until.map(|u| u.as_micros())) {
                Some(u) => u,
                None => match rayscope::sim::simulate(batch_only(cfg.clone()), None, None, |_| {}) {
                    Ok((engine, _)) => engine.now_us(),
                    Err(_) => 0, // the real pass reports the error
                },
            };
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0);
            let interval_ms = (args.scrape_interval / 1000).max(1) as i64;
            (now_ms - (length_us / 1000) as i64).div_euclid(interval_ms) * interval_ms
        }
    };
    let f =
        std::fs::File::create(path).with_context(|| format!("cannot create OpenMetrics file {}", path.display()))?;
    let out = std::io::BufWriter::with_capacity(1 << 20, f);
    Ok((
        rayscope::metrics::openmetrics::OpenMetricsWriter::new(out, start_ms, cfg.server.metrics_export_port)
            .with_metric_cardinality(cfg.cluster.metric_cardinality_level),
        start_ms,
    ))
}

/// Whether the run's worker start is this cluster's (the trace's, a file's or the
/// config's), not the reference machine's.
fn start_measured(sourced: &[super::costs::Sourced]) -> bool {
    sourced.iter().any(|s| s.key == "scheduler.worker_start_cpu" && s.source != "reference")
}
