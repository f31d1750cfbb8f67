//! `[gateway.throttle]`: client-side adaptive throttling per replica.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mcpstorm_core::resilience::ThrottleConfig;

use crate::config::ranges::{Ranges, Upper};
use crate::config::units::Dur;

/// `[gateway.throttle]`: Google SRE client-side adaptive throttling per replica: shed with probability
/// max(0, (requests − k × accepts) / (requests + 1)).
///
/// | key       | default  | meaning                                       |
/// |-----------|----------|-----------------------------------------------|
/// | `enabled` | true     | false: no shedding                            |
/// | `k`       | 2.0      | how many requests per accept before shedding  |
/// | `window`  | `"2m"`   | the requests and accepts counted              |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An absent key takes its value from `Default`, which reads the core's defaults: a default is declared once, there.
#[serde(default, deny_unknown_fields)]
pub struct ThrottleSpec {
    /// false: no throttling.
    pub enabled: bool,
    /// Requests per accept tolerated before shedding (≥ 1; the SRE book's 2).
    pub k: f64,
    /// The requests and accepts counted (24 buckets).
    pub window: Dur,
}

impl Default for ThrottleSpec {
    /// The core's defaults ([`ThrottleConfig::default`]).
    fn default() -> Self {
        let core = ThrottleConfig::default();
        ThrottleSpec { enabled: true, k: core.k, window: Dur(core.window) }
    }
}

impl ThrottleSpec {
    pub fn to_core(&self) -> ThrottleConfig {
        ThrottleConfig { k: self.k, window: self.window.0, ..ThrottleConfig::default() }
    }

    /// The table's durations with their bounds.
    pub fn ranges(&self, out: &mut Ranges) {
        out.duration("gateway.throttle.window", self.window.0, Upper::Week);
    }

    /// Values out of range, at their keys (`throttle.k`, `throttle.window`).
    pub fn problems(&self, fail: &mut impl FnMut(&str, String)) {
        if !(self.k.is_finite() && self.k >= 1.0) {
            fail("throttle.k", format!("must be a finite number ≥ 1, got {}", self.k));
        }
        if self.window.0 < Duration::from_millis(24) {
            fail("throttle.window", "must be at least 24ms (24 buckets of 1ms)".to_owned());
        }
    }
}
