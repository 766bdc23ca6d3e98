//! An optional id or time in its own size: `Option<u64>` takes 16 bytes, this 8. A
//! pending task holds several (its caller, its actor, its node, its start), and a
//! driver far ahead of its cluster holds hundreds of thousands of pending tasks
//! (docs/benchmarks-history.md, "What a pending task costs").
//!
//! Must never: hold the type's largest value as a value (it is "none"): ids and node
//! indexes are dense counters and times are µs of virtual time, far below it.

use super::ids::{ActorId, NodeIdx, PgId, TaskId};
use std::fmt;

/// A value with a bit pattern it never takes, which stands for "none".
pub trait Packs: Copy {
    type Bits: Copy + Eq + std::hash::Hash;
    const NONE: Self::Bits;
    fn to_bits(self) -> Self::Bits;
    fn from_bits(bits: Self::Bits) -> Self;
}

macro_rules! packs {
    ($t:ty, $bits:ty, $to:expr, $from:expr) => {
        impl Packs for $t {
            type Bits = $bits;
            const NONE: $bits = <$bits>::MAX;
            #[inline]
            fn to_bits(self) -> $bits {
                $to(self)
            }
            #[inline]
            fn from_bits(bits: $bits) -> Self {
                $from(bits)
            }
        }
    };
}

packs!(u64, u64, |v| v, |b| b);
packs!(TaskId, u64, |v: TaskId| v.0, TaskId);
packs!(ActorId, u64, |v: ActorId| v.0, ActorId);
packs!(NodeIdx, u32, |v: NodeIdx| v.0, NodeIdx);
// A placement group's bundle: the group in the high half, the bundle's index in the low.
packs!((PgId, u32), u64, |(pg, i): (PgId, u32)| u64::from(pg.0) << 32 | u64::from(i), |b: u64| (
    PgId((b >> 32) as u32),
    b as u32
));

/// `Option<T>` in `T`'s own size: read it with [`CompactOption::get`], write it from
/// an `Option<T>` with `.into()`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompactOption<T: Packs>(T::Bits);

impl<T: Packs> CompactOption<T> {
    pub const NONE: CompactOption<T> = CompactOption(T::NONE);

    #[inline]
    pub fn get(self) -> Option<T> {
        (self.0 != T::NONE).then(|| T::from_bits(self.0))
    }

    #[inline]
    pub fn is_some(self) -> bool {
        self.0 != T::NONE
    }

    #[inline]
    pub fn is_none(self) -> bool {
        self.0 == T::NONE
    }
}

impl<T: Packs> Default for CompactOption<T> {
    fn default() -> Self {
        Self::NONE
    }
}

impl<T: Packs> From<Option<T>> for CompactOption<T> {
    #[inline]
    fn from(v: Option<T>) -> Self {
        match v {
            Some(v) => {
                let bits = v.to_bits();
                assert!(bits != T::NONE, "the largest value is a compact option's none");
                CompactOption(bits)
            }
            None => Self::NONE,
        }
    }
}

impl<T: Packs + fmt::Debug> fmt::Debug for CompactOption<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_an_option_in_its_values_own_size() {
        assert_eq!(std::mem::size_of::<CompactOption<TaskId>>(), 8);
        assert_eq!(std::mem::size_of::<CompactOption<NodeIdx>>(), 4);
        let node: CompactOption<NodeIdx> = Some(NodeIdx(3)).into();
        assert_eq!(node.get(), Some(NodeIdx(3)));
        let none: CompactOption<TaskId> = None.into();
        assert_eq!(none.get(), None);
        let zero: CompactOption<TaskId> = Some(TaskId(0)).into();
        assert_eq!(zero.get(), Some(TaskId(0)));
        let last: CompactOption<u64> = Some(u64::MAX - 1).into();
        assert_eq!(last.get(), Some(u64::MAX - 1));
        assert_eq!(format!("{zero:?}"), "Some(TaskId(0))");
        let bundle: CompactOption<(PgId, u32)> = Some((PgId(7), 2)).into();
        assert_eq!(std::mem::size_of_val(&bundle), 8);
        assert_eq!(bundle.get(), Some((PgId(7), 2)));
        assert_eq!(CompactOption::<(PgId, u32)>::NONE.get(), None);
    }

    #[test]
    #[should_panic(expected = "none")]
    fn the_sentinel_is_never_a_value() {
        let _: CompactOption<u64> = Some(u64::MAX).into();
    }
}
