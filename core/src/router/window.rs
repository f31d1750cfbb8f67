//! Time-bucketed sliding windows: the passive statistics' memory.
//!
//! A window of length `W` is a ring of `N` buckets of `W / N` each. An observation lands in the bucket of its time
//! (O(1)); a bucket whose epoch has left the window is reset the next time its slot is reused or read, so nothing
//! sweeps in the background. A read folds the live buckets: `N` is a small constant (10 for the 5-minute windows),
//! so it does not grow with the call rate. The price is granularity: an observation leaves the window between
//! `W − W/N` and `W` after it was made.
//!
//! Why not the resilience layers' `TimeRing` (`resilience/ring.rs`), which covers the same span: it
//! keeps a running total and subtracts each bucket that leaves, so its buckets must be integer counters. These hold
//! what cannot be subtracted — a running maximum ([`Peak`], the drift penalty's recent best score) — or what costs
//! too much to (a latency histogram per bucket, merged only on refresh). A late observation also lands differently:
//! here in the bucket of its own time, there in the newest bucket; one type for both would move some observations
//! to another bucket and change when they expire.

use std::time::Duration;

/// One slot of a [`BucketRing`]: emptied when its epoch expires.
pub trait Resettable {
    fn clear(&mut self);
}

/// A ring of buckets indexed by `time / bucket_len`. Time is a `Duration` since the owner's start.
#[derive(Debug, Clone)]
pub struct BucketRing<B> {
    bucket_nanos: u128,
    /// The epoch each slot currently holds (`u64::MAX`: never used).
    epochs: Vec<u64>,
    buckets: Vec<B>,
}

impl<B: Resettable> BucketRing<B> {
    /// `window` split into `buckets` slots (at least one; a zero window becomes one nanosecond per bucket).
    pub fn new(window: Duration, buckets: u32, mut make: impl FnMut() -> B) -> Self {
        let n = buckets.max(1) as usize;
        let bucket_nanos = (window.as_nanos() / n as u128).max(1);
        BucketRing { bucket_nanos, epochs: vec![u64::MAX; n], buckets: (0..n).map(|_| make()).collect() }
    }

    fn epoch(&self, at: Duration) -> u64 {
        u64::try_from(at.as_nanos() / self.bucket_nanos).unwrap_or(u64::MAX - 1)
    }

    /// The bucket for time `at`, emptied first if it held an expired epoch.
    pub fn at_mut(&mut self, at: Duration) -> &mut B {
        let epoch = self.epoch(at);
        let slot = (epoch % self.buckets.len() as u64) as usize;
        if self.epochs[slot] != epoch {
            self.epochs[slot] = epoch;
            self.buckets[slot].clear();
        }
        &mut self.buckets[slot]
    }

    /// The buckets still inside the window that ends at `now`.
    pub fn live(&self, now: Duration) -> impl Iterator<Item = &B> {
        let current = self.epoch(now);
        let n = self.buckets.len() as u64;
        self.epochs
            .iter()
            .zip(&self.buckets)
            .filter(move |(epoch, _)| **epoch != u64::MAX && **epoch <= current && current - **epoch < n)
            .map(|(_, bucket)| bucket)
    }
}

/// Events and how many of them were hits: calls and errors, or health checks and successes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HitCounts {
    pub total: u64,
    pub hits: u64,
}

impl Resettable for HitCounts {
    fn clear(&mut self) {
        *self = HitCounts::default();
    }
}

impl HitCounts {
    pub fn add(&mut self, hit: bool) {
        self.total += 1;
        self.hits += u64::from(hit);
    }

    /// The sum over a window's live buckets.
    pub fn sum<'a>(buckets: impl Iterator<Item = &'a HitCounts>) -> HitCounts {
        buckets.fold(HitCounts::default(), |acc, b| HitCounts { total: acc.total + b.total, hits: acc.hits + b.hits })
    }

    /// `hits / total`, or `None` with fewer than `min` events.
    pub fn ratio(&self, min: u64) -> Option<f64> {
        (self.total >= min.max(1)).then(|| self.hits as f64 / self.total as f64)
    }
}

/// The highest value seen in a bucket (the drift penalty's recent best score).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Peak(pub Option<f64>);

impl Resettable for Peak {
    fn clear(&mut self) {
        self.0 = None;
    }
}

impl Peak {
    pub fn observe(&mut self, value: f64) {
        self.0 = Some(self.0.map_or(value, |p| p.max(value)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> BucketRing<HitCounts> {
        BucketRing::new(Duration::from_secs(300), 10, HitCounts::default)
    }

    fn rate(r: &BucketRing<HitCounts>, now: Duration) -> Option<f64> {
        HitCounts::sum(r.live(now)).ratio(1)
    }

    #[test]
    fn errors_leave_the_window_after_its_length() {
        let mut r = ring();
        let s = Duration::from_secs;
        r.at_mut(s(0)).add(true);
        r.at_mut(s(0)).add(false);
        assert_eq!(rate(&r, s(0)), Some(0.5));
        assert_eq!(rate(&r, s(299)), Some(0.5), "still inside the 5 min window");
        assert_eq!(rate(&r, s(300)), None, "expired exactly at the window's length");
        r.at_mut(s(150)).add(false);
        assert_eq!(rate(&r, s(299)), Some(1.0 / 3.0));
        assert_eq!(rate(&r, s(420)), Some(0.0), "only the later success is left");
    }

    #[test]
    fn a_reused_slot_forgets_its_old_epoch() {
        let mut r = ring();
        r.at_mut(Duration::from_secs(10)).add(true);
        // Same slot, ten buckets later: the old error must not leak into the new bucket.
        r.at_mut(Duration::from_secs(310)).add(false);
        assert_eq!(rate(&r, Duration::from_secs(310)), Some(0.0));
    }

    #[test]
    fn the_future_is_not_live_and_ratio_needs_samples() {
        let mut r = ring();
        r.at_mut(Duration::from_secs(100)).add(true);
        assert_eq!(rate(&r, Duration::from_secs(10)), None);
        assert_eq!(HitCounts { total: 2, hits: 1 }.ratio(3), None);
    }
}
