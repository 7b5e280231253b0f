//! Ordered, double-ended iteration over a key range, following the data nodes' leaf links.

use std::ops::Bound;

use super::tree::Pos;
use super::{Alex, AlexKey};

/// Iterator over `(key, payload)` in key order (both ends), from [`Alex::range`] / [`Alex::iter`].
pub struct Range<'a, K: AlexKey> {
    tree: &'a Alex<K>,
    /// Next position to yield from the front and from the back; `None` once exhausted.
    ends: Option<(Pos, Pos)>,
}

impl<'a, K: AlexKey> Range<'a, K> {
    pub(crate) fn new(tree: &'a Alex<K>, start: Bound<K>, end: Bound<K>) -> Self {
        let front = match start {
            Bound::Included(k) => tree.pos_lower_bound(k, false),
            Bound::Excluded(k) => tree.pos_lower_bound(k, true),
            Bound::Unbounded => tree.first_pos(),
        };
        let back = match end {
            Bound::Included(k) => tree.pos_last_below(k, false),
            Bound::Excluded(k) => tree.pos_last_below(k, true),
            Bound::Unbounded => tree.last_pos(),
        };
        let ends = match (front, back) {
            (Some(f), Some(b)) if tree.entry_at(f).0 <= tree.entry_at(b).0 => Some((f, b)),
            _ => None,
        };
        Range { tree, ends }
    }
}

impl<K: AlexKey> Iterator for Range<'_, K> {
    type Item = (K, u64);

    #[inline]
    fn next(&mut self) -> Option<(K, u64)> {
        let (f, b) = self.ends?;
        let item = self.tree.entry_at(f);
        self.ends = if f == b {
            None
        } else {
            // `f` is before `b`, so a next position exists.
            self.tree.next_pos(f).map(|n| (n, b))
        };
        Some(item)
    }
}

impl<K: AlexKey> DoubleEndedIterator for Range<'_, K> {
    #[inline]
    fn next_back(&mut self) -> Option<(K, u64)> {
        let (f, b) = self.ends?;
        let item = self.tree.entry_at(b);
        self.ends = if f == b {
            None
        } else {
            self.tree.prev_pos(b).map(|p| (f, p))
        };
        Some(item)
    }
}

impl<K: AlexKey> std::iter::FusedIterator for Range<'_, K> {}
