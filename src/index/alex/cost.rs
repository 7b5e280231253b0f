//! The cost model (paper §4.1): a data node's cost is its expected exponential-search iterations
//! and expected shifts per insert, weighted; a model node adds one traversal; a size term keeps
//! the number of nodes in check. Costs are "per operation" units; only their comparison matters.

use super::model::LinearModel;

/// Weight of one exponential-search iteration.
pub(crate) const W_ITER: f64 = 20.0;
/// Weight of one shifted slot on insert.
pub(crate) const W_SHIFT: f64 = 0.5;
/// Weight of one more model-node level on the path.
pub(crate) const W_TRAVERSE: f64 = 20.0;
/// Weight of one byte of structure (children arrays and node headers), scaled by
/// `total_keys / keys_in_subtree` so that small subtrees pay for their overhead per key.
pub(crate) const W_SIZE: f64 = 5e-7;
/// Expected fraction of inserts among operations (shifts matter only for inserts).
pub(crate) const INSERT_FRAC: f64 = 1.0;
/// Bytes of a node header plus its allocations' bookkeeping (used by the size term).
pub(crate) const NODE_BYTES: f64 = 192.0;
/// Most keys a data node is built with.
pub(crate) const MAX_DATA_KEYS: f64 = super::layout::MAX_SLOTS as f64 * super::layout::INIT_DENSITY;
/// At most this many keys are used to estimate a cost (a stride sample of larger sets).
pub(crate) const SAMPLE: usize = 1 << 17;

#[inline]
pub(crate) fn log2_err(d: usize) -> f64 {
    fast_log2((d + 1) as f64)
}

/// log2 for x >= 1, to within 0.09: the exponent plus the mantissa as a linear fraction.
#[inline]
pub(crate) fn fast_log2(x: f64) -> f64 {
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as f64 - 1023.0;
    let m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    e + (m - 1.0)
}

#[inline]
pub(crate) fn data_cost(iters: f64, shifts: f64) -> f64 {
    W_ITER * iters + W_SHIFT * shifts * INSERT_FRAC
}

/// Expected (iterations, shifts) of a data node built at `density` over the sorted finite
/// offsets `xs`, a stride-`stride` sample of the real keys (search distances scale by stride).
pub(crate) fn estimate(xs: &[f64], stride: f64, density: f64) -> (f64, f64) {
    let m = xs.len();
    if m <= 1 {
        return (0.0, 0.0);
    }
    let cap = ((m as f64 / density).ceil() as usize).max(m + 1);
    let model = LinearModel::fit_ranks(xs.iter().copied()).scaled(cap as f64 / m as f64);
    let mut iters = 0.0;
    let mut shifts = 0.0;
    let mut run = 0.0f64;
    let mut next_free = 0usize;
    for (i, &x) in xs.iter().enumerate() {
        let pred = super::layout::predict_slot(&model, x, cap);
        let pos = pred.max(next_free).min(cap - (m - i));
        let d = pred.abs_diff(pos);
        if d > 0 {
            iters += fast_log2(d as f64 * stride + 1.0);
        }
        if pos == next_free && i > 0 {
            run += 1.0;
        } else {
            shifts += run * run;
            run = 1.0;
        }
        next_free = pos + 1;
    }
    shifts += run * run;
    (iters / m as f64, shifts / (4.0 * m as f64))
}

/// Cost of one data node over `xs` (see [`estimate`]).
pub(crate) fn data_node_cost(xs: &[f64], stride: f64, density: f64) -> f64 {
    let (i, s) = estimate(xs, stride, density);
    data_cost(i, s)
}

/// The result of a fanout search: `log2` of the fanout and the cut of the fanout tree, as
/// aligned blocks of slots `(start, len)` covering `[0, 2^log2)`, each block one child.
pub(crate) struct Fanout {
    pub log2: u32,
    pub cost: f64,
    pub blocks: Vec<(usize, usize)>,
}

/// Chooses a model node's fanout for the sorted finite offsets `xs` (a stride sample of `n`
/// keys out of `total` in the index), with slots `floor(x * F / width)`: tries every power of
/// two up to `max_log2`, keeps the cheapest (stopping after the cost rose twice in a row),
/// then merges sibling children bottom-up while one data node over both is cheaper (the
/// fanout-tree cut of paper §4.3). `min_log2` forces a split.
#[allow(clippy::too_many_arguments)]
pub(crate) fn best_fanout(
    xs: &[f64],
    stride: f64,
    n: usize,
    total: usize,
    width: f64,
    min_log2: u32,
    max_log2: u32,
    traverse: bool,
) -> Fanout {
    let m = xs.len().max(1);
    let size_scale = W_SIZE * total.max(1) as f64 / n.max(1) as f64;
    let mut best: Option<(u32, f64, Vec<usize>)> = None;
    let mut rises = 0;
    let mut prev_cost = f64::INFINITY;
    let w = if width.is_finite() && width > 0.0 {
        width
    } else {
        1.0
    };
    for d in min_log2.max(1)..=max_log2.max(min_log2.max(1)) {
        let f = 1usize << d;
        let a = f as f64 / w;
        // Group boundaries: bounds[g] = first sample index of group g.
        let mut bounds = Vec::with_capacity(f + 1);
        let mut i = 0usize;
        for g in 0..f {
            bounds.push(i);
            while i < xs.len() && slot_of(a, xs[i], f) <= g {
                i += 1;
            }
        }
        bounds.push(xs.len());
        let mut c = if traverse { W_TRAVERSE } else { 0.0 };
        let mut nonempty = 0usize;
        let mut oversized = false;
        for g in 0..f {
            let part = &xs[bounds[g]..bounds[g + 1]];
            if !part.is_empty() {
                nonempty += 1;
                let mut pc = data_node_cost(part, stride, super::layout::INIT_DENSITY);
                if part.len() as f64 * stride > MAX_DATA_KEYS {
                    // Too big for one data node: it will need another level.
                    pc += W_TRAVERSE;
                    oversized = true;
                }
                c += part.len() as f64 / m as f64 * pc;
            }
        }
        c += size_scale * (f as f64 * 4.0 + nonempty as f64 * NODE_BYTES);
        if best.as_ref().is_none_or(|b| c < b.1) {
            best = Some((d, c, bounds));
        }
        // Stop once the cost rose three times in a row past a size that fits data nodes.
        if c >= prev_cost && !oversized {
            rises += 1;
            if rises >= 3 {
                break;
            }
        } else {
            rises = 0;
        }
        prev_cost = c;
    }
    let (log2, cost, bounds) = match best {
        Some(b) => b,
        None => {
            let f = 1usize << min_log2.max(1);
            return Fanout {
                log2: min_log2.max(1),
                cost: f64::INFINITY,
                blocks: (0..f).map(|s| (s, 1)).collect(),
            };
        }
    };
    // Bottom-up merge of sibling blocks (both single data nodes of the same size).
    let f = 1usize << log2;
    // (start, len, sample_lo, sample_hi, cost*weight)
    let mut blocks: Vec<(usize, usize, usize, usize, f64)> = (0..f)
        .map(|g| {
            let part = &xs[bounds[g]..bounds[g + 1]];
            let c = part.len() as f64 * data_node_cost(part, stride, super::layout::INIT_DENSITY);
            (g, 1, bounds[g], bounds[g + 1], c)
        })
        .collect();
    let overhead = NODE_BYTES * size_scale * m as f64;
    let mut len = 1usize;
    while len < f {
        let mut merged = Vec::with_capacity(blocks.len());
        let mut i = 0;
        let mut any = false;
        while i < blocks.len() {
            let l = blocks[i];
            if i + 1 < blocks.len() && l.1 == len && l.0.is_multiple_of(2 * len) && blocks[i + 1].1 == len {
                let r = blocks[i + 1];
                let part = &xs[l.2..r.3];
                let c = part.len() as f64 * data_node_cost(part, stride, super::layout::INIT_DENSITY);
                // Merging saves one node header.
                let ne = |b: &(usize, usize, usize, usize, f64)| if b.3 > b.2 { 1.0 } else { 0.0 };
                let sep = l.4 + r.4 + overhead * (ne(&l) + ne(&r));
                let mer = c + overhead * if part.is_empty() { 0.0 } else { 1.0 };
                if mer <= sep
                    && part.len() as f64 * stride
                        <= super::layout::MAX_SLOTS as f64 * super::layout::INIT_DENSITY
                {
                    merged.push((l.0, 2 * len, l.2, r.3, c));
                    any = true;
                    i += 2;
                    continue;
                }
            }
            merged.push(l);
            i += 1;
        }
        blocks = merged;
        if !any {
            break;
        }
        len *= 2;
    }
    Fanout {
        log2,
        cost,
        blocks: blocks.into_iter().map(|b| (b.0, b.1)).collect(),
    }
}

/// `floor(a * x)` clamped to `[0, f)`, as [`super::model_node::ModelNode::slot`] computes it
/// for a node with `off = 0, shift = 0`.
#[inline]
pub(crate) fn slot_of(a: f64, x: f64, f: usize) -> usize {
    let s = super::model::floor_i64(a * x);
    if s <= 0 {
        0
    } else {
        (s as usize).min(f - 1)
    }
}
