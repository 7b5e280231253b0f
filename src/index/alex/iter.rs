//! Ordered, double-ended iteration over a key range, following the data nodes' leaf links.

use std::ops::Bound;

use super::data_node::DataNode;
use super::tree::Pos;
use super::{Alex, AlexKey};

/// Iterator over `(key, payload)` in key order (both ends), from [`Alex::range`] / [`Alex::iter`].
pub struct Range<'a, K: AlexKey> {
    tree: &'a Alex<K>,
    /// Next position to yield from the front and from the back; `None` once exhausted.
    ends: Option<(Pos, Pos)>,
    /// The data nodes of the front and back positions, so that stepping inside one takes no
    /// arena lookup (a range scan's rows are mostly neighbours in one node).
    front: Option<&'a DataNode<K>>,
    back: Option<&'a DataNode<K>>,
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
        let front = ends.map(|((leaf, _), _)| tree.data(leaf));
        let back = ends.map(|(_, (leaf, _))| tree.data(leaf));
        Range {
            tree,
            ends,
            front,
            back,
        }
    }

    /// Hands up to `max` entries from the front to `f`, in key order, and returns how many:
    /// what as many calls of `next` would yield, with one walk over each data node's bitmap
    /// words instead of a slot search and an end check per entry (a range scan's batches).
    pub fn front_batch(&mut self, max: usize, mut f: impl FnMut(K, u64)) -> usize {
        let mut n = 0;
        while n < max {
            let (Some((front, back)), Some(d)) = (self.ends, self.front) else {
                break;
            };
            // The last slot to yield in this node: the back end's when it is in this node.
            let last = if front.0 == back.0 { back.1 } else { usize::MAX };
            let mut w = front.1 >> 6;
            let mut bits = d.bitmap[w] & (!0u64 << (front.1 & 63));
            loop {
                while bits != 0 {
                    let s = (w << 6) | bits.trailing_zeros() as usize;
                    if n == max {
                        self.ends = Some(((front.0, s), back));
                        return n;
                    }
                    let e = d.slots[s];
                    f(e.key, e.val);
                    n += 1;
                    if s == last {
                        self.ends = None;
                        return n;
                    }
                    bits &= bits - 1;
                }
                w += 1;
                if w >= d.bitmap.len() {
                    break;
                }
                bits = d.bitmap[w];
            }
            // This node is done and the back end lies in a later one.
            let next = match d.next {
                super::NONE => None,
                next => self.tree.first_pos_from(next, 0),
            };
            self.front = next.map(|(leaf, _)| self.tree.data(leaf));
            self.ends = next.map(|p| (p, back));
        }
        n
    }
}

impl<K: AlexKey> Iterator for Range<'_, K> {
    type Item = (K, u64);

    #[inline]
    fn next(&mut self) -> Option<(K, u64)> {
        let (f, b) = self.ends?;
        let d = self.front?;
        let s = d.slots[f.1];
        self.ends = if f == b {
            None
        } else if let Some(n) = d.next_set(f.1 + 1) {
            Some(((f.0, n), b))
        } else {
            // `f` is before `b`, so a next position exists, in a later node.
            let n = match d.next {
                super::NONE => None,
                next => self.tree.first_pos_from(next, 0),
            };
            self.front = n.map(|(leaf, _)| self.tree.data(leaf));
            n.map(|n| (n, b))
        };
        Some((s.key, s.val))
    }
}

impl<K: AlexKey> DoubleEndedIterator for Range<'_, K> {
    #[inline]
    fn next_back(&mut self) -> Option<(K, u64)> {
        let (f, b) = self.ends?;
        let d = self.back?;
        let s = d.slots[b.1];
        self.ends = if f == b {
            None
        } else if let Some(p) = b.1.checked_sub(1).and_then(|from| d.prev_set(from)) {
            Some((f, (b.0, p)))
        } else {
            // `b` is after `f`, so a previous position exists, in an earlier node.
            let p = match d.prev {
                super::NONE => None,
                prev => self.tree.last_pos_upto(prev, Some(usize::MAX)),
            };
            self.back = p.map(|(leaf, _)| self.tree.data(leaf));
            p.map(|p| (f, p))
        };
        Some((s.key, s.val))
    }
}

impl<K: AlexKey> std::iter::FusedIterator for Range<'_, K> {}
