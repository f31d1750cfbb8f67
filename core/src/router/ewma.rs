//! Peak-EWMA: a latency estimate that jumps up at once and decays down slowly (Finagle, Linkerd, tower).
//!
//! A plain moving average hides a server that just turned slow until many slow calls have been averaged in; a
//! balancer fed by it keeps sending traffic into the spike. Peak-EWMA takes any observation above the estimate as
//! the new estimate (the peak), and blends lower ones in with a weight that grows with the time since the last
//! update: `w = exp(−Δt / τ)`, `estimate = estimate·w + rtt·(1 − w)`. Reading the estimate later decays it the same
//! way towards zero, so a server that was slow once and has not been tried since comes back into rotation rather
//! than starving forever.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakEwma {
    /// Estimate in milliseconds.
    estimate_ms: f64,
    /// When it was last updated, as time since the router's start.
    updated: Duration,
    tau_secs: f64,
}

impl PeakEwma {
    /// Starts from `prior` (the server's declared P95, a fair guess before any call).
    pub fn new(prior: Duration, decay: Duration, now: Duration) -> Self {
        PeakEwma { estimate_ms: ms(prior), updated: now, tau_secs: decay.as_secs_f64().max(1e-9) }
    }

    fn weight(&self, now: Duration) -> f64 {
        (-(now.saturating_sub(self.updated).as_secs_f64()) / self.tau_secs).exp()
    }

    /// Folds in one observed latency.
    pub fn observe(&mut self, rtt: Duration, now: Duration) {
        let rtt_ms = ms(rtt);
        self.estimate_ms = if rtt_ms > self.estimate_ms {
            rtt_ms
        } else {
            let w = self.weight(now);
            self.estimate_ms * w + rtt_ms * (1.0 - w)
        };
        self.updated = self.updated.max(now);
    }

    /// The estimate as of `now`, decayed towards zero since the last observation.
    pub fn at(&self, now: Duration) -> f64 {
        self.estimate_ms * self.weight(now)
    }

    /// The estimate as of its last observation.
    pub fn last(&self) -> f64 {
        self.estimate_ms
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAU: Duration = Duration::from_secs(10);

    #[test]
    fn a_peak_is_taken_at_once_and_a_lower_sample_blends_by_elapsed_time() {
        let mut e = PeakEwma::new(Duration::from_millis(100), TAU, Duration::ZERO);
        e.observe(Duration::from_millis(2000), Duration::from_secs(1));
        assert_eq!(e.last(), 2000.0, "a slower call replaces the estimate immediately");
        // One time constant later a 100 ms sample pulls it 1 − 1/e of the way down.
        e.observe(Duration::from_millis(100), Duration::from_secs(11));
        let w = (-1.0f64).exp();
        assert!((e.last() - (2000.0 * w + 100.0 * (1.0 - w))).abs() < 1e-9, "{}", e.last());
    }

    #[test]
    fn reading_decays_towards_zero_with_idle_time() {
        let e = PeakEwma::new(Duration::from_millis(500), TAU, Duration::ZERO);
        assert_eq!(e.at(Duration::ZERO), 500.0);
        let half = e.at(Duration::from_secs_f64(10.0 * std::f64::consts::LN_2));
        assert!((half - 250.0).abs() < 1e-6, "one half-life halves it: {half}");
        assert!(e.at(Duration::from_secs(600)) < 1e-9);
    }

    #[test]
    fn samples_at_the_same_instant_do_not_blend() {
        let mut e = PeakEwma::new(Duration::from_millis(500), TAU, Duration::from_secs(5));
        e.observe(Duration::from_millis(10), Duration::from_secs(5));
        assert_eq!(e.last(), 500.0, "zero elapsed time gives the new sample zero weight");
    }
}
