//! Retry budget: retries may add at most `ratio` of the traffic, plus a small floor — the idea of Finagle's
//! `RetryBudget` and tower's `TpsBudget`, written for this crate's [`TimeRing`].
//!
//! **Rule.** Over the window (`ttl`, as ring buckets), a retry is allowed iff
//!
//! ```text
//! withdrawals + 1 ≤ ratio × deposits + min_per_second × ttl_secs
//! ```
//!
//! where every original request deposits one token and every retry withdraws one. So at steady state retries are at
//! most `ratio` (default 20%) of requests — amplification ≤ 1 + ratio however many agents retry naively — and the
//! reserve (`min_per_second × ttl`) lets a quiet client still retry now and then. Deposits expire with the window: a
//! burst of traffic an hour ago buys no retries now, which is what stops a storm that outlives the traffic that
//! paid for it.
//!
//! **What it bounds, exactly.** The rule holds for the window at the moment of every granted retry. Deposits can
//! expire before the retries they paid for, so over a long run with adversarial timing (all requests at the end of
//! one window, all retries at the start of the next) retries can reach 2 × ratio × requests + the reserve per window;
//! with steady traffic they stay at ratio × requests. Finagle's and tower's budgets behave the same way.
//!
//! **Why a budget and not only a per-call attempt cap.** A cap of N attempts lets a storm multiply load by N exactly
//! when the server is slowest; the budget bounds the multiplier for the whole client whatever N is.

use std::time::Duration;

use tokio::time::Instant;

use super::ring::{TimeRing, counter_bucket};

/// Defaults: `ratio` 0.2, `min_per_second` 10 (Finagle's and tower's), `ttl` 10 s in 10 buckets.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetConfig {
    pub ratio: f64,
    pub min_per_second: f64,
    pub ttl: Duration,
    pub buckets: u32,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig { ratio: 0.2, min_per_second: 10.0, ttl: Duration::from_secs(10), buckets: 10 }
    }
}

/// A budget setting it cannot work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid retry budget: {0}")]
pub struct BudgetConfigError(&'static str);

impl BudgetConfig {
    pub fn validate(&self) -> Result<(), BudgetConfigError> {
        if !(self.ratio.is_finite() && self.ratio >= 0.0) {
            return Err(BudgetConfigError("ratio must be a finite number ≥ 0"));
        }
        if !(self.min_per_second.is_finite() && self.min_per_second >= 0.0) {
            return Err(BudgetConfigError("min_per_second must be a finite number ≥ 0"));
        }
        if self.ttl.is_zero() || self.buckets == 0 {
            return Err(BudgetConfigError("ttl and buckets must be positive"));
        }
        Ok(())
    }

    /// Retries the floor allows per window: `min_per_second × ttl`.
    pub fn reserve(&self) -> f64 {
        self.min_per_second * self.ttl.as_secs_f64()
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flow {
    pub deposits: u64,
    pub withdrawals: u64,
}

counter_bucket!(Flow { deposits, withdrawals });

#[derive(Debug, Clone)]
pub struct RetryBudget {
    config: BudgetConfig,
    ring: TimeRing<Flow>,
}

impl RetryBudget {
    pub fn new(config: BudgetConfig, origin: Instant) -> Result<Self, BudgetConfigError> {
        config.validate()?;
        let width = config.ttl / config.buckets;
        let ring = TimeRing::new(origin, config.buckets as usize, width);
        Ok(RetryBudget { config, ring })
    }

    /// One original request (not a retry) was sent.
    pub fn deposit(&mut self, now: Instant) {
        self.ring.record(now, Flow { deposits: 1, withdrawals: 0 });
    }

    /// Asks to send one retry; `true` spends the token.
    pub fn try_withdraw(&mut self, now: Instant) -> bool {
        if self.balance(now) < 1.0 {
            return false;
        }
        self.ring.record(now, Flow { deposits: 0, withdrawals: 1 });
        true
    }

    /// Retries still allowed now (may be fractional; a retry needs a whole one).
    pub fn balance(&mut self, now: Instant) -> f64 {
        let flow = self.ring.total(now);
        self.config.ratio * flow.deposits as f64 + self.config.reserve() - flow.withdrawals as f64
    }

    /// Deposits and withdrawals in the window ending at `now`.
    pub fn flow(&mut self, now: Instant) -> Flow {
        self.ring.total(now)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn retries_are_a_fifth_of_requests_plus_the_reserve() {
        let t0 = Instant::now();
        let config = BudgetConfig { min_per_second: 0.5, ttl: Duration::from_secs(4), ..BudgetConfig::default() };
        let mut b = RetryBudget::new(config, t0).unwrap();
        assert_eq!(b.balance(t0), 2.0, "the reserve alone: 0.5/s × 4 s");
        for _ in 0..10 {
            b.deposit(t0);
        }
        let granted = (0..10).filter(|_| b.try_withdraw(t0)).count();
        assert_eq!(granted, 4, "20% of 10 requests + 2 reserve");
        // The deposits expire with the window; the withdrawals too, so only the reserve is left.
        assert_eq!(b.flow(t0 + Duration::from_secs(4)), Flow::default());
        assert_eq!(b.balance(t0 + Duration::from_secs(4)), 2.0);
    }

    #[test]
    fn a_naive_storm_is_held_to_the_ratio() {
        // 100 requests per second for a minute, every one failing and retried up to five times at once.
        let t0 = Instant::now();
        let config = BudgetConfig { min_per_second: 1.0, ..BudgetConfig::default() };
        let mut b = RetryBudget::new(config, t0).unwrap();
        let (mut requests, mut retries) = (0u32, 0u32);
        for i in 0..6000u64 {
            let now = t0 + ms(i * 10);
            b.deposit(now);
            requests += 1;
            retries += (0..5).take_while(|_| b.try_withdraw(now)).count() as u32;
        }
        let amplification = f64::from(requests + retries) / f64::from(requests);
        assert!(amplification <= 1.2 + 0.01 + 0.005, "amplification {amplification}");
        assert!(amplification > 1.15, "the budget does allow retries: {amplification}");
    }

    #[test]
    fn bad_settings_are_refused() {
        let t0 = Instant::now();
        let bad = BudgetConfig { ratio: f64::NAN, ..BudgetConfig::default() };
        assert_eq!(
            RetryBudget::new(bad, t0).unwrap_err().to_string(),
            "invalid retry budget: ratio must be a finite number ≥ 0"
        );
        assert!(RetryBudget::new(BudgetConfig { buckets: 0, ..BudgetConfig::default() }, t0).is_err());
    }

    proptest! {
        /// Under any traffic, every granted retry leaves the window's retries at most ratio × its requests plus the
        /// reserve, and the budget refuses a retry only when granting it would break that (checked against a plain
        /// log of every event).
        #[test]
        fn never_exceeds_ratio_times_requests_plus_minimum(
            ratio in 0.0f64..1.0,
            min_per_second in 0.0f64..3.0,
            ops in proptest::collection::vec((0u64..400, any::<bool>()), 1..400),
        ) {
            let t0 = Instant::now();
            let config = BudgetConfig { ratio, min_per_second, ttl: Duration::from_secs(2), buckets: 4 };
            let reserve = config.reserve();
            let mut b = RetryBudget::new(config, t0).unwrap();
            let mut now = t0;
            let mut log: Vec<(u128, bool)> = vec![]; // (bucket index, is a retry)
            let width = ms(500).as_nanos();
            for (dt, retry) in ops {
                now += ms(dt);
                let idx = (now - t0).as_nanos() / width;
                let in_window = |log: &Vec<(u128, bool)>, retry: bool| {
                    log.iter().filter(|(i, r)| *r == retry && i + 4 > idx).count() as f64
                };
                if retry {
                    let allowed = in_window(&log, true) + 1.0 <= ratio * in_window(&log, false) + reserve;
                    prop_assert_eq!(b.try_withdraw(now), allowed);
                    if allowed {
                        log.push((idx, true));
                        prop_assert!(in_window(&log, true) <= ratio * in_window(&log, false) + reserve);
                    }
                } else {
                    b.deposit(now);
                    log.push((idx, false));
                }
            }
        }
    }
}
