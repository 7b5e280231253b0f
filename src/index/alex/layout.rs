//! Data-node layout parameters (densities, sizes) and the clamped slot prediction: what the data
//! nodes and the cost model both need, owned here so that neither imports the other for it.

use super::model::LinearModel;

/// Density a node is built at (bulk load, splits, expansions, contractions).
pub(crate) const INIT_DENSITY: f64 = 0.7;
/// A node whose next insert would pass this density is full (expanded or split).
pub(crate) const MAX_DENSITY: f64 = 0.8;
/// Below this density after a delete the node contracts back to `INIT_DENSITY`.
pub(crate) const MIN_DENSITY: f64 = 0.35;
/// Smallest slot array.
pub(crate) const MIN_CAP: usize = 16;
/// Largest slot array a node may grow to by expansion (16 MiB of 16-byte slots); a full node of
/// this size must split.
pub(crate) const MAX_SLOTS: usize = 1 << 20;

/// The slot a model predicts for offset `x`, clamped to the array (NaN gives 0).
#[inline]
pub(crate) fn predict_slot(model: &LinearModel, x: f64, cap: usize) -> usize {
    // Saturating; negative and NaN give 0 (the signed conversion is the cheaper one on x86-64).
    let p = model.predict(x) as i64;
    p.max(0).min(cap as i64 - 1) as usize
}
