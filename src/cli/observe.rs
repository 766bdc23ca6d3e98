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
use rayscope::observe::runner::LAST_READS_BUDGET;
use rayscope::observe::store::StoreLimits;
use rayscope::observe::trace::TraceLimits;
use rayscope::observe::{Clusters, ObserveOptions, Source};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

#[derive(clap::Args)]
pub(super) struct ObserveArgs {
    /// The Ray dashboard to read, e.g. http://127.0.0.1:8265 (Ray's State and Jobs APIs).
    /// Repeat it as NAME=URL to observe several clusters, each kept apart under its
    /// name (pages, State API and Flow Insight take ?cluster=NAME; --record writes
    /// DIR/NAME); an unnamed URL is the cluster `default`.
    #[arg(long, value_name = "[NAME=]URL", env = "RAYSCOPE_RAY_ADDRESS", required_unless_present_any = ["trace", "push_only"])]
    ray: Vec<String>,
    /// Clusters observed at most: those --ray names, and those pushes bring (posted to
    /// /api/observe/events/NAME, or named by their events' session); one more is
    /// refused and counted. Each holds up to --max-tasks.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=64))]
    max_clusters: u64,
    /// Take only what Ray's Event Export pushes to /api/observe/events; poll nothing
    /// (for a cluster whose dashboard this machine cannot reach, or to spare it polls).
    #[arg(long, conflicts_with_all = ["ray", "trace"])]
    push_only: bool,
    /// Bearer token of a Ray cluster in token mode (sent as `Authorization: Bearer`,
    /// to every --ray cluster) [default: the one Ray's own tools send: RAY_AUTH_TOKEN,
    /// else the file RAY_AUTH_TOKEN_PATH names, else ~/.ray/auth_token, if any].
    #[arg(long, env = "RAYSCOPE_RAY_TOKEN", hide_env_values = true, requires = "ray")]
    token: Option<String>,
    /// Show a trace recorded earlier with --record instead of a live cluster (no Ray
    /// needed); a directory of several clusters' traces shows each, by its name.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["ray", "record"])]
    trace: Option<PathBuf>,
    /// Append everything observed to a trace in DIR (created if missing), which
    /// `rayscope observe --trace`, `rayscope flow --trace` and `simulate --replay` read.
    /// While recording, the CPU time of Ray's workers on this machine is read too (ten
    /// times a second), so a replay knows which functions computed.
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    /// A node address that is this machine's though none of its interfaces shows it
    /// (a NAT'ed or public --node-ip-address): the recording reads its workers' CPU
    /// time too. Without it a worker of a node at such an address is taken for another
    /// host's and not read. Repeatable.
    #[arg(long, value_name = "IP", requires = "record")]
    local_node_ip: Vec<std::net::IpAddr>,
    /// The trace's bound: past it the oldest segments are deleted [default: 1GiB].
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, default_value = "1GiB")]
    record_max_bytes: u64,
    /// A segment of the trace is closed (and a new one opened) past this size.
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, default_value = "64MiB")]
    record_segment_bytes: u64,
    /// How often Ray's APIs are polled, e.g. 2s or 500ms.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2s")]
    poll_every: Duration,
    /// Task attempts kept in memory, each cluster's; past it the oldest ended jobs are
    /// forgotten (a trace keeps them).
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

/// The `--ray` values as (name, source): `NAME=URL` or a bare URL (the cluster
/// `default`), at most one bare, and no name twice.
fn pull_sources(values: &[String], token: Option<&str>) -> Result<Vec<(Option<String>, Source)>, String> {
    let mut out: Vec<(Option<String>, Source)> = Vec::new();
    for v in values {
        let v = v.trim();
        // `NAME=` comes before the URL's scheme; a URL's own `=` comes after it.
        let (name, url) = match v.split_once('=') {
            Some((n, u)) if !n.contains("://") => (Some(n.trim().to_string()), u.trim()),
            _ => (None, v),
        };
        if let Some(n) = &name {
            rayscope::observe::clusters::check_name(n).map_err(|e| format!("--ray {v:?}: {e}"))?;
            if out.iter().any(|(m, _)| m.as_ref() == Some(n)) {
                return Err(format!("--ray {v:?}: cluster {n:?} is named twice"));
            }
        } else if out.iter().any(|(m, _)| m.is_none()) {
            return Err(format!("--ray {v:?}: only one --ray may be unnamed; name the others, as --ray NAME=URL"));
        }
        let mut p = PullOptions::new(url).map_err(|e| e.to_string())?;
        p.token = token.map(str::to_string).filter(|t| !t.trim().is_empty());
        out.push((name, Source::Ray(p)));
    }
    // The unnamed one is the cluster `default`: it comes first.
    out.sort_by_key(|(n, _)| n.is_some());
    Ok(out)
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

/// The token Ray's own tools send when none is given: `RAY_AUTH_TOKEN`, else the file
/// `RAY_AUTH_TOKEN_PATH` names, else `~/.ray/auth_token`. Ray 2.60 turns token mode on
/// for a new local `ray.init()` (writing that file) and for every cluster started later
/// on a machine that has it. With the place it came from, for the log.
fn ray_default_token(env: impl Fn(&str) -> Option<String>, home: Option<PathBuf>) -> Option<(String, String)> {
    if let Some(t) = env("RAY_AUTH_TOKEN").filter(|t| !t.trim().is_empty()) {
        return Some((t.trim().to_string(), "RAY_AUTH_TOKEN".into()));
    }
    let path = env("RAY_AUTH_TOKEN_PATH").map(PathBuf::from).or_else(|| Some(home?.join(".ray/auth_token")))?;
    let token = std::fs::read_to_string(&path).ok()?;
    let token = token.trim();
    (!token.is_empty()).then(|| (token.to_string(), path.display().to_string()))
}

pub(super) fn observe(args: ObserveArgs) -> ExitCode {
    init_logging(args.log_format);
    let token = args.token.clone().or_else(|| {
        if args.ray.is_empty() {
            return None;
        }
        let (token, from) = ray_default_token(|k| std::env::var(k).ok(), std::env::var_os("HOME").map(PathBuf::from))?;
        tracing::info!(from = %from, "sending Ray's own auth token to --ray (--token overrides it)");
        Some(token)
    });
    let sources = match pull_sources(&args.ray, token.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let (name, source, more) = match (&args.trace, sources.split_first()) {
        (Some(dir), _) => (None, Source::Trace(dir.clone()), Vec::new()),
        (None, None) if args.push_only => (None, Source::Push, Vec::new()),
        (None, Some(((name, first), rest))) => (
            name.clone(),
            first.clone(),
            rest.iter().map(|(n, s)| (n.clone().expect("pull_sources names all but the first"), s.clone())).collect(),
        ),
        (None, None) => unreachable!("clap requires --ray, --trace or --push-only"),
    };
    if args.record_segment_bytes > args.record_max_bytes {
        eprintln!("error: --record-segment-bytes must not be larger than --record-max-bytes");
        return ExitCode::from(2);
    }
    let mut opts = ObserveOptions::new(source);
    opts.name = name;
    opts.more = more;
    opts.max_clusters = args.max_clusters as usize;
    opts.poll_every = args.poll_every;
    opts.limits = StoreLimits { max_tasks: args.max_tasks as usize, ..StoreLimits::default() };
    opts.local_node_ips = args.local_node_ip.clone();
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
    let text = |s: &Source| match s {
        Source::Ray(p) => p.base.clone(),
        Source::Trace(d) => d.display().to_string(),
        Source::Push => "Ray's Event Export".to_string(),
    };
    let mut source_text = text(&opts.source);
    for (name, s) in &opts.more {
        source_text.push_str(&format!(", {name}={}", text(s)));
    }
    // The observer starts after the port is bound, so a taken port fails before Ray is asked.
    let started: Arc<Mutex<Option<Arc<Clusters>>>> = Arc::default();
    let stash = started.clone();
    let code = run_server(&args.listen.clone(), serve_opts, move |serve_opts, address| {
        tracing::info!(%address, source = %source_text, record = ?args.record, "observing");
        let observer = rayscope::observe::spawn(opts).map_err(|e| e.to_string())?;
        if observer.inbox.is_some() {
            tracing::info!(
                "to push events, start Ray with RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR=http://{address}/api/observe/events \
                 (or .../api/observe/events/NAME for cluster NAME) RAY_enable_core_worker_ray_event_to_aggregator=1 RAY_enable_ray_event=1"
            );
        }
        serve_opts.clusters = Some(observer.clusters.clone());
        *stash.lock().unwrap_or_else(PoisonError::into_inner) = Some(observer.clusters.clone());
        serve_opts.observe = Some(ObserveServe { inbox: observer.inbox });
        Ok(observer.handle)
    });
    // Stopped: a recording observer reads ended jobs that have not settled once more.
    let clusters = started.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(c) = clusters {
        if !c.wait_stopped(LAST_READS_BUDGET) {
            tracing::warn!(
                "an observer was still reading Ray at the stop; what it had not written is not in the trace"
            );
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::ray_default_token;
    use std::collections::BTreeMap;

    #[test]
    fn rays_own_token_is_taken_from_its_variable_its_path_or_the_home_file_in_that_order() {
        let home = tempfile::tempdir().unwrap();
        let vars = |pairs: &[(&str, String)]| {
            let m: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            move |k: &str| m.get(k).cloned()
        };
        assert_eq!(ray_default_token(vars(&[]), Some(home.path().into())), None, "no token anywhere");
        std::fs::create_dir(home.path().join(".ray")).unwrap();
        std::fs::write(home.path().join(".ray/auth_token"), "from-home\n").unwrap();
        let (t, from) = ray_default_token(vars(&[]), Some(home.path().into())).unwrap();
        assert_eq!(t, "from-home");
        assert!(from.ends_with(".ray/auth_token"), "{from}");
        let other = home.path().join("other");
        std::fs::write(&other, "from-path").unwrap();
        let path = vars(&[("RAY_AUTH_TOKEN_PATH", other.display().to_string())]);
        assert_eq!(ray_default_token(path, Some(home.path().into())).unwrap().0, "from-path");
        let both = vars(&[("RAY_AUTH_TOKEN", "from-var".into()), ("RAY_AUTH_TOKEN_PATH", other.display().to_string())]);
        assert_eq!(
            ray_default_token(both, Some(home.path().into())).unwrap(),
            ("from-var".into(), "RAY_AUTH_TOKEN".into())
        );
        std::fs::write(home.path().join(".ray/auth_token"), "  \n").unwrap();
        assert_eq!(ray_default_token(vars(&[]), Some(home.path().into())), None, "an empty file is no token");
    }
}
