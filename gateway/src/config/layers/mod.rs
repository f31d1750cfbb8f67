//! The gateway's resilience layers as the scenario file configures them (`[gateway.breaker]`, `[gateway.retry]`,
//! `[gateway.budget]`, `[gateway.throttle]`, `[gateway.bulkhead]`, `[gateway.limiter]`, `[gateway.fallbacks]`), and their translation into the core's
//! [`ResilienceConfig`].
//!
//! The profile decides first: `naive` switches every layer off whatever the tables say (so `--set
//! gateway.profile=naive` on any scenario gives the unprotected gateway), `default` switches every layer on with the
//! core's defaults, each table overriding some of them. A table with `enabled = false` switches one layer off.
//!
//! Defaults here are the core's (each `Default` impl documents its choice), and each key has the name of the core's
//! field, so a problem the core finds names the key; the tables only change the form of some values (durations with
//! units, `window = "10s"` rather than buckets × width).
//!
//! One module per table: `breaker`, `retry` (with the retry budget), `throttle`, `bulkhead` (with the limiter).

mod breaker;
mod bulkhead;
mod retry;
mod throttle;

use std::collections::BTreeMap;

use mcpstorm_core::ResilienceConfig;
use mcpstorm_core::resilience::Fallbacks;
use mcpstorm_core::session::GatewayProfile;

use super::ranges::Ranges;

pub use breaker::BreakerSpec;
pub use bulkhead::{BulkheadSpec, LimiterName, LimiterSpec, ScopeName};
pub use retry::{BackoffKind, BudgetSpec, RetrySpec};
pub use throttle::ThrottleSpec;

/// Buckets a time window is cut into (the breaker's and the budget's): a tenth of the window per bucket, so the
/// window forgets in steps of 10%.
const WINDOW_BUCKETS: u32 = 10;

/// An empty table: every key at its default.
macro_rules! defaults_from_empty_table {
    ($($t:ty),*) => {$(
        impl Default for $t {
            fn default() -> Self {
                match toml::from_str("") {
                    Ok(v) => v,
                    Err(_) => unreachable!("every key of the table has a default"),
                }
            }
        }
    )*};
}
// The breaker's, the retry's, the budget's and the throttle's `Default` read the core's defaults instead, and their
// tables take an absent key from it.
defaults_from_empty_table!(BulkheadSpec);

/// The layers of one gateway, as the `[gateway]` table holds them.
#[derive(Debug, Clone, Copy)]
pub struct LayerSpecs<'a> {
    pub profile: GatewayProfile,
    pub breaker: Option<&'a BreakerSpec>,
    pub retry: Option<&'a RetrySpec>,
    pub budget: Option<&'a BudgetSpec>,
    pub throttle: Option<&'a ThrottleSpec>,
    pub bulkhead: Option<&'a BulkheadSpec>,
    pub limiter: Option<&'a LimiterSpec>,
    pub fallbacks: &'a BTreeMap<String, String>,
}

impl LayerSpecs<'_> {
    /// The core's configuration: all off for the naive profile; otherwise each layer on (its table's values, or the
    /// defaults when the table is absent) unless its table says `enabled = false`.
    pub fn to_core(&self) -> ResilienceConfig {
        if self.profile == GatewayProfile::Naive {
            return ResilienceConfig::default();
        }
        fn on<T: Default + Clone, C>(
            spec: Option<&T>,
            enabled: impl Fn(&T) -> bool,
            core: impl Fn(&T) -> C,
        ) -> Option<C> {
            let spec = spec.cloned().unwrap_or_default();
            enabled(&spec).then(|| core(&spec))
        }
        let fallbacks = self.fallbacks.iter().fold(Fallbacks::new(), |f, (tool, fallback)| f.with(tool, fallback));
        ResilienceConfig {
            breaker: on(self.breaker, |s| s.enabled, BreakerSpec::to_core),
            retry: on(self.retry, |s| s.enabled, RetrySpec::to_core),
            budget: on(self.budget, |s| s.enabled, BudgetSpec::to_core),
            throttle: on(self.throttle, |s| s.enabled, ThrottleSpec::to_core),
            bulkhead: on(self.bulkhead, |s| s.enabled, |s| s.to_core(self.limiter)),
            failover: self.retry.is_none_or(|r| r.failover),
            fallbacks,
        }
    }

    /// The present tables' durations and counts with their bounds.
    pub fn ranges(&self, out: &mut Ranges) {
        self.breaker.inspect(|t| t.ranges(out));
        self.retry.inspect(|t| t.ranges(out));
        self.budget.inspect(|t| t.ranges(out));
        self.throttle.inspect(|t| t.ranges(out));
        self.bulkhead.inspect(|t| t.ranges(out));
        self.limiter.inspect(|t| t.ranges(out));
    }

    /// Problems with the tables' values, as (key path, message): every present table is checked, whatever the
    /// profile, so a file that is only wrong under `default` is still rejected under `naive`.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut fail = |key: &str, message: String| out.push((format!("gateway.{key}"), message));
        self.breaker.inspect(|t| t.problems(&mut fail));
        self.retry.inspect(|t| t.problems(&mut fail));
        self.budget.inspect(|t| t.problems(&mut fail));
        self.throttle.inspect(|t| t.problems(&mut fail));
        self.bulkhead.inspect(|t| t.problems(&mut fail));
        self.limiter.inspect(|t| t.problems(&mut fail));
        for (tool, fallback) in self.fallbacks {
            if fallback.is_empty() || fallback == tool {
                fail(&format!("fallbacks.{tool}"), "must name another tool".to_owned());
            }
        }
        out
    }
}

fn yes() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcpstorm_core::resilience::BudgetConfig;
    use mcpstorm_core::resilience::BulkheadConfig;
    use mcpstorm_core::resilience::RetryPolicy;
    use mcpstorm_core::resilience::ThrottleConfig;
    use mcpstorm_core::resilience::{AimdConfig, LimiterKind};
    use mcpstorm_core::resilience::{BreakerConfig, WindowConfig};

    use super::*;
    use crate::config::units::Dur;

    fn specs<'a>(profile: GatewayProfile, fallbacks: &'a BTreeMap<String, String>) -> LayerSpecs<'a> {
        LayerSpecs {
            profile,
            breaker: None,
            retry: None,
            budget: None,
            throttle: None,
            bulkhead: None,
            limiter: None,
            fallbacks,
        }
    }

    #[test]
    fn default_profile_turns_every_layer_on_with_the_core_defaults() {
        let none = BTreeMap::new();
        let c = specs(GatewayProfile::Default, &none).to_core();
        assert_eq!(c.breaker, Some(BreakerConfig::default()));
        assert_eq!(c.retry, Some(RetryPolicy::default()));
        assert_eq!(c.budget, Some(BudgetConfig::default()));
        assert_eq!(c.throttle, Some(ThrottleConfig::default()));
        assert_eq!(c.bulkhead, Some(BulkheadConfig::default()));
    }

    #[test]
    fn an_absent_key_takes_the_core_default_and_a_given_key_keeps_its_value() {
        let breaker: BreakerSpec = toml::from_str("failure_rate = 0.9\nwindow_calls = 20").unwrap();
        assert_eq!(breaker, BreakerSpec { failure_rate: 0.9, window_calls: Some(20), ..BreakerSpec::default() });
        let retry: RetrySpec = toml::from_str("max_attempts = 5").unwrap();
        assert_eq!(retry, RetrySpec { max_attempts: 5, ..RetrySpec::default() });
        assert_eq!(retry.to_core().backoff, RetryPolicy::default().backoff);
        assert_eq!(toml::from_str::<BudgetSpec>("").unwrap(), BudgetSpec::default());
        let throttle: ThrottleSpec = toml::from_str("enabled = false").unwrap();
        assert_eq!(throttle, ThrottleSpec { enabled: false, ..ThrottleSpec::default() });
        // Serialized and read back, a table is the same: what `--set` and the schema's defaults rely on.
        let text = toml::to_string(&BreakerSpec::default()).unwrap();
        assert_eq!(toml::from_str::<BreakerSpec>(&text).unwrap(), BreakerSpec::default());
    }

    #[test]
    fn the_limiter_table_picks_a_strategy_inside_the_bulkhead_and_rejects_foreign_keys() {
        let none = BTreeMap::new();
        let limiter = LimiterSpec { kind: LimiterName::Aimd, initial: Some(8), ..LimiterSpec::default() };
        let c = LayerSpecs { limiter: Some(&limiter), ..specs(GatewayProfile::Default, &none) }.to_core();
        let Some(LimiterKind::Aimd(aimd)) = c.bulkhead.map(|b| b.limiter) else { panic!("aimd expected") };
        assert_eq!((aimd.initial, aimd.backoff_ratio), (8, AimdConfig::default().backoff_ratio));
        let bad = LimiterSpec { kind: LimiterName::Aimd, smoothing: Some(0.5), ..LimiterSpec::default() };
        let keys: Vec<String> = LayerSpecs { limiter: Some(&bad), ..specs(GatewayProfile::Default, &none) }
            .problems()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["gateway.limiter.smoothing"]);
    }

    #[test]
    fn naive_profile_switches_every_layer_off_whatever_the_tables_say() {
        let fallbacks = BTreeMap::from([("a".to_owned(), "b".to_owned())]);
        let breaker = BreakerSpec { failure_rate: 0.9, ..BreakerSpec::default() };
        let c = LayerSpecs { breaker: Some(&breaker), ..specs(GatewayProfile::Naive, &fallbacks) }.to_core();
        assert!(c.breaker.is_none() && c.retry.is_none() && c.budget.is_none() && c.throttle.is_none());
        assert_eq!(c.fallbacks.get("a"), None);
    }

    #[test]
    fn tables_override_and_disable_one_layer() {
        let fallbacks = BTreeMap::from([("inventory_lookup".to_owned(), "query_cached_inventory".to_owned())]);
        let breaker = BreakerSpec { window_calls: Some(20), open: Dur(Duration::from_secs(2)), ..Default::default() };
        let retry = RetrySpec { enabled: false, ..RetrySpec::default() };
        let c =
            LayerSpecs { breaker: Some(&breaker), retry: Some(&retry), ..specs(GatewayProfile::Default, &fallbacks) }
                .to_core();
        let b = c.breaker.unwrap_or_default();
        assert_eq!(b.window, WindowConfig::Count { size: 20 });
        assert_eq!(b.open, Duration::from_secs(2));
        assert!(c.retry.is_none());
        assert!(c.budget.is_some());
        assert_eq!(c.fallbacks.get("inventory_lookup"), Some("query_cached_inventory"));
    }

    #[test]
    fn bad_values_are_named_by_their_scenario_keys() {
        let none = BTreeMap::new();
        let breaker = BreakerSpec { failure_rate: 1.5, ..BreakerSpec::default() };
        let retry = RetrySpec { max_attempts: 0, jitter: Some(0.1), ..RetrySpec::default() };
        let budget = BudgetSpec { ratio: -1.0, ..BudgetSpec::default() };
        let throttle = ThrottleSpec { k: 0.5, ..ThrottleSpec::default() };
        let s = LayerSpecs {
            breaker: Some(&breaker),
            retry: Some(&retry),
            budget: Some(&budget),
            throttle: Some(&throttle),
            ..specs(GatewayProfile::Default, &none)
        };
        let keys: Vec<String> = s.problems().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                "gateway.breaker.failure_rate",
                "gateway.retry.max_attempts",
                "gateway.retry.jitter",
                "gateway.budget.ratio",
                "gateway.throttle.k"
            ]
        );
    }
}
