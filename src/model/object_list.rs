//! A call's argument objects, as its task and its return object's lineage hold them.
//!
//! Owns: one immutable list shared by every holder, in 8 bytes, allocating nothing when
//! empty. A task's arguments are read again when it is placed, fetched, retried and
//! rebuilt from lineage, and its return object keeps them for the rebuild: one shared
//! list instead of a copy each. At `examples/scale.yaml`'s peak a million return objects
//! and 600,000 pending tasks hold one (almost all empty); the reducers' 1,000 lists of
//! 1,000 map outputs were copied twice (docs/benchmarks-history.md, issue 58).
//! Must never: change once made (a holder that needs other arguments makes a new list).

use super::ids::ObjectId;
use std::sync::Arc;

/// Argument objects in call order. Derefs to a slice.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ObjectList(Option<Arc<Box<[ObjectId]>>>);

impl ObjectList {
    /// The empty list: no allocation.
    pub const EMPTY: ObjectList = ObjectList(None);
}

impl std::ops::Deref for ObjectList {
    type Target = [ObjectId];

    #[inline]
    fn deref(&self) -> &[ObjectId] {
        match &self.0 {
            Some(list) => list,
            None => &[],
        }
    }
}

impl From<Vec<ObjectId>> for ObjectList {
    fn from(v: Vec<ObjectId>) -> Self {
        if v.is_empty() {
            ObjectList::EMPTY
        } else {
            ObjectList(Some(Arc::new(v.into_boxed_slice())))
        }
    }
}

impl From<&[ObjectId]> for ObjectList {
    fn from(v: &[ObjectId]) -> Self {
        if v.is_empty() {
            ObjectList::EMPTY
        } else {
            ObjectList(Some(Arc::new(v.into())))
        }
    }
}

impl FromIterator<ObjectId> for ObjectList {
    fn from_iter<I: IntoIterator<Item = ObjectId>>(iter: I) -> Self {
        iter.into_iter().collect::<Vec<_>>().into()
    }
}

impl std::fmt::Debug for ObjectList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_one_word_and_shared_when_cloned() {
        assert_eq!(std::mem::size_of::<ObjectList>(), 8);
        let list: ObjectList = vec![ObjectId(3), ObjectId(5)].into();
        let held = list.clone();
        assert_eq!(&*held, &[ObjectId(3), ObjectId(5)]);
        assert!(std::ptr::eq(list.as_ptr(), held.as_ptr()), "a clone shares the list");
        assert_eq!(ObjectList::from(Vec::new()), ObjectList::EMPTY);
        assert!(ObjectList::EMPTY.is_empty());
    }
}
