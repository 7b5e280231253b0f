//! ALEX: an updatable adaptive learned index (Ding et al., SIGMOD 2020).
//!
//! The tree is made of *model nodes* (a linear model routing a key to one slot of a power-of-two
//! child array, where consecutive slots may point to the same child) and *data nodes* (a gapped
//! array of `(key, payload)` slots with an occupancy bitmap and a linear model predicting the slot
//! of a key, corrected by exponential search). See `docs/ALEX.md` for how this maps to the paper.
//!
//! Nodes live in one arena (`Vec<Node>`) and refer to each other by `u32` ids: there is no
//! `unsafe` code in this module (large slot arrays are advised onto transparent huge pages by
//! `index::mem`; node arrays are `index::mapped::Arr`, on the heap or inside a mapped image
//! written by `image.rs`, and that module carries the safety arguments).

mod cost;
mod data_node;
mod image;
mod image_read;
mod iter;
mod layout;
mod lazy;
mod model;
mod model_node;
mod stats;
mod tree;

pub use image::{Checks, ImageError, ImageTag};
pub use iter::Range;
pub use lazy::{Rebuild, Unavailable};
pub use stats::AlexStats;

use crate::index::mapped::{Mapping, Plain};
use data_node::DataNode;
use model_node::ModelNode;

/// A key type usable in ALEX. Keys are totally ordered by `PartialOrd` for every valid value
/// (f64 NaN is rejected by [`AlexKey::is_valid`]). Keys are 8-byte plain values (`Plain`), so
/// that slot arrays can be written to and read from an image as they lie in memory.
pub trait AlexKey: Copy + PartialOrd + std::fmt::Debug + Send + Sync + Plain + 'static {
    /// The key as a number, for the linear models.
    fn to_f64(self) -> f64;
    /// The smallest value of the type (also used as nothing but a bound).
    const MIN: Self;
    /// The largest value of the type; gaps at the end of a data node hold it.
    const MAX: Self;
    /// `self - base` as an f64, monotone non-decreasing in `self` for a fixed `base`.
    /// Integer keys override it to compute the difference exactly before rounding, so that
    /// models of dense runs of huge keys (e.g. around 2^62) keep their precision.
    #[inline]
    fn offset_from(self, base: Self) -> f64 {
        self.to_f64() - base.to_f64()
    }
    /// Whether the key can be stored (false for NaN).
    #[inline]
    fn is_valid(self) -> bool {
        true
    }
    /// Names the key type in an index image, so that an image is opened only with the type it
    /// was written with (0: a type that did not name itself).
    const IMAGE_KIND: u32 = 0;
}

impl AlexKey for u64 {
    const MIN: Self = u64::MIN;
    const MAX: Self = u64::MAX;
    const IMAGE_KIND: u32 = 2;
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn offset_from(self, base: Self) -> f64 {
        // The exact difference, rounded once (u64 -> f64 is cheap; i128 -> f64 is not).
        exact_diff(self >= base, self.wrapping_sub(base), base.wrapping_sub(self))
    }
}

impl AlexKey for i64 {
    const MIN: Self = i64::MIN;
    const MAX: Self = i64::MAX;
    const IMAGE_KIND: u32 = 1;
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn offset_from(self, base: Self) -> f64 {
        // The exact difference (it fits in a u64 either way), rounded once.
        exact_diff(
            self >= base,
            self.wrapping_sub(base) as u64,
            base.wrapping_sub(self) as u64,
        )
    }
}

/// `up - 0` as f64 when `ge`, else `-(down as f64)`: the magnitude of an exact difference,
/// rounded once. Magnitudes below 2^63 (every difference within a node of real data) take the
/// one-instruction signed conversion, which gives the same value as the unsigned one.
#[inline(always)]
fn exact_diff(ge: bool, up: u64, down: u64) -> f64 {
    let m = if ge { up } else { down };
    let f = if m >> 63 == 0 {
        m as i64 as f64
    } else {
        u64_to_f64_cold(m)
    };
    if ge {
        f
    } else {
        -f
    }
}

/// Kept out of line so that the compiler does not merge the two conversions into the longer
/// unsigned sequence on the hot path.
#[cold]
#[inline(never)]
fn u64_to_f64_cold(m: u64) -> f64 {
    m as f64
}

/// `f64` keys: NaN is rejected; `-0.0` and `0.0` compare equal and are therefore the same key;
/// the infinities are valid keys.
impl AlexKey for f64 {
    const MIN: Self = f64::NEG_INFINITY;
    const MAX: Self = f64::INFINITY;
    const IMAGE_KIND: u32 = 3;
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn offset_from(self, base: Self) -> f64 {
        self - base
    }
    #[inline]
    fn is_valid(self) -> bool {
        !self.is_nan()
    }
}

/// Errors of the mutating operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AlexError {
    /// The key is already present (the index is unique).
    #[error("duplicate key")]
    DuplicateKey,
    /// `bulk_load` input is not strictly increasing.
    #[error("bulk load input is not strictly increasing")]
    NotSorted,
    /// The key cannot be stored (f64 NaN).
    #[error("invalid key (NaN)")]
    InvalidKey,
    /// Part of the index's image failed its checksum and the index could not be rebuilt from
    /// its source: nothing was changed (see `lazy.rs`).
    #[error("index unavailable: its image is damaged and it cannot be rebuilt now")]
    Unavailable,
}

/// Sentinel id meaning "no node".
pub(crate) const NONE: u32 = u32::MAX;

pub(crate) enum Node<K: AlexKey> {
    Model(ModelNode<K>),
    Data(DataNode<K>),
    Free,
}

/// The ALEX learned index: a unique ordered map from `K` to a `u64` payload (a row position).
pub struct Alex<K: AlexKey> {
    pub(crate) nodes: Vec<Node<K>>,
    pub(crate) free: Vec<u32>,
    pub(crate) root: u32,
    pub(crate) len: usize,
    pub(crate) ood_left: usize,
    pub(crate) ood_right: usize,
    pub(crate) counters: stats::Counters,
    /// The image this index was opened from, while any of its nodes may lie in it.
    pub(crate) image: Option<std::sync::Arc<Mapping>>,
    /// Opened from an image whose data nodes are checked on first use (`lazy.rs`): until all
    /// are checked, or one failed.
    pub(crate) lazy: Option<Box<lazy::Lazy<K>>>,
}

impl<K: AlexKey> Default for Alex<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: AlexKey> std::fmt::Debug for Alex<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Alex")
            .field("len", &self.len)
            .field("stats", &self.stats())
            .finish()
    }
}

impl<K: AlexKey> Alex<K> {
    /// An empty index (its root is an empty data node).
    pub fn new() -> Self {
        Alex {
            nodes: vec![Node::Data(DataNode::empty())],
            free: Vec::new(),
            root: 0,
            len: 0,
            ood_left: 0,
            ood_right: 0,
            counters: stats::Counters::default(),
            image: None,
            lazy: None,
        }
    }

    /// Builds an index from strictly increasing keys, top-down by the cost model.
    pub fn bulk_load(sorted: &[(K, u64)]) -> Result<Self, AlexError> {
        for (i, &(k, _)) in sorted.iter().enumerate() {
            if !k.is_valid() {
                return Err(AlexError::InvalidKey);
            }
            if i > 0 && sorted[i - 1].0.partial_cmp(&k) != Some(std::cmp::Ordering::Less) {
                return Err(AlexError::NotSorted);
            }
        }
        let mut t = Alex {
            nodes: Vec::new(),
            free: Vec::new(),
            root: 0,
            len: sorted.len(),
            ood_left: 0,
            ood_right: 0,
            counters: stats::Counters::default(),
            image: None,
            lazy: None,
        };
        t.build_from_sorted(sorted);
        Ok(t)
    }

    /// Inserts a new key; `DuplicateKey` if it is present (the payload is left unchanged).
    pub fn insert(&mut self, key: K, payload: u64) -> Result<(), AlexError> {
        if !key.is_valid() {
            return Err(AlexError::InvalidKey);
        }
        self.write(|a| a.insert_impl(key, payload))
            .unwrap_or(Err(AlexError::Unavailable))
    }

    /// Inserts or replaces; returns the old payload if the key was present.
    /// A NaN key is ignored (returns `None`, nothing stored).
    pub fn upsert(&mut self, key: K, payload: u64) -> Option<u64> {
        if !key.is_valid() {
            return None;
        }
        self.write(|a| {
            if let Some(old) = a.update_impl(key, payload) {
                return Some(old);
            }
            // Cannot be a duplicate: the key was just found absent.
            let _ = a.insert_impl(key, payload);
            None
        })
        .flatten()
    }

    /// The payload of `key`, if present.
    #[inline]
    pub fn get(&self, key: K) -> Option<u64> {
        if !key.is_valid() {
            return None;
        }
        if self.lazy.is_some() {
            return self.get_lazy(key);
        }
        self.leaf_ref(key).get(key)
    }

    /// Replaces the payload of a present key; returns the old one (`None` and no insert if absent).
    pub fn update(&mut self, key: K, payload: u64) -> Option<u64> {
        if !key.is_valid() {
            return None;
        }
        self.write(|a| a.update_impl(key, payload)).flatten()
    }

    fn update_impl(&mut self, key: K, payload: u64) -> Option<u64> {
        let leaf = self.leaf_for(key);
        if !self.touch(leaf) {
            return None;
        }
        self.data_mut(leaf).update(key, payload)
    }

    /// Removes a key; returns its payload if it was present.
    pub fn remove(&mut self, key: K) -> Option<u64> {
        if !key.is_valid() {
            return None;
        }
        self.write(|a| a.remove_impl(key)).flatten()
    }

    /// Ordered iterator (forward and reverse) over the keys within `r`.
    /// An empty or inverted range yields nothing (never panics).
    pub fn range<R: std::ops::RangeBounds<K>>(&self, r: R) -> Range<'_, K> {
        Range::new(self, r.start_bound().cloned(), r.end_bound().cloned())
    }

    /// Ordered iterator over every key.
    pub fn iter(&self) -> Range<'_, K> {
        self.range(..)
    }

    /// The first entry with key `>= key`.
    pub fn lower_bound(&self, key: K) -> Option<(K, u64)> {
        let p = self.pos_lower_bound(key, false)?;
        Some(self.entry_at(p))
    }

    /// The first entry with key `> key`.
    pub fn upper_bound(&self, key: K) -> Option<(K, u64)> {
        let p = self.pos_lower_bound(key, true)?;
        Some(self.entry_at(p))
    }

    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no keys.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Smallest entry.
    pub fn min(&self) -> Option<(K, u64)> {
        self.iter().next()
    }

    /// Largest entry.
    pub fn max(&self) -> Option<(K, u64)> {
        self.iter().next_back()
    }

    /// Structure statistics, with `bytes` counted by walking the nodes' allocations.
    pub fn stats(&self) -> AlexStats {
        self.compute_stats()
    }

    // ---- arena helpers ----

    /// Data node `id`, to read (checked first on an index opened lazily: `lazy.rs`).
    #[inline]
    pub(crate) fn data(&self, id: u32) -> &DataNode<K> {
        match &self.nodes[id as usize] {
            Node::Data(d) => self.usable(id, d),
            _ => unreachable_node(),
        }
    }

    #[inline]
    pub(crate) fn data_mut(&mut self, id: u32) -> &mut DataNode<K> {
        match &mut self.nodes[id as usize] {
            Node::Data(d) => d,
            _ => unreachable_node(),
        }
    }

    /// The data node that owns `key`, by reference (one arena access per level, no id), to
    /// read (checked first on an index opened lazily).
    #[inline]
    pub(crate) fn leaf_ref(&self, key: K) -> &DataNode<K> {
        if self.lazy.is_some() {
            return self.data(self.leaf_for(key));
        }
        let mut node = &self.nodes[self.root as usize];
        loop {
            match node {
                Node::Model(m) => node = &self.nodes[m.child_for(key) as usize],
                Node::Data(d) => return d,
                Node::Free => unreachable_node(),
            }
        }
    }

    /// The data node that owns `key`.
    #[inline]
    pub(crate) fn leaf_for(&self, key: K) -> u32 {
        let mut id = self.root;
        loop {
            match &self.nodes[id as usize] {
                Node::Model(m) => id = m.child_for(key),
                _ => return id,
            }
        }
    }
}

#[cold]
#[inline(never)]
fn unreachable_node() -> ! {
    // The arena invariants (ids stored in model nodes / leaf links always name live nodes of the
    // expected kind) are maintained by every structural operation and checked by the tests.
    panic!("ALEX arena invariant violated: node id does not name a node of the expected kind")
}

#[cfg(test)]
mod image_read_tests;
#[cfg(test)]
mod lazy_tests;
#[cfg(test)]
mod tests;
