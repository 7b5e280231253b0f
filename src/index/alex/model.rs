//! Linear models: `y = a * (key - base) + b`, trained by least squares.

use super::AlexKey;

/// A linear model over `x = key.offset_from(base)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinearModel {
    pub a: f64,
    pub b: f64,
}

impl LinearModel {
    pub const ZERO: LinearModel = LinearModel { a: 0.0, b: 0.0 };

    #[inline]
    pub fn predict(&self, x: f64) -> f64 {
        self.a * x + self.b
    }

    /// Least-squares fit of `rank = a * x + b` over finite `xs` (non-finite ones are skipped;
    /// their rank still counts). A degenerate input gives a flat model.
    pub fn fit_ranks(xs: impl Iterator<Item = f64> + Clone) -> LinearModel {
        let (mut n, mut sx, mut sy) = (0.0f64, 0.0f64, 0.0f64);
        for (i, x) in xs.clone().enumerate() {
            if x.is_finite() {
                n += 1.0;
                sx += x;
                sy += i as f64;
            }
        }
        if n < 1.0 {
            return LinearModel::ZERO;
        }
        let (mx, my) = (sx / n, sy / n);
        let (mut sxx, mut sxy) = (0.0f64, 0.0f64);
        for (i, x) in xs.enumerate() {
            if x.is_finite() {
                let dx = x - mx;
                sxx += dx * dx;
                sxy += dx * (i as f64 - my);
            }
        }
        let a = if sxx > 0.0 && sxx.is_finite() {
            sxy / sxx
        } else {
            0.0
        };
        let a = if a.is_finite() && a > 0.0 { a } else { 0.0 };
        let b = my - a * mx;
        LinearModel {
            a,
            b: if b.is_finite() { b } else { 0.0 },
        }
    }

    /// The model scaled so that its output is multiplied by `f`.
    #[inline]
    pub fn scaled(self, f: f64) -> LinearModel {
        LinearModel {
            a: self.a * f,
            b: self.b * f,
        }
    }
}

/// A finite base for offsets of a sorted key set: its first key whose offset from itself is
/// finite (f64 infinities cannot be a base). Falls back to the first key.
pub(crate) fn finite_base<K: AlexKey>(keys: impl Iterator<Item = K>) -> Option<K> {
    let mut first = None;
    for k in keys {
        if first.is_none() {
            first = Some(k);
        }
        if k.offset_from(k) == 0.0 {
            return Some(k);
        }
    }
    first
}

/// Exact floor of a finite or infinite f64 as i64 (saturating; NaN gives 0).
#[inline]
pub(crate) fn floor_i64(y: f64) -> i64 {
    // Truncate, then step down when truncation went up (negative non-integers); written
    // without a branch: it is on every model node's routing path.
    let t = y as i64;
    t.saturating_sub(((t as f64) > y) as i64)
}
