//! `rayscope serve` (and `rayscope` alone): run the model paced to wall time and serve
//! /metrics, the state API and the live stream until SIGINT or SIGTERM.
//!
//! Owns: the command's flags, the session name a server starts with, logging, the
//! async runtime and its threads' priority, binding the listener before the engine
//! starts, and the tokens read from the environment. Exit statuses: 0 after a
//! signal, 2 bad input (config, `--state-dir`), 1 anything else (a taken port).

use super::process::{lower_this_threads_priority, set_purge_delay, shutdown_signal, PURGE_AT_ONCE};
use clap::ValueEnum;
use rayscope::api::ServeOptions;
use rayscope::config::Override;
use rayscope::sim::runner::{EngineHandle, RunOptions};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(super) struct ServeArgs {
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
    /// Which Ray release's series /metrics imitates, 2.49 to 2.60 (overrides
    /// cluster.ray_version; default 2.60): names, label keys and the `Version` label.
    #[arg(long, value_name = "VERSION", value_parser = parse_ray_version)]
    ray_version: Option<String>,
    /// Ray's RAY_metric_cardinality_level for /metrics: legacy (WorkerId on tasks and
    /// actors), recommended (without it) or low (nor their Name) [default: the Ray
    /// version's own, recommended from 2.53, legacy before; overrides
    /// cluster.metric_cardinality_level].
    #[arg(long, value_name = "LEVEL", env = "RAY_metric_cardinality_level", value_parser = parse_cardinality)]
    metric_cardinality_level: Option<rayscope::config::MetricCardinality>,
    /// Log format (RUST_LOG selects what is logged, default info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Keep received alerts and jobs submitted through the Jobs API in DIR across restarts
    /// (written atomically at most once a second; a job running at a restart comes back
    /// FAILED). Without it a restart forgets them.
    #[arg(long, value_name = "DIR", env = "RAYSCOPE_STATE_DIR")]
    state_dir: Option<PathBuf>,
}

/// A Ray version rayscope imitates, as Ray writes it in `Version` (`2.49` → `2.49.0`).
fn parse_ray_version(s: &str) -> Result<String, String> {
    rayscope::config::ray_series::check_ray_version(s).map_err(|e| e.to_string())?;
    let s = s.trim();
    Ok(if s.matches('.').count() == 1 { format!("{s}.0") } else { s.to_string() })
}

fn parse_cardinality(s: &str) -> Result<rayscope::config::MetricCardinality, String> {
    s.parse().map_err(|e: rayscope::config::ray_series::CardinalityError| e.to_string())
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum LogFormat {
    Text,
    Json,
}

pub(super) fn serve(args: ServeArgs) -> ExitCode {
    set_purge_delay(PURGE_AT_ONCE);
    init_logging(args.log_format);
    let cfg = match super::load_config(args.config.as_ref(), args.seed, &args.set) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut cfg = cfg;
    if let Some(v) = &args.ray_version {
        cfg.cluster.ray_version = v.clone();
    }
    if let Some(level) = args.metric_cardinality_level {
        cfg.cluster.metric_cardinality_level = Some(level);
    }
    if cfg.cluster.session_name.is_none() {
        // Ray starts a new session on every start; so does a server (not `simulate`).
        let now_us =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        cfg.cluster.session_name = Some(rayscope::sim::session_name_at(now_us, std::process::id()));
    }
    let listen = args.listen.clone().unwrap_or_else(|| cfg.server.listen.clone());
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
    run_server(&listen, opts, |opts, address| {
        tracing::info!(
            %address,
            session = cfg.cluster.session_name.as_deref().unwrap_or("(from seed)"),
            seed = cfg.sim.seed,
            control = if opts.token.is_some() { "enabled" } else { "disabled (set RAYSCOPE_TOKEN)" },
            host_readings = opts.host.is_some(),
            "starting rayscope"
        );
        Ok(EngineHandle::spawn(cfg, RunOptions::default()))
    })
}

/// How long after SIGINT or SIGTERM a server that has not stopped on its own exits anyway.
const FORCED_EXIT_AFTER: std::time::Duration = std::time::Duration::from_millis(1_500);

/// Bind `listen`, start the snapshot producer `start` makes, and serve until SIGINT or
/// SIGTERM: `serve`'s and `observe`'s shared tail. Exit statuses: 0 after a signal, 1 a
/// taken port or a failed server, 2 a producer that could not start.
pub(super) fn run_server(
    listen: &str,
    mut opts: ServeOptions,
    start: impl FnOnce(&mut ServeOptions, &str) -> Result<EngineHandle, String>,
) -> ExitCode {
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
    // Whatever the process is doing when the signal comes (reading a trace, a first poll
    // of a slow Ray, serving), it is gone within 2 s: past the grace below it exits from
    // a runtime worker. Every trace line is written whole with one `write`, so nothing
    // recorded is lost by not waiting for the rest.
    match runtime.block_on(async { shutdown_signal() }) {
        Ok(signal) => {
            runtime.spawn(async move {
                signal.await;
                tokio::time::sleep(FORCED_EXIT_AFTER).await;
                tracing::warn!("still stopping {FORCED_EXIT_AFTER:?} after the signal: exiting now");
                std::process::exit(0);
            });
        }
        Err(e) => {
            eprintln!("error: cannot install the SIGINT/SIGTERM handlers: {e}");
            return ExitCode::from(1);
        }
    }
    // Bind before starting the engine, so a taken port fails fast and says so.
    let listener = match runtime.block_on(tokio::net::TcpListener::bind(listen)) {
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
    if let Some(t) = env_token("RAYSCOPE_TOKEN") {
        opts.token = Some(t);
    }
    if let Some(t) = env_token("RAYSCOPE_ALERT_TOKEN") {
        opts.alert_token = Some(t);
    }
    let address = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| listen.to_string());
    let handle = match start(&mut opts, &address) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
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

pub(super) fn init_logging(format: LogFormat) {
    rayscope::api::logging::init(matches!(format, LogFormat::Json), std::io::stderr().is_terminal());
}
