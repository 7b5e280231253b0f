//! Data nodes: a gapped array of `(key, payload)` slots, an occupancy bitmap and a linear model.
//!
//! Invariant of the slot array (what makes exponential search work without reading the bitmap):
//! occupied slots hold strictly increasing keys; a gap holds the key of the next occupied slot
//! to its right (or `K::MAX` when there is none). So the key column is non-decreasing over the
//! whole array, and the *last* slot whose key equals a present key `k` is the slot of `k`
//! (gaps holding `k` lie to its left), except for `K::MAX` itself, which the trailing gaps also
//! hold: that one case reads the bitmap.

use super::cost;
use super::layout::{predict_slot, INIT_DENSITY, MAX_DENSITY, MIN_CAP, MIN_DENSITY};
use super::model::{finite_base, LinearModel};
use super::{AlexKey, NONE};
use crate::index::mapped::{Arr, Plain};

#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Slot<K> {
    pub key: K,
    pub val: u64,
}

// SAFETY: `K: AlexKey` is an 8-byte plain key (`Plain`), so `Slot<K>` is two 8-byte plain fields
// with no padding (asserted at compile time where slots are built and where images are read).
unsafe impl<K: AlexKey> Plain for Slot<K> {}

/// How a rebuilt node lays its keys out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Layout {
    /// Keys spread over the whole array by the model.
    Spread,
    /// Keys packed to the left, free room on the right (the node takes mostly appends).
    KeepLeft,
    /// Keys packed to the right, free room on the left (the node takes mostly prepends).
    KeepRight,
}

pub(crate) struct DataNode<K: AlexKey> {
    pub slots: Arr<Slot<K>>,
    pub bitmap: Arr<u64>,
    pub model: LinearModel,
    pub base: K,
    pub num_keys: usize,
    pub min_key: K,
    pub max_key: K,
    pub prev: u32,
    pub next: u32,
    // Statistics since the last (re)build, used by the cost model.
    pub n_inserts: u32,
    pub n_right_app: u32,
    pub n_left_app: u32,
    pub n_shifts: u64,
    pub n_iters: u64,
    pub exp_iters: f32,
    pub exp_shifts: f32,
}

impl<K: AlexKey> DataNode<K> {
    pub fn empty() -> Self {
        Self::build(&[], INIT_DENSITY, Layout::Spread)
    }

    #[inline]
    pub fn cap(&self) -> usize {
        self.slots.len()
    }

    /// Builds a node from strictly increasing entries at `density` (model-based placement:
    /// each key goes to its predicted slot, or the next free one).
    pub fn build(entries: &[(K, u64)], density: f64, layout: Layout) -> Self {
        let n = entries.len();
        let cap = ((n as f64 / density).ceil() as usize).max(n + 1).max(MIN_CAP);
        let base = finite_base(entries.iter().map(|e| e.0)).unwrap_or(K::MIN);
        let xs = entries.iter().map(|e| e.0.offset_from(base));
        let fit = LinearModel::fit_ranks(xs.clone());
        let model = match layout {
            Layout::Spread => {
                if n > 0 {
                    fit.scaled(cap as f64 / n as f64)
                } else {
                    fit
                }
            }
            Layout::KeepLeft => fit,
            Layout::KeepRight => LinearModel {
                a: fit.a,
                b: fit.b + (cap - n) as f64,
            },
        };
        Self::place(entries.iter().copied(), n, base, model, cap)
    }

    /// Model-based placement of `n` strictly increasing entries into `cap` slots: each key at
    /// its predicted slot or the next free one (leaving room for the rest); gaps hold the next
    /// key. One sequential write pass. Also records the expected cost of the layout.
    fn place(
        entries: impl Iterator<Item = (K, u64)>,
        n: usize,
        base: K,
        model: LinearModel,
        cap: usize,
    ) -> Self {
        let mut slots: Vec<Slot<K>> = Vec::with_capacity(cap);
        // Large nodes are read at random: huge pages spare each lookup its TLB miss.
        crate::index::mem::advise_huge_pages(&mut slots);
        const { assert!(std::mem::size_of::<Slot<K>>() == 16, "ALEX keys are 8 bytes") };
        let mut bitmap = vec![0u64; cap.div_ceil(64)];
        let mut iters_sum = 0.0f64;
        let mut shifts_sum = 0.0f64;
        let mut run = 0.0f64;
        let mut min_key = K::MAX;
        let mut max_key = K::MIN;
        for (i, (k, v)) in entries.take(n).enumerate() {
            let next_free = slots.len();
            let pred = predict_slot(&model, k.offset_from(base), cap);
            let pos = pred.max(next_free).min(cap - (n - i));
            if pos != pred {
                iters_sum += cost::log2_err(pred.abs_diff(pos));
            }
            if pos == next_free && i > 0 {
                run += 1.0;
            } else {
                shifts_sum += run * run;
                run = 1.0;
            }
            if i == 0 {
                min_key = k;
            }
            max_key = k;
            slots.resize(pos, Slot { key: k, val: 0 });
            slots.push(Slot { key: k, val: v });
            bitmap[pos >> 6] |= 1u64 << (pos & 63);
        }
        shifts_sum += run * run;
        let placed = bitmap.iter().map(|w| w.count_ones() as usize).sum::<usize>();
        slots.resize(cap, Slot { key: K::MAX, val: 0 });
        let (exp_iters, exp_shifts) = if n > 0 {
            (iters_sum / n as f64, shifts_sum / (4.0 * n as f64))
        } else {
            (0.0, 0.0)
        };
        DataNode {
            slots: Arr::from(slots),
            bitmap: Arr::from(bitmap),
            model,
            base,
            num_keys: placed,
            min_key,
            max_key,
            prev: NONE,
            next: NONE,
            n_inserts: 0,
            n_right_app: 0,
            n_left_app: 0,
            n_shifts: 0,
            n_iters: 0,
            exp_iters: exp_iters as f32,
            exp_shifts: exp_shifts as f32,
        }
    }

    /// A node from the parts an index image stores (its insert statistics start at zero).
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        slots: Arr<Slot<K>>,
        bitmap: Arr<u64>,
        model: LinearModel,
        base: K,
        num_keys: usize,
        min_key: K,
        max_key: K,
        prev: u32,
        next: u32,
        exp_iters: f32,
        exp_shifts: f32,
    ) -> Self {
        const { assert!(std::mem::size_of::<Slot<K>>() == 16, "ALEX keys are 8 bytes") };
        DataNode {
            slots,
            bitmap,
            model,
            base,
            num_keys,
            min_key,
            max_key,
            prev,
            next,
            n_inserts: 0,
            n_right_app: 0,
            n_left_app: 0,
            n_shifts: 0,
            n_iters: 0,
            exp_iters,
            exp_shifts,
        }
    }

    /// Expansion (or contraction) to `density` without retraining: the model is scaled by the
    /// capacity ratio and the keys re-placed by it (paper §3.3.1). Links are kept.
    pub fn resize_scaled(&mut self, density: f64) {
        let n = self.num_keys;
        let cap = ((n as f64 / density).ceil() as usize).max(n + 1).max(MIN_CAP);
        let model = self.model.scaled(cap as f64 / self.cap() as f64);
        let mut fresh = Self::place(self.iter_occupied(), n, self.base, model, cap);
        fresh.prev = self.prev;
        fresh.next = self.next;
        *self = fresh;
    }

    /// The entries in key order, without allocating.
    pub fn iter_occupied(&self) -> impl Iterator<Item = (K, u64)> + '_ {
        self.bitmap.iter().enumerate().flat_map(move |(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let i = (w << 6) | bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let s = self.slots[i];
                Some((s.key, s.val))
            })
        })
    }

    /// Rebuilds this node in place with the same entries (expansion, contraction, retraining).
    pub fn rebuild(&mut self, density: f64, layout: Layout) {
        let entries = self.entries();
        let mut fresh = Self::build(&entries, density, layout);
        fresh.prev = self.prev;
        fresh.next = self.next;
        *self = fresh;
    }

    /// All entries in key order.
    pub fn entries(&self) -> Vec<(K, u64)> {
        let mut out = Vec::with_capacity(self.num_keys);
        for (w, &word) in self.bitmap.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = (w << 6) | bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let s = self.slots[i];
                out.push((s.key, s.val));
            }
        }
        out
    }

    // ---- bitmap ----

    #[inline]
    pub fn occupied(&self, i: usize) -> bool {
        self.bitmap[i >> 6] >> (i & 63) & 1 == 1
    }

    #[inline]
    fn set_bit(&mut self, i: usize) {
        self.bitmap[i >> 6] |= 1u64 << (i & 63);
    }

    #[inline]
    fn clear_bit(&mut self, i: usize) {
        self.bitmap[i >> 6] &= !(1u64 << (i & 63));
    }

    /// First occupied slot `>= from`.
    pub fn next_set(&self, from: usize) -> Option<usize> {
        if from >= self.cap() {
            return None;
        }
        let mut w = from >> 6;
        let mut bits = self.bitmap[w] & (!0u64 << (from & 63));
        loop {
            if bits != 0 {
                return Some((w << 6) | bits.trailing_zeros() as usize);
            }
            w += 1;
            if w >= self.bitmap.len() {
                return None;
            }
            bits = self.bitmap[w];
        }
    }

    /// Last occupied slot `<= from`.
    pub fn prev_set(&self, from: usize) -> Option<usize> {
        let from = from.min(self.cap().checked_sub(1)?);
        let mut w = from >> 6;
        let sh = 63 - (from & 63);
        let mut bits = self.bitmap[w] & (!0u64 >> sh);
        loop {
            if bits != 0 {
                return Some((w << 6) | (63 - bits.leading_zeros() as usize));
            }
            if w == 0 {
                return None;
            }
            w -= 1;
            bits = self.bitmap[w];
        }
    }

    /// First gap `>= from` (within the capacity).
    fn next_zero(&self, from: usize) -> Option<usize> {
        let cap = self.cap();
        if from >= cap {
            return None;
        }
        let mut w = from >> 6;
        let mut bits = !self.bitmap[w] & (!0u64 << (from & 63));
        loop {
            if bits != 0 {
                let i = (w << 6) | bits.trailing_zeros() as usize;
                return if i < cap { Some(i) } else { None };
            }
            w += 1;
            if w >= self.bitmap.len() {
                return None;
            }
            bits = !self.bitmap[w];
        }
    }

    /// Last gap `<= from`.
    fn prev_zero(&self, from: usize) -> Option<usize> {
        let from = from.min(self.cap().checked_sub(1)?);
        let mut w = from >> 6;
        let sh = 63 - (from & 63);
        let mut bits = !self.bitmap[w] & (!0u64 >> sh);
        loop {
            if bits != 0 {
                return Some((w << 6) | (63 - bits.leading_zeros() as usize));
            }
            if w == 0 {
                return None;
            }
            w -= 1;
            bits = !self.bitmap[w];
        }
    }

    // ---- search ----

    #[inline]
    pub fn predict(&self, key: K) -> usize {
        predict_slot(&self.model, key.offset_from(self.base), self.slots.len())
    }

    /// Exponential search from `p` for the first slot whose key is not `before` the target.
    /// Returns the position and the number of doubling steps.
    #[inline]
    fn search(&self, p: usize, before: impl Fn(K) -> bool) -> (usize, u32) {
        let s = &self.slots;
        let n = s.len();
        let mut it = 0u32;
        if before(s[p].key) {
            let mut lo = p + 1;
            let mut step = 1usize;
            let hi = loop {
                it += 1;
                let probe = p + step;
                if probe >= n {
                    break n;
                }
                if !before(s[probe].key) {
                    break probe;
                }
                lo = probe + 1;
                step <<= 1;
            };
            (lo + s[lo..hi].partition_point(|x| before(x.key)), it)
        } else {
            let mut hi = p;
            let mut step = 1usize;
            let lo = loop {
                it += 1;
                if step > p {
                    break 0;
                }
                let probe = p - step;
                if before(s[probe].key) {
                    break probe + 1;
                }
                hi = probe;
                step <<= 1;
            };
            (lo + s[lo..hi].partition_point(|x| before(x.key)), it)
        }
    }

    /// First slot whose key is `> key`.
    #[inline]
    pub fn upper_bound_slot(&self, key: K) -> usize {
        self.search(self.predict(key), |k| k <= key).0
    }

    /// First slot whose key is `>= key`.
    #[inline]
    pub fn lower_bound_slot(&self, key: K) -> usize {
        self.search(self.predict(key), |k| k < key).0
    }

    /// Given `s`, the last slot whose key is `<= key`, the occupied slot of `key` if present.
    #[inline]
    fn real_slot(&self, s: usize, key: K) -> Option<usize> {
        if self.slots[s].key != key {
            return None;
        }
        // A gap holds the key of the next occupied slot, so the last slot holding a key other
        // than `K::MAX` is that key's own (occupied) slot: no bitmap read (one cache miss less).
        if key != K::MAX || self.occupied(s) {
            return Some(s);
        }
        // Only K::MAX can be held by a gap that is the last slot with that key (trailing gaps).
        let r = self.prev_set(s)?;
        if self.slots[r].key == key {
            Some(r)
        } else {
            None
        }
    }

    /// The occupied slot of `key`.
    #[inline]
    pub fn find_slot(&self, key: K) -> Option<usize> {
        let ub = self.upper_bound_slot(key);
        if ub == 0 {
            return None;
        }
        self.real_slot(ub - 1, key)
    }

    #[inline]
    pub fn get(&self, key: K) -> Option<u64> {
        self.find_slot(key).map(|s| self.slots[s].val)
    }

    pub fn update(&mut self, key: K, val: u64) -> Option<u64> {
        let s = self.find_slot(key)?;
        Some(std::mem::replace(&mut self.slots[s].val, val))
    }

    /// Whether one more key would pass the density bound.
    #[inline]
    pub fn is_full(&self) -> bool {
        (self.num_keys + 1) as f64 > self.cap() as f64 * MAX_DENSITY || self.num_keys + 2 > self.cap()
    }

    /// Inserts into a node that is not full. `Err(slot)` if the key is present.
    pub fn insert(&mut self, key: K, val: u64) -> Result<(), usize> {
        self.insert_inner(key, val, true)
    }

    fn insert_inner(&mut self, key: K, val: u64, may_relayout: bool) -> Result<(), usize> {
        let cap = self.cap();
        let p = self.predict(key);
        let (ub, it) = self.search(p, |k| k <= key);
        if ub > 0 {
            if let Some(s) = self.real_slot(ub - 1, key) {
                return Err(s);
            }
        }
        let shifts;
        if ub < cap && !self.occupied(ub) {
            // A run of gaps [ub, nf): any of them keeps the order; take the one nearest the
            // prediction. The gaps before it now precede `key`.
            let nf = self.next_set(ub).unwrap_or(cap);
            let pos = p.clamp(ub, nf - 1);
            for j in ub..pos {
                self.slots[j].key = key;
            }
            self.slots[pos] = Slot { key, val };
            self.set_bit(pos);
            shifts = 0;
        } else {
            // Slot `ub` is occupied (or the end): shift toward the nearest gap.
            let gr = if ub < cap { self.next_zero(ub) } else { None };
            let gl = if ub > 0 { self.prev_zero(ub - 1) } else { None };
            let go_right = match (gl, gr) {
                (Some(l), Some(r)) => r - ub <= ub - 1 - l,
                (None, Some(_)) => true,
                (Some(_), None) => false,
                // The node always keeps a gap (`is_full` is checked before inserting).
                (None, None) => {
                    self.rebuild(INIT_DENSITY, Layout::Spread);
                    return self.insert_inner(key, val, false);
                }
            };
            // An append past the last key (or before the first) into a node whose free room
            // is all at the other end: a node that loses its oldest keys as it takes new ones
            // (a queue, a table trimmed by age) stays under the density bound, so it never
            // expands, and every append would shift the whole run of keys by one. Lay the keys
            // out again with the room on the appending side instead (once per insert: the
            // rebuilt node has that room).
            let dist = match (gl, gr) {
                (Some(l), Some(r)) => (r - ub).min(ub - 1 - l),
                (None, Some(r)) => r - ub,
                (Some(l), None) => ub - 1 - l,
                (None, None) => 0,
            };
            let edge = self.num_keys > 0 && (key > self.max_key || key < self.min_key);
            if may_relayout && edge && dist > relayout_threshold(cap) {
                let layout = if key > self.max_key {
                    Layout::KeepLeft
                } else {
                    Layout::KeepRight
                };
                self.rebuild(INIT_DENSITY, layout);
                return self.insert_inner(key, val, false);
            }
            if go_right {
                let g = gr.unwrap_or(ub);
                self.slots.copy_within(ub..g, ub + 1);
                self.set_bit(g);
                self.slots[ub] = Slot { key, val };
                shifts = g - ub;
            } else {
                let g = gl.unwrap_or(0);
                self.slots.copy_within(g + 1..ub, g);
                self.set_bit(g);
                self.slots[ub - 1] = Slot { key, val };
                shifts = ub - 1 - g;
            }
        }
        if self.num_keys == 0 {
            self.min_key = key;
            self.max_key = key;
        } else {
            if key < self.min_key {
                self.min_key = key;
                self.n_left_app += 1;
            }
            if key > self.max_key {
                self.max_key = key;
                self.n_right_app += 1;
            }
        }
        self.num_keys += 1;
        self.n_inserts = self.n_inserts.saturating_add(1);
        self.n_shifts += shifts as u64;
        // Doublings beyond the first probe: about log2 of the distance, as the cost model counts.
        self.n_iters += it.saturating_sub(1) as u64;
        Ok(())
    }

    /// Removes `key`; its payload if it was present.
    pub fn remove(&mut self, key: K) -> Option<u64> {
        let s = self.find_slot(key)?;
        let val = self.slots[s].val;
        self.clear_bit(s);
        let fill = if s + 1 < self.cap() {
            self.slots[s + 1].key
        } else {
            K::MAX
        };
        self.slots[s] = Slot { key: fill, val: 0 };
        // The gaps just before `s` held the removed key: they now hold the next one.
        let run_start = if s == 0 {
            0
        } else {
            self.prev_set(s - 1).map_or(0, |p| p + 1)
        };
        // Removing the oldest keys one by one (a queue, a table trimmed by age) grows that run
        // at the front by one slot per removal, so rewriting it each time would cost O(run);
        // past a bound, laying the node out again removes the run (amortized O(sqrt(cap))).
        let relayout = s - run_start > remove_run_bound(self.cap());
        if !relayout {
            for j in run_start..s {
                self.slots[j].key = fill;
            }
        }
        self.num_keys -= 1;
        if self.num_keys > 0 {
            if key == self.min_key {
                if let Some(f) = self.next_set(0) {
                    self.min_key = self.slots[f].key;
                }
            }
            if key == self.max_key {
                if let Some(l) = self.prev_set(self.cap() - 1) {
                    self.max_key = self.slots[l].key;
                }
            }
        }
        if relayout {
            let layout = if self.append_right_mostly() {
                Layout::KeepLeft
            } else if self.append_left_mostly() {
                Layout::KeepRight
            } else {
                Layout::Spread
            };
            self.rebuild(INIT_DENSITY, layout);
        }
        Some(val)
    }

    /// Whether a delete left the node sparse enough to contract.
    #[inline]
    pub fn should_contract(&self) -> bool {
        self.cap() > MIN_CAP && (self.num_keys as f64) < self.cap() as f64 * MIN_DENSITY
    }

    // ---- cost model statistics ----

    pub fn expected_cost(&self) -> f64 {
        cost::data_cost(self.exp_iters as f64, self.exp_shifts as f64)
    }

    /// Cost per insert measured since the last rebuild (None until enough inserts).
    pub fn empirical_cost(&self) -> Option<f64> {
        if self.n_inserts < 64 {
            return None;
        }
        let n = self.n_inserts as f64;
        Some(cost::data_cost(self.n_iters as f64 / n, self.n_shifts as f64 / n))
    }

    /// The measured cost is far above what the model expected when the node was built.
    pub fn significant_cost_deviation(&self) -> bool {
        match self.empirical_cost() {
            Some(c) => c > cost::W_TRAVERSE && c > 1.5 * self.expected_cost(),
            None => false,
        }
    }

    /// The node is badly modeled whatever happened since it was built.
    pub fn catastrophic_cost(&self) -> bool {
        let shifts = if self.n_inserts >= 16 {
            self.n_shifts as f64 / self.n_inserts as f64
        } else {
            0.0
        };
        shifts > 100.0 || self.exp_shifts > 100.0 || self.exp_iters > 12.0
    }

    pub fn append_right_mostly(&self) -> bool {
        self.n_inserts >= 16 && self.n_right_app as f64 > 0.9 * self.n_inserts as f64
    }

    pub fn append_left_mostly(&self) -> bool {
        self.n_inserts >= 16 && self.n_left_app as f64 > 0.9 * self.n_inserts as f64
    }

    /// Bytes of this node's arrays (their exact sizes) as (on the heap, inside a mapped image).
    pub fn array_bytes(&self) -> (usize, usize) {
        let mut heap = 0;
        let mut mapped = 0;
        for (mapped_array, bytes) in [
            (self.slots.is_mapped(), std::mem::size_of_val(&*self.slots)),
            (self.bitmap.is_mapped(), std::mem::size_of_val(&*self.bitmap)),
        ] {
            if mapped_array {
                mapped += bytes;
            } else {
                heap += bytes;
            }
        }
        (heap, mapped)
    }

    /// Checks the slot-array invariants (used by `Alex::check_invariants`).
    pub fn check(&self) -> Result<(), String> {
        let cap = self.cap();
        let mut next = K::MAX;
        let mut count = 0;
        for i in (0..cap).rev() {
            if self.occupied(i) {
                count += 1;
                if i + 1 < cap && self.occupied(i + 1) && self.slots[i].key >= self.slots[i + 1].key {
                    return Err(format!("order broken at {i}"));
                }
                if self.slots[i].key >= next && count != 1 {
                    return Err(format!("not increasing at {i}"));
                }
                next = self.slots[i].key;
            } else if self.slots[i].key != next {
                return Err(format!(
                    "gap {i} holds {:?}, next key {:?}",
                    self.slots[i].key, next
                ));
            }
        }
        if count != self.num_keys {
            return Err(format!("num_keys {} but {} bits", self.num_keys, count));
        }
        for i in cap..self.bitmap.len() * 64 {
            if self.occupied(i) {
                return Err("bit past capacity".into());
            }
        }
        if count > 0 {
            let f = self.slots[self.next_set(0).unwrap()].key;
            let l = self.slots[self.prev_set(cap - 1).unwrap()].key;
            if f != self.min_key || l != self.max_key {
                return Err(format!(
                    "min/max stale: {:?}/{:?} vs {:?}/{:?}",
                    self.min_key, self.max_key, f, l
                ));
            }
        }
        Ok(())
    }
}

/// Shift distance past which an append at a node's edge lays the node out again rather than
/// shifting (a rebuild moves about `cap` slots).
#[inline]
fn relayout_threshold(cap: usize) -> usize {
    64.max(cap / 8)
}

/// Run of gaps a removal may rewrite before the node is laid out again instead: about
/// sqrt(2 cap), which minimizes (run rewrites + rebuilds) per removal when keys are removed
/// from one end.
#[inline]
fn remove_run_bound(cap: usize) -> usize {
    64.max((2 * cap).isqrt())
}
