//! Summaries of repeated runs: the median, the spread (none for a single run) and speedup
//! ratios by mean and by p50.

use serde::{Deserialize, Serialize};

/// Median of `v` (the mean of the middle two for an even count); `None` when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// (max - min) / median of the run figures, in percent. A single run has no spread: `None`,
/// never 0 (rule 7: a single run is labelled as such and has no spread).
pub fn spread_pct(runs: &[f64]) -> Option<f64> {
    if runs.len() < 2 {
        return None;
    }
    let m = median(runs)?;
    let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (m > 0.0).then(|| (hi - lo) / m * 100.0)
}

/// The speedup of Augur over another side: the other side's latency / Augur's, by mean and
/// by p50 (> 1: Augur faster). A figure missing on either side gives `None` for that metric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
}

impl Ratio {
    pub fn of(other_mean: f64, other_p50: Option<f64>, augur_mean: f64, augur_p50: Option<f64>) -> Ratio {
        let div = |o: f64, a: f64| (o > 0.0 && a > 0.0).then(|| o / a);
        Ratio {
            mean: div(other_mean, augur_mean),
            p50: match (other_p50, augur_p50) {
                (Some(o), Some(a)) => div(o, a),
                _ => None,
            },
        }
    }

    /// "3.10x mean / 2.95x p50", "0.80x mean / p50 n/a".
    pub fn describe(&self) -> String {
        format!("{} mean / {} p50", fmt_ratio(self.mean), fmt_ratio(self.p50))
    }
}

/// "3.10x"; two significant digits below 0.1 ("0.0021x"), so a large loss never reads 0.00x.
pub fn fmt_ratio(r: Option<f64>) -> String {
    match r {
        Some(x) if x >= 0.095 || x == 0.0 => format!("{x:.2}x"),
        Some(x) => {
            let digits = (1 - x.log10().floor() as i32).max(2) as usize;
            format!("{x:.digits$}x")
        }
        None => "n/a".into(),
    }
}

/// 10K, 100K, 1M, 10M, 25M; other counts as digits.
pub fn fmt_count(n: usize) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}K", n / 1000)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_run_has_no_spread() {
        assert_eq!(spread_pct(&[5.0]), None);
        assert_eq!(spread_pct(&[]), None);
        let s = spread_pct(&[9.0, 10.0, 11.0]).unwrap();
        assert!((s - 20.0).abs() < 1e-9, "{s}");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn ratios_by_mean_and_p50() {
        let r = Ratio::of(10.0, Some(4.0), 2.0, Some(2.0));
        assert_eq!(r.mean, Some(5.0));
        assert_eq!(r.p50, Some(2.0));
        assert_eq!(r.describe(), "5.00x mean / 2.00x p50");
        let r = Ratio::of(10.0, None, 2.0, Some(2.0));
        assert_eq!(r.p50, None);
        assert_eq!(r.describe(), "5.00x mean / n/a p50");
        assert_eq!(fmt_ratio(Some(0.0021)), "0.0021x");
        assert_eq!(fmt_ratio(Some(0.05)), "0.050x");
        assert_eq!(fmt_ratio(Some(0.5)), "0.50x");
    }

    #[test]
    fn counts() {
        assert_eq!(fmt_count(10_000), "10K");
        assert_eq!(fmt_count(10_000_000), "10M");
        assert_eq!(fmt_count(1500), "1500");
    }
}
