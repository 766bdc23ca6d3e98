//! The `rayscope` binary: `serve` (the default), `simulate` and `check`.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use rayscope::config::{self, Config};
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
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
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

#[derive(clap::Args, Default)]
struct ServeArgs {
    /// Config file (default: the embedded examples/default.yaml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Simulation seed (overrides sim.seed).
    #[arg(long)]
    seed: Option<u64>,
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
        None => serve(ServeArgs::default()),
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
    let _cfg = match load_config(args.config.as_ref(), args.seed) {
        Ok(c) => c,
        Err(code) => return code,
    };
    eprintln!("serve: not implemented yet");
    ExitCode::from(1)
}

// The engine allocates and frees millions of small records (tasks, objects, events);
// mimalloc's thread-local free lists measurably beat glibc malloc here (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
