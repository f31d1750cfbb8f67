//! Latency distributions for fake tools, as the `latency` table of a tool in a scenario file.
//!
//! Milliseconds are `f64` so TOML integers and fractions both work. Sampling never panics: validation rejects
//! impossible parameters at load, and every sample is clamped into `[0, MAX_LATENCY]` before it becomes a `Duration`.

use std::time::Duration;

use rand::Rng;
use rand_distr::{Distribution, LogNormal, Normal};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// z for the 99th percentile of the standard normal: with `sigma = (ln p99 − ln p50) / Z99` a lognormal's p99 lands
/// exactly on the configured value.
const Z99: f64 = 2.3263;

/// Longest latency any draw can produce: one day. Caps a lognormal tail or a `sleep_ms(1e15)` argument so a duration
/// conversion can never overflow.
pub const MAX_LATENCY: Duration = Duration::from_secs(24 * 3600);

/// Most steps a `steps` latency may default to: a hundred times the progress reports one call sends at most.
pub const MAX_STEPS: u64 = 1_000_000;

/// How long a tool takes. The `dist` key picks the variant:
///
/// ```toml
/// latency = { dist = "fixed", ms = 10 }
/// latency = { dist = "uniform", min_ms = 5, max_ms = 15 }
/// latency = { dist = "normal", mean_ms = 40, stddev_ms = 10 }       # clamped at 0
/// latency = { dist = "lognormal", p50_ms = 40, p99_ms = 400 }
/// latency = { dist = "arg", name = "ms", default_ms = 0 }            # sleep what the caller asks
/// latency = { dist = "steps" }   # steps × step_ms from the call's arguments, progress after every step
/// latency = { dist = "empirical", ms = [1.2, 1.9, 2.4, 3.1, 40] }  # measured quantiles (`mcpstorm profile`)
/// ```
///
/// Default: `fixed`, 0 ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum LatencyDist {
    /// Every call takes `ms`.
    Fixed { ms: f64 },
    /// Uniform between `min_ms` and `max_ms`.
    Uniform { min_ms: f64, max_ms: f64 },
    /// Normal with mean `mean_ms` and standard deviation `stddev_ms`, clamped at 0.
    Normal { mean_ms: f64, stddev_ms: f64 },
    /// Lognormal with median `p50_ms` and 99th percentile `p99_ms`: the long tail of a real service.
    Lognormal { p50_ms: f64, p99_ms: f64 },
    /// The call's argument `name` (a non-negative number of ms); `default_ms` when it is absent.
    Arg {
        name: String,
        #[serde(default)]
        default_ms: f64,
    },
    /// `steps` steps of `step_ms` each, both read from the call's arguments (defaults: arguments `steps` and
    /// `step_ms`, 1 step of 100 ms). Progress is reported after every step unless the tool sets `progress_ms`.
    Steps {
        #[serde(default = "default_steps_arg")]
        steps_arg: String,
        #[serde(default = "default_step_ms_arg")]
        step_ms_arg: String,
        #[serde(default = "default_steps")]
        #[schemars(range(max = MAX_STEPS))]
        default_steps: u64,
        #[serde(default = "default_step_ms")]
        default_step_ms: f64,
    },
    /// Measured quantiles where no parametric shape fits (what `mcpstorm profile` writes): `ms[i]` is the
    /// `i / (n − 1)` quantile, so the first is the fastest call seen and the last the slowest, and a draw picks a
    /// uniform quantile and interpolates linearly between the two points around it. 2 to [`MAX_EMPIRICAL_POINTS`]
    /// points, non-decreasing.
    Empirical {
        #[schemars(length(min = 2, max = MAX_EMPIRICAL_POINTS))]
        ms: Vec<f64>,
    },
}

/// The most points an empirical latency may hold: every 0.1% quantile.
pub const MAX_EMPIRICAL_POINTS: usize = 1001;

fn default_steps_arg() -> String {
    "steps".to_owned()
}
fn default_step_ms_arg() -> String {
    "step_ms".to_owned()
}
fn default_steps() -> u64 {
    1
}
fn default_step_ms() -> f64 {
    100.0
}

impl Default for LatencyDist {
    fn default() -> Self {
        LatencyDist::Fixed { ms: 0.0 }
    }
}

/// One draw: the base latency and, for `steps`, the step length (the natural progress period).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyDraw {
    pub latency: Duration,
    pub step: Option<Duration>,
}

impl LatencyDraw {
    fn of_ms(ms: f64) -> Self {
        LatencyDraw { latency: ms_to_duration(ms), step: None }
    }
}

impl LatencyDist {
    /// Checks the parameters. The error names the offending field (relative to `latency`).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        // Samples are clamped to MAX_LATENCY anyway; a parameter beyond it is a mistake worth naming.
        let max_ms = MAX_LATENCY.as_millis() as f64;
        let milliseconds = |field: &'static str, v: f64| {
            if v.is_finite() && (0.0..=max_ms).contains(&v) {
                Ok(())
            } else {
                Err((field, format!("must be a finite number >= 0 and at most {max_ms} (one day), got {v}")))
            }
        };
        match self {
            LatencyDist::Fixed { ms } => milliseconds("ms", *ms),
            LatencyDist::Uniform { min_ms, max_ms } => {
                milliseconds("min_ms", *min_ms)?;
                milliseconds("max_ms", *max_ms)?;
                if min_ms > max_ms {
                    return Err(("max_ms", format!("must be >= min_ms ({min_ms}), got {max_ms}")));
                }
                Ok(())
            }
            LatencyDist::Normal { mean_ms, stddev_ms } => {
                milliseconds("mean_ms", *mean_ms)?;
                milliseconds("stddev_ms", *stddev_ms)
            }
            LatencyDist::Lognormal { p50_ms, p99_ms } => {
                if !(p50_ms.is_finite() && *p50_ms > 0.0) {
                    return Err(("p50_ms", format!("must be a finite number > 0, got {p50_ms}")));
                }
                if !(p99_ms.is_finite() && p99_ms >= p50_ms) {
                    return Err(("p99_ms", format!("must be >= p50_ms ({p50_ms}), got {p99_ms}")));
                }
                milliseconds("p99_ms", *p99_ms)?;
                Ok(())
            }
            LatencyDist::Arg { name, default_ms } => {
                if name.is_empty() {
                    return Err(("name", "must name an argument".to_owned()));
                }
                milliseconds("default_ms", *default_ms)
            }
            LatencyDist::Steps { steps_arg, step_ms_arg, default_steps, default_step_ms } => {
                if steps_arg.is_empty() || step_ms_arg.is_empty() {
                    return Err(("steps_arg", "argument names must not be empty".to_owned()));
                }
                if *default_steps > MAX_STEPS {
                    return Err(("default_steps", format!("must be at most {MAX_STEPS}, got {default_steps}")));
                }
                milliseconds("default_step_ms", *default_step_ms)
            }
            LatencyDist::Empirical { ms } => {
                if !(2..=MAX_EMPIRICAL_POINTS).contains(&ms.len()) {
                    let n = ms.len();
                    return Err(("ms", format!("must hold 2 to {MAX_EMPIRICAL_POINTS} quantiles, got {n}")));
                }
                for v in ms {
                    milliseconds("ms", *v)?;
                }
                if let Some(w) = ms.windows(2).find(|w| w[1] < w[0]) {
                    return Err(("ms", format!("quantiles must not decrease, got {} after {}", w[1], w[0])));
                }
                Ok(())
            }
        }
    }

    /// This distribution with what each draw needs computed once.
    pub fn prepare(&self) -> PreparedLatency {
        let lognormal = match self {
            LatencyDist::Lognormal { p50_ms, p99_ms } => {
                let (mu, sigma) = lognormal_params(*p50_ms, *p99_ms);
                LogNormal::new(mu, sigma).ok()
            }
            _ => None,
        };
        PreparedLatency { dist: self.clone(), lognormal }
    }

    /// `PreparedLatency::sample`, preparing for this one draw (a caller drawing many should prepare once).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R, args: &Map<String, Value>) -> Result<LatencyDraw, String> {
        self.prepare().sample(rng, args)
    }
}

/// A tool's latency with what every draw of it needs computed once, when its catalog is built (and rebuilt by a
/// drift): the lognormal's parameters (two `ln`s) were otherwise worked out again on every call.
#[derive(Debug, Clone)]
pub struct PreparedLatency {
    dist: LatencyDist,
    /// For `Lognormal`: the distribution, `None` when its parameters make none (a draw is then the median).
    lognormal: Option<LogNormal<f64>>,
}

impl PreparedLatency {
    /// Draws one latency. Distributions that depend on the call's arguments draw nothing from `rng`; a bad argument
    /// is the caller's error (returned as text for an `isError` result), never a panic.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R, args: &Map<String, Value>) -> Result<LatencyDraw, String> {
        Ok(match &self.dist {
            LatencyDist::Fixed { ms } => LatencyDraw::of_ms(*ms),
            // Not `random_range`: it panics on an empty range, and validation is the only guard we want.
            LatencyDist::Uniform { min_ms, max_ms } => {
                LatencyDraw::of_ms(min_ms + (max_ms - min_ms) * rng.random::<f64>())
            }
            LatencyDist::Normal { mean_ms, stddev_ms } => {
                let ms = Normal::new(*mean_ms, *stddev_ms).map(|d| d.sample(rng)).unwrap_or(*mean_ms);
                LatencyDraw::of_ms(ms.max(0.0))
            }
            LatencyDist::Lognormal { p50_ms, .. } => {
                LatencyDraw::of_ms(self.lognormal.map(|d| d.sample(rng)).unwrap_or(*p50_ms))
            }
            LatencyDist::Arg { name, default_ms } => LatencyDraw::of_ms(ms_arg(args, name, *default_ms)?),
            LatencyDist::Steps { steps_arg, step_ms_arg, default_steps, default_step_ms } => {
                let steps = match args.get(steps_arg) {
                    None | Some(Value::Null) => *default_steps,
                    Some(v) => v.as_u64().ok_or_else(|| format!("argument `{steps_arg}` must be an integer >= 0"))?,
                };
                let step_ms = ms_arg(args, step_ms_arg, *default_step_ms)?;
                let step = ms_to_duration(step_ms);
                LatencyDraw { latency: ms_to_duration(steps as f64 * step_ms), step: Some(step) }
            }
            LatencyDist::Empirical { ms } => LatencyDraw::of_ms(empirical_at(ms, rng.random::<f64>())),
        })
    }
}

/// The `q` quantile (0 to 1) of empirical points: linear between the two points around it. An empty list (which
/// validation refuses) gives 0.
pub fn empirical_at(ms: &[f64], q: f64) -> f64 {
    let Some(last) = ms.len().checked_sub(1) else { return 0.0 };
    let pos = q.clamp(0.0, 1.0) * last as f64;
    // In range: pos is within [0, last]; `as` saturates and the `min` keeps `i + 1` inside.
    let i = (pos.floor() as usize).min(last.saturating_sub(1));
    match (ms.get(i), ms.get(i + 1)) {
        (Some(a), Some(b)) => a + (b - a) * (pos - i as f64),
        (Some(a), None) => *a,
        _ => 0.0,
    }
}

/// `(mu, sigma)` of the lognormal whose median is `p50` and 99th percentile is `p99`.
pub fn lognormal_params(p50_ms: f64, p99_ms: f64) -> (f64, f64) {
    let mu = p50_ms.ln();
    (mu, ((p99_ms.ln() - mu) / Z99).max(0.0))
}

fn ms_arg(args: &Map<String, Value>, name: &str, default_ms: f64) -> Result<f64, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default_ms),
        Some(v) => v
            .as_f64()
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .ok_or_else(|| format!("argument `{name}` must be a number of milliseconds >= 0, got {v}")),
    }
}

/// Milliseconds to a `Duration`, clamped into `[0, MAX_LATENCY]` (NaN becomes 0): `Duration::from_secs_f64` panics on
/// negative, NaN and overflowing input.
pub fn ms_to_duration(ms: f64) -> Duration {
    if ms.is_nan() || ms <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(MAX_LATENCY).min(MAX_LATENCY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use serde_json::json;

    fn draws(dist: &LatencyDist, seed: u64, n: usize) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let args = Map::new();
        (0..n).map(|_| dist.sample(&mut rng, &args).map(|d| d.latency.as_secs_f64() * 1000.0).unwrap_or(-1.0)).collect()
    }

    fn quantile(sorted: &[f64], q: f64) -> f64 {
        sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
    }

    #[test]
    fn lognormal_hits_configured_p50_and_p99() {
        let dist = LatencyDist::Lognormal { p50_ms: 40.0, p99_ms: 400.0 };
        let mut v = draws(&dist, 7, 50_000);
        v.sort_by(f64::total_cmp);
        let (p50, p99) = (quantile(&v, 0.50), quantile(&v, 0.99));
        assert!((p50 - 40.0).abs() / 40.0 < 0.05, "p50 {p50}");
        assert!((p99 - 400.0).abs() / 400.0 < 0.10, "p99 {p99}");
    }

    #[test]
    fn same_seed_same_draws_other_seed_other_draws() {
        let dist = LatencyDist::Lognormal { p50_ms: 40.0, p99_ms: 400.0 };
        assert_eq!(draws(&dist, 1, 100), draws(&dist, 1, 100));
        assert_ne!(draws(&dist, 1, 100), draws(&dist, 2, 100));
    }

    #[test]
    fn uniform_stays_in_range_and_normal_never_goes_negative() {
        let v = draws(&LatencyDist::Uniform { min_ms: 5.0, max_ms: 15.0 }, 3, 10_000);
        assert!(v.iter().all(|ms| (5.0..=15.0).contains(ms)));
        assert!(v.iter().any(|ms| *ms < 6.0) && v.iter().any(|ms| *ms > 14.0));
        let v = draws(&LatencyDist::Normal { mean_ms: 1.0, stddev_ms: 10.0 }, 3, 10_000);
        assert!(v.iter().all(|ms| *ms >= 0.0));
        assert!(v.iter().filter(|ms| **ms == 0.0).count() > 1000, "about half the draws clamp to 0");
    }

    #[test]
    fn arg_reads_the_call_argument_or_its_default() {
        let dist = LatencyDist::Arg { name: "ms".into(), default_ms: 7.0 };
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let d = dist.sample(&mut rng, &args(json!({"ms": 250}))).expect("valid ms");
        assert_eq!(d.latency, Duration::from_millis(250));
        assert_eq!(dist.sample(&mut rng, &args(json!({}))), Ok(LatencyDraw::of_ms(7.0)));
        let err = dist.sample(&mut rng, &args(json!({"ms": -1}))).expect_err("negative ms");
        assert!(err.contains("`ms`"), "{err}");
        assert!(dist.sample(&mut rng, &args(json!({"ms": "x"}))).is_err());
        // Absurd values are capped rather than overflowing.
        assert_eq!(dist.sample(&mut rng, &args(json!({"ms": 1e300}))), Ok(LatencyDraw::of_ms(1e300)));
        assert_eq!(LatencyDraw::of_ms(1e300).latency, MAX_LATENCY);
    }

    #[test]
    fn steps_multiplies_and_reports_the_step() {
        let dist: LatencyDist = toml::from_str::<toml::Table>("dist = \"steps\"")
            .ok()
            .and_then(|t| t.try_into().ok())
            .expect("steps with all defaults parses");
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let args = json!({"steps": 3, "step_ms": 20}).as_object().cloned().unwrap_or_default();
        let d = dist.sample(&mut rng, &args);
        assert_eq!(d, Ok(LatencyDraw { latency: Duration::from_millis(60), step: Some(Duration::from_millis(20)) }));
    }

    #[test]
    fn validation_names_the_field() {
        let bad = LatencyDist::Lognormal { p50_ms: 40.0, p99_ms: 10.0 };
        assert_eq!(bad.validate().expect_err("invalid").0, "p99_ms");
        assert_eq!(LatencyDist::Lognormal { p50_ms: 0.0, p99_ms: 10.0 }.validate().expect_err("invalid").0, "p50_ms");
        assert_eq!(LatencyDist::Uniform { min_ms: 5.0, max_ms: 1.0 }.validate().expect_err("invalid").0, "max_ms");
        assert_eq!(
            LatencyDist::Normal { mean_ms: 1.0, stddev_ms: -1.0 }.validate().expect_err("invalid").0,
            "stddev_ms"
        );
        assert_eq!(LatencyDist::Fixed { ms: f64::NAN }.validate().expect_err("invalid").0, "ms");
        assert!(LatencyDist::Lognormal { p50_ms: 40.0, p99_ms: 40.0 }.validate().is_ok());
    }

    #[test]
    fn empirical_draws_reproduce_the_measured_quantiles() {
        let ms: Vec<f64> =
            (0..=100).map(|i| if i < 90 { 2.0 + f64::from(i) / 100.0 } else { 40.0 + f64::from(i) }).collect();
        let dist = LatencyDist::Empirical { ms: ms.clone() };
        assert!(dist.validate().is_ok());
        let mut v = draws(&dist, 11, 50_000);
        v.sort_by(f64::total_cmp);
        for q in [0.1, 0.5, 0.8, 0.95, 0.99] {
            let want = empirical_at(&ms, q);
            let got = quantile(&v, q);
            assert!((got - want).abs() <= want * 0.03 + 0.05, "q{q}: want {want}, got {got}");
        }
        assert!(v.iter().all(|d| (2.0..=140.0).contains(d)), "draws stay within the fastest and slowest seen");
        assert_eq!(empirical_at(&ms, 0.5), 2.5);
    }

    #[test]
    fn empirical_refuses_too_few_points_and_decreasing_ones() {
        assert_eq!(LatencyDist::Empirical { ms: vec![3.0] }.validate().expect_err("one point").0, "ms");
        let err = LatencyDist::Empirical { ms: vec![3.0, 2.0] }.validate().expect_err("decreasing");
        assert!(err.1.contains("must not decrease"), "{}", err.1);
        assert!(LatencyDist::Empirical { ms: vec![1.0, f64::NAN] }.validate().is_err());
        assert!(LatencyDist::Empirical { ms: vec![1.0; MAX_EMPIRICAL_POINTS + 1] }.validate().is_err());
        assert_eq!(empirical_at(&[], 0.5), 0.0);
        assert_eq!(empirical_at(&[1.0, 3.0], 2.0), 3.0);
    }

    #[test]
    fn ms_to_duration_never_panics() {
        assert_eq!(ms_to_duration(f64::NAN), Duration::ZERO);
        assert_eq!(ms_to_duration(-5.0), Duration::ZERO);
        assert_eq!(ms_to_duration(f64::INFINITY), MAX_LATENCY);
        assert_eq!(ms_to_duration(1.5), Duration::from_micros(1500));
    }
}
