//! One replica's statistics as a formula sees them: the snapshot the router folds from the passive statistics on
//! refresh, caches, and patches with the live in-flight count at each decision. The health score and every formula
//! read it; nothing here reads the windows it came from.

/// One replica's statistics, as a formula sees them. All rates are in [0, 1]; latencies in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CandidateStats {
    /// Errors / calls over the error window; 0 before `min_samples` calls.
    pub error_rate: f64,
    /// Windowed P95 / declared P95; 0 before any call (an unknown server is not presumed slow).
    pub latency_ratio: f64,
    /// (max_concurrent − in_flight) / max_concurrent, live at the decision.
    pub capacity: f64,
    /// Successful health checks / checks over 24 h; 1 before the first check.
    pub uptime: f64,
    /// The linear health score at the last refresh (what the drift penalty watches).
    pub score: f64,
    pub p95_ms: f64,
    pub declared_p95_ms: f64,
    /// Calls sent and not yet finished, live at the decision.
    pub in_flight: f64,
    pub max_concurrent: f64,
    /// Peak-EWMA latency estimate (ms).
    pub peak_ewma_ms: f64,
    /// 0.5 while the drift penalty holds, else 1. Applied by the router to weighted formulas' weights.
    pub penalty: f64,
}

impl CandidateStats {
    /// Statistics with the health score's four inputs set and the rest neutral, for tests of the formulas.
    #[cfg(test)]
    pub(crate) fn with_inputs(error_rate: f64, latency_ratio: f64, capacity: f64, uptime: f64) -> Self {
        CandidateStats {
            error_rate,
            latency_ratio,
            capacity,
            uptime,
            score: 0.0,
            p95_ms: 0.0,
            declared_p95_ms: 1000.0,
            in_flight: 0.0,
            max_concurrent: 100.0,
            peak_ewma_ms: 0.0,
            penalty: 1.0,
        }
    }

    /// Sets the in-flight count and the capacity it implies.
    pub fn with_in_flight(mut self, in_flight: u32) -> Self {
        self.in_flight = f64::from(in_flight);
        self.capacity = ((self.max_concurrent - self.in_flight) / self.max_concurrent).clamp(0.0, 1.0);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_follows_in_flight_and_clamps() {
        let s = CandidateStats::with_inputs(0.0, 0.0, 1.0, 1.0);
        assert_eq!(s.with_in_flight(25).capacity, 0.75);
        assert_eq!(s.with_in_flight(250).capacity, 0.0, "over the declared limit is no capacity, not negative");
    }
}
