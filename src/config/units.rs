//! Human units in config files: durations (`250ms`, `5s`, `2m`, `1h`, or a number of
//! seconds), a duration's range (`{min: 1s, max: 3s}`), and byte sizes (`512MiB`,
//! `4GB`, or a number of bytes).

use crate::model::Bytes;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// A non-negative duration in microseconds of virtual time.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct DurationSpec(pub u64);

impl DurationSpec {
    pub fn secs(s: f64) -> DurationSpec {
        DurationSpec((s * 1e6).round() as u64)
    }
    pub fn as_micros(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

/// The longest duration accepted: 100 years. The virtual clock counts µs in a u64
/// (584,000 years), and durations are added to it and to each other; a duration
/// near its end wrapped the clock and made tasks finish at once.
pub const MAX_DURATION_US: u64 = 36_500 * 86_400 * 1_000_000;

/// Why a duration or a size was refused. Each names the value as written (`shown`:
/// quoted when it was text) and what would be valid; the config loader adds the file,
/// line and field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UnitError {
    #[error("invalid duration {0}: expected a number with a unit such as 250ms, 5s, 2m or 1h")]
    DurationNotANumber(String),
    #[error("invalid duration {0}: must be zero or positive")]
    NegativeDuration(String),
    #[error("invalid duration {0}: at most 36500d (100 years), the range of the simulation clock")]
    DurationTooLong(String),
    #[error("invalid duration {0}: unknown unit {1:?} (valid units: us, ms, s, m, h, d)")]
    DurationUnit(String, String),
    #[error("invalid size {0}: expected a number with a unit such as 512MiB, 4GiB or 100KB")]
    SizeNotANumber(String),
    #[error("invalid size {0}: must be zero or positive")]
    NegativeSize(String),
    #[error("invalid size {0}: unknown unit {1:?} (valid units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")]
    SizeUnit(String, String),
}

/// `secs` seconds as a duration, or why not (`shown`: the value as written).
pub(crate) fn checked_secs(secs: f64, shown: &dyn fmt::Display) -> Result<DurationSpec, UnitError> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(UnitError::NegativeDuration(shown.to_string()));
    }
    if secs * 1e6 > MAX_DURATION_US as f64 {
        return Err(UnitError::DurationTooLong(shown.to_string()));
    }
    Ok(DurationSpec::secs(secs))
}

pub fn parse_duration(s: &str) -> Result<DurationSpec, UnitError> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.trim().parse().map_err(|_| UnitError::DurationNotANumber(format!("{s:?}")))?;
    if !v.is_finite() || v < 0.0 {
        return Err(UnitError::NegativeDuration(format!("{s:?}")));
    }
    let scale = match unit.trim() {
        "us" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        other => return Err(UnitError::DurationUnit(format!("{s:?}"), other.to_string())),
    };
    checked_secs(v * scale, &format_args!("{s:?}"))
}

impl fmt::Display for DurationSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0;
        if us.is_multiple_of(3_600_000_000) && us > 0 {
            write!(f, "{}h", us / 3_600_000_000)
        } else if us.is_multiple_of(60_000_000) && us > 0 {
            write!(f, "{}m", us / 60_000_000)
        } else if us.is_multiple_of(1_000_000) {
            write!(f, "{}s", us / 1_000_000)
        } else if us.is_multiple_of(1000) {
            write!(f, "{}ms", us / 1000)
        } else {
            write!(f, "{}us", us)
        }
    }
}

impl Serialize for DurationSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for DurationSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = DurationSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as 250ms, 5s, 2m, 1h, or a number of seconds")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DurationSpec, E> {
                parse_duration(v).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<DurationSpec, E> {
                checked_secs(v, &v).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<DurationSpec, E> {
                checked_secs(v as f64, &v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DurationSpec, E> {
                checked_secs(v as f64, &v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A size as written in a config file or on the command line, in [`Bytes`].
pub fn parse_bytes(s: &str) -> Result<Bytes, UnitError> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.trim().parse().map_err(|_| UnitError::SizeNotANumber(format!("{s:?}")))?;
    if !v.is_finite() || v < 0.0 {
        return Err(UnitError::NegativeSize(format!("{s:?}")));
    }
    let scale: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => return Err(UnitError::SizeUnit(format!("{s:?}"), other.to_string())),
    };
    Ok(Bytes((v * scale).round() as u64))
}

/// A size in a config file: a number of bytes, or a number with a unit (`512MiB`).
/// Here rather than in `model`, which knows no config syntax; serialized, it is the
/// bare number (`Bytes`'s own `Serialize`).
impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as 512MiB, 4GiB, or a number of bytes")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
                parse_bytes(v).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bytes, E> {
                if v < 0 {
                    return Err(E::custom(UnitError::NegativeSize(v.to_string())));
                }
                Ok(Bytes(v as u64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Bytes, E> {
                if v < 0.0 || !v.is_finite() {
                    return Err(E::custom(UnitError::NegativeSize(v.to_string())));
                }
                Ok(Bytes(v.round() as u64))
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration, fixed (`2s`) or uniform over a range (`{min: 1s, max: 3s}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DurationDist {
    pub min: DurationSpec,
    pub max: DurationSpec,
}

impl DurationDist {
    pub fn fixed(d: DurationSpec) -> DurationDist {
        DurationDist { min: d, max: d }
    }
}

impl<'de> Deserialize<'de> for DurationDist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DurationDist;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration (e.g. 2s) or a range {min: 1s, max: 3s}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DurationDist, E> {
                parse_duration(v).map(DurationDist::fixed).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<DurationDist, E> {
                checked_secs(v as f64, &v).map(DurationDist::fixed).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DurationDist, E> {
                checked_secs(v as f64, &v).map(DurationDist::fixed).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<DurationDist, E> {
                checked_secs(v, &v).map(DurationDist::fixed).map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DurationDist, A::Error> {
                let (mut min, mut max) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "min" => min = Some(map.next_value::<DurationSpec>()?),
                        "max" => max = Some(map.next_value::<DurationSpec>()?),
                        other => return Err(de::Error::unknown_field(other, &["min", "max"])),
                    }
                }
                let min = min.ok_or_else(|| de::Error::missing_field("min"))?;
                let max = max.ok_or_else(|| de::Error::missing_field("max"))?;
                if max < min {
                    return Err(de::Error::custom(format!("range max {max} is below min {min}")));
                }
                Ok(DurationDist { min, max })
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("250ms").unwrap().0, 250_000);
        assert_eq!(parse_duration("5s").unwrap().0, 5_000_000);
        assert_eq!(parse_duration("2m").unwrap().0, 120_000_000);
        assert_eq!(parse_duration("1.5h").unwrap().0, 5_400_000_000);
        assert!(parse_duration("5 parsecs").unwrap_err().to_string().contains("unknown unit"));
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_bytes("1KiB").unwrap().0, 1024);
        assert_eq!(parse_bytes("2GB").unwrap().0, 2_000_000_000);
        assert_eq!(parse_bytes("100").unwrap().0, 100);
        assert!(parse_bytes("3 bananas").is_err());
    }
}
