//! The `rayscope` binary's command line: `serve` (the default), `observe`, `simulate`,
//! `flow`, `fidelity`, `calibrate` and `check`.
//!
//! Owns: the clap types of the top level and the dispatch to one file per command
//! (`serve.rs`, `simulate.rs` with `--sweep` and `--openmetrics`, `flow.rs` with
//! `--emit`), loading the config a command names with its `--seed` and `--set`, and
//! the process-wide setup they share (`process.rs`: the allocator, thread priority,
//! shutdown signals). Each command's flags, messages and exit statuses are its file's.
//! Must never: be imported by anything. It lives in the binary crate, above every
//! module of the library, and holds only wiring: what a test of the library would
//! want belongs in the module it concerns.

mod calibrate;
mod costs;
mod fidelity;
mod flow;
mod observe;
mod process;
mod serve;
mod simulate;

use clap::{Parser, Subcommand};
use rayscope::config::{self, Config, Override};
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
    serve: serve::ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the model paced to wall time and serve /metrics, the state API and the live stream.
    Serve(serve::ServeArgs),
    /// Serve the pages, State API and Flow Insight of a live Ray cluster (or a recorded trace); no model runs.
    #[command(
        long_about = "Read a live Ray cluster through its dashboard (--ray http://HEAD:8265: Ray's State and Jobs \
APIs, polled every --poll-every) and serve what `rayscope serve` serves for the model: the pages (/, /nodes, /jobs, \
/actors, /tasks, /events, /flow), Ray's State API shapes, Flow Insight (/api/flow/*) and Ant flow-insight's \
endpoints, built from Ray's own task records (parent links, state times). /metrics carries only rayscope_* \
families: Ray exports its own. Ray's Event Export may also push to http://LISTEN/api/observe/events (see the \
README for the settings). --record DIR appends everything observed to a bounded trace that outlives the cluster; \
--trace DIR serves such a trace with no Ray at all. Many clusters: --ray NAME=URL repeated, and pushes to \
/api/observe/events/NAME (or told apart by their Ray session), each kept apart under its name: requests pick one \
with ?cluster=NAME, --record writes DIR/NAME, /sd?targets=ray names Ray's own metrics endpoints. Control \
endpoints answer 409: nothing is changed on the cluster. Exit status: 0 after SIGINT/SIGTERM, 2 bad input, 1 anything else."
    )]
    Observe(observe::ObserveArgs),
    /// Run the model as fast as possible and print a report.
    Simulate(simulate::SimulateArgs),
    /// Run a config to completion and write Flow Insight's views of one job.
    #[command(
        long_about = "Run the config as fast as possible to completion (or, with --trace DIR, read a job recorded \
from a real Ray cluster by `rayscope observe --record DIR`), then write Flow Insight's views of one job into --out: graph.json (call graph, at class level unless a class calls itself, as in an actor tree: then instances), physical.json (nodes with actors and workers), stack.json \
(calls in flight at --at), flame.folded and flame.svg (execution time per call path), flame-wall.folded and \
flame-wall.svg (the driver's wall time down the calls it waited on, with [queued] and [blocked] frames), \
timeline.json (Chrome trace events: open in Perfetto; every execution up to --at, not windowed or limited as \
/api/flow/timeline.json answers), impact.json (what fixing each candidate saves, the job re-run in the model), \
findings.json (Ray's documented patterns and anti-patterns found in the job, each with what its fix saves) and \
bottlenecks.txt (ranked by execution on the critical path, waiting shown beside it, what each top entry made \
instant saves and its slowest call, then what fixing saves, then the findings; also printed). \
With --emit, also post the job's call records, the driver's end and the physical stats to a running \
flow-insight server (POST URL/emit), under --flow-id (default: unique per run). \
Exit status: 0 done, 2 bad input (config, --job, --emit URL), 1 anything else."
    )]
    Flow(flow::FlowArgs),
    /// Put every workload recorded on real Ray to the model and write the fidelity report.
    #[command(
        long_about = "Put every workload recorded on real Ray (scripts/ray-calibration/runs: suite/*.json from \
suite.py, seed-tree-*.json from seed_tree.py) to the model, on the same cluster shape with every cost at its default, \
and write the report: real Ray's figure, the model's, the error against its bound (5 % for a hold-out workload, \
0.5 % for a seed tree) and what the model leaves out. `rayscope fidelity --out docs/fidelity.md` writes the \
report the repository ships, and `--format json --out docs/fidelity.json` its rows, which `simulate`'s report \
quotes (rebuild after). Runs recorded on your own machine go in a folder of their own: fit its costs with \
fit.py --runs DIR --out DIR/fit.json, then `rayscope fidelity --runs DIR --costs DIR/fit.json` reports the \
model with them. Exit status: 0 done, 2 bad input (the runs, the fit's record), 1 anything else."
    )]
    Fidelity(fidelity::FidelityArgs),
    /// Read a recorded job's own costs from its trace and write them as a costs fragment.
    #[command(
        long_about = "Read the costs of the Ray cluster a job was recorded on (`rayscope observe --record DIR`) from \
the job's timestamps, and write them as a costs fragment: a config's `scheduler:` and `object_store:` sections. Each \
figure is read between Ray's state stamps (whole ms), over every call of the job that shows it cleanly: a lease \
(PENDING_NODE_ASSIGNMENT to SUBMITTED_TO_WORKER on an idle worker: lease_latency, dispatch_cost), the push and the \
worker's start of a call (SUBMITTED_TO_WORKER to RUNNING: owner_push_cost, task_push_latency, call_start_cost, \
task_worker_cost), the caller's `.remote()` loops (call_submit_cost, actor_call_submit_cost), a worker process's \
start (worker_start_cpu, worker_start_latency), a task worker's first call beyond its function's later ones \
(worker_first_call_latency), an actor's first call after its creation (actor_first_call_latency) and an argument's \
transfer from another node (transfer_bandwidth). Where the recording read the workers' CPU time, it also says what \
share of each function's calls is CPU (`bodies' CPU`, a comment in the fragment: `simulate --replay` reads it from \
the trace, and `--cpu` overrides it). A figure sets its costs in the reference machine's proportions. Every other \
cost, and any whose figure the job does not show, keeps the reference machine's value: the fragment names each one and why (a sleep's overshoot, \
for one, is in no stamp). `simulate --replay DIR` reads the same costs from its trace by default; `--costs FILE` \
runs with a fragment (see docs/observe.md, \"What-ifs on a recorded job\"). \
Exit status: 0 done, 2 bad input (no trace, no such job), 1 a file that cannot be written."
    )]
    Calibrate(calibrate::CalibrateArgs),
    /// Validate config files; exit 0 when all are valid, 2 otherwise.
    Check {
        /// Config files to validate.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// Parse the command line and run what it asks for.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Check { files }) => ExitCode::from(config::check_files(&files) as u8),
        Some(Command::Simulate(args)) => match simulate::simulate(args) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        },
        Some(Command::Flow(args)) => flow::flow(args),
        Some(Command::Fidelity(args)) => fidelity::fidelity(args),
        Some(Command::Calibrate(args)) => calibrate::calibrate(args),
        Some(Command::Serve(args)) => serve::serve(args),
        Some(Command::Observe(args)) => observe::observe(args),
        None => serve::serve(cli.serve),
    }
}

/// The config at `path` (the embedded default without one) with `overrides` and
/// `seed` applied; its errors are printed here and come back as exit status 2.
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
