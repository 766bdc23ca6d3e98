//! Which Ray release's metric series the exporter imitates: its version and its
//! `RAY_metric_cardinality_level`.
//!
//! Owns: the supported range (the releases the bundle and the exporter are checked
//! against on real Ray, 2.49 and 2.60, and those between) and the cardinality levels
//! with each version's default. Must never: know how a series is written (that is
//! `metrics`' business); it only says which release and which level.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The oldest Ray release whose series rayscope imitates (the first with Event Export).
pub const OLDEST_RAY: (u32, u32) = (2, 49);
/// The newest Ray release whose series rayscope imitates.
pub const NEWEST_RAY: (u32, u32) = (2, 60);
/// The first release whose default `RAY_metric_cardinality_level` is `recommended`.
const RECOMMENDED_BY_DEFAULT_FROM: (u32, u32) = (2, 53);
/// The first release whose default metrics backend is OpenTelemetry
/// (`RAY_enable_open_telemetry`); before it, OpenCensus.
pub const OPEN_TELEMETRY_BY_DEFAULT_FROM: (u32, u32) = (2, 52);

/// `major.minor` of a Ray version string (`2.49`, `2.49.2`), if it is one.
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    // A patch part, when present, must be a number too: `2.49.x` is not a release.
    match parts.next() {
        Some(patch) if patch.parse::<u32>().is_err() => None,
        _ => parts.next().is_none().then_some((major, minor)),
    }
}

/// Why a `ray_version` (or `--ray-version`) is not one rayscope imitates; each says
/// the supported range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RayVersionError {
    #[error("Ray {version} is outside what rayscope imitates ({range}); pick one of those")]
    Unsupported { version: String, range: String },
    #[error("`{version}` is not a Ray version such as 2.60 or 2.49.2 (supported: {range})")]
    NotAVersion { version: String, range: String },
}

/// `Ok` for a version in the supported range, else what would be valid.
pub fn check_ray_version(version: &str) -> Result<(u32, u32), RayVersionError> {
    let range = format!("{}.{} to {}.{}", OLDEST_RAY.0, OLDEST_RAY.1, NEWEST_RAY.0, NEWEST_RAY.1);
    let version = version.to_string();
    match major_minor(&version) {
        Some(v) if (OLDEST_RAY..=NEWEST_RAY).contains(&v) => Ok(v),
        Some(_) => Err(RayVersionError::Unsupported { version, range }),
        None => Err(RayVersionError::NotAVersion { version, range }),
    }
}

/// A `RAY_metric_cardinality_level` (or `--metric-cardinality`) that is not a level.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a metric cardinality level: use legacy, recommended or low")]
pub struct CardinalityError(pub String);

/// Ray's `RAY_metric_cardinality_level`: which high-cardinality labels Ray drops from
/// `ray_tasks` and `ray_actors` (`python/ray/_private/telemetry/metric_cardinality.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricCardinality {
    /// Every label, `WorkerId` included (one series per worker). Ray's default up to 2.52.
    Legacy,
    /// `WorkerId` dropped, values summed over workers. Ray's default from 2.53.
    Recommended,
    /// As `recommended`, and the task or actor `Name` dropped too.
    Low,
}

impl MetricCardinality {
    /// The level Ray `major.minor` uses when `RAY_metric_cardinality_level` is unset.
    pub fn default_for(version: (u32, u32)) -> MetricCardinality {
        if version >= RECOMMENDED_BY_DEFAULT_FROM {
            MetricCardinality::Recommended
        } else {
            MetricCardinality::Legacy
        }
    }

    /// What the level does on Ray `major.minor` with its default backend. Before
    /// OpenTelemetry became the default, Ray's OpenCensus path (the dashboard agent's
    /// `metrics_agent.py`) only acts on `recommended`: `low` keeps every label there,
    /// as `legacy` does (seen on a real Ray 2.49.2 with `RAY_metric_cardinality_level=low`:
    /// `ray_tasks` kept `WorkerId` and `Name`).
    pub fn effective(self, version: (u32, u32)) -> MetricCardinality {
        if self == MetricCardinality::Low && version < OPEN_TELEMETRY_BY_DEFAULT_FROM {
            MetricCardinality::Legacy
        } else {
            self
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MetricCardinality::Legacy => "legacy",
            MetricCardinality::Recommended => "recommended",
            MetricCardinality::Low => "low",
        }
    }
}

impl fmt::Display for MetricCardinality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MetricCardinality {
    type Err = CardinalityError;

    /// Case-insensitive, as Ray reads the variable. Ray itself falls back to `legacy`
    /// on an unknown value; rayscope says so instead of guessing.
    fn from_str(s: &str) -> Result<Self, CardinalityError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "legacy" => Ok(MetricCardinality::Legacy),
            "recommended" => Ok(MetricCardinality::Recommended),
            "low" => Ok(MetricCardinality::Low),
            _ => Err(CardinalityError(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_supported_range_is_2_49_to_2_60() {
        assert_eq!(check_ray_version("2.49"), Ok((2, 49)));
        assert_eq!(check_ray_version("2.49.2"), Ok((2, 49)));
        assert_eq!(check_ray_version("2.60.0"), Ok((2, 60)));
        assert_eq!(check_ray_version(" 2.54.1 "), Ok((2, 54)));
        let old = check_ray_version("2.48.0").unwrap_err().to_string();
        assert!(old.contains("2.48.0") && old.contains("2.49 to 2.60"), "{old}");
        assert!(check_ray_version("2.61").unwrap_err().to_string().contains("outside"));
        assert!(check_ray_version("3.0").is_err());
        for bad in ["nightly", "2", "2.x", "2.49.x", "", "2.49.2.1"] {
            assert!(check_ray_version(bad).unwrap_err().to_string().contains("not a Ray version"), "{bad}");
        }
    }

    #[test]
    fn recommended_is_the_default_from_2_53() {
        assert_eq!(MetricCardinality::default_for((2, 49)), MetricCardinality::Legacy);
        assert_eq!(MetricCardinality::default_for((2, 52)), MetricCardinality::Legacy);
        assert_eq!(MetricCardinality::default_for((2, 53)), MetricCardinality::Recommended);
        assert_eq!(MetricCardinality::default_for((2, 60)), MetricCardinality::Recommended);
    }

    #[test]
    fn low_keeps_every_label_on_the_opencensus_backend() {
        assert_eq!(MetricCardinality::Low.effective((2, 49)), MetricCardinality::Legacy);
        assert_eq!(MetricCardinality::Low.effective((2, 60)), MetricCardinality::Low);
        assert_eq!(MetricCardinality::Recommended.effective((2, 49)), MetricCardinality::Recommended);
    }

    #[test]
    fn a_config_names_its_version_and_level_or_is_told_what_is_valid() {
        let load = |cluster: &str| crate::config::load_str(&format!("cluster: {{{cluster}}}\n"), "c.yaml");
        let cfg = load("ray_version: '2.49.2', metric_cardinality_level: low").unwrap();
        assert_eq!(cfg.cluster.metric_cardinality_level, Some(MetricCardinality::Low));
        let err = load("ray_version: '2.40.0'").unwrap_err().to_string();
        assert!(err.contains("cluster.ray_version") && err.contains("2.49 to 2.60"), "{err}");
        let err = load("metric_cardinality_level: high").unwrap_err().to_string();
        assert!(err.contains("metric_cardinality_level"), "{err}");
    }

    #[test]
    fn levels_parse_as_ray_reads_them() {
        assert_eq!("LOW".parse(), Ok(MetricCardinality::Low));
        assert_eq!("recommended".parse(), Ok(MetricCardinality::Recommended));
        assert!("high".parse::<MetricCardinality>().unwrap_err().to_string().contains("legacy, recommended or low"));
    }
}
