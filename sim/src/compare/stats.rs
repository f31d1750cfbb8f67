//! The statistics of a paired comparison: means with 95% confidence intervals (Student's t, since seeds are few),
//! paired differences, and win shares.
//!
//! Paired, because every variant runs on the same seeds: the same arrivals and the same fault timeline. The
//! difference per seed removes the seed's own luck, so a small real effect shows with few seeds where comparing
//! two independent means would drown it. Written here rather than pulled from a statistics crate: it is a mean, a
//! standard deviation and a t table.

/// Two-sided 95% critical values of Student's t for 1..=30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// t(0.975, df). Beyond the table, the normal quantile with the first two Cornish-Fisher corrections (within 0.0002
/// of the exact value from df = 31 on).
pub fn t_975(df: usize) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T_975[df - 1],
        _ => {
            let (z, n) = (1.959_964_f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * n) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// A sample's mean and the half-width of its 95% confidence interval (NaN with fewer than two values).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub mean: f64,
    pub ci95: f64,
    pub n: usize,
}

impl Estimate {
    pub fn of(values: &[f64]) -> Estimate {
        let n = values.len();
        let mean = if n == 0 { f64::NAN } else { values.iter().sum::<f64>() / n as f64 };
        let ci95 = if n < 2 {
            f64::NAN
        } else {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t_975(n - 1) * (var / n as f64).sqrt()
        };
        Estimate { mean, ci95, n }
    }

    /// Whether the interval excludes zero: for a paired difference, a difference the seeds support.
    pub fn excludes_zero(&self) -> bool {
        self.ci95.is_finite() && (self.mean - self.ci95 > 0.0 || self.mean + self.ci95 < 0.0)
    }
}

/// Per-seed differences `b[i] - a[i]`.
pub fn paired(a: &[f64], b: &[f64]) -> Estimate {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    Estimate::of(&d)
}

/// Each variant's shares of seeds on which it scored best alone (`won`) and on which it tied for best with others
/// (`tied`); `lower_is_better` says which way. A tie is no one's win: when every variant scores the same on every
/// seed, each has won 0% and tied 100%, not 25% each. A seed where a variant's value is not finite is won by the
/// others; a seed nobody finishes is a tie of all. `by_variant[v][s]` is variant `v`'s value on seed `s`.
#[derive(Debug, Clone, PartialEq)]
pub struct Wins {
    pub won: Vec<f64>,
    pub tied: Vec<f64>,
}

pub fn win_shares(by_variant: &[Vec<f64>], lower_is_better: bool) -> Wins {
    let seeds = by_variant.iter().map(Vec::len).min().unwrap_or(0);
    let mut won = vec![0.0; by_variant.len()];
    let mut tied = vec![0.0; by_variant.len()];
    let score = |x: f64| {
        if !x.is_finite() {
            f64::INFINITY
        } else if lower_is_better {
            x
        } else {
            -x
        }
    };
    for s in 0..seeds {
        let keys: Vec<f64> = by_variant.iter().map(|v| score(v[s])).collect();
        let best = keys.iter().copied().fold(f64::INFINITY, f64::min);
        let alone = keys.iter().filter(|k| **k == best).count() == 1;
        for (v, k) in keys.iter().enumerate() {
            if *k == best {
                let count = if alone { &mut won[v] } else { &mut tied[v] };
                *count += 1.0;
            }
        }
    }
    let share = |counts: Vec<f64>| counts.iter().map(|w| if seeds == 0 { 0.0 } else { w / seeds as f64 }).collect();
    Wins { won: share(won), tied: share(tied) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_interval_match_a_hand_computation() {
        // mean 5, sample sd = sqrt(10/4) ≈ 1.5811, se ≈ 0.7071, t(4) = 2.776 → ±1.963.
        let e = Estimate::of(&[3.0, 4.0, 5.0, 6.0, 7.0]);
        assert_eq!(e.mean, 5.0);
        assert!((e.ci95 - 1.9629).abs() < 1e-3, "{}", e.ci95);
        assert!(Estimate::of(&[1.0]).ci95.is_nan());
        assert!(Estimate::of(&[]).mean.is_nan());
    }

    #[test]
    fn t_beyond_the_table_is_close_to_exact() {
        // Exact: t(0.975, 31) = 2.0395, t(0.975, 40) = 2.0211, t(0.975, 120) = 1.9799.
        for (df, exact) in [(31, 2.0395), (40, 2.0211), (120, 1.9799)] {
            assert!((t_975(df) - exact).abs() < 2e-4, "t({df}) = {}", t_975(df));
        }
        assert!(t_975(31) < t_975(30));
    }

    #[test]
    fn paired_differences_see_what_independent_means_miss() {
        // Seeds vary a lot; b is always exactly 1 lower.
        let a = [100.0, 200.0, 150.0, 300.0];
        let b = [99.0, 199.0, 149.0, 299.0];
        let d = paired(&a, &b);
        assert_eq!((d.mean, d.ci95), (-1.0, 0.0));
        assert!(!Estimate::of(&a).excludes_zero() || Estimate::of(&a).mean > 0.0);
        let noisy = paired(&a, &[101.0, 198.0, 152.0, 297.0]);
        assert!(!noisy.excludes_zero(), "{noisy:?}");
    }

    #[test]
    fn ties_are_counted_as_ties_and_non_finite_values_lose() {
        let v = vec![vec![1.0, 5.0, 2.0, f64::NAN], vec![2.0, 4.0, 2.0, 3.0]];
        let w = win_shares(&v, true);
        assert_eq!(w.won, vec![1.0 / 4.0, 2.0 / 4.0]);
        assert_eq!(w.tied, vec![1.0 / 4.0, 1.0 / 4.0]);
        assert_eq!(win_shares(&v[..1], false).won, vec![1.0], "one variant wins alone");
        // Four variants level on every seed: no one won anything.
        let level = vec![vec![7.0, 3.0]; 4];
        let w = win_shares(&level, true);
        assert_eq!((w.won, w.tied), (vec![0.0; 4], vec![1.0; 4]));
    }
}
