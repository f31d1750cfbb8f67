//! A permit source whose size is a [`Limiter`]'s current limit: the per-server bulkhead.
//!
//! `acquire` waits at most the queue wait for `in_flight < limit`; the [`LimitPermit`] it returns frees its slot when
//! it is finished or dropped — on success, error, timeout, cancellation, panic — so the count always returns to zero.
//! Finishing reports the call's RTT (from the grant) and whether it was dropped to the limiter; dropping unfinished
//! reports nothing (a cancelled call says nothing about the server).
//!
//! A shrinking limit never revokes permits: calls in flight finish, and new ones wait until `in_flight` is back under
//! the limit. Waiters are woken one per freed slot (all of them when the limit grows), in FIFO order, so the
//! simulator replays the same order for the same seed.

use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::{Limiter, Sample};
use crate::resilience::shared_slots::SlotPermit;

/// No permit within the queue wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no permit within the {waited:?} queue wait (limit {limit}, all in flight)")]
pub struct PoolTimeout {
    pub waited: Duration,
    pub limit: usize,
}

/// How a permitted call ended, for the limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleOutcome {
    /// The server answered (even with an error about the request).
    Ok,
    /// Timed out or shed for overload: the limiter's loss signal.
    Dropped,
    /// No evidence (cancelled, our own argument error): release without a sample.
    Ignored,
}

#[derive(Debug)]
struct State {
    limiter: Box<dyn Limiter>,
    in_flight: usize,
    /// Breakers' probes in flight, apart from `in_flight` (see [`LimitedPool::try_acquire_probe`]).
    probes: usize,
}

#[derive(Debug)]
pub struct LimitedPool {
    state: Mutex<State>,
    freed: Notify,
}

impl LimitedPool {
    pub fn new(limiter: Box<dyn Limiter>) -> Arc<Self> {
        Arc::new(LimitedPool { state: Mutex::new(State { limiter, in_flight: 0, probes: 0 }), freed: Notify::new() })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Updates are single field writes; a poisoned lock still holds consistent counts.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn limit(&self) -> usize {
        self.lock().limiter.limit()
    }

    /// Permits held now, probes included.
    pub fn in_flight(&self) -> usize {
        let s = self.lock();
        s.in_flight + s.probes
    }

    /// A permit now, or `None` when every slot is taken.
    pub fn try_acquire(self: &Arc<Self>) -> Option<LimitPermit> {
        let mut s = self.lock();
        if s.in_flight >= s.limiter.limit() {
            return None;
        }
        s.in_flight += 1;
        let in_flight = s.in_flight;
        drop(s);
        Some(LimitPermit { pool: Some(self.clone()), started: Instant::now(), in_flight, slot: None, probe: false })
    }

    /// A permit for a breaker's probe, while fewer than `cap` probes are in flight. Probes are counted apart from
    /// the limit: a probe must not wait behind a limit that the failures it probes have shrunk, and the probes that
    /// hang in a fault must not hold the slots of the calls that follow its end.
    pub fn try_acquire_probe(self: &Arc<Self>, cap: usize) -> Option<LimitPermit> {
        let mut s = self.lock();
        if s.probes >= cap {
            return None;
        }
        s.probes += 1;
        let in_flight = s.in_flight + s.probes;
        drop(s);
        Some(LimitPermit { pool: Some(self.clone()), started: Instant::now(), in_flight, slot: None, probe: true })
    }

    /// Waits up to `queue_wait` for a permit. Cancel-safe: dropping the future takes nothing.
    pub async fn acquire(self: &Arc<Self>, queue_wait: Duration) -> Result<LimitPermit, PoolTimeout> {
        let deadline = Instant::now() + queue_wait;
        loop {
            // Register interest before checking, so a release between the check and the wait is not missed.
            let mut notified = pin!(self.freed.notified());
            notified.as_mut().enable();
            if let Some(p) = self.try_acquire() {
                return Ok(p);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(PoolTimeout { waited: queue_wait, limit: self.limit() });
            }
        }
    }

    fn release(&self, sample: Option<Sample>, probe: bool) {
        let mut s = self.lock();
        if probe {
            s.probes = s.probes.saturating_sub(1);
        } else {
            s.in_flight = s.in_flight.saturating_sub(1);
        }
        let before = s.limiter.limit();
        let after = sample.map_or(before, |sample| s.limiter.on_sample(sample));
        drop(s);
        if after > before {
            self.freed.notify_waiters();
        }
        self.freed.notify_one();
    }
}

/// One slot of a [`LimitedPool`]; see the module docs for what finishing and dropping do.
#[derive(Debug)]
pub struct LimitPermit {
    /// `None` once finished, so `Drop` does not release twice.
    pool: Option<Arc<LimitedPool>>,
    started: Instant,
    in_flight: usize,
    /// A slot of an in-flight limit several servers share, held with the pool's own permit
    /// (see [`SharedSlots`](crate::resilience::shared_slots::SharedSlots)); released with it.
    slot: Option<SlotPermit>,
    /// A breaker's probe, counted apart (see [`LimitedPool::try_acquire_probe`]).
    probe: bool,
}

impl LimitPermit {
    /// This permit, also holding `slot` until it is finished or dropped.
    pub(crate) fn with_slot(mut self, slot: SlotPermit) -> Self {
        self.slot = Some(slot);
        self
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    /// The call ended at `now`: free the slot and teach the limiter.
    pub fn finish(mut self, now: Instant, outcome: SampleOutcome) {
        if let Some(pool) = self.pool.take() {
            let rtt = now.saturating_duration_since(self.started);
            let sample = match outcome {
                SampleOutcome::Ok => Some(Sample { rtt, in_flight: self.in_flight, dropped: false }),
                SampleOutcome::Dropped => Some(Sample { rtt, in_flight: self.in_flight, dropped: true }),
                SampleOutcome::Ignored => None,
            };
            pool.release(sample, self.probe);
        }
    }

    /// Drops the permit without giving its slot back: the planted defect of
    /// [`BulkheadConfig::leak_permit_on_replica_failure`](crate::resilience::BulkheadConfig), nothing else.
    #[cfg(feature = "testing")]
    pub(crate) fn leak(mut self) {
        self.pool = None;
        if let Some(slot) = self.slot.take() {
            slot.forget();
        }
    }
}

impl Drop for LimitPermit {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.release(None, self.probe);
        }
    }
}
