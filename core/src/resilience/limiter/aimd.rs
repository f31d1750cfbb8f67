//! AIMD: additive increase, multiplicative decrease (Netflix `AIMDLimit`).
//!
//! Update rule, per sample:
//!
//! ```text
//! if dropped or rtt > timeout:       limit ← max(min, ⌊limit × backoff_ratio⌋)
//! else if in_flight × 2 ≥ limit:     limit ← min(max, limit + 1)
//! else:                              unchanged (the pool is not the bottleneck: no evidence to grow)
//! ```
//!
//! Why the in-flight condition: growing while half the permits sit idle would let the limit drift to `max` under
//! light load, and the first burst would then find no protection at all.

use std::time::Duration;

use super::{Limiter, Sample, clamp_limit};

/// Defaults (Netflix's, except `min` 1 so a small server can be protected): initial 20, min 1, max 200,
/// backoff ratio 0.9, timeout 5 s.
#[derive(Debug, Clone, PartialEq)]
pub struct AimdConfig {
    pub initial: usize,
    pub min: usize,
    pub max: usize,
    pub backoff_ratio: f64,
    pub timeout: Duration,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig { initial: 20, min: 1, max: 200, backoff_ratio: 0.9, timeout: Duration::from_secs(5) }
    }
}

impl AimdConfig {
    /// The bulkheads' default: start at the ceiling (the pool's cap, which [`super::LimiterKind::build`] applies)
    /// and move down only on drops. Starting low and growing (Netflix's 20) would throttle a healthy server until the
    /// limit caught up with its offered concurrency: a protective layer that costs throughput where nothing is wrong.
    pub fn from_ceiling() -> Self {
        AimdConfig { initial: usize::MAX, max: usize::MAX, ..AimdConfig::default() }
    }
}

#[derive(Debug, Clone)]
pub struct Aimd {
    config: AimdConfig,
    limit: usize,
}

impl Aimd {
    /// A backoff ratio outside (0, 1) is taken as 0.9.
    pub fn new(mut config: AimdConfig) -> Self {
        if !(config.backoff_ratio > 0.0 && config.backoff_ratio < 1.0) {
            config.backoff_ratio = 0.9;
        }
        let limit = clamp_limit(config.initial as f64, config.min, config.max) as usize;
        Aimd { config, limit }
    }
}

impl Limiter for Aimd {
    fn limit(&self) -> usize {
        self.limit
    }

    fn on_sample(&mut self, s: Sample) -> usize {
        let c = &self.config;
        let next = if s.dropped || s.rtt > c.timeout {
            (self.limit as f64 * c.backoff_ratio).floor()
        } else if s.in_flight * 2 >= self.limit {
            self.limit as f64 + 1.0
        } else {
            self.limit as f64
        };
        self.limit = clamp_limit(next, c.min, c.max) as usize;
        self.limit
    }
}
