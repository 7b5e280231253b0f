//! Model nodes: a linear model routing a key to one slot of a power-of-two child array.
//!
//! Routing is `slot = clamp((floor(a * (key - base)) + off) >> shift, 0, fanout - 1)`.
//! The integer part (`off`, `shift`) lets the structure change a node's fanout *exactly*:
//! - doubling the child array (every child repeated twice) is `shift -= 1`, or when `shift == 0`,
//!   `a *= 2, off *= 2` (multiplying an f64 by 2 is exact, so `floor(2y) ∈ {2 floor(y),
//!   2 floor(y) + 1}` holds bit for bit);
//! - growing the array to the left by `m` slots is `off += m << shift`;
//! - a new root above an old one uses the same `a`/`base` with `shift + log2(old fanout)`.
//!
//! So every key keeps being routed to the same child after such a change, which is what makes
//! parent expansion and root expansion correct without moving keys that stay in place.
//! Routing is monotone non-decreasing in the key (rounding, floor, saturating add and shift are),
//! hence the leaves, read left to right, hold increasing key ranges.

use super::model::floor_i64;
use super::AlexKey;
use crate::index::mapped::Arr;

pub(crate) struct ModelNode<K: AlexKey> {
    pub a: f64,
    pub base: K,
    pub off: i64,
    pub shift: u32,
    pub children: Arr<u32>,
}

/// Largest fanout of any model node (4 MiB child array of u32 ids).
pub(crate) const MAX_FANOUT_LOG2: u32 = 20;
pub(crate) const MAX_FANOUT: usize = 1 << MAX_FANOUT_LOG2;

impl<K: AlexKey> ModelNode<K> {
    /// A node whose `fanout` slots split `[base, base + width]` into equal-width ranges.
    pub fn over_range(base: K, width: f64, fanout: usize, children: Arr<u32>) -> Self {
        debug_assert_eq!(children.len(), fanout);
        let w = if width.is_finite() && width > 0.0 {
            width
        } else {
            1.0
        };
        let mut a = fanout as f64 / w;
        if !(a.is_finite() && a > 0.0) {
            a = f64::MIN_POSITIVE;
        }
        ModelNode {
            a,
            base,
            off: 0,
            shift: 0,
            children,
        }
    }

    #[inline]
    pub fn fanout(&self) -> usize {
        self.children.len()
    }

    /// The routing slot before clamping (may be `< 0` or `>= fanout` for out-of-domain keys).
    #[inline]
    pub fn slot_unclamped(&self, key: K) -> i64 {
        let y = self.a * key.offset_from(self.base);
        floor_i64(y).saturating_add(self.off) >> self.shift
    }

    #[inline]
    pub fn slot(&self, key: K) -> usize {
        let last = self.children.len() - 1;
        if self.off == 0 && self.shift == 0 {
            // The common case (every node as bulk loaded): `floor` and truncation differ only
            // on negative non-integers, which both clamp to slot 0, so the cheaper truncation
            // gives the same slot (NaN gives 0 either way).
            let t = (self.a * key.offset_from(self.base)) as i64;
            return t.max(0).min(last as i64) as usize;
        }
        let s = self.slot_unclamped(key);
        if s <= 0 {
            0
        } else if s as u64 >= last as u64 {
            last
        } else {
            s as usize
        }
    }

    #[inline]
    pub fn child_for(&self, key: K) -> u32 {
        self.children[self.slot(key)]
    }

    /// The aligned block of slots `[start, start + len)` that all point to the child at `slot`.
    pub fn block_of(&self, slot: usize) -> (usize, usize) {
        let id = self.children[slot];
        let mut s = slot;
        while s > 0 && self.children[s - 1] == id {
            s -= 1;
        }
        let mut e = slot + 1;
        while e < self.children.len() && self.children[e] == id {
            e += 1;
        }
        (s, e - s)
    }

    /// Multiplies the fanout by `2^log2f`, repeating every child; routing is unchanged.
    /// Returns false (and changes nothing) if the result would exceed the limits.
    pub fn expand_resolution(&mut self, log2f: u32) -> bool {
        let new_fanout = match self.children.len().checked_shl(log2f) {
            Some(f) if f <= MAX_FANOUT => f,
            _ => return false,
        };
        // Check the integer parameters stay representable before changing anything.
        let mut a = self.a;
        let mut off = self.off;
        let mut shift = self.shift;
        for _ in 0..log2f {
            if shift > 0 {
                shift -= 1;
            } else {
                a *= 2.0;
                off = match off.checked_mul(2) {
                    Some(o) if o.unsigned_abs() < (1u64 << 61) => o,
                    _ => return false,
                };
                if !a.is_finite() {
                    return false;
                }
            }
        }
        let f = 1usize << log2f;
        let mut ch = Vec::with_capacity(new_fanout);
        for &c in self.children.iter() {
            for _ in 0..f {
                ch.push(c);
            }
        }
        self.children = ch.into();
        self.a = a;
        self.off = off;
        self.shift = shift;
        true
    }
}
