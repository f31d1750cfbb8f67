//! `[gateway.breaker]`: a circuit breaker per (replica, tool).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mcpstorm_core::resilience::{BreakerConfig, WindowConfig};

use super::WINDOW_BUCKETS;
use crate::config::ranges::{self, MAX_THRESHOLD, MAX_WINDOW_CALLS, Ranges, Upper};
use crate::config::units::Dur;

/// `[gateway.breaker]`: a circuit breaker per (replica, tool).
///
/// | key                  | default | meaning                                                          |
/// |----------------------|---------|------------------------------------------------------------------|
/// | `enabled`            | true    | false: no breakers                                               |
/// | `window`             | `"10s"` | the rates are computed over this much time (ten buckets)         |
/// | `window_calls`       | none    | instead: over the last this many calls                           |
/// | `failure_rate`       | 0.5     | open when failures / calls ≥ this                                |
/// | `slow_call_rate`     | 0.6     | open when slow calls / calls ≥ this                              |
/// | `slow_call`          | `"2s"`  | a call taking at least this long is slow                         |
/// | `minimum_calls`      | 10      | no verdict before this many calls are in the window              |
/// | `open`               | `"5s"`  | the first open period                                            |
/// | `open_growth`        | 2.0     | each re-open without a close in between multiplies it            |
/// | `open_max`           | `"60s"` | the open period's cap                                            |
/// | `open_jitter`        | 0.2     | the open period is scaled by a uniform factor in 1 ± this        |
/// | `half_open_probes`   | 3       | probes at once in half-open, and successes that close it         |
/// | `half_open_max_wait` | `"10s"` | half-open that has not decided by then re-opens                  |
/// | `hold`               | `"1s"`  | while open on a latency fault and probing, how long a call may wait for the breaker (never past its deadline); `"0s"`: decline at once |
/// | `probe_interval`     | `"50ms"`  | while open, one call per interval goes through as a probe; `"0s"`: none before the open period ends |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An absent key takes its value from `Default`, which reads the core's defaults: a default is declared once, there.
#[serde(default, deny_unknown_fields)]
pub struct BreakerSpec {
    /// false: no breakers.
    pub enabled: bool,
    /// The time the failure and slow-call rates are computed over (ten buckets).
    pub window: Dur,
    /// Count-based instead: the rates are over the last this many calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_WINDOW_CALLS))]
    pub window_calls: Option<u32>,
    /// Open when failures / calls reach this (inclusive), in (0, 1].
    pub failure_rate: f64,
    /// Open when slow calls / calls reach this (inclusive), in (0, 1].
    pub slow_call_rate: f64,
    /// A call taking at least this long is slow.
    pub slow_call: Dur,
    /// No verdict before this many calls are in the window.
    #[schemars(range(min = 1, max = ranges::MAX_WINDOW_CALLS))]
    pub minimum_calls: u32,
    /// The first open period.
    pub open: Dur,
    /// Each re-open without a close in between multiplies the open period by this (≥ 1).
    pub open_growth: f64,
    /// The open period's cap (≥ `open`).
    pub open_max: Dur,
    /// The open period is scaled by a uniform factor in 1 ± this, in [0, 1): breakers of many gateways do not probe
    /// in lockstep.
    pub open_jitter: f64,
    /// Probes admitted at once in half-open, and consecutive successes that close it.
    #[schemars(range(min = 1, max = ranges::MAX_THRESHOLD))]
    pub half_open_probes: u32,
    /// Half-open that has not decided by then re-opens (a probe that never reports cannot wedge it).
    pub half_open_max_wait: Dur,
    /// While open, one call per interval goes through as a probe, and its success in time ends the open period at
    /// once; `"0s"`: no probe before the open period ends.
    pub probe_interval: Dur,
    /// While open on a latency fault and probing, a call may wait this long (never past its deadline) for the
    /// breaker to let calls through again, instead of a degraded result at once; `"0s"`: decline at once.
    pub hold: Dur,
}

impl Default for BreakerSpec {
    /// The core's defaults ([`BreakerConfig::default`]) in the table's form, the inverse of [`to_core`](Self::to_core).
    fn default() -> Self {
        let core = BreakerConfig::default();
        let (window, window_calls) = match core.window {
            WindowConfig::Time { buckets, bucket_width } => (Dur(bucket_width * buckets), None),
            // A count window leaves `window` unread; it keeps a time a user switching back would expect.
            WindowConfig::Count { size } => (Dur(Duration::from_secs(10)), Some(size)),
        };
        BreakerSpec {
            enabled: true,
            window,
            window_calls,
            failure_rate: core.failure_rate,
            slow_call_rate: core.slow_call_rate,
            slow_call: Dur(core.slow_call),
            minimum_calls: core.minimum_calls,
            open: Dur(core.open),
            open_growth: core.open_growth,
            open_max: Dur(core.open_max),
            open_jitter: core.open_jitter,
            half_open_probes: core.half_open_probes,
            half_open_max_wait: Dur(core.half_open_max_wait),
            // The table spells the core's "none" as "0s".
            probe_interval: Dur(core.probe_interval.unwrap_or_default()),
            hold: Dur(core.hold.unwrap_or_default()),
        }
    }
}

impl BreakerSpec {
    pub fn to_core(&self) -> BreakerConfig {
        let window = match self.window_calls {
            Some(size) => WindowConfig::Count { size },
            None => WindowConfig::Time { buckets: WINDOW_BUCKETS, bucket_width: self.window.0 / WINDOW_BUCKETS },
        };
        BreakerConfig {
            window,
            failure_rate: self.failure_rate,
            slow_call_rate: self.slow_call_rate,
            slow_call: self.slow_call.0,
            minimum_calls: self.minimum_calls,
            open: self.open.0,
            open_growth: self.open_growth,
            open_max: self.open_max.0,
            open_jitter: self.open_jitter,
            half_open_probes: self.half_open_probes,
            half_open_max_wait: self.half_open_max_wait.0,
            probe_interval: Some(self.probe_interval.0).filter(|d| !d.is_zero()),
            hold: Some(self.hold.0).filter(|d| !d.is_zero()),
            ..BreakerConfig::default()
        }
    }

    /// The table's durations and counts with their bounds.
    pub fn ranges(&self, out: &mut Ranges) {
        for (key, d) in [
            ("window", self.window),
            ("slow_call", self.slow_call),
            ("open", self.open),
            ("open_max", self.open_max),
            ("half_open_max_wait", self.half_open_max_wait),
            ("probe_interval", self.probe_interval),
            ("hold", self.hold),
        ] {
            out.duration(format!("gateway.breaker.{key}"), d.0, Upper::Week);
        }
        if let Some(n) = self.window_calls {
            out.count("gateway.breaker.window_calls", f64::from(n), MAX_WINDOW_CALLS as f64);
        }
        out.count("gateway.breaker.minimum_calls", f64::from(self.minimum_calls), MAX_WINDOW_CALLS as f64);
        out.count("gateway.breaker.half_open_probes", f64::from(self.half_open_probes), MAX_THRESHOLD as f64);
    }

    /// Values out of range, at their keys (`breaker.failure_rate`, ...): the core's fields are named as the table's
    /// keys, except the window, which the table gives as a duration or a count.
    pub fn problems(&self, fail: &mut impl FnMut(&str, String)) {
        if let Err(e) = self.to_core().validate() {
            let key = match e.field {
                "window.size" => "window_calls",
                "window.buckets" | "window.bucket_width" => "window",
                other => other,
            };
            fail(&format!("breaker.{key}"), e.problem.to_owned());
        }
        if self.window_calls.is_none() && self.window.0 < Duration::from_millis(u64::from(WINDOW_BUCKETS)) {
            fail("breaker.window", format!("must be at least {WINDOW_BUCKETS}ms (ten buckets of 1ms)"));
        }
    }
}
