//! Gradient2 (Netflix `Gradient2Limit`): delay-based, it shrinks the limit as the recent RTT rises above the
//! long-term RTT, i.e. as requests start to queue.
//!
//! Update rule, per sample (`short` = this sample's RTT, `long` = an exponential average of RTTs):
//!
//! ```text
//! long ← mean of the first `warmup` samples, then long × (1 − f) + rtt × f,  f = 2 / (long_window + 1)
//! if long / short > 2:                 long ← long × 0.95     (recover quickly after a long period of overload)
//! if dropped:                          gradient = 0.5         (our extension, see below)
//! else if in_flight < limit / 2:       unchanged              (app-limited: no evidence about the server)
//! else:                                gradient = clamp(tolerance × long / short, 0.5, 1)
//! new   = limit × gradient + queue_size
//! limit ← clamp(limit × (1 − smoothing) + new × smoothing, min, max)
//! ```
//!
//! With flat RTT the gradient is 1 and the limit grows by `queue_size × smoothing` per sample; when the short RTT
//! exceeds `tolerance` × the long one (queueing), the gradient falls below 1 and the limit shrinks, by at most half
//! per sample before smoothing (outliers must not shed load aggressively).
//!
//! **Our extension:** Netflix's Gradient2 ignores drops. A timed-out call has no meaningful RTT (the timeout, not
//! the server, ended it), and an overload rejection is the strongest "too many" signal there is, so a drop applies
//! the minimum gradient, 0.5, like AIMD's multiplicative decrease, and does not feed the RTT averages.
//!
//! **Known drift.** Under queueing that lasts, the long-term average adapts to the queued RTT, so the limit creeps
//! up again (Netflix's Gradient2 does the same; its predecessor compared with the minimum RTT instead, which needs
//! periodic probing). The drop rule above is what bounds it: once calls time out, the limit halves. The test
//! `gradient2_holds_queueing_early_and_drops_bound_its_drift` shows both phases on a queueing curve.
//!
//! Limits are kept as `f64` between samples (as Netflix does) so the smoothing's small steps add up.

use super::{Limiter, Sample, clamp_limit};

/// Defaults (Netflix's, except `min` 1): initial 20, min 1, max 200, smoothing 0.2, long window 600 samples, warmup
/// 10 samples, RTT tolerance 1.5, queue size 4.
#[derive(Debug, Clone, PartialEq)]
pub struct Gradient2Config {
    pub initial: usize,
    pub min: usize,
    pub max: usize,
    pub smoothing: f64,
    pub long_window: u32,
    pub warmup: u32,
    pub tolerance: f64,
    pub queue_size: f64,
}

impl Default for Gradient2Config {
    fn default() -> Self {
        Gradient2Config {
            initial: 20,
            min: 1,
            max: 200,
            smoothing: 0.2,
            long_window: 600,
            warmup: 10,
            tolerance: 1.5,
            queue_size: 4.0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Gradient2 {
    config: Gradient2Config,
    limit: f64,
    /// Long-term RTT in seconds, and how many samples have shaped it (for the warm-up mean).
    long_rtt: f64,
    samples: u32,
}

impl Gradient2 {
    /// Out-of-range settings fall back to the defaults' values (smoothing in (0, 1], tolerance ≥ 1).
    pub fn new(mut config: Gradient2Config) -> Self {
        let d = Gradient2Config::default();
        if !(config.smoothing > 0.0 && config.smoothing <= 1.0) {
            config.smoothing = d.smoothing;
        }
        if !(config.tolerance.is_finite() && config.tolerance >= 1.0) {
            config.tolerance = d.tolerance;
        }
        if !(config.queue_size.is_finite() && config.queue_size >= 0.0) {
            config.queue_size = d.queue_size;
        }
        let limit = clamp_limit(config.initial as f64, config.min, config.max);
        Gradient2 { config, limit, long_rtt: 0.0, samples: 0 }
    }

    /// The long-term RTT estimate, in seconds.
    pub fn long_rtt(&self) -> f64 {
        self.long_rtt
    }

    fn add_rtt(&mut self, rtt: f64) -> f64 {
        self.samples = self.samples.saturating_add(1);
        if self.samples <= self.config.warmup.max(1) {
            self.long_rtt += (rtt - self.long_rtt) / f64::from(self.samples);
        } else {
            let f = 2.0 / (f64::from(self.config.long_window) + 1.0);
            self.long_rtt = self.long_rtt * (1.0 - f) + rtt * f;
        }
        self.long_rtt
    }
}

impl Limiter for Gradient2 {
    fn limit(&self) -> usize {
        self.limit as usize
    }

    fn on_sample(&mut self, s: Sample) -> usize {
        let c = self.config.clone();
        let gradient = if s.dropped {
            0.5
        } else {
            let short = s.rtt.as_secs_f64().max(1e-9);
            let long = self.add_rtt(short);
            if long / short > 2.0 {
                self.long_rtt *= 0.95;
            }
            if (s.in_flight as f64) < self.limit / 2.0 {
                return self.limit();
            }
            (c.tolerance * long / short).clamp(0.5, 1.0)
        };
        let new = self.limit * gradient + c.queue_size;
        self.limit = clamp_limit(self.limit * (1.0 - c.smoothing) + new * c.smoothing, c.min, c.max);
        self.limit()
    }
}
