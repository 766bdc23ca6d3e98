//! The `rayscope` binary: `serve` (the default), `simulate` and `check`.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use rayscope::api::ServeOptions;
use rayscope::config::{self, Config};
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
    /// Log format (RUST_LOG selects what is logged, default info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
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
    #[arg(long)]
    events: Option<PathBuf>,
    /// Never show the progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum ReportFormat {
    Text,
    Json,
}

fn parse_duration_arg(s: &str) -> Result<u64, String> {
    config::units::parse_duration(s).map(|d| d.as_micros())
}

fn load_config(path: Option<&PathBuf>, seed: Option<u64>) -> Result<Config, ExitCode> {
    let loaded = match path {
        Some(p) => config::load_file(p),
        None => config::load_str(config::DEFAULT_CONFIG_YAML, config::DEFAULT_CONFIG_NAME),
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
        Some(Command::Serve(args)) => serve(args),
        None => serve(cli.serve),
    }
}

fn simulate(args: SimulateArgs) -> Result<ExitCode> {
    let cfg = match load_config(args.config.as_ref(), args.seed) {
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
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}").expect("static progress template"),
        );
        Some(b)
    } else {
        None
    };
    let result = rayscope::sim::simulate(cfg, args.until, sink, |e| {
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
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
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
    if let Some(e) = report.events_file_error {
        eprintln!("error: writing the events file failed: {e}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(args: ServeArgs) -> ExitCode {
    init_logging(args.log_format);
    let cfg = match load_config(args.config.as_ref(), args.seed) {
        Ok(c) => c,
        Err(code) => return code,
    };
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
