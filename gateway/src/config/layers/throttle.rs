//! `[gateway.throttle]`: client-side adaptive throttling per replica.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mcpstorm_core::resilience::ThrottleConfig;

use super::yes;
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
#[serde(deny_unknown_fields)]
pub struct ThrottleSpec {
    /// false: no throttling.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Requests per accept tolerated before shedding (≥ 1; the SRE book's 2).
    #[serde(default = "default_k")]
    pub k: f64,
    /// The requests and accepts counted (24 buckets).
    #[serde(default = "default_throttle_window")]
    pub window: Dur,
}

fn default_k() -> f64 {
    ThrottleConfig::default().k
}
fn default_throttle_window() -> Dur {
    Dur(ThrottleConfig::default().window)
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
