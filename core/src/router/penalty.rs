//! The drift penalty: a replica whose health score fell sharply is trusted less for a while.
//!
//! The rule: a score drop of more than 15% within 5 min halves the weight for 10 min. Scores are sampled at
//! each refresh. A drop is measured against the best score sampled in the last 5 min (a bucketed running maximum,
//! so a slow slide that never loses 15% within 5 min is not punished). While the penalty holds, further samples do
//! not re-arm it: the same drop would otherwise be seen again at every refresh until its peak left the window and
//! stretch 10 min into 15. After 10 min the pre-drop peak has left the 5-min window, so only a new drop re-arms it.

use std::time::Duration;

use super::config::RouterConfig;
use super::window::{BucketRing, Peak};

/// Multiplier on a penalised replica's weight.
pub const PENALTY_FACTOR: f64 = 0.5;

#[derive(Debug, Clone)]
pub struct DriftPenalty {
    recent: BucketRing<Peak>,
    until: Option<Duration>,
    drop: f64,
    hold: Duration,
}

impl DriftPenalty {
    pub fn new(config: &RouterConfig) -> Self {
        DriftPenalty {
            recent: BucketRing::new(config.drift_window, config.window_buckets, Peak::default),
            until: None,
            drop: config.drift_drop,
            hold: config.drift_penalty,
        }
    }

    /// Samples the score at `now`; returns the weight multiplier in force (1 or [`PENALTY_FACTOR`]).
    pub fn observe(&mut self, score: f64, now: Duration) -> f64 {
        if !self.penalised(now) {
            let best = self
                .recent
                .live(now)
                .filter_map(|p| p.0)
                .fold(None, |b: Option<f64>, v| Some(b.map_or(v, |b| b.max(v))));
            if best.is_some_and(|best| best > 0.0 && score < best * (1.0 - self.drop)) {
                self.until = Some(now + self.hold);
            }
        }
        self.recent.at_mut(now).observe(score);
        self.multiplier(now)
    }

    fn penalised(&self, now: Duration) -> bool {
        self.until.is_some_and(|until| now < until)
    }

    pub fn multiplier(&self, now: Duration) -> f64 {
        if self.penalised(now) { PENALTY_FACTOR } else { 1.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn a_drop_over_15_percent_within_5_min_halves_for_10_min() {
        let mut d = DriftPenalty::new(&RouterConfig::default());
        assert_eq!(d.observe(1.0, s(0)), 1.0);
        assert_eq!(d.observe(0.90, s(60)), 1.0, "a 10% drop is tolerated");
        assert_eq!(d.observe(0.84, s(240)), PENALTY_FACTOR, "16% below the best of the last 5 min");
        // Keeps sampling the low score every 10 s: the same drop must not re-arm the penalty.
        for t in (250..840).step_by(10) {
            assert_eq!(d.observe(0.84, s(t)), PENALTY_FACTOR, "t={t}");
        }
        assert_eq!(d.observe(0.84, s(840)), 1.0, "lifted exactly 10 min after the drop");
        assert_eq!(d.observe(0.84, s(900)), 1.0, "no peak left to compare with");
    }

    #[test]
    fn a_drop_slower_than_the_window_is_not_punished() {
        let mut d = DriftPenalty::new(&RouterConfig::default());
        d.observe(1.0, s(0));
        // The 1.0 leaves the window at 300 s; the next sample, 0.8, is compared with nothing higher.
        assert_eq!(d.observe(0.8, s(330)), 1.0);
    }

    #[test]
    fn a_new_drop_after_the_penalty_re_arms_it() {
        let mut d = DriftPenalty::new(&RouterConfig::default());
        d.observe(1.0, s(0));
        assert_eq!(d.observe(0.5, s(10)), PENALTY_FACTOR);
        assert_eq!(d.multiplier(s(610)), 1.0);
        d.observe(0.9, s(620));
        assert_eq!(d.observe(0.6, s(630)), PENALTY_FACTOR);
    }
}
