//! The `rayscope` binary: `serve` (the default), `simulate`, `flow` and `check`.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use rayscope::api::ServeOptions;
use rayscope::config::{self, Config, Override};
use rayscope::sim::runner::{EngineHandle, RunOptions};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "rayscope",
    version,
    about = "Observability for Ray-style clusters: a deterministic in-process Ray cluster model that exports Ray's metrics.",
    long_about = "rayscope runs a model of a Ray cluster (GCS tables, raylet scheduling with spillback, object stores, \
jobs, tasks, actors, placement groups, faults) and exports what a Ray cluster exports.\n\n\
With no subcommand it serves the embedded default cluster and workload (same as `rayscope serve`)."
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand: `serve` with these flags.
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the model paced to wall time and serve /metrics, the state API and the live stream.
    Serve(ServeArgs),
    /// Run the model as fast as possible and print a report.
    Simulate(SimulateArgs),
    /// Run a config to completion and write Flow Insight's views of one job.
    #[command(
        long_about = "Run the config as fast as possible to completion, then write Flow Insight's views of one job \
into --out: graph.json (call graph, class level), physical.json (nodes with actors and workers), stack.json \
(calls in flight at --at), flame.folded and flame.svg (time per call path), timeline.json (Chrome trace events: \
open in Perfetto; every execution up to --at, not windowed or limited as /api/flow/timeline.json answers) and bottlenecks.txt (ranked by self time on the critical path, also printed). \
With --emit, also post the job's call records to a running flow-insight server (POST URL/emit). \
Exit status: 0 done, 2 bad input (config, --job, --emit URL), 1 anything else."
    )]
    Flow(FlowArgs),
    /// Validate config files; exit 0 when all are valid, 2 otherwise.
    Check {
        /// Config files to validate.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Config file (default: the embedded examples/default.yaml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Simulation seed (overrides sim.seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Address to listen on, e.g. 127.0.0.1:8080 or 0.0.0.0:8080 [default: server.listen
    /// from the config, 127.0.0.1:8080]. State-changing endpoints stay off until
    /// RAYSCOPE_TOKEN is set, whatever the address.
    #[arg(long, env = "RAYSCOPE_LISTEN")]
    listen: Option<String>,
    /// Override a config value without editing the file (repeatable), e.g.
    /// `--set sim.speed=10`. KEY is a dotted path as config errors write it; VALUE is YAML.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = Override::parse)]
    set: Vec<Override>,
    /// Log format (RUST_LOG selects what is logged, default info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Keep received alerts and jobs submitted through the Jobs API in DIR across restarts
    /// (written atomically at most once a second; a job running at a restart comes back
    /// FAILED). Without it a restart forgets them.
    #[arg(long, value_name = "DIR", env = "RAYSCOPE_STATE_DIR")]
    state_dir: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
struct SimulateArgs {
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
    /// Write the full event log to this file.
    #[arg(long, conflicts_with = "sweep")]
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
    /// Unix time (seconds) that virtual time zero maps to in the --openmetrics file
    /// [default: so that the run ends now, browsable as "the last N hours"].
    #[arg(long, value_name = "UNIX_SECONDS", requires = "openmetrics")]
    openmetrics_start: Option<i64>,
}

/// `rayscope flow`.
#[derive(clap::Args)]
struct FlowArgs {
    /// Config file.
    #[arg(long, short)]
    config: PathBuf,
    /// Simulation seed (overrides sim.seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Job id to show, e.g. 01000000 [default: the first job].
    #[arg(long)]
    job: Option<String>,
    /// Show the views as of this instant, in seconds of virtual time [default: the end].
    #[arg(long)]
    at: Option<f64>,
    /// Directory to write the views into (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Post the job's records to a flow-insight server, e.g. http://127.0.0.1:63000.
    #[arg(long, value_name = "URL")]
    emit: Option<String>,
    /// Override a config value (repeatable), as `simulate --set`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = Override::parse)]
    set: Vec<Override>,
    /// Also print wall-clock timings (simulate, each view) as JSON on stderr.
    #[arg(long)]
    timings: bool,
}

fn flow(args: FlowArgs) -> ExitCode {
    let cfg = match load_config(Some(&args.config), args.seed, &args.set) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if args.at.is_some_and(|a| !a.is_finite() || a < 0.0) {
        eprintln!("error: --at must be seconds of virtual time (>= 0)");
        return ExitCode::from(2);
    }
    match rayscope::flow::run::run(cfg, args.job.as_deref(), args.at, &args.out, args.emit.as_deref()) {
        Ok(s) => {
            print!("{}", s.bottlenecks);
            if let Some(n) = s.emitted {
                println!("emitted {n} records of job {} to {}", s.job, args.emit.as_deref().unwrap_or(""));
            }
            if args.timings {
                eprintln!("{}", s.timings);
            }
            ExitCode::SUCCESS
        }
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
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
    config::overrides::parse_sweep(s).map(SweepArg)
}

fn parse_duration_arg(s: &str) -> Result<u64, String> {
    config::units::parse_duration(s).map(|d| d.as_micros())
}

fn parse_positive_duration_arg(s: &str) -> Result<u64, String> {
    match parse_duration_arg(s)? {
        0 => Err("must be more than zero, e.g. 15s".into()),
        us => Ok(us),
    }
}

fn load_config(path: Option<&PathBuf>, seed: Option<u64>, overrides: &[Override]) -> Result<Config, ExitCode> {
    let loaded = match path {
        Some(p) => config::load_file_with(p, overrides),
        None => config::load_str_with(config::DEFAULT_CONFIG_YAML, config::DEFAULT_CONFIG_NAME, overrides),
    };
    match loaded {
        Ok(mut c) => {
            if let Some(s) = seed {
                c.sim.seed = s;
            }
            Ok(c)
        }
        Err(errors) => {
            eprintln!("{errors}");
            Err(ExitCode::from(2))
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Check { files }) => ExitCode::from(config::check_files(&files) as u8),
        Some(Command::Simulate(args)) => match simulate(args) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        },
        Some(Command::Flow(args)) => flow(args),
        Some(Command::Serve(args)) => serve(args),
        None => serve(cli.serve),
    }
}

fn simulate(args: SimulateArgs) -> Result<ExitCode> {
    set_purge_delay(PURGE_NEVER);
    if let Some(sweep) = &args.sweep {
        return sweep_runs(&args, &sweep.0);
    }
    let cfg = match load_config(args.config.as_ref(), args.seed, &args.set) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let sink: Option<Box<dyn std::io::Write + Send>> = match &args.events {
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
        cfg,
        args.until,
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
    let (_, report) = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    match args.report {
        ReportFormat::Json => println!("{}", report.to_json()),
        ReportFormat::Text => print!("{}", report.to_text()),
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
        eprintln!("error: writing the events file failed: {e}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `simulate --sweep`: every config is loaded (and so validated) before the first run.
fn sweep_runs(args: &SimulateArgs, values: &[Override]) -> Result<ExitCode> {
    let mut configs = Vec::with_capacity(values.len());
    for value in values {
        let overrides: Vec<Override> = args.set.iter().cloned().chain([value.clone()]).collect();
        match load_config(args.config.as_ref(), args.seed, &overrides) {
            Ok(c) => configs.push((value.raw_value.clone(), c)),
            Err(code) => return Ok(code),
        }
    }
    let seed = configs.first().map_or(0, |(_, c)| c.sim.seed);
    let mut sweep = rayscope::sim::sweep::Sweep { key: values[0].key.clone(), seed, runs: Vec::new() };
    let on_terminal = !args.quiet && std::io::stderr().is_terminal();
    for (i, (value, cfg)) in configs.into_iter().enumerate() {
        if on_terminal {
            eprintln!("run {}/{}: {}={}", i + 1, values.len(), sweep.key, value);
        }
        match rayscope::sim::simulate(cfg, args.until, None, |_| {}) {
            Ok((_, report)) => sweep.runs.push(rayscope::sim::sweep::SweepRun::new(&value, &report)),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    }
    match args.report {
        ReportFormat::Json => println!("{}", sweep.to_json()),
        ReportFormat::Text => print!("{}", sweep.to_text()),
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
                None => match rayscope::sim::simulate(cfg.clone(), None, None, |_| {}) {
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
        rayscope::metrics::openmetrics::OpenMetricsWriter::new(out, start_ms, cfg.server.metrics_export_port),
        start_ms,
    ))
}

fn serve(args: ServeArgs) -> ExitCode {
    set_purge_delay(PURGE_AT_ONCE);
    init_logging(args.log_format);
    let cfg = match load_config(args.config.as_ref(), args.seed, &args.set) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut cfg = cfg;
    if cfg.cluster.session_name.is_none() {
        // Ray starts a new session on every start; so does a server (not `simulate`).
        let now_us =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        cfg.cluster.session_name = Some(rayscope::sim::session_name_at(now_us, std::process::id()));
    }
    let listen = args.listen.clone().unwrap_or_else(|| cfg.server.listen.clone());
    // HTTP work (serving, encoding) runs at a lower priority than the engine thread, so a
    // flood of scrapes queues behind the simulation instead of slowing it.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(lower_this_threads_priority)
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let shutdown = match runtime.block_on(async { shutdown_signal() }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot install the SIGINT/SIGTERM handlers: {e}");
            return ExitCode::from(1);
        }
    };
    // Bind before starting the engine, so a taken port fails fast and says so.
    let listener = match runtime.block_on(tokio::net::TcpListener::bind(&listen)) {
        Ok(l) => l,
        Err(e) => {
            let hint = match e.kind() {
                std::io::ErrorKind::AddrInUse => "; another program (perhaps another rayscope) is using it: pick another with --listen or RAYSCOPE_LISTEN",
                std::io::ErrorKind::PermissionDenied => "; ports below 1024 need privileges: pick another with --listen",
                _ => "",
            };
            tracing::error!(address = %listen, error = %e, "cannot listen");
            eprintln!("error: cannot listen on {listen}: {e}{hint}");
            return ExitCode::from(1);
        }
    };
    let mut opts = ServeOptions::new(cfg.clone());
    if let Some(dir) = &args.state_dir {
        match rayscope::api::state_dir::StateDir::open(dir) {
            Ok(state) => opts.state_dir = Some(state),
            Err(e) => {
                eprintln!("error: --state-dir: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(t) = env_token("RAYSCOPE_TOKEN") {
        opts.token = Some(t);
    }
    if let Some(t) = env_token("RAYSCOPE_ALERT_TOKEN") {
        opts.alert_token = Some(t);
    }
    let address = listener.local_addr().map(|a| a.to_string()).unwrap_or(listen);
    tracing::info!(
        %address,
        session = cfg.cluster.session_name.as_deref().unwrap_or("(from seed)"),
        seed = cfg.sim.seed,
        control = if opts.token.is_some() { "enabled" } else { "disabled (set RAYSCOPE_TOKEN)" },
        host_readings = opts.host.is_some(),
        "starting rayscope"
    );
    let handle = EngineHandle::spawn(cfg, RunOptions::default());
    // The engine thread has its own priority now (threads inherit it when created);
    // the accept loop on this thread yields to it like the workers do.
    lower_this_threads_priority();
    match runtime.block_on(rayscope::api::serve(listener, handle, opts, shutdown)) {
        Ok(()) => {
            // Do not wait for lingering connection tasks: serve already gave them their grace.
            runtime.shutdown_timeout(std::time::Duration::from_millis(100));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: the server on {address} failed: {e}");
            ExitCode::from(1)
        }
    }
}

/// A token from the environment; an empty one counts as unset.
fn env_token(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|t| !t.trim().is_empty())
}

fn init_logging(format: LogFormat) {
    rayscope::api::logging::init(matches!(format, LogFormat::Json), std::io::stderr().is_terminal());
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM. The handlers are installed when this is
/// Raise this thread's nice value by 5 (never needs privileges; a no-op where unsupported).
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread's own id; no memory is shared.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (current + 5).min(19));
    }
}

/// called (inside the runtime), not when the future is first polled, so a signal
/// that arrives once the server answers is never missed.
#[cfg(unix)]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => tracing::info!("SIGINT received"),
            _ = term.recv() => tracing::info!("SIGTERM received"),
        }
    })
}

#[cfg(not(unix))]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("Ctrl-C received");
    })
}

// The engine allocates and frees millions of small records (tasks, objects, events);
// mimalloc's thread-local free lists measurably beat glibc malloc here (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_e` (libmimalloc-sys names no
/// constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// When mimalloc gives freed pages back to the OS, in milliseconds (`-1`: never).
///
/// A server runs for days: it gives them back at once instead of after the default
/// delay (1 s), or RSS creeps up while bounded stores churn (the A7 soak: 0.49 MB/min
/// with the default delay, flat with 0; BENCHMARKS.md). A `simulate` run is a batch
/// whose footprint is its peak anyway: it never gives them back, since every page given
/// back and taken again is zeroed again by the kernel (scale.yaml gave back and
/// re-faulted 314 MB, about 0.2 s of system time). An explicit `MIMALLOC_PURGE_DELAY`
/// in the environment wins.
fn set_purge_delay(ms: std::ffi::c_long) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option; mimalloc reads options atomically.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms) };
    }
}

const PURGE_AT_ONCE: std::ffi::c_long = 0;
const PURGE_NEVER: std::ffi::c_long = -1;

#[cfg(test)]
mod allocator_tests {
    use super::{set_purge_delay, MI_OPTION_PURGE_DELAY, PURGE_AT_ONCE, PURGE_NEVER};

    #[test]
    fn the_purge_delay_option_is_the_one_serve_and_simulate_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // purge_delay's default in the vendored mimalloc 3 (src/options.c) is 1000 ms, and
        // no neighbouring option defaults to 1000: the index names it.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }, 1000);
        set_purge_delay(PURGE_NEVER);
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }, -1);
        set_purge_delay(PURGE_AT_ONCE);
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }, 0);
    }
}
