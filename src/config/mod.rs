//! Configuration: the YAML schema, its units, loading and validation.
//!
//! Owns: turning files into a validated [`Config`]. Must never: hand out a config that
//! failed validation, or report an error without the file, line, column and field.

mod diagnose;
pub mod ip_range;
mod locate;
pub mod schema;
mod tagged;
pub mod units;

pub use schema::*;
pub use units::{ByteSize, DurationSpec};

use std::fmt;
use std::path::Path;

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
pub fn load_str(text: &str, origin: &str) -> Result<Config, ConfigErrors> {
    diagnose::parse(text).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: origin.to_string(),
            line: e.line,
            column: e.column,
            field: e.field,
            message: e.message,
        }])
    })
}

/// Read, parse and validate a config file.
pub fn load_file(path: &Path) -> Result<Config, ConfigErrors> {
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
    load_str(&text, &origin)
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
    fn errors_display_without_unknown_parts() {
        let e = ConfigError { file: "f".into(), line: 0, column: 0, field: String::new(), message: "m".into() };
        assert_eq!(e.to_string(), "f: m");
        let e = ConfigError { file: "f".into(), line: 2, column: 3, field: "a.b".into(), message: "m".into() };
        assert_eq!(e.to_string(), "f:2:3: a.b: m");
    }
}
