//! The breaker's configuration: every field, its default and its meaning in one place.

use std::time::Duration;

/// How the breaker's sliding window counts calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowConfig {
    /// The last `size` recorded calls.
    Count { size: u32 },
    /// The calls of the last `buckets × bucket_width` (see `resilience/ring.rs` for the exact edge).
    Time { buckets: u32, bucket_width: Duration },
}

/// Breaker settings. Defaults (the original design's examples where it gives them, resilience4j's semantics otherwise):
///
/// | field                      | default                 | meaning                                               |
/// |----------------------------|-------------------------|-------------------------------------------------------|
/// | `window`                   | time, 10 × 1 s          | what the rates are computed over (10 s)               |
/// | `failure_rate`   | 0.5                     | open when failures / calls ≥ this (inclusive)         |
/// | `slow_call_rate` | 0.6                     | open when slow calls / calls ≥ this (inclusive)       |
/// | `slow_call`       | 2 s                     | a call taking at least this long is slow              |
/// | `minimum_calls`            | 10                      | no verdict before this many calls are in the window (capped at a count window's size) |
/// | `open`                | 5 s                     | the first open period                                 |
/// | `open_growth`          | 2.0                     | each re-open without a successful close in between multiplies it |
/// | `open_max`                 | 60 s                    | the open period's cap (before jitter)                 |
/// | `open_jitter`              | 0.2                     | the open period is scaled by a uniform factor in 1 ± this |
/// | `half_open_probes`         | 3                       | probes in flight at once in half-open, and consecutive successes that close |
/// | `half_open_max_wait`       | 10 s                    | half-open that has not decided by then re-opens       |
/// | `hold`                     | 1 s                     | while open on a latency fault and probing, how long a call may wait for the breaker (never past its deadline) before it is declined |
/// | `probe_interval`           | 50 ms                   | while open, one real call per interval is let through as a probe; its success in time (not slow) moves to half-open at once. `None`: no probe before the open period ends |
/// | `retry_after_cap`          | 60 s                    | a server-dictated retry-after longer than this is cut |
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerConfig {
    pub window: WindowConfig,
    pub failure_rate: f64,
    pub slow_call_rate: f64,
    pub slow_call: Duration,
    pub minimum_calls: u32,
    pub open: Duration,
    pub open_growth: f64,
    pub open_max: Duration,
    pub open_jitter: f64,
    pub half_open_probes: u32,
    pub half_open_max_wait: Duration,
    pub retry_after_cap: Duration,
    /// Continuous low-rate probing while open (Finagle's failure accrual probes, the SRE book's "let a trickle
    /// through"): the open period bounds how long a *failing* server is spared, while recovery is seen within one
    /// interval plus a round trip. The cost is one call per interval per breaker that a still-sick server fails.
    pub probe_interval: Option<Duration>,
    /// While open on a latency fault (the calls that opened it, and the last failed probe, were slow) and probing,
    /// a call may wait this long at most (and never past its deadline) for the breaker to let calls through again,
    /// instead of being declined at once: a latency fault ends with the calls queued on it answered, and the gateway
    /// serves them as the probes see the end. `None`: decline at once.
    pub hold: Option<Duration>,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            window: WindowConfig::Time { buckets: 10, bucket_width: Duration::from_secs(1) },
            failure_rate: 0.5,
            slow_call_rate: 0.6,
            slow_call: Duration::from_secs(2),
            minimum_calls: 10,
            open: Duration::from_secs(5),
            open_growth: 2.0,
            open_max: Duration::from_secs(60),
            open_jitter: 0.2,
            half_open_probes: 3,
            half_open_max_wait: Duration::from_secs(10),
            retry_after_cap: Duration::from_secs(60),
            probe_interval: Some(Duration::from_millis(50)),
            hold: Some(Duration::from_secs(1)),
        }
    }
}

/// A configuration value the breaker cannot work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid breaker configuration: {field} {problem}")]
pub struct BreakerConfigError {
    pub field: &'static str,
    pub problem: &'static str,
}

impl BreakerConfig {
    /// Checks every field; the first problem found is named.
    pub fn validate(&self) -> Result<(), BreakerConfigError> {
        let err = |field, problem| Err(BreakerConfigError { field, problem });
        match self.window {
            WindowConfig::Count { size: 0 } => return err("window.size", "must be at least 1"),
            WindowConfig::Time { buckets: 0, .. } => return err("window.buckets", "must be at least 1"),
            WindowConfig::Time { bucket_width, .. } if bucket_width.is_zero() => {
                return err("window.bucket_width", "must be positive");
            }
            _ => {}
        }
        let rate = |r: f64| r.is_finite() && r > 0.0 && r <= 1.0;
        if !rate(self.failure_rate) {
            return err("failure_rate", "must be in (0, 1]");
        }
        if !rate(self.slow_call_rate) {
            return err("slow_call_rate", "must be in (0, 1]");
        }
        if self.minimum_calls == 0 {
            return err("minimum_calls", "must be at least 1");
        }
        if self.open.is_zero() {
            return err("open", "must be positive");
        }
        if !(self.open_growth.is_finite() && self.open_growth >= 1.0) {
            return err("open_growth", "must be a finite number ≥ 1");
        }
        if self.open_max < self.open {
            return err("open_max", "must be at least open");
        }
        if !(self.open_jitter.is_finite() && (0.0..1.0).contains(&self.open_jitter)) {
            return err("open_jitter", "must be in [0, 1)");
        }
        if self.half_open_probes == 0 {
            return err("half_open_probes", "must be at least 1");
        }
        if self.half_open_max_wait.is_zero() {
            return err("half_open_max_wait", "must be positive");
        }
        if self.probe_interval.is_some_and(|d| d.is_zero()) {
            return err("probe_interval", "must be positive (None switches probing off)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_fields_are_named() {
        assert_eq!(BreakerConfig::default().validate(), Ok(()));
        let bad = BreakerConfig { failure_rate: 1.5, ..BreakerConfig::default() };
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            "invalid breaker configuration: failure_rate must be in (0, 1]"
        );
        let bad = BreakerConfig { window: WindowConfig::Count { size: 0 }, ..BreakerConfig::default() };
        assert_eq!(bad.validate().unwrap_err().field, "window.size");
        let bad = BreakerConfig { open_max: Duration::from_secs(1), ..BreakerConfig::default() };
        assert_eq!(bad.validate().unwrap_err().field, "open_max");
    }
}
