//! A list that is almost always empty or one long, in 16 bytes, allocating nothing
//! until it holds two.
//!
//! An object's secondary copies and the tasks waiting for it are such lists: a map
//! output gets at most one copy (at its reducer's node) and one waiter (a reducer
//! submitted before it was sealed), a few broadcast objects get more. At
//! `examples/scale.yaml`'s peak a million objects are live at once, most with neither,
//! and a `SmallVec` took 24 bytes for each list (docs/benchmarks-history.md, issue 58).
//!
//! Owns: its items in the order they were pushed, except where `swap_remove` moves the
//! last into the gap (as `Vec`'s does). Must never: keep a `Many` of fewer than two (so
//! the representation of a list is one, and an emptied list holds no allocation).

/// Items in the order pushed. Derefs to a slice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Few<T> {
    #[default]
    None,
    One(T),
    /// Two or more.
    Many(Box<Vec<T>>),
}

impl<T> std::ops::Deref for Few<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Few::None => &[],
            Few::One(item) => std::slice::from_ref(item),
            Few::Many(items) => items,
        }
    }
}

impl<T> Few<T> {
    pub fn push(&mut self, item: T) {
        if let Few::Many(items) = self {
            items.push(item);
            return;
        }
        *self = match std::mem::take(self) {
            Few::One(first) => Few::Many(Box::new(vec![first, item])),
            _ => Few::One(item),
        };
    }

    /// Keeps the items `keep` says yes to, in their order.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        match self {
            Few::None => {}
            Few::One(item) => {
                if !keep(item) {
                    *self = Few::None;
                }
            }
            Few::Many(items) => {
                items.retain(|item| keep(item));
                self.settle();
            }
        }
    }

    /// Removes the item at `index`, moving the last one into its place.
    ///
    /// # Panics
    /// If `index` is out of bounds, as `Vec::swap_remove` does.
    pub fn swap_remove(&mut self, index: usize) -> T {
        match self {
            Few::None => panic!("swap_remove index {index} on an empty list"),
            Few::One(_) => {
                assert_eq!(index, 0, "swap_remove index {index} on a list of one");
                self.pop().expect("a list of one")
            }
            Few::Many(items) => {
                let item = items.swap_remove(index);
                self.settle();
                item
            }
        }
    }

    /// Removes and returns the last item.
    pub fn pop(&mut self) -> Option<T> {
        if let Few::Many(items) = self {
            let item = items.pop();
            self.settle();
            return item;
        }
        match std::mem::take(self) {
            Few::One(item) => Some(item),
            _ => None,
        }
    }

    /// Back to `None` or `One` where a `Many` shrank below two.
    fn settle(&mut self) {
        if let Few::Many(items) = self {
            match items.len() {
                0 => *self = Few::None,
                1 => *self = Few::One(items.pop().expect("one item")),
                _ => {}
            }
        }
    }
}

impl<T> IntoIterator for Few<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        match self {
            Few::None => IntoIter::One(None),
            Few::One(item) => IntoIter::One(Some(item)),
            Few::Many(items) => IntoIter::Many(items.into_iter()),
        }
    }
}

impl<'a, T> IntoIterator for &'a Few<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> std::slice::Iter<'a, T> {
        self.iter()
    }
}

/// A [`Few`]'s items by value, in order.
pub enum IntoIter<T> {
    One(Option<T>),
    Many(std::vec::IntoIter<T>),
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        match self {
            IntoIter::One(item) => item.take(),
            IntoIter::Many(items) => items.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = self.len();
        (len, Some(len))
    }
}

impl<T> ExactSizeIterator for IntoIter<T> {
    fn len(&self) -> usize {
        match self {
            IntoIter::One(item) => usize::from(item.is_some()),
            IntoIter::Many(items) => items.len(),
        }
    }
}

impl<T> DoubleEndedIterator for IntoIter<T> {
    fn next_back(&mut self) -> Option<T> {
        match self {
            IntoIter::One(item) => item.take(),
            IntoIter::Many(items) => items.next_back(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NodeIdx, TaskId};

    #[test]
    fn an_objects_two_lists_take_sixteen_bytes_each() {
        assert_eq!(std::mem::size_of::<Few<TaskId>>(), 16);
        assert_eq!(std::mem::size_of::<Few<NodeIdx>>(), 16);
    }

    /// Every operation, applied to a `Few` and to a `Vec` alike, leaves the same items,
    /// and a list of fewer than two never holds an allocation.
    #[test]
    fn behaves_as_a_vec_over_mixed_operations() {
        let mut few: Few<u32> = Few::None;
        let mut vec: Vec<u32> = Vec::new();
        // A fixed pseudo-random walk (an LCG): pushes outnumber removals, so lists
        // grow past two and shrink back through one to none many times.
        let mut state = 12345u64;
        for step in 0..20_000u32 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let op = (state >> 33) % 10;
            match op {
                0..=4 => {
                    few.push(step);
                    vec.push(step);
                }
                5 if !vec.is_empty() => {
                    let i = (state >> 40) as usize % vec.len();
                    assert_eq!(few.swap_remove(i), vec.swap_remove(i));
                }
                6 => assert_eq!(few.pop(), vec.pop()),
                7 => {
                    let cut = step % 3;
                    few.retain(|x| x % 3 != cut);
                    vec.retain(|x| x % 3 != cut);
                }
                8 if vec.len() > 6 => {
                    // Keep lists short, where the representation changes.
                    few = Few::None;
                    vec.clear();
                }
                _ => {}
            }
            assert_eq!(&few[..], &vec[..], "after step {step} (op {op})");
            assert!(!matches!(&few, Few::Many(items) if items.len() < 2), "a Many of under two at step {step}");
        }
        let back: Vec<u32> = few.clone().into_iter().rev().collect();
        assert_eq!(back, vec.iter().rev().copied().collect::<Vec<_>>());
        assert_eq!(few.into_iter().collect::<Vec<_>>(), vec);
    }

    #[test]
    #[should_panic(expected = "on an empty list")]
    fn swap_remove_on_an_empty_list_panics_as_a_vecs_does() {
        Few::<u32>::None.swap_remove(0);
    }
}
