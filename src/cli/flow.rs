//! `rayscope flow`: run a config to completion and write Flow Insight's views of one
//! job, optionally posting its records to a `flow-insight` server (`--emit`).
//!
//! Owns: the command's flags and what it prints. Exit statuses: 0 done, 2 bad input
//! (config, `--at`, `--job`, the `--emit` URL), 1 anything else.

use rayscope::config::Override;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rayscope flow`.
#[derive(clap::Args)]
pub(super) struct FlowArgs {
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

pub(super) fn flow(args: FlowArgs) -> ExitCode {
    let cfg = match super::load_config(Some(&args.config), args.seed, &args.set) {
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
