//! The linear health score of one replica: what the `health_weighted` formula weights by, what `best_score` picks
//! the highest of, and what the drift penalty watches.

use super::candidate_stats::CandidateStats;

/// The linear health score: `0.4·(1−error_rate) + 0.3·(1−latency_ratio) + 0.2·capacity + 0.1·uptime`, each input
/// clamped to [0, 1] first (a latency ratio of 3 must not make the score negative, nor NaN make it anything).
pub fn health_score(s: &CandidateStats) -> f64 {
    0.4 * (1.0 - unit(s.error_rate))
        + 0.3 * (1.0 - unit(s.latency_ratio))
        + 0.2 * unit(s.capacity)
        + 0.1 * unit(s.uptime)
}

/// Clamps to [0, 1]; NaN becomes 0 (one rule for every input, so a formula never propagates NaN).
fn unit(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(error_rate: f64, latency_ratio: f64, capacity: f64, uptime: f64) -> CandidateStats {
        CandidateStats::with_inputs(error_rate, latency_ratio, capacity, uptime)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn health_score_arithmetic_on_the_boundaries() {
        assert!(close(health_score(&stats(0.0, 0.0, 1.0, 1.0)), 1.0), "perfect");
        assert!(close(health_score(&stats(1.0, 1.0, 0.0, 0.0)), 0.0), "worst");
        assert!(close(health_score(&stats(1.0, 0.0, 0.0, 0.0)), 0.3), "only the latency term");
        assert!(close(health_score(&stats(0.0, 1.0, 0.0, 0.0)), 0.4), "only the error term");
        assert!(close(health_score(&stats(1.0, 1.0, 1.0, 0.0)), 0.2), "only capacity");
        assert!(close(health_score(&stats(1.0, 1.0, 0.0, 1.0)), 0.1), "only uptime");
        assert!(close(health_score(&stats(0.1, 0.5, 0.5, 0.9)), 0.4 * 0.9 + 0.3 * 0.5 + 0.2 * 0.5 + 0.1 * 0.9));
    }

    #[test]
    fn health_score_clamps_its_inputs() {
        // A server three times slower than declared loses the latency term, no more.
        assert!(close(health_score(&stats(0.0, 3.0, 1.0, 1.0)), 0.7));
        assert!(close(health_score(&stats(-1.0, -2.0, 5.0, 7.0)), 1.0));
        assert!(close(health_score(&stats(f64::NAN, f64::NAN, f64::NAN, f64::NAN)), 0.7), "NaN inputs count as 0");
    }
}
