//! The breaker's sliding window: count-based (the last N calls) or time-based (ring buckets, see
//! [`crate::resilience::ring`]). Both keep running totals, so reading the rates is O(1).

use tokio::time::Instant;

use super::config::WindowConfig;
use crate::resilience::ring::{Additive, TimeRing, counter_bucket};

/// Calls, failures and slow calls in the window. A call can be both failed and slow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BreakerCounts {
    pub calls: u32,
    pub failures: u32,
    pub slow: u32,
}

impl BreakerCounts {
    fn one(failed: bool, slow: bool) -> Self {
        BreakerCounts { calls: 1, failures: u32::from(failed), slow: u32::from(slow) }
    }

    /// failures / calls, 0 with no calls.
    pub fn failure_rate(&self) -> f64 {
        ratio(self.failures, self.calls)
    }

    /// slow / calls, 0 with no calls.
    pub fn slow_rate(&self) -> f64 {
        ratio(self.slow, self.calls)
    }
}

fn ratio(n: u32, d: u32) -> f64 {
    if d == 0 { 0.0 } else { f64::from(n) / f64::from(d) }
}

counter_bucket!(BreakerCounts { calls, failures, slow });

#[derive(Debug, Clone)]
pub(super) enum Window {
    Count(CountWindow),
    Time(TimeRing<BreakerCounts>),
}

impl Window {
    pub(super) fn new(config: WindowConfig, origin: Instant) -> Self {
        match config {
            WindowConfig::Count { size } => Window::Count(CountWindow::new(size as usize)),
            WindowConfig::Time { buckets, bucket_width } => {
                Window::Time(TimeRing::new(origin, buckets as usize, bucket_width))
            }
        }
    }

    pub(super) fn record(&mut self, now: Instant, failed: bool, slow: bool) {
        match self {
            Window::Count(w) => w.record(failed, slow),
            Window::Time(r) => r.record(now, BreakerCounts::one(failed, slow)),
        }
    }

    pub(super) fn counts(&mut self, now: Instant) -> BreakerCounts {
        match self {
            Window::Count(w) => w.total,
            Window::Time(r) => r.total(now),
        }
    }

    pub(super) fn clear(&mut self) {
        match self {
            Window::Count(w) => *w = CountWindow::new(w.slots.len()),
            Window::Time(r) => r.clear(),
        }
    }
}

/// The last `size` outcomes as a ring of `BreakerCounts::one` entries (two flags each) plus their running total.
#[derive(Debug, Clone)]
pub(super) struct CountWindow {
    slots: Box<[BreakerCounts]>,
    next: usize,
    total: BreakerCounts,
}

impl CountWindow {
    fn new(size: usize) -> Self {
        CountWindow {
            slots: vec![BreakerCounts::default(); size.max(1)].into_boxed_slice(),
            next: 0,
            total: BreakerCounts::default(),
        }
    }

    fn record(&mut self, failed: bool, slow: bool) {
        let entry = BreakerCounts::one(failed, slow);
        self.total.sub(&self.slots[self.next]);
        self.slots[self.next] = entry;
        self.total.add(&entry);
        self.next = (self.next + 1) % self.slots.len();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn count_window_keeps_the_last_n() {
        let t = Instant::now();
        let mut w = Window::new(WindowConfig::Count { size: 3 }, t);
        w.record(t, true, false);
        w.record(t, true, true);
        w.record(t, false, false);
        assert_eq!(w.counts(t), BreakerCounts { calls: 3, failures: 2, slow: 1 });
        w.record(t, false, false); // evicts the first failure
        assert_eq!(w.counts(t), BreakerCounts { calls: 3, failures: 1, slow: 1 });
        w.clear();
        assert_eq!(w.counts(t), BreakerCounts::default());
    }

    #[test]
    fn time_window_buckets_expire() {
        let t = Instant::now();
        let s = Duration::from_secs;
        let mut w = Window::new(WindowConfig::Time { buckets: 2, bucket_width: s(1) }, t);
        w.record(t, true, false);
        w.record(t + s(1), false, true);
        assert_eq!(w.counts(t + s(1)), BreakerCounts { calls: 2, failures: 1, slow: 1 });
        assert_eq!(w.counts(t + s(2)), BreakerCounts { calls: 1, failures: 0, slow: 1 });
        assert_eq!(w.counts(t + s(3)), BreakerCounts::default());
        let c = BreakerCounts { calls: 4, failures: 2, slow: 1 };
        assert_eq!((c.failure_rate(), c.slow_rate(), BreakerCounts::default().failure_rate()), (0.5, 0.25, 0.0));
    }
}
