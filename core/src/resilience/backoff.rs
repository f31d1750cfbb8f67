//! Backoff: how long to wait before the next attempt. One type for both waits in the core — the gateway's retries
//! ([`super::retry::RetryPolicy`], full jitter by default) and the client's reconnects
//! ([`crate::client::ClientConfig::backoff`], the measured client's schedule, [`Backoff::RECONNECT`]).
//!
//! Both variants share the exponential ceiling `min(cap, base × 2^attempt)` and differ only in how they spread around
//! it; each draws exactly one number from the RNG per delay, so a seed reproduces every schedule.

use std::time::Duration;

use crate::rt::{SeededRng, scale};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Backoff {
    /// Uniform in `[0, min(cap, base × 2^attempt)]` (AWS's "Exponential Backoff and Jitter"): spreads a crowd of
    /// clients best.
    FullJitter { base: Duration, cap: Duration },
    /// The measured client's: `min(cap, base × 2^attempt)` scaled by `1 ± jitter`, `jitter` a fraction (0.2 for ±20%).
    Proportional { base: Duration, cap: Duration, jitter: f64 },
}

impl Default for Backoff {
    /// The retry default: full jitter from 100 ms, capped at 10 s.
    fn default() -> Self {
        Backoff::FullJitter { base: Duration::from_millis(100), cap: Duration::from_secs(10) }
    }
}

impl Backoff {
    /// The reconnect schedule's defaults, one by one, so a caller can override some and keep the rest.
    pub const RECONNECT_BASE: Duration = Duration::from_secs(1);
    pub const RECONNECT_CAP: Duration = Duration::from_secs(10);
    pub const RECONNECT_JITTER: f64 = 0.2;
    /// 1, 2, 4, 8 s, capped at 10 s, ±20%: the client's reconnect default.
    pub const RECONNECT: Backoff =
        Backoff::Proportional { base: Self::RECONNECT_BASE, cap: Self::RECONNECT_CAP, jitter: Self::RECONNECT_JITTER };

    /// The wait before attempt number `attempt` after the first (0 for the first retry or reconnect).
    pub fn delay(&self, attempt: u32, rng: &SeededRng) -> Duration {
        // The shift is capped so it cannot overflow; the cap is reached long before 2^20 anyway.
        let ceiling = |base: &Duration, cap: &Duration| base.saturating_mul(1u32 << attempt.min(20)).min(*cap);
        match self {
            Backoff::FullJitter { base, cap } => scale(ceiling(base, cap), rng.unit()),
            Backoff::Proportional { base, cap, jitter } => rng.jitter(ceiling(base, cap), *jitter),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_near_the_largest_duration_saturates_instead_of_panicking() {
        let rng = SeededRng::new(1);
        for backoff in [
            Backoff::FullJitter { base: Duration::MAX, cap: Duration::MAX },
            Backoff::Proportional { base: Duration::MAX, cap: Duration::MAX, jitter: 0.9 },
        ] {
            for attempt in [0, 1, 31, u32::MAX] {
                for _ in 0..200 {
                    let _ = backoff.delay(attempt, &rng);
                }
            }
        }
    }

    #[test]
    fn full_jitter_stays_under_the_exponential_ceiling() {
        let rng = SeededRng::new(5);
        let b = Backoff::default();
        for attempt in 0..10 {
            let ceiling = Duration::from_millis(100 * (1 << attempt)).min(Duration::from_secs(10));
            let draws: Vec<Duration> = (0..200).map(|_| b.delay(attempt, &rng)).collect();
            assert!(draws.iter().all(|d| *d <= ceiling), "attempt {attempt}");
            assert!(draws.iter().any(|d| *d < ceiling / 4), "full jitter reaches low values");
        }
    }

    #[test]
    fn reconnect_schedule_is_1_2_4_8_then_capped_with_jitter_around_it() {
        let rng = SeededRng::new(0);
        let exact = Backoff::Proportional { base: Backoff::RECONNECT_BASE, cap: Backoff::RECONNECT_CAP, jitter: 0.0 };
        let secs: Vec<u64> = (0..6).map(|a| exact.delay(a, &rng).as_secs()).collect();
        assert_eq!(secs, vec![1, 2, 4, 8, 10, 10]);
        // One draw per delay, the same one `SeededRng::jitter` makes: a seed gives the same waits as before.
        let (a, b) = (SeededRng::new(7), SeededRng::new(7));
        for attempt in 0..6 {
            let ceiling = exact.delay(attempt, &rng);
            assert_eq!(Backoff::RECONNECT.delay(attempt, &a), b.jitter(ceiling, Backoff::RECONNECT_JITTER));
        }
    }
}
