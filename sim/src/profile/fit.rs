//! A tool's latency shape from its measured calls: the simplest that fits.
//!
//! - `fixed`, when every call took about the same (the spread is within 5% of the median, or 0.05 ms);
//! - `lognormal` from the measured P50 and P99, when a Kolmogorov–Smirnov test at the 5% level cannot tell the
//!   calls from it;
//! - otherwise the measured quantiles as `dist = "empirical"`: every percentile (fewer with fewer calls), so that
//!   a bimodal tool or one with a long tail stays what it is.

use mcpstorm_fake::{LatencyDist, lognormal_params};

use super::quantile;

/// Which shape was chosen, and how well the lognormal did.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub latency: LatencyDist,
    /// The Kolmogorov–Smirnov distance of the lognormal through P50 and P99 (`None`: not tried).
    pub ks: Option<f64>,
    /// The distance under which the lognormal is accepted for this many calls.
    pub ks_critical: f64,
}

/// Most quantiles an empirical shape holds: every percentile.
const EMPIRICAL_POINTS: usize = 101;
/// Kolmogorov–Smirnov's critical value factor at the 5% level: D ≤ 1.36 / √n.
const KS_5_PERCENT: f64 = 1.36;

/// What the simulator adds to a call around its tool's time, on average, at its default tick of 1 ms and the
/// profile scenario's `[network] latency = "0s"`: the round trip (agent, gateway, server and back) takes one tick,
/// and a tool's time ends at the first tick after it, half a tick later on average. A profiled latency is the whole
/// call as the client saw it, its transport included; the scenario's tool takes this much less, so that the
/// simulated call takes what was measured (within half a tick), not 1 to 2 ms more.
pub const SIMULATOR_CALL_MS: f64 = 1.5;

/// The smallest median a lognormal may have.
const MIN_P50_MS: f64 = 0.001;

/// The shape of ascending `sorted_ms` (one sample per answered call), as the scenario's tool takes it: the fit is
/// made on the measured calls, and then [`SIMULATOR_CALL_MS`] comes off every figure (at 0 ms the least).
pub fn fit(sorted_ms: &[f64]) -> Shape {
    let measured = fit_measured(sorted_ms);
    Shape { latency: less_simulator_call(measured.latency), ..measured }
}

fn less_simulator_call(latency: LatencyDist) -> LatencyDist {
    let less = |ms: f64| round3((ms - SIMULATOR_CALL_MS).max(0.0));
    match latency {
        LatencyDist::Fixed { ms } => LatencyDist::Fixed { ms: less(ms) },
        LatencyDist::Lognormal { p50_ms, p99_ms } => {
            let p50_ms = less(p50_ms).max(MIN_P50_MS);
            LatencyDist::Lognormal { p50_ms, p99_ms: less(p99_ms).max(p50_ms) }
        }
        LatencyDist::Empirical { ms } => LatencyDist::Empirical { ms: ms.into_iter().map(less).collect() },
        other => other,
    }
}

/// The shape of the measured calls themselves.
fn fit_measured(sorted_ms: &[f64]) -> Shape {
    let n = sorted_ms.len();
    let ks_critical = KS_5_PERCENT / (n.max(1) as f64).sqrt();
    let (min, max) = (sorted_ms.first().copied().unwrap_or(0.0), sorted_ms.last().copied().unwrap_or(0.0));
    let (p50, p99) = (quantile(sorted_ms, 0.5), quantile(sorted_ms, 0.99));
    if n < 2 || max - min <= (0.05 * p50).max(0.05) {
        return Shape { latency: LatencyDist::Fixed { ms: round3(p50) }, ks: None, ks_critical };
    }
    let ks = (p50 > 0.0 && p99 >= p50).then(|| ks_distance(sorted_ms, p50, p99));
    if ks.is_some_and(|d| d <= ks_critical) {
        let latency = LatencyDist::Lognormal { p50_ms: round3(p50), p99_ms: round3(p99) };
        return Shape { latency, ks, ks_critical };
    }
    let points = n.min(EMPIRICAL_POINTS);
    let ms = (0..points).map(|i| round3(quantile(sorted_ms, i as f64 / (points - 1) as f64))).collect();
    Shape { latency: LatencyDist::Empirical { ms }, ks, ks_critical }
}

/// Three decimals (microseconds): what a scenario file needs, and short to read.
fn round3(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// The largest gap between the samples' empirical CDF and the lognormal's through `p50` and `p99`.
fn ks_distance(sorted_ms: &[f64], p50: f64, p99: f64) -> f64 {
    let (mu, sigma) = lognormal_params(p50, p99);
    let n = sorted_ms.len() as f64;
    let mut d: f64 = 0.0;
    for (i, x) in sorted_ms.iter().enumerate() {
        let cdf = if *x <= 0.0 {
            0.0
        } else if sigma == 0.0 {
            if *x < p50 { 0.0 } else { 1.0 }
        } else {
            normal_cdf((x.ln() - mu) / sigma)
        };
        d = d.max((cdf - i as f64 / n).abs()).max(((i + 1) as f64 / n - cdf).abs());
    }
    d
}

/// The standard normal CDF. `std` has no `erf`, and one approximation (Abramowitz and Stegun 7.1.26, error under
/// 1.5e-7) does not justify a crate.
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 { 0.5 * (1.0 + erf) } else { 0.5 * (1.0 - erf) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, LogNormal};

    #[test]
    fn calls_that_all_take_the_same_time_are_fixed() {
        let shape = fit(&[20.0, 20.1, 20.2, 20.3]);
        assert_eq!(shape.latency, LatencyDist::Fixed { ms: 20.15 - SIMULATOR_CALL_MS });
    }

    /// The simulator's own cost of a call comes off every figure, never below 0 ms.
    #[test]
    fn the_tool_takes_the_measured_call_less_what_the_simulator_adds() {
        let v: Vec<f64> = (0..101).map(|i| 1.0 + f64::from(i) / 10.0).collect();
        let measured = fit_measured(&v);
        let LatencyDist::Empirical { ms } = &measured.latency else { panic!("{measured:?}") };
        let LatencyDist::Empirical { ms: simulated } = fit(&v).latency else { panic!("not empirical") };
        assert_eq!(simulated.len(), ms.len());
        for (m, s) in ms.iter().zip(&simulated) {
            assert!((s - (m - SIMULATOR_CALL_MS).max(0.0)).abs() < 1e-9, "{m} became {s}");
        }
        assert_eq!(fit(&[0.5, 0.5]).latency, LatencyDist::Fixed { ms: 0.0 });
        let shifted = less_simulator_call(LatencyDist::Lognormal { p50_ms: 1.0, p99_ms: 1.2 });
        assert_eq!(shifted, LatencyDist::Lognormal { p50_ms: MIN_P50_MS, p99_ms: MIN_P50_MS });
        assert!(shifted.validate().is_ok());
    }

    #[test]
    fn lognormal_draws_are_recognised_as_lognormal() {
        let (mu, sigma) = lognormal_params(10.0, 60.0);
        let dist = LogNormal::new(mu, sigma).expect("valid");
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut v: Vec<f64> = (0..2000).map(|_| dist.sample(&mut rng)).collect();
        v.sort_by(f64::total_cmp);
        let shape = fit(&v);
        assert!(matches!(shape.latency, LatencyDist::Lognormal { .. }), "{shape:?}");
    }

    #[test]
    fn a_bimodal_tool_keeps_its_measured_quantiles() {
        let mut v: Vec<f64> = (0..900).map(|i| 2.0 + f64::from(i % 10) / 100.0).collect();
        v.extend((0..100).map(|i| 200.0 + f64::from(i)));
        v.sort_by(f64::total_cmp);
        let shape = fit(&v);
        let LatencyDist::Empirical { ms } = &shape.latency else { panic!("{shape:?}") };
        assert_eq!(ms.len(), 101);
        assert!(ms[50] < 3.0 && ms[95] >= 200.0, "{ms:?}");
        assert!(shape.latency.validate().is_ok());
        assert!(shape.ks.is_some_and(|d| d > shape.ks_critical));
    }

    #[test]
    fn the_normal_cdf_is_accurate() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(2.3263) - 0.99).abs() < 1e-4);
        assert!((normal_cdf(-1.0) - 0.158_655_25).abs() < 1e-6);
    }
}
