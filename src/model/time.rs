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

/// `x.round() as u64`, the same for every `x` (half away from zero, negative and NaN
/// to 0, past `u64::MAX` to it), without a call to libm's `round`: the node cores'
/// placements round a stretched cost a few times a task, and x86-64's baseline has no
/// instruction for it (1 % of scale.yaml's samples were `round`).
#[inline]
pub fn round_to_u64(x: f64) -> u64 {
    const EXACT: f64 = (1u64 << 53) as f64;
    let whole = x as u64;
    // Below 2^53 the whole part and the difference are exact; from it on `x` is whole.
    if x < EXACT && x - whole as f64 >= 0.5 {
        whole + 1
    } else {
        whole
    }
}

#[cfg(test)]
mod round_tests {
    use super::round_to_u64;

    #[test]
    fn it_rounds_as_f64_round_does() {
        let ties = [0.5, 1.5, 2.5, -0.5, -1.5, 123456.5, 4503599627370495.5];
        let near = [0.0, -0.0, -0.49, 0.49999999999999994, 123456.49999, 123456.50001, f64::MIN_POSITIVE];
        let large = [4503599627370496.0, 9007199254740993.0, 1e19, 1.8446744073709552e19, 1e300];
        let special = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
        let mut cases: Vec<f64> = [&ties[..], &near, &large, &special].concat();
        // And a spread of costs as the cores compute them.
        let mut x = 0.37_f64;
        for _ in 0..100_000 {
            x = (x * 1.618_033_988_749_895 + 0.123) % 1e7;
            cases.push(x);
            cases.push(x.floor() + 0.5);
        }
        for x in cases {
            assert_eq!(round_to_u64(x), x.round() as u64, "{x:e}");
        }
    }
}
