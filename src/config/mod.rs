//! Configuration: the YAML schema, its units, loading and validation.
//!
//! Owns: turning files into a validated [`Config`]. Must never: hand out a config that
//! failed validation, or report an error without the file, line, column and field.

pub mod calibration;
mod defaults;
pub mod depth;
mod diagnose;
pub mod ip_range;
pub mod limits;
mod locate;
pub mod overrides;
pub mod ray_series;
pub mod replay;
pub mod scheduler;
pub mod schema;
pub mod server_limits;
mod suggest;
mod tagged;
pub mod units;
pub mod validate;
pub mod workloads;

/// The reference machine's `scheduler.driver_slowdown_per_busy_worker`, which
/// `rayscope calibrate` takes out of a recorded start (`calibrate/figures/starts.rs`).
pub(crate) use defaults::DRIVER_SLOWDOWN_PER_BUSY_WORKER;
pub use limits::LimitsConfig;
pub use overrides::Override;
pub use ray_series::MetricCardinality;
pub use scheduler::SchedulerConfig;
pub use schema::*;
pub use server_limits::ServerLimits;
pub use units::{DurationDist, DurationSpec};
pub use validate::{validate, Problem};

use locate::{PosMap, Target};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The embedded default: what `rayscope` runs with no `--config`.
pub const DEFAULT_CONFIG_YAML: &str = include_str!("../../examples/default.yaml");
pub const DEFAULT_CONFIG_NAME: &str = "<embedded examples/default.yaml>";

/// One problem in a config file, located as precisely as the parser allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// Dotted field path, e.g. `cluster.node_types[0].cpu`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    /// `file:line:column: field: message`, leaving out what is unknown (line 0, no field).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// All problems found in one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Parse and validate config text; `origin` names the file in errors.
///
/// A YAML or type error stops parsing, so it is reported alone; semantic problems are
/// all reported together, in document order.
pub fn load_str(text: &str, origin: &str) -> Result<Config, ConfigErrors> {
    load_str_with(text, origin, &[])
}

/// Like [`load_str`], with `--set` overrides written into the document before it is
/// typed and validated. An error about an overridden value names the `--set` argument;
/// every other error keeps its line and column in `text`.
pub fn load_str_with(text: &str, origin: &str, overrides: &[Override]) -> Result<Config, ConfigErrors> {
    // Editors on Windows start UTF-8 files with a byte-order mark; YAML allows one, but
    // the parser read it as content before a second document.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let in_file = |line, column, field, message| ConfigError { file: origin.to_string(), line, column, field, message };
    let by_override =
        |o: &Override, field: String, message| ConfigError { file: o.to_string(), line: 0, column: 0, field, message };
    let attribute =
        |line, column, field: String, message: String| match overrides.iter().rev().find(|o| o.covers(&field)) {
            Some(o) => by_override(o, field, message),
            None => in_file(line, column, field, message),
        };
    depth::check(text).map_err(|e| ConfigErrors(vec![in_file(e.line, e.column, String::new(), e.to_string())]))?;
    let mut doc = diagnose::parse_document(text)
        .map_err(|e| ConfigErrors(vec![in_file(e.line, e.column, e.field, e.message)]))?;
    for o in overrides {
        o.apply(&mut doc).map_err(|message| ConfigErrors(vec![by_override(o, o.key.clone(), message.to_string())]))?;
    }
    let config = diagnose::deserialize(doc, text)
        .map_err(|e| ConfigErrors(vec![attribute(e.line, e.column, e.field, e.message)]))?;
    let problems = validate::validate(&config);
    if problems.is_empty() {
        return Ok(config);
    }
    let map = PosMap::build(text);
    let mut errors: Vec<ConfigError> = problems
        .into_iter()
        .map(|p| {
            let (line, column) = map.locate(&p.field, Target::Value);
            attribute(line, column, p.field, p.message)
        })
        .collect();
    errors.sort_by_key(|e| (e.line, e.column));
    Err(ConfigErrors(errors))
}

/// Read, parse and validate a config file.
pub fn load_file(path: &Path) -> Result<Config, ConfigErrors> {
    load_file_with(path, &[])
}

/// [`load_file`] with `--set` overrides (see [`load_str_with`]).
pub fn load_file_with(path: &Path, overrides: &[Override]) -> Result<Config, ConfigErrors> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: origin.clone(),
            line: 0,
            column: 0,
            field: String::new(),
            message: format!("cannot read file: {e}"),
        }])
    })?;
    load_str_with(&text, &origin, overrides)
}

/// `rayscope check FILE...`: print `FILE: ok` on stdout for each valid file and each
/// problem on stderr, one per line. Returns the exit status: 0 if every file is valid,
/// 2 otherwise (unreadable files included).
pub fn check_files(paths: &[PathBuf]) -> i32 {
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    check_files_to(paths, &mut stdout.lock(), &mut stderr.lock())
}

fn check_files_to(paths: &[PathBuf], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if paths.is_empty() {
        let _ = writeln!(err, "check: no config files given; usage: rayscope check FILE...");
        return 2;
    }
    let mut status = 0;
    for path in paths {
        match load_file(path) {
            Ok(_) => {
                let _ = writeln!(out, "{}: ok", path.display());
            }
            Err(errors) => {
                status = 2;
                for e in &errors.0 {
                    let _ = writeln!(err, "{e}");
                }
            }
        }
    }
    status
}

/// The embedded default config (always valid: a test proves it).
pub fn default_config() -> Config {
    load_str(DEFAULT_CONFIG_YAML, DEFAULT_CONFIG_NAME).expect("embedded default config is valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_default_is_valid() {
        default_config();
    }

    #[test]
    fn check_reports_each_file_and_exits_2_on_any_problem() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.yaml");
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&good, "sim: {seed: 7}\n").unwrap();
        std::fs::write(&bad, "sim:\n  speed: 0\n  seed: -1\n").unwrap();
        let missing = dir.path().join("missing.yaml");

        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(check_files_to(std::slice::from_ref(&good), &mut out, &mut err), 0);
        assert_eq!(String::from_utf8(out).unwrap(), format!("{}: ok\n", good.display()));
        assert!(err.is_empty());

        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(check_files_to(&[good.clone(), bad.clone(), missing.clone()], &mut out, &mut err), 2);
        let err = String::from_utf8(err).unwrap();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{err}");
        assert!(
            lines[0].starts_with(&format!("{}:3:9: sim.seed: invalid value: integer `-1`", bad.display())),
            "{err}"
        );
        assert!(lines[1].starts_with(&format!("{}: cannot read file: ", missing.display())), "{err}");
        assert!(lines[1].contains("os error"), "{err}");
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 1);
    }

    #[test]
    fn errors_display_without_unknown_parts() {
        let e = ConfigError { file: "f".into(), line: 0, column: 0, field: String::new(), message: "m".into() };
        assert_eq!(e.to_string(), "f: m");
        let e = ConfigError { file: "f".into(), line: 2, column: 3, field: "a.b".into(), message: "m".into() };
        assert_eq!(e.to_string(), "f:2:3: a.b: m");
    }
}
