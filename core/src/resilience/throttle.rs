//! Client-side adaptive throttling (Google SRE book, "Handling Overload"): when the backend keeps rejecting, reject
//! locally before sending, with probability
//!
//! ```text
//! p = max(0, (requests − K × accepts) / (requests + 1))
//! ```
//!
//! over a sliding window (default 2 minutes, as the book). `requests` counts every attempt the application made,
//! including those rejected here; `accepts` those the backend accepted (did not fail for overload). While the backend
//! accepts at least 1/K of requests, p is 0; past that, local rejections grow smoothly, so the backend sees roughly
//! K × its accepted rate and spends little on requests it would refuse anyway. K = 2 trades a little wasted backend
//! work for a quick recovery once it accepts again (lower K is more aggressive). Randomness comes from the injected
//! [`SeededRng`], so the simulator replays the same rejections for the same seed.
//!
//! An admitted request is counted when its outcome is known ([`AdaptiveThrottle::record_outcome`]), not when it is
//! sent: counted at the send, the requests still in flight have no accept yet, so a cold client with a few calls in
//! flight (3 sent, none back: p = 3/4) would shed healthy traffic. A request rejected here is counted at once.

use std::time::Duration;

use tokio::time::Instant;

use super::ring::{TimeRing, counter_bucket};
use crate::rt::SeededRng;

/// Defaults: `k` 2.0, `window` 120 s in 24 buckets.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleConfig {
    pub k: f64,
    pub window: Duration,
    pub buckets: u32,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig { k: 2.0, window: Duration::from_secs(120), buckets: 24 }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub requests: u64,
    pub accepts: u64,
}

counter_bucket!(Tally { requests, accepts });

/// The SRE formula on its own, for tests and observers.
pub fn rejection_probability(requests: u64, accepts: u64, k: f64) -> f64 {
    ((requests as f64 - k * accepts as f64) / (requests as f64 + 1.0)).max(0.0)
}

#[derive(Debug)]
pub struct AdaptiveThrottle {
    k: f64,
    ring: TimeRing<Tally>,
    rng: SeededRng,
}

impl AdaptiveThrottle {
    /// Settings out of range are clamped: `k` below 1 to 1 (the book's lower end), empty windows to one bucket.
    pub fn new(config: ThrottleConfig, origin: Instant, rng: SeededRng) -> Self {
        let k = if config.k.is_finite() { config.k.max(1.0) } else { 2.0 };
        let buckets = config.buckets.max(1);
        AdaptiveThrottle { k, ring: TimeRing::new(origin, buckets as usize, config.window / buckets), rng }
    }

    pub fn probability(&mut self, now: Instant) -> f64 {
        let t = self.ring.total(now);
        rejection_probability(t.requests, t.accepts, self.k)
    }

    /// Decides whether to send one request. `false`: reject locally (counted as a request now); `true`: report its
    /// outcome with [`AdaptiveThrottle::record_outcome`] when it is known.
    pub fn admit(&mut self, now: Instant) -> bool {
        let p = self.probability(now);
        let admitted = p == 0.0 || self.rng.unit() >= p;
        if !admitted {
            self.ring.record(now, Tally { requests: 1, accepts: 0 });
        }
        admitted
    }

    /// An admitted request ended: a request, and an accept if the backend accepted it (answered without an overload
    /// failure).
    pub fn record_outcome(&mut self, now: Instant, accepted: bool) {
        self.ring.record(now, Tally { requests: 1, accepts: u64::from(accepted) });
    }

    pub fn tally(&mut self, now: Instant) -> Tally {
        self.ring.total(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formula() {
        assert_eq!(rejection_probability(0, 0, 2.0), 0.0);
        assert_eq!(rejection_probability(100, 50, 2.0), 0.0, "half accepted with K = 2: no local rejection");
        assert_eq!(rejection_probability(100, 100, 2.0), 0.0);
        assert_eq!(rejection_probability(99, 0, 2.0), 0.99);
        assert!((rejection_probability(100, 25, 2.0) - 50.0 / 101.0).abs() < 1e-12);
        assert!((rejection_probability(100, 25, 1.0) - 75.0 / 101.0).abs() < 1e-12);
    }

    #[test]
    fn rejects_at_the_formulas_rate_and_recovers_when_the_window_forgets() {
        let t0 = Instant::now();
        let config = ThrottleConfig { window: Duration::from_secs(10), buckets: 10, ..ThrottleConfig::default() };
        let mut th = AdaptiveThrottle::new(config, t0, SeededRng::new(3));
        // The backend accepts one request in five: p → (1 − 2 × 0.2) = 0.6 in the limit.
        let mut admitted = 0;
        let mut sent = 0;
        for i in 0..20_000u64 {
            let now = t0 + Duration::from_micros(i * 100); // 2 s in all, inside one window
            sent += 1;
            if th.admit(now) {
                admitted += 1;
                th.record_outcome(now, admitted % 5 == 0);
            }
        }
        let t = th.tally(t0 + Duration::from_secs(2));
        assert_eq!(t.requests, sent);
        let p = th.probability(t0 + Duration::from_secs(2));
        let expected = rejection_probability(t.requests, t.accepts, 2.0);
        assert_eq!(p, expected);
        assert!(p > 0.5, "p = {p}");
        let rejected_share = 1.0 - admitted as f64 / sent as f64;
        assert!(rejected_share > 0.4, "local rejections happen: {rejected_share}");
        assert_eq!(th.probability(t0 + Duration::from_secs(13)), 0.0, "the window forgot the overload");
        assert!(th.admit(t0 + Duration::from_secs(13)));
    }

    #[test]
    fn requests_in_flight_do_not_count_before_their_outcome() {
        let t0 = Instant::now();
        let mut th = AdaptiveThrottle::new(ThrottleConfig::default(), t0, SeededRng::new(1));
        // A cold client sends 50 requests at once: none is back yet, none may be shed.
        assert!((0..50).all(|_| th.admit(t0)));
        assert_eq!(th.tally(t0).requests, 0);
        for _ in 0..50 {
            th.record_outcome(t0, true);
        }
        assert_eq!(th.tally(t0), Tally { requests: 50, accepts: 50 });
    }
}
