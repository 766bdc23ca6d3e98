//! `rayscope calibrate`: the observed cluster's own costs, read from a recorded job's
//! timestamps, written as a costs fragment (`calibrate`).
//!
//! Owns: the command's flags and exit statuses: 0 done, 2 bad input (no trace, no such
//! job), 1 a file that cannot be written.
//! Must never: write a half-made fragment under its final name.

use rayscope::calibrate;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(super) struct CalibrateArgs {
    /// A trace recorded by `rayscope observe --record DIR`.
    #[arg(long, value_name = "DIR")]
    trace: PathBuf,
    /// The recorded job to read, e.g. 01000000 [default: the trace's only job].
    #[arg(long, value_name = "ID")]
    job: Option<String>,
    /// Write the costs fragment here (default: standard output). `simulate --replay DIR
    /// --costs FILE` runs with it; its sections also merge into a config.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub(super) fn calibrate(args: CalibrateArgs) -> ExitCode {
    let costs = match calibrate::from_trace(&args.trace, args.job.as_deref()) {
        Ok((_, costs)) => costs,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    eprint!("{}", costs.summary());
    let text = costs.to_yaml();
    let Some(path) = args.out else {
        print!("{text}");
        return ExitCode::SUCCESS;
    };
    let mut tmp = path.clone().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let written = std::fs::write(&tmp, &text).and_then(|()| std::fs::rename(&tmp, &path));
    match written {
        Ok(()) => {
            eprintln!("wrote {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            eprintln!("error: cannot write {}: {e}", path.display());
            ExitCode::from(1)
        }
    }
}
