//! `simulate --costs`: which costs a run takes and where each came from: a recorded
//! job's own trace (`--replay`'s default, read as `rayscope calibrate` reads it), a
//! costs file, or the reference machine's defaults; a cost the config itself sets
//! (in its file or by `--set`) stays the config's.
//!
//! Owns: the flag's value, loading the config with the costs beneath the config's own,
//! and the report's account of the costs (its `costs calibrated` line, the lines after
//! it, and the JSON's `costs`). Must never: change the run `--costs reference` makes
//! (it adds no override: the config as loaded, as before the flag existed).

use rayscope::calibrate::{self, TraceCosts};
use rayscope::config::calibration::{
    changed_costs, changed_costs_reason, CALIBRATED_OBJECT_STORE_COSTS, CALIBRATED_SCHEDULER_COSTS, CALIBRATION,
    CHANGED_COSTS_REASON,
};
use rayscope::config::{Config, Override};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// `--costs`'s value.
#[derive(Clone, Debug)]
pub(super) enum CostsArg {
    /// The recorded job's own, from its trace.
    Trace,
    /// The shipped defaults: the reference machine's.
    Reference,
    File(PathBuf),
}

pub(super) fn parse(s: &str) -> Result<CostsArg, String> {
    match s {
        "trace" => Ok(CostsArg::Trace),
        "reference" => Ok(CostsArg::Reference),
        "" => Err("give trace, reference or a costs file".into()),
        path => Ok(CostsArg::File(PathBuf::from(path))),
    }
}

/// Where the costs of a run come from, before the config's own.
pub(super) enum Origin {
    Trace(TraceCosts),
    File(PathBuf),
    Reference,
}

/// One calibrated cost of the run, with its source.
#[derive(Clone, Debug, Serialize)]
pub(super) struct Sourced {
    pub key: String,
    pub value: String,
    /// `trace`, `file`, `config` or `reference`.
    pub source: &'static str,
}

/// The costs a run takes.
pub(super) struct Plan {
    pub origin: Origin,
    overrides: Vec<Override>,
}

/// Ray's worker pool (`enable_worker_prestart`, on in every Ray since 1.x), which a run
/// with a measured worker start takes with it ([`Plan::new`]).
const PRESTART: &str = "scheduler.worker_prestart";

/// Where a trace's (or a `calibrate` fragment's) start was measured, the run also takes
/// Ray's own worker pool: the reference machine runs it off only because its costs were
/// fitted without it, where a start read from the user's cluster was fitted around
/// nothing. A config or `--set` that sets `scheduler.worker_prestart` keeps its value.
fn with_measured_pool(mut overrides: Vec<Override>) -> Vec<Override> {
    if overrides.iter().any(|o| o.key == "scheduler.worker_start_cpu") {
        overrides.push(Override::parse(&format!("{PRESTART}=true")).expect("a config path"));
    }
    overrides
}

impl Plan {
    pub fn new(arg: &CostsArg, trace: Option<TraceCosts>) -> Result<Plan, String> {
        match (arg, trace) {
            (CostsArg::Reference, _) => Ok(Plan { origin: Origin::Reference, overrides: Vec::new() }),
            (CostsArg::Trace, Some(t)) => {
                Ok(Plan { overrides: with_measured_pool(t.overrides()), origin: Origin::Trace(t) })
            }
            (CostsArg::Trace, None) => {
                Err("--costs trace: only a replay has a trace to read costs from (give --replay DIR)".into())
            }
            (CostsArg::File(path), _) => {
                let overrides = calibrate::costs_file::read(path).map_err(|e| e.to_string())?;
                // A fit's record (`fit.json`) is the suite's costs, fitted with the pool
                // off: it keeps it off. A fragment `calibrate` wrote was read from a trace.
                let fitted = calibrate::costs_file::is_fit_record(path);
                let overrides = if fitted { overrides } else { with_measured_pool(overrides) };
                Ok(Plan { origin: Origin::File(path.clone()), overrides })
            }
        }
    }

    /// The config `load` makes with these costs beneath the config's own: a cost the
    /// config (or `--set`) changed from its default keeps the config's value. Also each
    /// calibrated cost with its source, and the costs the config changed.
    pub fn load(
        &self,
        load: impl Fn(&[Override]) -> Result<Config, ExitCode>,
    ) -> Result<(Config, Vec<Sourced>, Vec<String>), ExitCode> {
        let own = load(&[])?;
        let by_config = changed_costs(&own);
        // The pool is no cost, but the config's own choice of it stands like one.
        let config_pool = own.scheduler.worker_prestart;
        let taken: Vec<Override> = self
            .overrides
            .iter()
            .filter(|o| !by_config.contains(&o.key))
            .filter(|o| !(config_pool && o.key == PRESTART))
            .cloned()
            .collect();
        let cfg = if taken.is_empty() { own } else { load(&taken)? };
        let source = match self.origin {
            Origin::Trace(_) => "trace",
            Origin::File(_) => "file",
            Origin::Reference => "reference",
        };
        let sched = serde_json::to_value(&cfg.scheduler).unwrap_or_default();
        let store = serde_json::to_value(&cfg.object_store).unwrap_or_default();
        let mut sourced = Vec::new();
        for (section, keys, values) in
            [("scheduler", CALIBRATED_SCHEDULER_COSTS, &sched), ("object_store", CALIBRATED_OBJECT_STORE_COSTS, &store)]
        {
            for k in keys {
                let key = format!("{section}.{k}");
                let Some(value) = values.get(k).map(rayscope::calibrate::value_text) else { continue };
                let source = if by_config.contains(&key) {
                    "config"
                } else if taken.iter().any(|o| o.key == key) {
                    source
                } else {
                    "reference"
                };
                sourced.push(Sourced { key, value, source });
            }
        }
        if config_pool || taken.iter().any(|o| o.key == PRESTART) {
            // `--set scheduler.worker_prestart=false` comes after the costs and wins.
            let pool = cfg.scheduler.worker_prestart;
            let source = if config_pool || !pool { "config" } else { source };
            sourced.push(Sourced { key: PRESTART.to_string(), value: pool.to_string(), source });
        }
        Ok((cfg, sourced, by_config))
    }

    /// Where the costs came from, in words, for the report's `costs calibrated` line.
    pub fn line(&self) -> String {
        match &self.origin {
            Origin::Reference => CALIBRATION.line(),
            Origin::Trace(t) if t.derived.is_empty() => format!(
                "the reference machine's: {} shows none of its costs cleanly (rayscope calibrate); {}",
                t.source,
                CALIBRATION.line()
            ),
            Origin::Trace(t) => format!(
                "this trace's, {} (rayscope calibrate: {} of its costs; the rest the reference machine's: {})",
                t.source,
                t.derived.len(),
                CALIBRATION.line()
            ),
            Origin::File(p) => format!(
                "the costs file {} (the costs it names; the rest the reference machine's: {})",
                p.display(),
                CALIBRATION.line()
            ),
        }
    }

    /// Whether the suite's errors (docs/fidelity.md's rows, the report's "measured on
    /// Ray") apply to a run with these costs: they were measured with the reference
    /// machine's, so only a run with those is quoted them. A replay with its trace's
    /// costs carries its own band instead (`prediction`).
    pub fn quotes_the_suite(&self) -> bool {
        matches!(self.origin, Origin::Reference)
    }

    /// The report's calibration line and warning made true of these costs: costs the
    /// trace or the file set are no config's change, and only the config's are named;
    /// the suite's errors, measured with other costs, are not quoted.
    pub fn adjust(&self, report: &mut rayscope::sim::Report, by_config: &[String]) {
        if self.quotes_the_suite() {
            return;
        }
        report.measured.clear();
        report.calibration = self.line();
        report.calibration_beyond.retain(|r| !r.starts_with(CHANGED_COSTS_REASON));
        report.calibration_beyond.extend(changed_costs_reason(by_config));
    }
}

/// The report's lines on the costs: how many came from where, and those not the
/// reference machine's by name.
pub(super) fn text(sourced: &[Sourced]) -> String {
    let mut out = String::new();
    let named = |source: &str| -> Vec<String> {
        sourced.iter().filter(|s| s.source == source).map(|s| format!("{} {}", s.key, s.value)).collect()
    };
    let counts: Vec<String> = [
        ("trace", "from this trace"),
        ("file", "from the costs file"),
        ("config", "set by the config"),
        ("reference", "the reference machine's"),
    ]
    .iter()
    .filter_map(|(source, words)| {
        let n = sourced.iter().filter(|s| s.source == *source).count();
        (n > 0).then(|| format!("{n} {words}"))
    })
    .collect();
    out.push_str(&format!("  costs             {}\n", counts.join(", ")));
    for (source, words) in
        [("trace", "from this trace"), ("file", "from the costs file"), ("config", "set by the config")]
    {
        let list = named(source);
        if !list.is_empty() {
            out.push_str(&format!("    {words}: {}\n", list.join(", ")));
        }
    }
    out
}
