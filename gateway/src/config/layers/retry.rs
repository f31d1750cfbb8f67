//! `[gateway.retry]` and `[gateway.budget]`: the gateway's own retries, and the per-server budget that bounds them.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mcpstorm_core::resilience::Backoff;
use mcpstorm_core::resilience::BudgetConfig;
use mcpstorm_core::resilience::RetryPolicy;

use super::WINDOW_BUCKETS;
use crate::config::ranges::{self, MAX_ATTEMPTS, Ranges, Upper};
use crate::config::units::Dur;

/// `[gateway.retry]`: the gateway's own retries of idempotent tools, on another replica, under one deadline.
///
/// | key            | default         | meaning                                                       |
/// |----------------|-----------------|---------------------------------------------------------------|
/// | `enabled`      | true            | false: one attempt per call, the agent decides                |
/// | `max_attempts` | 3               | attempts in all, the first included                           |
/// | `backoff`      | `"full_jitter"` | `"full_jitter"`: uniform in [0, min(cap, base × 2ⁿ)]; `"proportional"`: base × 2ⁿ capped, ± `jitter` (`"seed"` is an old spelling of it) |
/// | `base`         | `"100ms"`       | (`"1s"` for `proportional`)                                   |
/// | `cap`          | `"10s"`         | the longest wait                                              |
/// | `jitter`       | 0.2             | `proportional` only: ± this fraction                          |
/// | `failover`     | true            | a call that never reached its replica (connection refused, no session, a proxy's empty 503) goes to another replica, whatever the tool, and a replica whose address refuses connections leaves the rotation until a probe answers; independent of `enabled` |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An absent key takes its value from `Default`, which reads the core's defaults: a default is declared once, there.
#[serde(default, deny_unknown_fields)]
pub struct RetrySpec {
    /// false: one attempt per call.
    pub enabled: bool,
    /// Attempts in all, the first included (≥ 1).
    #[schemars(range(min = 1, max = ranges::MAX_ATTEMPTS))]
    pub max_attempts: u32,
    /// `"full_jitter"` or `"proportional"` (the measured client's 1, 2, 4, 8, 10 s ± 20%; `"seed"` is accepted too).
    pub backoff: BackoffKind,
    /// The first wait's ceiling (full jitter) or the first wait (proportional); default 100 ms (full jitter), 1 s
    /// (proportional).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<Dur>,
    /// The longest wait.
    pub cap: Dur,
    /// `proportional` backoff only: each wait is scaled by a uniform factor in 1 ± this, in [0, 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// A call never sent goes to another replica whatever the tool; a refusing replica is ejected until a probe
    /// answers. Independent of `enabled`.
    pub failover: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum BackoffKind {
    #[default]
    FullJitter,
    // The measured client's schedule: base × 2ⁿ capped, ± `jitter`. Once spelled "seed", still accepted.
    #[serde(alias = "seed")]
    Proportional,
}

/// `[gateway.budget]`: retries per server ≤ `ratio` × requests + `min_per_second` × `ttl`, over the last `ttl`.
///
/// | key              | default | meaning                                               |
/// |------------------|---------|-------------------------------------------------------|
/// | `enabled`        | true    | false: retries limited by `max_attempts` alone         |
/// | `ratio`          | 0.2     | retries allowed per request                            |
/// | `min_per_second` | 10      | a floor, so a quiet server can still be retried        |
/// | `ttl`            | `"10s"` | how long a request's deposit counts                    |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An absent key takes its value from `Default`, which reads the core's defaults: a default is declared once, there.
#[serde(default, deny_unknown_fields)]
pub struct BudgetSpec {
    /// false: no budget.
    pub enabled: bool,
    /// Retries allowed per request (≥ 0).
    pub ratio: f64,
    /// Retries allowed per second whatever the traffic (≥ 0).
    pub min_per_second: f64,
    /// How long a request's deposit counts.
    pub ttl: Dur,
}

/// The core's retry default's backoff as (base, cap): the table's `cap`, and `base` under full jitter, default to them.
fn core_backoff() -> (Duration, Duration) {
    match RetryPolicy::default().backoff {
        Backoff::FullJitter { base, cap } | Backoff::Proportional { base, cap, .. } => (base, cap),
    }
}

impl Default for RetrySpec {
    /// The core's defaults ([`RetryPolicy::default`]); `base` and `jitter` unset depend on the backoff chosen.
    fn default() -> Self {
        RetrySpec {
            enabled: true,
            max_attempts: RetryPolicy::default().max_attempts,
            backoff: BackoffKind::default(),
            base: None,
            cap: Dur(core_backoff().1),
            jitter: None,
            failover: true,
        }
    }
}

impl Default for BudgetSpec {
    /// The core's defaults ([`BudgetConfig::default`]).
    fn default() -> Self {
        let core = BudgetConfig::default();
        BudgetSpec { enabled: true, ratio: core.ratio, min_per_second: core.min_per_second, ttl: Dur(core.ttl) }
    }
}

impl RetrySpec {
    pub fn to_core(&self) -> RetryPolicy {
        let backoff = match self.backoff {
            BackoffKind::FullJitter => {
                Backoff::FullJitter { base: self.base.map_or(core_backoff().0, |d| d.0), cap: self.cap.0 }
            }
            BackoffKind::Proportional => Backoff::Proportional {
                base: self.base.map_or(Backoff::RECONNECT_BASE, |d| d.0),
                cap: self.cap.0,
                jitter: self.jitter.unwrap_or(Backoff::RECONNECT_JITTER),
            },
        };
        RetryPolicy { max_attempts: self.max_attempts, backoff }
    }

    /// The table's durations and counts with their bounds.
    pub fn ranges(&self, out: &mut Ranges) {
        if let Some(base) = self.base {
            out.duration("gateway.retry.base", base.0, Upper::Week);
        }
        out.duration("gateway.retry.cap", self.cap.0, Upper::Week);
        out.count("gateway.retry.max_attempts", f64::from(self.max_attempts), MAX_ATTEMPTS as f64);
    }

    /// Values out of range and keys the chosen backoff does not read, at their keys (`retry.max_attempts`, ...).
    pub fn problems(&self, fail: &mut impl FnMut(&str, String)) {
        if self.max_attempts == 0 {
            fail("retry.max_attempts", "must be at least 1 (the first attempt counts)".to_owned());
        }
        if self.jitter.is_some() && self.backoff != BackoffKind::Proportional {
            fail("retry.jitter", "applies only to backoff = \"proportional\" (full jitter is all jitter)".to_owned());
        }
        if let Some(j) = self.jitter
            && !(j.is_finite() && (0.0..1.0).contains(&j))
        {
            fail("retry.jitter", format!("must be in [0, 1), got {j}"));
        }
        if self.base.is_some_and(|b| b.0 > self.cap.0) {
            fail("retry.base", "must not exceed cap".to_owned());
        }
    }
}

impl BudgetSpec {
    pub fn to_core(&self) -> BudgetConfig {
        BudgetConfig {
            ratio: self.ratio,
            min_per_second: self.min_per_second,
            ttl: self.ttl.0,
            buckets: WINDOW_BUCKETS,
        }
    }

    /// The table's durations with their bounds.
    pub fn ranges(&self, out: &mut Ranges) {
        out.duration("gateway.budget.ttl", self.ttl.0, Upper::Week);
    }

    /// Values out of range, at their keys (`budget.ratio`, ...).
    pub fn problems(&self, fail: &mut impl FnMut(&str, String)) {
        if let Err(e) = self.to_core().validate() {
            // The core names the field first, as the table's key (`min_per_second must be ...`).
            let message = e.to_string();
            let key = message.split(": ").nth(1).and_then(|m| m.split(' ').next()).unwrap_or("ttl");
            fail(&format!("budget.{key}"), message);
        }
    }
}
