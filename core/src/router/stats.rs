//! Passive statistics of one replica, fed from the call path, folded into the snapshot a decision reads
//! ([`CandidateStats`]).
//!
//! Updates are O(1): an in-flight counter, one bucket of a windowed error counter, one bucket histogram and the
//! Peak-EWMA. Folding the windows into rates and quantiles is the work of [`Passive::snapshot`], which the router
//! runs on refresh (every second or so, off the decision path); a decision copies the cached [`CandidateStats`] and
//! patches in the live in-flight count, so capacity is never stale.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::candidate_stats::CandidateStats;
use super::config::RouterConfig;
use super::ewma::PeakEwma;
use super::score::health_score;
use super::window::{BucketRing, HitCounts, Resettable};

/// Latencies are recorded in microseconds from 1 µs to 10 min (longer ones saturate), 2 significant digits: about
/// 10 KB a histogram, exact enough for a P95.
const LATENCY_MAX_US: u64 = 600_000_000;
const LATENCY_SIGFIG: u8 = 2;

/// A histogram for one window bucket.
fn latency_histogram() -> Histogram<u32> {
    // Constant, valid bounds (low ≥ 1, high ≥ 2·low, sigfig ≤ 5): creation cannot fail.
    #[allow(clippy::expect_used)]
    Histogram::new_with_bounds(1, LATENCY_MAX_US, LATENCY_SIGFIG).expect("constant histogram bounds are valid")
}

/// One window bucket's latencies. The histogram is allocated when the bucket first records: a router holds ten
/// buckets per replica, most of which never see a call in a short run, and the first touch of their memory is
/// most of what they would cost. Cleared buckets keep theirs for reuse.
#[derive(Debug, Clone, Default)]
pub struct LatencyBucket(Option<Histogram<u32>>);

impl LatencyBucket {
    fn record(&mut self, us: u64) {
        self.0.get_or_insert_with(latency_histogram).saturating_record(us);
    }
}

impl Resettable for LatencyBucket {
    fn clear(&mut self) {
        if let Some(h) = &mut self.0 {
            h.reset();
        }
    }
}

/// Scratch space for folding a window's buckets into one histogram, reused across refreshes; allocated by the
/// first fold that has a recorded latency to add.
#[derive(Debug, Clone, Default)]
pub struct LatencyMerge(Option<Histogram<u32>>);

impl LatencyMerge {
    /// The P95 (ms) of everything recorded in `buckets`; 0 when they hold nothing.
    fn p95_ms<'a>(&mut self, buckets: impl Iterator<Item = &'a LatencyBucket>) -> f64 {
        let mut added = false;
        for h in buckets.filter_map(|b| b.0.as_ref()) {
            let merged = self.0.get_or_insert_with(latency_histogram);
            if !std::mem::replace(&mut added, true) {
                merged.reset();
            }
            // Same bounds everywhere, so adding cannot overflow the range.
            let _ = merged.add(h);
        }
        match &self.0 {
            Some(merged) if added && !merged.is_empty() => merged.value_at_quantile(0.95) as f64 / 1000.0,
            _ => 0.0,
        }
    }
}

/// The passive statistics of one replica.
#[derive(Debug, Clone)]
pub struct Passive {
    in_flight: u32,
    errors: BucketRing<HitCounts>,
    latency: BucketRing<LatencyBucket>,
    uptime: BucketRing<HitCounts>,
    ewma: PeakEwma,
    declared_p95: Duration,
    max_concurrent: u32,
}

impl Passive {
    pub fn new(config: &RouterConfig, declared_p95: Duration, max_concurrent: u32, now: Duration) -> Self {
        Passive {
            in_flight: 0,
            errors: BucketRing::new(config.error_window, config.window_buckets, HitCounts::default),
            latency: BucketRing::new(config.error_window, config.window_buckets, LatencyBucket::default),
            uptime: BucketRing::new(config.uptime_window, config.uptime_buckets, HitCounts::default),
            ewma: PeakEwma::new(declared_p95, config.ewma_decay, now),
            declared_p95,
            max_concurrent: max_concurrent.max(1),
        }
    }

    /// New declarations (a server re-registered) keep the observations.
    pub fn redeclare(&mut self, declared_p95: Duration, max_concurrent: u32) {
        self.declared_p95 = declared_p95;
        self.max_concurrent = max_concurrent.max(1);
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    pub fn peak_ewma_ms(&self) -> f64 {
        self.ewma.last()
    }

    pub fn started(&mut self) {
        self.in_flight = self.in_flight.saturating_add(1);
    }

    /// A started call ended without saying anything about the replica (the caller's own fault, e.g. invalid
    /// arguments caught before sending, or a cancellation): it leaves the in-flight count and nothing else.
    pub fn abandoned(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// A call finished (`ok`: not an error) after `latency`, at `now`.
    pub fn finished(&mut self, ok: bool, latency: Duration, now: Duration) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.errors.at_mut(now).add(!ok);
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX).max(1);
        self.latency.at_mut(now).record(us);
        self.ewma.observe(latency, now);
    }

    /// An active health check's outcome, for uptime.
    pub fn checked(&mut self, up: bool, now: Duration) {
        self.uptime.at_mut(now).add(up);
    }

    /// Folds the windows as of `now`. `merged` is scratch space.
    pub fn snapshot(&self, now: Duration, min_samples: u64, merged: &mut LatencyMerge) -> CandidateStats {
        let calls = HitCounts::sum(self.errors.live(now));
        let p95_ms = merged.p95_ms(self.latency.live(now));
        let declared_p95_ms = self.declared_p95.as_secs_f64() * 1000.0;
        let latency_ratio = if declared_p95_ms > 0.0 { p95_ms / declared_p95_ms } else { 0.0 };
        let mut stats = CandidateStats {
            error_rate: calls.ratio(min_samples).unwrap_or(0.0),
            latency_ratio,
            capacity: 1.0,
            uptime: HitCounts::sum(self.uptime.live(now)).ratio(1).unwrap_or(1.0),
            score: 0.0,
            p95_ms,
            declared_p95_ms,
            in_flight: 0.0,
            max_concurrent: f64::from(self.max_concurrent),
            peak_ewma_ms: self.ewma.at(now),
            penalty: 1.0,
        }
        .with_in_flight(self.in_flight);
        stats.score = health_score(&stats);
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn histograms_are_allocated_by_the_first_record_and_fold_as_an_eager_merge_would() {
        let config = RouterConfig::default();
        let mut p = Passive::new(&config, Duration::from_millis(100), 10, Duration::ZERO);
        let allocated = |p: &Passive| p.latency.live(Duration::from_secs(299)).filter(|b| b.0.is_some()).count();
        assert_eq!(allocated(&p), 0, "a new replica holds no histogram");
        let mut merged = LatencyMerge::default();
        assert_eq!(p.snapshot(Duration::ZERO, 1, &mut merged).p95_ms, 0.0);
        assert!(merged.0.is_none(), "nothing to fold, nothing allocated");
        // Calls in three of the ten 30 s buckets; the eager reference records every latency into one histogram.
        let mut eager = latency_histogram();
        for (i, at) in
            [(0u64, 1u64), (1, 95), (2, 200)].into_iter().flat_map(|(k, at)| (0..40).map(move |j| (k * 40 + j, at)))
        {
            p.started();
            p.finished(true, Duration::from_micros(i * 997 + 1), Duration::from_secs(at));
            eager.record(i * 997 + 1).unwrap();
        }
        assert_eq!(allocated(&p), 3);
        let s = p.snapshot(Duration::from_secs(299), 1, &mut merged);
        assert_eq!(s.p95_ms, eager.value_at_quantile(0.95) as f64 / 1000.0);
        // The first bucket left the window: the reused scratch forgets it.
        let later = p.snapshot(Duration::from_secs(301), 1, &mut merged);
        let mut rest = latency_histogram();
        (40..120u64).for_each(|i| rest.record(i * 997 + 1).unwrap());
        assert_eq!(later.p95_ms, rest.value_at_quantile(0.95) as f64 / 1000.0);
        // A reused slot is cleared, not reallocated, and an all-empty fold is 0.
        p.finished(true, Duration::from_millis(5), Duration::from_secs(10_000));
        assert!((p.snapshot(Duration::from_secs(10_000), 1, &mut merged).p95_ms - 5.0).abs() < 0.05);
        assert_eq!(p.snapshot(Duration::from_secs(20_000), 1, &mut merged).p95_ms, 0.0);
    }

    #[test]
    fn snapshot_reads_the_windows() {
        let config = RouterConfig::default();
        let mut p = Passive::new(&config, Duration::from_millis(100), 10, Duration::ZERO);
        let mut merged = LatencyMerge::default();
        let fresh = p.snapshot(Duration::ZERO, 1, &mut merged);
        assert_eq!((fresh.error_rate, fresh.p95_ms, fresh.uptime, fresh.capacity), (0.0, 0.0, 1.0, 1.0));
        for i in 0..100u64 {
            p.started();
            p.finished(i % 10 != 0, Duration::from_millis(i + 1), Duration::from_secs(1));
        }
        p.started();
        p.checked(true, Duration::from_secs(1));
        p.checked(false, Duration::from_secs(2));
        let s = p.snapshot(Duration::from_secs(2), 1, &mut merged);
        assert!(close(s.error_rate, 0.1));
        assert!((s.p95_ms - 95.0).abs() <= 1.0, "{}", s.p95_ms);
        assert!((s.latency_ratio - 0.95).abs() <= 0.01);
        assert_eq!((s.uptime, s.in_flight, s.capacity), (0.5, 1.0, 0.9));
        assert!(close(s.score, health_score(&s)));
        let later = p.snapshot(Duration::from_secs(400), 1, &mut merged);
        assert_eq!((later.error_rate, later.p95_ms), (0.0, 0.0), "the 5 min window forgot them");
    }
}
