//! A time-bucketed sliding window: a ring of fixed-width buckets whose running total is read in O(1).
//!
//! Used by the breaker's time window, the retry budget and the adaptive throttle: each counts events over "the last
//! T" without storing one entry per event. The window covers the current (partial) bucket and the `len − 1` before
//! it, so its true span is between `(len − 1) × width` and `len × width`; more buckets, finer edge.
//!
//! Why a running total: a read must not walk the ring (the breaker reads on every outcome). Moving time forward
//! subtracts the buckets that fall out, at most `len` of them however long the gap, so the cost is amortised O(1)
//! per bucket width, never per event. Times before the previous one (two tasks racing their `now` reads) land in the
//! newest bucket rather than rewinding the ring.
//!
//! The router's statistics use another ring (`router/window.rs`) on purpose: their buckets (latency histograms, a
//! running maximum) cannot be subtracted, so that ring folds its live buckets on each (rare) read instead.

use std::time::Duration;

use tokio::time::Instant;

/// What one bucket holds: integer counters, so subtracting an expired bucket from the total is exact.
pub trait Additive: Copy + Default {
    fn add(&mut self, other: &Self);
    fn sub(&mut self, other: &Self);
}

/// Implements [`Additive`] for a struct of integer counters, field by field.
macro_rules! counter_bucket {
    ($ty:ty { $($field:tt),+ }) => {
        impl $crate::resilience::ring::Additive for $ty {
            fn add(&mut self, other: &Self) {
                $(self.$field += other.$field;)+
            }
            fn sub(&mut self, other: &Self) {
                $(self.$field -= other.$field;)+
            }
        }
    };
}
pub(crate) use counter_bucket;

#[derive(Debug, Clone)]
pub struct TimeRing<B> {
    origin: Instant,
    width_nanos: u64,
    buckets: Box<[B]>,
    /// Absolute index (buckets since `origin`) of the newest bucket.
    head: u64,
    /// Where the newest bucket ends: before it, `advance` is one comparison (no division on the hot path).
    head_end: Instant,
    total: B,
}

impl<B: Additive> TimeRing<B> {
    /// `len` buckets of `width` each, counting from `origin`. Zero `len` or `width` are raised to one bucket of one
    /// nanosecond (configs are validated before they get here; this only keeps the arithmetic total).
    pub fn new(origin: Instant, len: usize, width: Duration) -> Self {
        let width_nanos = u64::try_from(width.as_nanos()).unwrap_or(u64::MAX).max(1);
        TimeRing {
            origin,
            width_nanos,
            buckets: vec![B::default(); len.max(1)].into_boxed_slice(),
            head: 0,
            head_end: origin + Duration::from_nanos(width_nanos),
            total: B::default(),
        }
    }

    /// The window's span: bucket count × bucket width.
    #[cfg(test)]
    pub fn span(&self) -> Duration {
        Duration::from_nanos(self.width_nanos.saturating_mul(self.buckets.len() as u64))
    }

    fn index(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.origin);
        let nanos = since.as_secs().saturating_mul(1_000_000_000).saturating_add(u64::from(since.subsec_nanos()));
        nanos / self.width_nanos
    }

    /// Moves the head to `now`'s bucket, dropping what fell out of the window.
    fn advance(&mut self, now: Instant) {
        if now < self.head_end {
            return;
        }
        let idx = self.index(now);
        if idx <= self.head {
            return;
        }
        let len = self.buckets.len() as u64;
        let steps = idx - self.head;
        if steps >= len {
            self.buckets.fill(B::default());
            self.total = B::default();
        } else {
            for i in 1..=steps {
                let slot = ((self.head + i) % len) as usize;
                self.total.sub(&self.buckets[slot]);
                self.buckets[slot] = B::default();
            }
        }
        self.head = idx;
        let end = Duration::from_nanos(self.width_nanos.saturating_mul(idx.saturating_add(1)));
        // Past the representable future the ring simply stops rotating; no realistic clock gets there.
        self.head_end = self.origin.checked_add(end).unwrap_or(now);
    }

    pub fn record(&mut self, now: Instant, event: B) {
        self.advance(now);
        let slot = (self.head % self.buckets.len() as u64) as usize;
        self.buckets[slot].add(&event);
        self.total.add(&event);
    }

    /// The sum over the window ending at `now`.
    pub fn total(&mut self, now: Instant) -> B {
        self.advance(now);
        self.total
    }

    /// Empties the window (the breaker starts a fresh one on every close).
    pub fn clear(&mut self) {
        self.buckets.fill(B::default());
        self.total = B::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    struct N(u64);
    counter_bucket!(N { 0 });

    #[test]
    fn buckets_expire_one_by_one_and_all_at_once() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut r = TimeRing::new(t0, 4, ms(100));
        assert_eq!(r.span(), ms(400));
        r.record(t0, N(1)); // bucket 0
        r.record(t0 + ms(150), N(10)); // bucket 1
        r.record(t0 + ms(399), N(100)); // bucket 3
        assert_eq!(r.total(t0 + ms(399)), N(111));
        assert_eq!(r.total(t0 + ms(400)), N(110), "bucket 0 leaves when bucket 4 begins");
        assert_eq!(r.total(t0 + ms(500)), N(100));
        assert_eq!(r.total(t0 + ms(699)), N(100));
        assert_eq!(r.total(t0 + ms(700)), N(0), "bucket 3 leaves when bucket 7 begins");
        r.record(t0 + ms(900), N(5));
        assert_eq!(r.total(t0 + ms(10_000)), N(0), "a long gap clears the whole ring");
        // A time earlier than the head counts in the newest bucket instead of rewinding.
        r.record(t0 + ms(5), N(7));
        assert_eq!(r.total(t0 + ms(10_000)), N(7));
        r.clear();
        assert_eq!(r.total(t0 + ms(10_000)), N(0));
    }
}
