//! Axes a reader can read on log-scaled charts: ticks only at powers of ten, sizes written as
//! 10K/100K/1M/10M, values as 0.1/1/10/1K.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};

/// A log10 axis for plotters: values are given as log10(x), the ticks are the powers of ten
/// of the data's range and nothing else (plotters' own log axis labels every 1-2-5 step, which
/// piles up a dozen labels per decade), each labelled with `fmt_decade`.
#[derive(Clone, Debug)]
pub struct DecadeAxis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl DecadeAxis {
    /// The axis from the power of ten at or below `min` to the one at or above `max` (values,
    /// not logs), with `pad` decades of room on each side.
    pub fn covering(min: f64, max: f64, pad: f64) -> DecadeAxis {
        let ticks: Vec<f64> = decades(min, max).iter().map(|v| v.log10().round()).collect();
        DecadeAxis {
            lo: ticks[0] - pad,
            hi: ticks[ticks.len() - 1] + pad,
            ticks,
        }
    }
}

impl Ranged for DecadeAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + ((limit.1 - limit.0) as f64 * f).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // The decades are the bold points (ticks, labels, mesh lines); plotters asks for
        // light points (thin lines between labels) with a hint that allows them: none.
        if hint.weight().allow_light_points() {
            return Vec::new();
        }
        self.ticks.clone()
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for DecadeAxis {
    fn format(v: &f64) -> String {
        fmt_decade(10f64.powf(*v))
    }
}

/// The powers of ten from the one at or below `lo` to the one at or above `hi` (at least two):
/// the axis bounds and its only ticks.
pub fn decades(lo: f64, hi: f64) -> Vec<f64> {
    let lo = if lo > 0.0 { lo } else { 1.0 };
    let hi = hi.max(lo);
    let a = lo.log10().floor() as i32;
    let mut b = hi.log10().ceil() as i32;
    if b <= a {
        b = a + 1;
    }
    (a..=b).map(|e| 10f64.powi(e)).collect()
}

/// A tick label: 0.01, 0.1, 1, 10, 100, 1K, 10K, 100K, 1M, 10M, 100M, 1G.
pub fn fmt_decade(v: f64) -> String {
    let e = v.log10().round() as i32;
    match e {
        i32::MIN..=-1 => format!("{}", 10f64.powi(e)),
        0..=2 => format!("{}", 10i64.pow(e as u32)),
        3..=5 => format!("{}K", 10i64.pow(e as u32 - 3)),
        6..=8 => format!("{}M", 10i64.pow(e as u32 - 6)),
        _ => format!("{}G", 10i64.pow(e as u32 - 9)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decade_ticks_only() {
        assert_eq!(decades(10_000.0, 10_000_000.0), vec![1e4, 1e5, 1e6, 1e7]);
        assert_eq!(decades(0.3, 40.0), vec![0.1, 1.0, 10.0, 100.0]);
        assert_eq!(decades(5.0, 5.0), vec![1.0, 10.0]);
        let labels: Vec<String> = decades(0.05, 2e6).into_iter().map(fmt_decade).collect();
        assert_eq!(
            labels,
            ["0.01", "0.1", "1", "10", "100", "1K", "10K", "100K", "1M", "10M"]
        );
    }
}
