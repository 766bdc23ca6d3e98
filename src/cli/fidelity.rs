//! `rayscope fidelity`: put every workload recorded on real Ray to the model and write
//! the report (`docs/fidelity.md`).
//!
//! Owns: the command's flags and its exit statuses: 0 done, 2 bad input (a runs folder
//! that cannot be read, a run without its fields, a fit's record that cannot be used),
//! 1 a file that cannot be written.
//! Must never: write a half-made report under its final name.

use anyhow::{Context, Result};
use rayscope::config::Override;
use rayscope::fidelity;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(super) struct FidelityArgs {
    /// The recorded runs: seed-tree-*.json and suite/*.json (scripts/ray-calibration/suite.py), all from one
    /// CPU: a folder that mixes CPUs is refused, as their figures are not comparable.
    #[arg(long, default_value = "scripts/ray-calibration/runs")]
    runs: PathBuf,
    /// Write the report here instead of to standard output.
    #[arg(long)]
    out: Option<PathBuf>,
    /// `markdown` (the report) or `json` (the rows: real Ray's figure, the model's and the
    /// error; `docs/fidelity.json`, which `simulate`'s report quotes).
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    format: Format,
    /// Run the model with the costs of a fit's record (`scripts/ray-calibration/fit.py --out
    /// FILE`) instead of the defaults, and mark the rows that fit was fitted to: how runs
    /// recorded on another machine are put to the model with that machine's own costs.
    #[arg(long, value_name = "FILE")]
    costs: Option<PathBuf>,
    /// Override a setting of every model run (repeatable), as `simulate --set`, e.g.
    /// `--set scheduler.call_submit_cost=400us`: how a cost is tried before it becomes a
    /// default. Wins over `--costs`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = Override::parse)]
    set: Vec<Override>,
    /// The what-ifs on a recorded job proven on Ray (`scripts/ray-whatif/whatif.py --out FILE`):
    /// the report's section "What-ifs on a recorded job". Left out where the default file is absent.
    #[arg(long, value_name = "FILE", default_value = WHATIFS)]
    whatifs: PathBuf,
}

const WHATIFS: &str = "scripts/ray-whatif/runs/whatif.json";

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Markdown,
    Json,
}

pub(super) fn fidelity(args: FidelityArgs) -> ExitCode {
    let fit = match args.costs.as_deref().map(fidelity::fit::read).transpose() {
        Ok(fit) => fit,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let costs = fidelity::Costs { fit, set: args.set };
    let (runs, rows) = match fidelity::rows(&args.runs, &costs) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let whatifs = if args.whatifs.as_os_str() == WHATIFS && !args.whatifs.exists() {
        None
    } else {
        match fidelity::whatif::read(&args.whatifs) {
            Ok(record) => Some(record),
            Err(e) => {
                eprintln!("error: --whatifs {e}");
                return ExitCode::from(2);
            }
        }
    };
    let report = match args.format {
        Format::Markdown => {
            let mut text = fidelity::report(&args.runs.display().to_string(), &costs, &runs, &rows);
            if let Some(record) = &whatifs {
                text.push('\n');
                text.push_str(&fidelity::whatif::section(&args.whatifs.display().to_string(), record));
            }
            text
        }
        Format::Json => fidelity::rows_json(&rows),
    };
    match write(args.out, &report) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn write(out: Option<PathBuf>, report: &str) -> Result<()> {
    let Some(path) = out else {
        print!("{report}");
        return Ok(());
    };
    let mut tmp = path.clone().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, report).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}
