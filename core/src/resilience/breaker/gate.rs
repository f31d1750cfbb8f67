//! The breaker on the call path: a shared [`Gate`] around one [`Breaker`], handing out [`Permit`]s.
//!
//! The permit is the only way to report an outcome, and it reports at most once: [`Permit::record`] consumes it, and
//! dropping it unrecorded (the call's future was cancelled, a task panicked) releases its half-open probe slot as
//! ignored. So a probe can never be leaked by an early return; `half_open_max_wait` is only the backstop for a permit
//! kept alive and forgotten.
//!
//! The lock is a plain mutex held for a few field updates, never across an await: cheaper than any lock-free scheme
//! that would have to keep the window's totals consistent, as the bench (`core/benches/breaker.rs`) shows.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::sync::futures::Notified;
use tokio::time::Instant;

use super::classify::HealthVerdict;
use super::machine::{Admission, Breaker, BreakerState, BreakerTransition, ManualSwitch, Ticket};
use super::window::BreakerCounts;

#[derive(Debug)]
pub struct Gate {
    breaker: Mutex<Breaker>,
    /// Woken on every transition: for callers holding on an open breaker (see `Rejected::hold`).
    changed: Notify,
}

impl Gate {
    pub fn new(breaker: Breaker) -> Arc<Self> {
        Arc::new(Gate { breaker: Mutex::new(breaker), changed: Notify::new() })
    }

    /// Wakes the callers holding for a transition, if there was one.
    fn note(&self, transition: Option<BreakerTransition>) -> Option<BreakerTransition> {
        if transition.is_some() {
            self.changed.notify_waiters();
        }
        transition
    }

    /// Resolves at the next transition. Enable it (or poll it once) before checking [`Gate::epoch`], so that a
    /// transition between the check and the wait is not missed.
    pub fn changed(&self) -> Notified<'_> {
        self.changed.notified()
    }

    /// The current state period: it changes with every transition.
    pub fn epoch(&self) -> u64 {
        self.lock().epoch()
    }

    fn lock(&self) -> MutexGuard<'_, Breaker> {
        // Every update leaves the breaker consistent before anything can panic, so a poisoned lock is still usable.
        self.breaker.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a call or says why not. The permit records the outcome; see the module docs for drops.
    pub fn try_acquire(self: &Arc<Self>, now: Instant) -> Admission<Permit> {
        self.acquire(now, true)
    }

    /// [`Gate::try_acquire`], but never as an open-state probe (see [`Breaker::try_acquire_no_probe`]).
    pub fn try_acquire_no_probe(self: &Arc<Self>, now: Instant) -> Admission<Permit> {
        self.acquire(now, false)
    }

    fn acquire(self: &Arc<Self>, now: Instant, may_probe: bool) -> Admission<Permit> {
        let mut breaker = self.lock();
        let admission = if may_probe { breaker.try_acquire(now) } else { breaker.try_acquire_no_probe(now) };
        drop(breaker);
        let Admission { decision, transition } = admission;
        let transition = self.note(transition);
        let decision = decision.map(|ticket| Permit { gate: Some(self.clone()), ticket, admitted_at: now });
        Admission { decision, transition }
    }

    pub fn state(&self) -> BreakerState {
        self.lock().state()
    }

    pub fn counts(&self, now: Instant) -> BreakerCounts {
        self.lock().counts(now)
    }

    pub fn probes_in_flight(&self) -> u32 {
        self.lock().probes_in_flight()
    }

    /// Lets time pass without a call (for a periodic observer that wants open → half-open on time).
    pub fn advance(&self, now: Instant) -> Option<BreakerTransition> {
        let t = self.lock().advance(now);
        self.note(t)
    }

    pub fn set_manual(&self, now: Instant, manual: ManualSwitch) -> Option<BreakerTransition> {
        let t = self.lock().set_manual(now, manual);
        self.note(t)
    }

    pub fn reset(&self, now: Instant) -> Option<BreakerTransition> {
        let t = self.lock().reset(now);
        self.note(t)
    }

    pub fn follow_remote_open(&self, now: Instant, open_for: Duration, slow_only: bool) -> Option<BreakerTransition> {
        let t = self.lock().follow_remote_open(now, open_for, slow_only);
        self.note(t)
    }

    /// The failure rate that trips this breaker.
    pub fn trip_rate(&self) -> f64 {
        self.lock().config().failure_rate
    }

    pub fn suspect_remote(&self, now: Instant) -> Option<BreakerTransition> {
        let t = self.lock().suspect_remote(now);
        self.note(t)
    }
}

/// One admitted call. Record its outcome with [`Permit::record`]; dropping it unrecorded counts as ignored.
#[derive(Debug)]
pub struct Permit {
    /// `None` once recorded, so `Drop` knows there is nothing left to release.
    gate: Option<Arc<Gate>>,
    ticket: Ticket,
    admitted_at: Instant,
}

impl Permit {
    pub fn admitted_at(&self) -> Instant {
        self.admitted_at
    }

    pub fn is_probe(&self) -> bool {
        self.ticket.is_probe()
    }

    /// Whether this call is an open-state probe: one call per probe interval into a replica whose breaker is open.
    pub fn is_open_probe(&self) -> bool {
        self.ticket.is_open_probe()
    }

    /// Reports the outcome at `now`; the call's duration is `now − admitted_at`.
    pub fn record(mut self, now: Instant, verdict: HealthVerdict) -> Option<BreakerTransition> {
        let gate = self.gate.take()?;
        let elapsed = now.saturating_duration_since(self.admitted_at);
        let t = gate.lock().on_outcome(now, self.ticket, verdict, elapsed);
        gate.note(t)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            gate.lock().release(self.ticket);
        }
    }
}
