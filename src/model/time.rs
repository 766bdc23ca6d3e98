//! Virtual time as it crosses modules: an instant of the run, in µs since it began.
//!
//! The engine keeps its clock and its records in bare `u64` µs (its hot paths add and
//! compare them); what it publishes to readers (`snapshot`) is a [`VirtualTime`], so a
//! reader cannot take an instant for a duration, milliseconds or Unix time.

use serde::Serialize;
use std::fmt;

/// An instant of virtual time: µs since the run (or, observing, the trace) began.
/// Serialized as the bare number, as it was before it had a type.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug, Serialize)]
#[serde(transparent)]
pub struct VirtualTime(pub u64);

impl VirtualTime {
    pub const ZERO: VirtualTime = VirtualTime(0);

    #[inline]
    pub fn as_micros(self) -> u64 {
        self.0
    }

    #[inline]
    pub fn as_millis(self) -> u64 {
        self.0 / 1000
    }

    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// µs from `earlier` to this instant, 0 if `earlier` is later.
    #[inline]
    pub fn micros_since(self, earlier: VirtualTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for VirtualTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_reads_in_each_unit_and_serializes_bare() {
        let t = VirtualTime(2_500_000);
        assert_eq!((t.as_micros(), t.as_millis(), t.as_secs_f64()), (2_500_000, 2_500, 2.5));
        assert_eq!(t.micros_since(VirtualTime(500_000)), 2_000_000);
        assert_eq!(VirtualTime(1).micros_since(t), 0);
        assert_eq!(serde_json::to_string(&t).unwrap(), "2500000");
    }
}
