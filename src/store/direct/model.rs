//! A learned model over one sorted array of u64 keys: a piecewise-linear function from a key to
//! its position, with every key's prediction within a fixed error bound (the greedy "shrinking
//! cone" of FITing-tree and Bourbon's greedy-PLR). A lookup predicts, then searches only the
//! window the bound allows.
//!
//! Used for the data blocks of an SST file: the keys are the largest rowid each block may hold,
//! dense and nearly evenly spaced (rows of similar size), so one or a few segments cover a file.

/// Positions a prediction may be off by (each side).
pub(crate) const EPSILON: usize = 4;

#[derive(Debug, Default)]
pub(crate) struct Pla {
    /// First key of each segment, ascending.
    x0: Vec<u64>,
    /// Position of that key.
    y0: Vec<u32>,
    slope: Vec<f64>,
}

impl Pla {
    /// Fits the `n` keys `key(0..n)` (ascending; strictly, or with short runs of equal keys).
    pub(crate) fn fit(n: usize, key: impl Fn(usize) -> u64) -> Pla {
        let mut m = Pla::default();
        let eps = EPSILON as f64;
        let mut i = 0;
        while i < n {
            let (x0, y0) = (key(i), i);
            let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
            let mut j = i + 1;
            while j < n {
                let dy = (j - y0) as f64;
                let dx = (key(j) - x0) as f64;
                if dx == 0.0 {
                    if dy > eps {
                        break;
                    }
                } else {
                    let (l, h) = (lo.max((dy - eps) / dx), hi.min((dy + eps) / dx));
                    if l > h {
                        break;
                    }
                    (lo, hi) = (l, h);
                }
                j += 1;
            }
            let slope = if hi.is_finite() { (lo + hi) / 2.0 } else { 0.0 };
            m.x0.push(x0);
            m.y0.push(y0 as u32);
            m.slope.push(slope);
            i = j;
        }
        m
    }

    /// The first position whose key is >= `x` among the `n` keys the model was fitted to, or `n`
    /// if none: predicted, then searched within the error bound, and checked (a wrong prediction
    /// costs a full binary search, never a wrong answer).
    #[cfg(test)]
    pub(crate) fn lower_bound(&self, n: usize, x: u64, key: impl Fn(usize) -> u64) -> usize {
        self.lower_bound_from(n, x, self.predict(n, x), key)
    }

    /// The model's prediction for `x`: a position clamped to its segment and the `n` keys. No
    /// key is read.
    #[inline]
    pub(crate) fn predict(&self, n: usize, x: u64) -> usize {
        let s = self.x0.partition_point(|&k| k <= x).saturating_sub(1);
        let (Some(&x0), Some(&y0), Some(&slope)) = (self.x0.get(s), self.y0.get(s), self.slope.get(s)) else {
            return 0;
        };
        if x <= x0 {
            return y0 as usize;
        }
        let end = self.y0.get(s + 1).map_or(n, |&y| y as usize);
        let pos = f64::from(y0) + slope * (x - x0) as f64;
        // A non-negative finite float: the signed conversion is one instruction.
        (pos as i64 as usize).min(end.saturating_sub(1))
    }

    /// [`Pla::lower_bound`] from a prediction `guess` (of [`Pla::predict`]).
    #[inline]
    pub(crate) fn lower_bound_from(
        &self,
        n: usize,
        x: u64,
        guess: usize,
        key: impl Fn(usize) -> u64,
    ) -> usize {
        let search = |mut lo: usize, mut hi: usize| {
            while lo < hi {
                let mid = (lo + hi) / 2;
                if key(mid) < x {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        if n == 0 || x > key(n - 1) {
            return n;
        }
        // Walk from the prediction (usually right, or one off: neighbours share a cache line)
        // rather than bisecting the whole window; past the error bound, bisect everything.
        let mut i = guess.min(n - 1);
        if key(i) < x {
            for _ in 0..=EPSILON + 1 {
                i += 1;
                if i == n || key(i) >= x {
                    return i;
                }
            }
        } else {
            for _ in 0..=EPSILON + 1 {
                if i == 0 || key(i - 1) < x {
                    return i;
                }
                i -= 1;
            }
        }
        search(0, n)
    }

    pub(crate) fn segments(&self) -> usize {
        self.x0.len()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.x0.capacity() * 8 + self.y0.capacity() * 4 + self.slope.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn lower_bound_equals_binary_search(
            mut keys in proptest::collection::vec(0u64..1_000_000, 0..400),
            probes in proptest::collection::vec(0u64..1_100_000, 1..50),
        ) {
            keys.sort_unstable();
            keys.dedup();
            let m = Pla::fit(keys.len(), |i| keys[i]);
            for x in probes.into_iter().chain(keys.iter().copied()) {
                prop_assert_eq!(m.lower_bound(keys.len(), x, |i| keys[i]), keys.partition_point(|&k| k < x));
            }
        }
    }

    #[test]
    fn evenly_spaced_keys_fit_one_segment_within_the_bound() {
        let keys: Vec<u64> = (0..100_000u64).map(|i| 1000 + i * 31 + (i % 7)).collect();
        let m = Pla::fit(keys.len(), |i| keys[i]);
        assert_eq!(m.segments(), 1);
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(m.lower_bound(keys.len(), k, |i| keys[i]), i);
        }
    }
}
