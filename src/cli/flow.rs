//! `rayscope flow`: run a config to completion (or read a trace recorded from a real
//! cluster, `--trace`) and write every view of one job, optionally posting its records
//! to a `flow-insight` server (`--emit`).
//!
//! Owns: the command's flags and what it prints; running the config (the views read
//! a finished run's snapshot, as the API reads a live one); choosing the job (the
//! first with records, or `--job`); writing `graph.json`, `physical.json`,
//! `stack.json`, `flame.folded` and `flame.svg` (execution time), `flame-wall.folded`
//! and `flame-wall.svg` (wall time), `timeline.json`, `impact.json`, `findings.json`
//! and `bottlenecks.txt` (with the findings) into the output directory (the timeline whole: no window, no limit); and posting
//! the records with `--emit`. Exit statuses: 0 done, 2 bad input (config, `--at`,
//! `--job`, the `--emit` URL, a run that never ends), 1 anything else.
//! Must never: leave a half-written view behind under its final name (each file is
//! written to a temporary name and renamed).

use rayscope::config::{Config, Override, WorkloadConfig};
use rayscope::flow::derived::Derived;
use rayscope::flow::flame::Mode;
use rayscope::flow::graph::Level;
use rayscope::flow::spans::Spans;
use rayscope::flow::timeline::Window;
use rayscope::flow::{ant, bottleneck, emit, findings, render, whatif, View};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// `rayscope flow`.
#[derive(clap::Args)]
pub(super) struct FlowArgs {
    /// Config file.
    #[arg(long, short, required_unless_present = "trace")]
    config: Option<PathBuf>,
    /// Show a job recorded from a real Ray cluster (`rayscope observe --record DIR`)
    /// instead of running a config; the cluster need not exist any more.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["config", "seed", "set"])]
    trace: Option<PathBuf>,
    /// The cluster whose trace to read, where `--trace DIR` was recorded from several
    /// (`observe --ray NAME=URL ...`): reads `DIR/NAME`.
    #[arg(long, value_name = "NAME", requires = "trace")]
    cluster: Option<String>,
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
    /// The flow id the records are posted under [default: the job id and this run's
    /// start time, so that a second emit never merges into the first].
    #[arg(long, value_name = "ID", requires = "emit")]
    flow_id: Option<String>,
    /// Override a config value (repeatable), as `simulate --set`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = Override::parse)]
    set: Vec<Override>,
    /// Also print wall-clock timings (simulate, each view) as JSON on stderr.
    #[arg(long)]
    timings: bool,
}

pub(super) fn flow(args: FlowArgs) -> ExitCode {
    let source = match (&args.trace, &args.config) {
        (Some(dir), _) => match &args.cluster {
            Some(name) => {
                if let Err(e) = rayscope::observe::clusters::check_name(name) {
                    eprintln!("error: --cluster: {e}");
                    return ExitCode::from(2);
                }
                Source::Trace(dir.join(name))
            }
            None => Source::Trace(dir.clone()),
        },
        (None, Some(path)) => match super::load_config(Some(path), args.seed, &args.set) {
            Ok(c) => Source::Config(Box::new(c)),
            Err(code) => return code,
        },
        (None, None) => unreachable!("clap requires --config or --trace"),
    };
    if args.at.is_some_and(|a| !a.is_finite() || a < 0.0) {
        eprintln!("error: --at must be seconds of virtual time (>= 0)");
        return ExitCode::from(2);
    }
    if args.flow_id.as_deref().is_some_and(|f| f.trim().is_empty()) {
        eprintln!("error: --flow-id must not be empty");
        return ExitCode::from(2);
    }
    match run(source, args.job.as_deref(), args.at, &args.out, args.emit.as_deref(), args.flow_id.as_deref()) {
        Ok(s) => {
            print!("{}", s.bottlenecks);
            if let Some((n, flow)) = &s.emitted {
                println!(
                    "emitted {n} records of job {} to {} as flow {flow}",
                    s.job,
                    args.emit.as_deref().unwrap_or("")
                );
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

/// What a run did, for the caller to print.
struct Summary {
    job: String,
    bottlenecks: String,
    /// Records posted, and the flow id they went under.
    emitted: Option<(usize, String)>,
    /// Wall milliseconds: simulate, then each view written, the API's default timeline
    /// answer (rendered, not written), then in all.
    timings: serde_json::Value,
}

/// Why `rayscope flow` failed: the exit code (2: bad input) and the message.
struct Failure {
    code: u8,
    message: String,
}

fn fail(code: u8, message: impl Into<String>) -> Failure {
    Failure { code, message: message.into() }
}

/// Where the job comes from: a config run in the model, or a recorded real cluster.
enum Source {
    Config(Box<Config>),
    Trace(PathBuf),
}

fn run(
    source: Source,
    job: Option<&str>,
    at_s: Option<f64>,
    out: &Path,
    emit_url: Option<&str>,
    flow_id: Option<&str>,
) -> Result<Summary, Failure> {
    let target = emit_url.map(emit::parse_url).transpose().map_err(|e| fail(2, e.to_string()))?;
    let started = Instant::now();
    let from_trace = matches!(source, Source::Trace(_));
    let snap = match source {
        Source::Config(cfg) => {
            if cfg.workloads.iter().any(|w| matches!(w, WorkloadConfig::JobMix(_))) && cfg.sim.until.is_none() {
                return Err(fail(
                    2,
                    "the config has a job_mix workload, which never ends: set sim.until (or --set sim.until=2h)",
                ));
            }
            let (engine, _report) =
                rayscope::sim::simulate(*cfg, None, None, |_| {}).map_err(|e| fail(2, e.to_string()))?;
            engine.publish(rayscope::sim::PublishOptions::seq(0))
        }
        Source::Trace(dir) => {
            rayscope::observe::runner::trace_snapshot(&dir, Default::default()).map_err(|e| fail(2, e.to_string()))?
        }
    };
    let simulate_ms = started.elapsed().as_secs_f64() * 1e3;
    let record = match job {
        Some(j) => snap.flow.job(j).cloned().ok_or_else(|| {
            let known: Vec<&str> = snap.flow.jobs.values().map(|j| j.job_hex.as_str()).collect();
            fail(2, format!("--job {j}: no such job with flow records (jobs: {})", known.join(", ")))
        })?,
        None => {
            snap.flow.jobs.values().next().cloned().ok_or_else(|| fail(2, "the run made no jobs: nothing to show"))?
        }
    };
    if from_trace {
        rayscope::observe::flow::check_span(&record).map_err(|e| fail(2, e.to_string()))?;
    }
    let now = snap.sim_time_us.as_micros();
    let at = at_s.map(|s| ((s * 1e6) as u64).min(now)).unwrap_or(now);
    let latest = at == now;
    std::fs::create_dir_all(out).map_err(|e| fail(1, format!("cannot create {}: {e}", out.display())))?;
    let mut timings = serde_json::Map::new();
    timings.insert("simulate_ms".into(), json!(simulate_ms));
    let views = [
        ("graph.json", View::Graph(Level::default_for(&record))),
        ("physical.json", View::Physical(None)),
        ("stack.json", View::Stack),
        ("flame.folded", View::Folded(Mode::Execution)),
        ("flame.svg", View::Svg(Mode::Execution)),
        ("flame-wall.folded", View::Folded(Mode::Wall)),
        ("flame-wall.svg", View::Svg(Mode::Wall)),
        // A file is not an interactive answer: the whole job, every execution.
        ("timeline.json", View::Timeline(Window::ALL)),
    ];
    // One replay serves every view, as the server's cache makes it serve every answer.
    let t = Instant::now();
    let spans = Spans::replay(&record, at);
    // What several views share (the critical path, the what-ifs): made once.
    let derived = Derived::default();
    timings.insert("replay_ms".into(), json!(t.elapsed().as_secs_f64() * 1e3));
    for (file, view) in views {
        let t = Instant::now();
        let r = render(&record, &spans, &derived, latest, view, &snap.nodes)
            .map_err(|e| fail(1, format!("{file}: {e}")))?;
        write(out, file, &r.body)?;
        timings.insert(format!("{file}_ms"), json!(t.elapsed().as_secs_f64() * 1e3));
    }
    // What `/api/flow/timeline.json` answers by default (not written: the file above is
    // whole), timed through the same rendering the API calls, for the benchmarks.
    let t = Instant::now();
    let r = render(&record, &spans, &derived, latest, View::Timeline(Window::DEFAULT), &snap.nodes)
        .map_err(|e| fail(1, e.to_string()))?;
    timings.insert("timeline.json_api_default_ms".into(), json!(t.elapsed().as_secs_f64() * 1e3));
    timings.insert("timeline.json_api_default_bytes".into(), json!(r.body.len()));
    // The critical path (bottlenecks.txt, and the what-ifs' candidates).
    let t = Instant::now();
    let path = derived.path(&record, &spans);
    timings.insert("critical_path_ms".into(), json!(t.elapsed().as_secs_f64() * 1e3));
    let t = Instant::now();
    // The what-ifs re-run the job in the model: ranked once for both files.
    let ranked = derived.impacts(&record, &spans);
    let impact =
        serde_json::to_vec(&whatif::impact_json_of(&record, &spans, ranked.as_ref().as_ref())).unwrap_or_default();
    write(out, "impact.json", &impact)?;
    timings.insert("impact.json_ms".into(), json!(t.elapsed().as_secs_f64() * 1e3));
    // Ray's patterns and anti-patterns found in the job, each with its fix re-run.
    let t = Instant::now();
    let found = derived.findings(&record, &spans);
    let body = serde_json::to_vec(&findings::findings_json(&record, &spans, &found, &snap.nodes)).unwrap_or_default();
    write(out, "findings.json", &body)?;
    timings.insert("findings.json_ms".into(), json!(t.elapsed().as_secs_f64() * 1e3));
    let t = Instant::now();
    let instant = derived.instant(&record, &spans);
    let mut text = bottleneck::text_of(&record, &spans, &path, instant.as_ref().as_ref());
    text.push_str(&whatif::text_of(&record, ranked.as_ref().as_ref()));
    text.push_str(&findings::text_of(&record, &spans, &found));
    write(out, "bottlenecks.txt", text.as_bytes())?;
    timings.insert("bottlenecks.txt_ms".into(), json!(t.elapsed().as_secs_f64() * 1e3));
    timings.insert("total_ms".into(), json!(started.elapsed().as_secs_f64() * 1e3));
    let emitted = match target {
        Some(t) => {
            let flow = flow_id.map(str::to_string).unwrap_or_else(|| unique_flow_id(&record.job_hex));
            let records = ant::records(&record, &spans, &flow, &snap.nodes);
            Some((emit::emit(&t, &records).map_err(|e| fail(1, format!("--emit: {e}")))?, flow))
        }
        None => None,
    };
    Ok(Summary { job: record.job_hex.clone(), bottlenecks: text, emitted, timings: serde_json::Value::Object(timings) })
}

/// A flow id no earlier run used: the job id and this run's start, in ms since the epoch.
fn unique_flow_id(job_hex: &str) -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("{job_hex}-{ms}")
}

fn write(dir: &Path, name: &str, body: &[u8]) -> Result<(), Failure> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    std::fs::write(&tmp, body)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| fail(1, format!("cannot write {}: {e}", path.display())))
}
