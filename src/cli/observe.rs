//! `rayscope observe`: serve the pages, the State API and Flow Insight of a live Ray
//! cluster (or of a trace recorded from one), with no model running.
//!
//! Owns: the command's flags, checking them, and starting the observer before the
//! server (`serve::run_server`). Exit statuses: 0 after a signal, 2 bad input (a flag,
//! an unreadable trace), 1 anything else (a taken port).
//! Must never: start the model; change anything on the cluster.

use super::serve::{init_logging, run_server, LogFormat};
use rayscope::api::{ObserveServe, ServeOptions};
use rayscope::observe::pull::PullOptions;
use rayscope::observe::store::StoreLimits;
use rayscope::observe::trace::TraceLimits;
use rayscope::observe::{ObserveOptions, Source};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub(super) struct ObserveArgs {
    /// The Ray dashboard to read, e.g. http://127.0.0.1:8265 (Ray's State and Jobs APIs).
    #[arg(long, value_name = "URL", env = "RAYSCOPE_RAY_ADDRESS", required_unless_present_any = ["trace", "push_only"])]
    ray: Option<String>,
    /// Take only what Ray's Event Export pushes to /api/observe/events; poll nothing
    /// (for a cluster whose dashboard this machine cannot reach, or to spare it polls).
    #[arg(long, conflicts_with_all = ["ray", "trace"])]
    push_only: bool,
    /// Bearer token of a Ray cluster in token mode (sent as `Authorization: Bearer`).
    #[arg(long, env = "RAYSCOPE_RAY_TOKEN", hide_env_values = true, requires = "ray")]
    token: Option<String>,
    /// Show a trace recorded earlier with --record instead of a live cluster (no Ray needed).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["ray", "record"])]
    trace: Option<PathBuf>,
    /// Append everything observed to a trace in DIR (created if missing), which
    /// `rayscope observe --trace`, `rayscope flow --trace` and `simulate --replay` read.
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    /// The trace's bound: past it the oldest segments are deleted [default: 1GiB].
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, default_value = "1GiB")]
    record_max_bytes: u64,
    /// A segment of the trace is closed (and a new one opened) past this size.
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, default_value = "64MiB")]
    record_segment_bytes: u64,
    /// How often Ray's APIs are polled, e.g. 2s or 500ms.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2s")]
    poll_every: Duration,
    /// Task attempts kept in memory; past it the oldest ended jobs are forgotten (a
    /// trace keeps them).
    #[arg(long, value_name = "N", default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    max_tasks: u64,
    /// Address to listen on [default: 127.0.0.1:8080]. Ray's Event Export posts to
    /// http://THIS/api/observe/events, so listen where Ray's nodes can reach it.
    #[arg(long, env = "RAYSCOPE_LISTEN", default_value = "127.0.0.1:8080")]
    listen: String,
    /// Log format (RUST_LOG selects what is logged, default info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// A duration in the config's units (`500ms`, `2s`), between 100 ms and 1 h.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = Duration::from_micros(rayscope::config::units::parse_duration(s).map_err(|e| e.to_string())?.as_micros());
    if d < Duration::from_millis(100) || d > Duration::from_secs(3600) {
        return Err(format!("{s:?}: must be between 100ms and 1h"));
    }
    Ok(d)
}

/// A size in the config's units (`512MiB`, `1GiB`), at least 4 KiB.
fn parse_bytes(s: &str) -> Result<u64, String> {
    let v = rayscope::config::units::parse_bytes(s).map_err(|e| e.to_string())?.0;
    if v < 4096 {
        return Err(format!("{s:?}: at least 4KiB"));
    }
    Ok(v)
}

pub(super) fn observe(args: ObserveArgs) -> ExitCode {
    init_logging(args.log_format);
    let source = match (&args.trace, &args.ray) {
        (Some(dir), _) => Source::Trace(dir.clone()),
        (None, None) if args.push_only => Source::Push,
        (None, Some(url)) => match PullOptions::new(url) {
            Ok(mut p) => {
                p.token = args.token.clone().filter(|t| !t.trim().is_empty());
                Source::Ray(p)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
        (None, None) => unreachable!("clap requires --ray, --trace or --push-only"),
    };
    if args.record_segment_bytes > args.record_max_bytes {
        eprintln!("error: --record-segment-bytes must not be larger than --record-max-bytes");
        return ExitCode::from(2);
    }
    let mut opts = ObserveOptions::new(source);
    opts.poll_every = args.poll_every;
    opts.limits = StoreLimits { max_tasks: args.max_tasks as usize, ..StoreLimits::default() };
    opts.record = args
        .record
        .clone()
        .map(|d| (d, TraceLimits { segment_bytes: args.record_segment_bytes, max_bytes: args.record_max_bytes }));
    let cfg = match super::load_config(None, None, &[]) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut serve_opts = ServeOptions::new(cfg);
    // The host's readings describe this machine, not the observed cluster.
    serve_opts.host = None;
    let source_text = match &opts.source {
        Source::Ray(p) => p.base.clone(),
        Source::Trace(d) => d.display().to_string(),
        Source::Push => "Ray's Event Export".to_string(),
    };
    // The observer starts after the port is bound, so a taken port fails before Ray is asked.
    run_server(&args.listen.clone(), serve_opts, move |serve_opts, address| {
        tracing::info!(%address, source = %source_text, record = ?args.record, "observing");
        let observer = rayscope::observe::spawn(opts)?;
        if observer.inbox.is_some() {
            tracing::info!(
                "to push events, start Ray with RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR=http://{address}/api/observe/events \
                 RAY_enable_core_worker_ray_event_to_aggregator=1 RAY_enable_ray_event=1"
            );
        }
        serve_opts.observe = Some(ObserveServe { inbox: observer.inbox });
        Ok(observer.handle)
    })
}
