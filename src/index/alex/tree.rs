//! Structural operations: bulk load, insert with expansion / splits, delete with contraction,
//! root expansion for out-of-domain keys, and positions for ordered iteration.

use super::cost::{self, best_fanout, data_node_cost, SAMPLE};
use super::data_node::{DataNode, Layout};
use super::layout::{INIT_DENSITY, MAX_SLOTS};
use super::model::finite_base;
use super::model_node::{ModelNode, MAX_FANOUT, MAX_FANOUT_LOG2};
use super::{Alex, AlexError, AlexKey, Node, NONE};

/// Below this many keys a subtree is always one data node.
const SMALL_NODE: usize = 64;
/// Bulk load never builds deeper than this (a deeper subtree becomes one data node).
const MAX_BUILD_DEPTH: usize = 40;
/// Largest fanout tried when splitting one full data node.
const MAX_SPLIT_LOG2: u32 = 6;
/// Root expansion waits for at least this many out-of-domain inserts...
const OOD_MIN: usize = 5;
/// ...and never for more than this many.
const OOD_MAX: usize = 1000;
/// Largest expansion factor of one root expansion when a new root is stacked on top.
const MAX_ROOT_ABOVE_LOG2: u32 = 10;

/// A position in the leaf level: (data node id, slot).
pub(crate) type Pos = (u32, usize);

/// Sorted finite offsets from `base` of a stride sample of `entries`.
fn sample_offsets<K: AlexKey>(entries: &[(K, u64)], base: K, sample: usize) -> (Vec<f64>, f64) {
    let stride = entries.len().div_ceil(sample).max(1);
    let xs = entries
        .iter()
        .step_by(stride)
        .map(|e| e.0.offset_from(base))
        .filter(|x| x.is_finite())
        .collect();
    (xs, stride as f64)
}

/// Offset of the last key with a finite offset (the width a model node spans).
fn finite_width<K: AlexKey>(entries: &[(K, u64)], base: K) -> f64 {
    entries
        .iter()
        .rev()
        .map(|e| e.0.offset_from(base))
        .find(|x| x.is_finite())
        .unwrap_or(0.0)
}

impl<K: AlexKey> Alex<K> {
    // ---- arena ----

    pub(crate) fn alloc(&mut self, node: Node<K>) -> u32 {
        if let Some(id) = self.free.pop() {
            self.nodes[id as usize] = node;
            id
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        }
    }

    fn release(&mut self, id: u32) {
        self.nodes[id as usize] = Node::Free;
        self.free.push(id);
    }

    fn model(&self, id: u32) -> &ModelNode<K> {
        match &self.nodes[id as usize] {
            Node::Model(m) => m,
            _ => super::unreachable_node(),
        }
    }

    fn model_mut(&mut self, id: u32) -> &mut ModelNode<K> {
        match &mut self.nodes[id as usize] {
            Node::Model(m) => m,
            _ => super::unreachable_node(),
        }
    }

    /// Model nodes on the way to `key`'s data node, with the slot taken in each.
    fn path_to(&self, key: K) -> Vec<(u32, usize)> {
        let mut path = Vec::new();
        let mut id = self.root;
        while let Node::Model(m) = &self.nodes[id as usize] {
            let s = m.slot(key);
            path.push((id, s));
            id = m.children[s];
        }
        path
    }

    fn edge_leaf(&self, right: bool) -> u32 {
        let mut id = self.root;
        while let Node::Model(m) = &self.nodes[id as usize] {
            id = if right {
                m.children[m.fanout() - 1]
            } else {
                m.children[0]
            };
        }
        id
    }

    /// Links `new` (in key order) into the leaf list between `prev` and `next`.
    fn link_leaves(&mut self, prev: u32, new: &[u32], next: u32) {
        let mut p = prev;
        for &id in new {
            self.data_mut(id).prev = p;
            if p != NONE {
                self.data_mut(p).next = id;
            }
            p = id;
        }
        if p != NONE {
            self.data_mut(p).next = next;
        }
        if next != NONE {
            self.data_mut(next).prev = p;
        }
    }

    // ---- bulk load ----

    pub(crate) fn build_from_sorted(&mut self, sorted: &[(K, u64)]) {
        self.nodes.clear();
        self.free.clear();
        let mut leaves = Vec::new();
        let total = sorted.len();
        self.root = self.build_node(sorted, total, 0, false, &mut leaves);
        self.link_leaves(NONE, &leaves, NONE);
    }

    /// Builds the subtree for `entries` top-down by the cost model; appends its data nodes to
    /// `leaves` in key order. `force_model` requires a model node (a downward split).
    fn build_node(
        &mut self,
        entries: &[(K, u64)],
        total: usize,
        depth: usize,
        force_model: bool,
        leaves: &mut Vec<u32>,
    ) -> u32 {
        let n = entries.len();
        let base = finite_base(entries.iter().map(|e| e.0));
        let as_data = |this: &mut Self, leaves: &mut Vec<u32>| {
            let id = this.alloc(Node::Data(DataNode::build(entries, INIT_DENSITY, Layout::Spread)));
            leaves.push(id);
            id
        };
        let Some(base) = base else {
            return as_data(self, leaves);
        };
        let width = finite_width(entries, base);
        // At least two distinct finite offsets are needed for a model node to separate keys.
        if width <= 0.0 || depth >= MAX_BUILD_DEPTH || (!force_model && n <= SMALL_NODE) {
            return as_data(self, leaves);
        }
        // The root's fanout decides most of the tree: it gets the big sample.
        let (xs, stride) = sample_offsets(entries, base, if depth == 0 { SAMPLE } else { SAMPLE / 8 });
        let fits_data = n as f64 <= MAX_SLOTS as f64 * INIT_DENSITY;
        let data_cost = if fits_data && !force_model {
            data_node_cost(&xs, stride, INIT_DENSITY)
        } else {
            f64::INFINITY
        };
        if data_cost < cost::W_TRAVERSE {
            return as_data(self, leaves);
        }
        // A stride sample must keep a few points per child for its estimates to mean
        // anything; with every key at hand, fanouts up to 16 children per key are tried
        // (skewed sets need wide nodes to separate their dense part).
        let max_log2 = if stride > 1.0 {
            (xs.len() / 8).max(2).ilog2()
        } else {
            xs.len().max(2).ilog2() + 4
        }
        .clamp(1, MAX_FANOUT_LOG2);
        let fan = best_fanout(&xs, stride, n, total, width, 1, max_log2, true);
        if data_cost <= fan.cost {
            return as_data(self, leaves);
        }
        let f = 1usize << fan.log2;
        let mut blocks = fan.blocks;
        if blocks.len() < 2 {
            blocks = vec![(0, f / 2), (f / 2, f / 2)];
        }
        let node = ModelNode::over_range(base, width, f, vec![NONE; f].into());
        let mut children = vec![NONE; f];
        let mut lo = 0usize;
        let mut parts = Vec::with_capacity(blocks.len());
        for &(start, len) in &blocks {
            let end = start + len;
            let hi = lo + entries[lo..].partition_point(|e| node.slot(e.0) < end);
            parts.push((start, len, lo, hi));
            lo = hi;
        }
        let id = self.alloc(Node::Model(node));
        for (start, len, lo, hi) in parts {
            let part = &entries[lo..hi];
            // Each part is a strict subset: the first key routes to slot 0, the last finite
            // one to the last slot, and there are at least two blocks.
            let child = self.build_node(part, total, depth + 1, false, leaves);
            children[start..start + len].fill(child);
        }
        self.model_mut(id).children = children.into();
        id
    }

    // ---- insert ----

    pub(crate) fn insert_impl(&mut self, key: K, val: u64) -> Result<(), AlexError> {
        self.check_out_of_domain(key);
        let mut rounds = 0;
        loop {
            let leaf = self.leaf_for(key);
            if !self.touch(leaf) {
                // A node of the image that failed its check: `Alex::write` runs this again on
                // the rebuilt index.
                return Ok(());
            }
            let dn = self.data_mut(leaf);
            if !dn.is_full() || rounds >= 8 {
                if dn.is_full() {
                    // Structural changes did not make room (cannot happen by construction);
                    // a plain expansion always does.
                    dn.rebuild(INIT_DENSITY * 0.9, Layout::Spread);
                }
                return match dn.insert(key, val) {
                    Ok(()) => {
                        self.len += 1;
                        Ok(())
                    }
                    Err(_) => Err(AlexError::DuplicateKey),
                };
            }
            if dn.find_slot(key).is_some() {
                return Err(AlexError::DuplicateKey);
            }
            self.handle_full(leaf, key);
            rounds += 1;
        }
    }

    /// A full data node: expand it (retraining its model), or split it sideways or downward,
    /// as the cost model says (paper §3.3 and §4.2).
    fn handle_full(&mut self, leaf: u32, key: K) {
        let dn = self.data(leaf);
        let n = dn.num_keys;
        let must_split = (n + 1) as f64 / INIT_DENSITY > MAX_SLOTS as f64;
        // A node taking (mostly) appends or prepends expands with its free room on that side
        // (paper §3.3, append heuristics): the appends then land at their predicted slots. A
        // split would not help: every new key still goes to the edge part, which is often
        // beyond its model node's domain (only the root expands its domain), so each split
        // there would add a level.
        let appending = dn.append_right_mostly() || dn.append_left_mostly();
        if !must_split && (appending || !(dn.significant_cost_deviation() || dn.catastrophic_cost())) {
            self.expand_leaf(leaf);
            return;
        }
        let entries = dn.entries();
        let Some(base) = finite_base(entries.iter().map(|e| e.0)) else {
            self.expand_leaf(leaf);
            return;
        };
        let width = finite_width(&entries, base);
        if width <= 0.0 {
            self.expand_leaf(leaf);
            return;
        }
        let (xs, stride) = sample_offsets(&entries, base, SAMPLE / 8);
        let path = self.path_to(key);
        let fan = best_fanout(
            &xs,
            stride,
            n,
            self.len,
            width,
            1,
            MAX_SPLIT_LOG2,
            path.is_empty(),
        );
        if !must_split {
            let expand_cost = data_node_cost(&xs, stride, INIT_DENSITY);
            if expand_cost <= fan.cost {
                self.expand_leaf(leaf);
                return;
            }
        }
        self.split(leaf, &path, entries, fan.log2);
    }

    fn expand_leaf(&mut self, leaf: u32) {
        let dn = self.data_mut(leaf);
        let layout = if dn.append_right_mostly() {
            Layout::KeepLeft
        } else if dn.append_left_mostly() {
            Layout::KeepRight
        } else {
            Layout::Spread
        };
        if layout == Layout::Spread && dn.num_keys > 0 {
            dn.resize_scaled(INIT_DENSITY);
        } else {
            dn.rebuild(INIT_DENSITY, layout);
        }
        self.counters.expansions += 1;
    }

    fn split(&mut self, leaf: u32, path: &[(u32, usize)], entries: Vec<(K, u64)>, log2: u32) {
        let f = 1usize << log2.max(1);
        let Some(&(parent, slot)) = path.last() else {
            let m = self.split_down(leaf, &entries);
            self.root = m;
            return;
        };
        let (mut start, mut p) = self.model(parent).block_of(slot);
        if !self.parent_separates(parent, start, p, f, &entries) {
            // The parent's routing would put all keys into one part: a sideways split
            // would only double the parent and create empty nodes, again at every split (keys
            // that occupy a sliver of the node's slot range, e.g. a cluster taking appends).
            // A downward split fits the new model node to the keys themselves.
            let m = self.split_down(leaf, &entries);
            self.model_mut(parent).children[start..start + p].fill(m);
            return;
        }
        if p < f {
            let need = (f / p).ilog2();
            if self.model_mut(parent).expand_resolution(need) {
                self.counters.parent_expansions += 1;
                start <<= need;
                p = f;
            } else if p < 2 {
                let m = self.split_down(leaf, &entries);
                self.model_mut(parent).children[start..start + p].fill(m);
                return;
            }
        }
        let f = f.min(p);
        self.split_sideways(parent, start, p, f, leaf, &entries);
    }

    /// Whether splitting the block `[start, start + p)` of `parent` into `f` equal parts (after
    /// doubling the parent as needed) gives at least two non-empty parts.
    fn parent_separates(&self, parent: u32, start: usize, p: usize, f: usize, entries: &[(K, u64)]) -> bool {
        let m = self.model(parent);
        let n = entries.len();
        let scale = f as f64 / p as f64;
        let unit = (m.shift as f64).exp2();
        let part = |k: K| -> usize {
            // The key's position in slot units, with the fractional part kept.
            let y = m.a * k.offset_from(m.base) + m.off as f64;
            let pos = (y / unit - start as f64) * scale;
            if pos.is_nan() || pos <= 0.0 {
                0
            } else {
                (pos as usize).min(f - 1)
            }
        };
        let mut i = 0;
        while i < n {
            let j = part(entries[i].0);
            let len = entries[i..].partition_point(|e| part(e.0) <= j);
            if len == n {
                return false;
            }
            i += len;
        }
        true
    }

    /// Replaces `leaf` (covering `[start, start + p)` of `parent`) by `f` data nodes, each
    /// covering `p / f` of those slots; the parent's model decides which keys go where.
    fn split_sideways(
        &mut self,
        parent: u32,
        start: usize,
        p: usize,
        f: usize,
        leaf: u32,
        entries: &[(K, u64)],
    ) {
        let step = p / f;
        let (prev, next) = {
            let d = self.data(leaf);
            (d.prev, d.next)
        };
        let mut bounds = Vec::with_capacity(f + 1);
        bounds.push(0usize);
        {
            let m = self.model(parent);
            let mut lo = 0usize;
            for j in 0..f {
                let end = start + (j + 1) * step;
                let hi = if j + 1 == f {
                    entries.len()
                } else {
                    lo + entries[lo..].partition_point(|e| m.slot(e.0) < end)
                };
                bounds.push(hi);
                lo = hi;
            }
        }
        // Parts as aligned blocks (first part, number of parts); an empty part merges with its
        // aligned sibling, bottom-up, so that a split makes no more empty nodes than needed.
        let mut blocks: Vec<(usize, usize)> = (0..f).map(|j| (j, 1)).collect();
        let mut len = 1;
        while len < f {
            let mut merged = Vec::with_capacity(blocks.len());
            let mut i = 0;
            while i < blocks.len() {
                let (l, r) = (blocks[i], blocks.get(i + 1).copied());
                if let Some(r) = r {
                    let empty = |b: (usize, usize)| bounds[b.0] == bounds[b.0 + b.1];
                    if l.1 == len && r.1 == len && l.0 % (2 * len) == 0 && (empty(l) || empty(r)) {
                        merged.push((l.0, 2 * len));
                        i += 2;
                        continue;
                    }
                }
                merged.push(l);
                i += 1;
            }
            blocks = merged;
            len *= 2;
        }
        self.release(leaf);
        let mut ids = Vec::with_capacity(blocks.len());
        for (j, parts) in blocks {
            let part = &entries[bounds[j]..bounds[j + parts]];
            let id = self.alloc(Node::Data(DataNode::build(part, INIT_DENSITY, Layout::Spread)));
            ids.push(id);
            let s = start + j * step;
            self.model_mut(parent).children[s..s + parts * step].fill(id);
        }
        self.link_leaves(prev, &ids, next);
        self.counters.splits_sideways += 1;
    }

    /// Replaces `leaf` by a model node over its keys (built by the cost model, at least two
    /// children); returns the new node's id. The caller points the parent's slots at it.
    fn split_down(&mut self, leaf: u32, entries: &[(K, u64)]) -> u32 {
        let (prev, next) = {
            let d = self.data(leaf);
            (d.prev, d.next)
        };
        self.release(leaf);
        let mut leaves = Vec::new();
        let total = self.len;
        let id = self.build_node(entries, total, 0, true, &mut leaves);
        self.link_leaves(prev, &leaves, next);
        self.counters.splits_downward += 1;
        id
    }

    // ---- root expansion ----

    /// Counts inserts beyond the root's key domain and expands the root when they persist
    /// (paper §3.3.3: the root grows its domain instead of piling keys into an edge node).
    fn check_out_of_domain(&mut self, key: K) {
        let Node::Model(m) = &self.nodes[self.root as usize] else {
            return;
        };
        let u = m.slot_unclamped(key);
        let f = m.fanout() as i64;
        if (0..f).contains(&u) {
            return;
        }
        let right = u >= f;
        let count = if right {
            self.ood_right += 1;
            self.ood_right
        } else {
            self.ood_left += 1;
            self.ood_left
        };
        let threshold = (self.len / 10_000).clamp(OOD_MIN, OOD_MAX);
        if count >= threshold {
            self.expand_root(right, u);
            self.ood_left = 0;
            self.ood_right = 0;
        }
    }

    fn expand_root(&mut self, right: bool, u: i64) {
        let root = self.root;
        let (a, base, off, shift, f) = {
            let m = self.model(root);
            (m.a, m.base, m.off, m.shift, m.fanout())
        };
        let fi = f as i64;
        // Number of old-root-sized blocks needed to reach the key's slot.
        let blocks: u64 = if right {
            (u / fi) as u64 + 1
        } else {
            ((-(u + 1)) / fi) as u64 + 2
        };
        let k = blocks.checked_next_power_of_two().unwrap_or(1 << 62).max(2);
        let old_edge = self.edge_leaf(right);
        // The keys that leave their current leaves: those the old root sees out of its domain.
        let ood = |m: &ModelNode<K>, key: K| {
            let s = m.slot_unclamped(key);
            if right {
                s >= fi
            } else {
                s < 0
            }
        };
        let in_place = (f as u64).saturating_mul(k) <= MAX_FANOUT as u64;
        let new_leaves: Vec<u32>;
        if in_place {
            let k = k as usize;
            let nf = f * k;
            let mut children = Vec::with_capacity(nf);
            let mut leaves = Vec::new();
            let new_off = if right {
                children.extend_from_slice(&self.model(root).children);
                let mut len = f;
                while children.len() < nf {
                    let id = self.alloc(Node::Data(DataNode::empty()));
                    leaves.push(id);
                    children.extend(std::iter::repeat_n(id, len));
                    len *= 2;
                }
                Some(off)
            } else {
                let mut len = nf / 2;
                while children.len() < nf - f {
                    let id = self.alloc(Node::Data(DataNode::empty()));
                    leaves.push(id);
                    children.extend(std::iter::repeat_n(id, len));
                    len /= 2;
                }
                children.extend_from_slice(&self.model(root).children);
                i64::try_from(((nf - f) as i128) << shift)
                    .ok()
                    .and_then(|d| off.checked_add(d))
                    .filter(|o| o.unsigned_abs() < 1 << 61)
            };
            let Some(new_off) = new_off else {
                for id in leaves {
                    self.release(id);
                }
                return;
            };
            // Moved keys must be extracted with the old routing, before the root changes.
            let moved = self.extract_ood(old_edge, right, |m, k| ood(m, k), root);
            let m = self.model_mut(root);
            m.children = children.into();
            m.off = new_off;
            new_leaves = leaves;
            self.finish_root_expansion(old_edge, right, &new_leaves, moved);
        } else {
            let k = k.min(1 << MAX_ROOT_ABOVE_LOG2) as usize;
            let log2f = f.ilog2();
            let new_shift = shift + log2f;
            if new_shift > 62 {
                return;
            }
            let new_off = if right {
                Some(off)
            } else {
                i64::try_from((((k - 1) * f) as i128) << shift)
                    .ok()
                    .and_then(|d| off.checked_add(d))
                    .filter(|o| o.unsigned_abs() < 1 << 61)
            };
            let Some(new_off) = new_off else {
                return;
            };
            let moved = self.extract_ood(old_edge, right, |m, k| ood(m, k), root);
            let mut children = Vec::with_capacity(k);
            let mut leaves = Vec::new();
            if right {
                children.push(root);
                let mut len = 1;
                while children.len() < k {
                    let id = self.alloc(Node::Data(DataNode::empty()));
                    leaves.push(id);
                    children.extend(std::iter::repeat_n(id, len));
                    len *= 2;
                }
            } else {
                let mut len = k / 2;
                while children.len() < k - 1 {
                    let id = self.alloc(Node::Data(DataNode::empty()));
                    leaves.push(id);
                    children.extend(std::iter::repeat_n(id, len));
                    len /= 2;
                }
                children.push(root);
            }
            let new_root = ModelNode {
                a,
                base,
                off: new_off,
                shift: new_shift,
                children: children.into(),
            };
            self.root = self.alloc(Node::Model(new_root));
            new_leaves = leaves;
            self.finish_root_expansion(old_edge, right, &new_leaves, moved);
        }
        self.counters.root_expansions += 1;
    }

    /// Removes from the leaves at the `right` (or left) edge the keys that `ood` says leave the
    /// old root's domain; they form a suffix (prefix) of the key order.
    fn extract_ood(
        &mut self,
        edge: u32,
        right: bool,
        ood: impl Fn(&ModelNode<K>, K) -> bool,
        root: u32,
    ) -> Vec<(K, u64)> {
        let mut moved: Vec<Vec<(K, u64)>> = Vec::new();
        let mut leaf = edge;
        while leaf != NONE {
            let d = self.data(leaf);
            let step = if right { d.prev } else { d.next };
            if d.num_keys == 0 {
                leaf = step;
                continue;
            }
            let m = self.model(root);
            let probe = if right { d.max_key } else { d.min_key };
            if !ood(m, probe) {
                break;
            }
            let entries = d.entries();
            let cut = entries.partition_point(|e| ood(m, e.0) != right);
            let (keep, go) = if right {
                (&entries[..cut], &entries[cut..])
            } else {
                (&entries[cut..], &entries[..cut])
            };
            moved.push(go.to_vec());
            let rebuilt = DataNode::build(keep, INIT_DENSITY, Layout::Spread);
            let d = self.data_mut(leaf);
            let (p, nx) = (d.prev, d.next);
            *d = rebuilt;
            d.prev = p;
            d.next = nx;
            let whole = keep.is_empty();
            leaf = step;
            if !whole {
                break;
            }
        }
        if right {
            moved.reverse();
        }
        moved.concat()
    }

    /// Links the new edge leaves and fills them with the moved keys (sorted).
    fn finish_root_expansion(
        &mut self,
        old_edge: u32,
        right: bool,
        new_leaves: &[u32],
        moved: Vec<(K, u64)>,
    ) {
        if right {
            let next = self.data(old_edge).next;
            self.link_leaves(old_edge, new_leaves, next);
        } else {
            let prev = self.data(old_edge).prev;
            self.link_leaves(prev, new_leaves, old_edge);
        }
        let mut i = 0;
        while i < moved.len() {
            let leaf = self.leaf_for(moved[i].0);
            let mut j = i + 1;
            while j < moved.len() && self.leaf_for(moved[j].0) == leaf {
                j += 1;
            }
            let mut entries = self.data(leaf).entries();
            entries.extend_from_slice(&moved[i..j]);
            entries.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
            let rebuilt = DataNode::build(&entries, INIT_DENSITY, Layout::Spread);
            let d = self.data_mut(leaf);
            let (p, nx) = (d.prev, d.next);
            *d = rebuilt;
            d.prev = p;
            d.next = nx;
            i = j;
        }
    }

    // ---- delete ----

    pub(crate) fn remove_impl(&mut self, key: K) -> Option<u64> {
        let leaf = self.leaf_for(key);
        if !self.touch(leaf) {
            return None;
        }
        let dn = self.data_mut(leaf);
        let v = dn.remove(key)?;
        if dn.should_contract() {
            dn.rebuild(INIT_DENSITY, Layout::Spread);
            self.counters.contractions += 1;
        }
        self.len -= 1;
        if self.len == 0 && self.nodes.len() > 1 {
            // Nothing left: drop the whole structure rather than keep empty nodes around.
            let counters = self.counters;
            *self = Alex::new();
            self.counters = counters;
        }
        Some(v)
    }

    // ---- positions for iteration ----

    #[inline]
    pub(crate) fn entry_at(&self, p: Pos) -> (K, u64) {
        let s = self.data(p.0).slots[p.1];
        (s.key, s.val)
    }

    /// First position at or after slot `from` of `leaf`, continuing into later leaves.
    pub(crate) fn first_pos_from(&self, mut leaf: u32, mut from: usize) -> Option<Pos> {
        loop {
            let d = self.data(leaf);
            if let Some(s) = d.next_set(from) {
                return Some((leaf, s));
            }
            leaf = d.next;
            if leaf == NONE {
                return None;
            }
            from = 0;
        }
    }

    /// Last position at or before slot `from` of `leaf` (`None` = before slot 0), continuing
    /// into earlier leaves.
    pub(crate) fn last_pos_upto(&self, mut leaf: u32, mut from: Option<usize>) -> Option<Pos> {
        loop {
            let d = self.data(leaf);
            if let Some(f) = from {
                if let Some(s) = d.prev_set(f) {
                    return Some((leaf, s));
                }
            }
            leaf = d.prev;
            if leaf == NONE {
                return None;
            }
            from = Some(usize::MAX);
        }
    }

    pub(crate) fn first_pos(&self) -> Option<Pos> {
        self.first_pos_from(self.edge_leaf(false), 0)
    }

    pub(crate) fn last_pos(&self) -> Option<Pos> {
        self.last_pos_upto(self.edge_leaf(true), Some(usize::MAX))
    }

    /// First key `>= key` (`> key` when `strict`).
    pub(crate) fn pos_lower_bound(&self, key: K, strict: bool) -> Option<Pos> {
        if !key.is_valid() {
            return None;
        }
        let leaf = self.leaf_for(key);
        let d = self.data(leaf);
        let s = if strict {
            d.upper_bound_slot(key)
        } else {
            d.lower_bound_slot(key)
        };
        self.first_pos_from(leaf, s)
    }

    /// Last key `<= key` (`< key` when `strict`).
    pub(crate) fn pos_last_below(&self, key: K, strict: bool) -> Option<Pos> {
        if !key.is_valid() {
            return None;
        }
        let leaf = self.leaf_for(key);
        let d = self.data(leaf);
        let b = if strict {
            d.lower_bound_slot(key)
        } else {
            d.upper_bound_slot(key)
        };
        self.last_pos_upto(leaf, b.checked_sub(1))
    }

    // ---- invariant check (tests) ----

    /// Verifies every structural invariant; used by the property tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        // It walks the arena, not the checked accessors.
        let this = self.settled().map_err(|e| e.to_string())?;
        if !std::ptr::eq(this, self) {
            return this.check_invariants();
        }
        // DFS order of data nodes must equal the leaf list; every key must route to its leaf.
        let mut order = Vec::new();
        let mut stack = vec![self.root];
        while let Some(id) = stack.pop() {
            match &self.nodes[id as usize] {
                Node::Model(m) => {
                    if !m.fanout().is_power_of_two() {
                        return Err("fanout not a power of two".into());
                    }
                    let mut s = 0;
                    let mut kids = Vec::new();
                    while s < m.fanout() {
                        let (st, len) = m.block_of(s);
                        if st != s || !len.is_power_of_two() || st % len != 0 {
                            return Err(format!("child block [{st}, +{len}) not aligned"));
                        }
                        kids.push(m.children[s]);
                        s += len;
                    }
                    for k in kids.into_iter().rev() {
                        stack.push(k);
                    }
                }
                Node::Data(_) => order.push(id),
                Node::Free => return Err("free node reachable".into()),
            }
        }
        let mut listed = Vec::new();
        let mut l = self.edge_leaf(false);
        let mut prev = NONE;
        while l != NONE {
            if self.data(l).prev != prev {
                return Err("prev link broken".into());
            }
            listed.push(l);
            prev = l;
            l = self.data(l).next;
            if listed.len() > order.len() {
                return Err("leaf list longer than the tree".into());
            }
        }
        if listed != order {
            return Err("leaf list differs from tree order".into());
        }
        let mut count = 0;
        let mut last: Option<K> = None;
        for &id in &order {
            let d = self.data(id);
            d.check().map_err(|e| format!("leaf {id}: {e}"))?;
            for (k, _) in d.entries() {
                if let Some(p) = last {
                    if p >= k {
                        return Err(format!("keys out of order across leaves: {p:?} then {k:?}"));
                    }
                }
                last = Some(k);
                if self.leaf_for(k) != id {
                    return Err(format!("key {k:?} stored in leaf {id} but routes elsewhere"));
                }
                count += 1;
            }
        }
        if count != self.len {
            return Err(format!("len {} but {} keys stored", self.len, count));
        }
        Ok(())
    }
}
