//! The core's `Clock` seam inside turmoil: monotonic time is tokio's (turmoil drives it, and skew never touches it),
//! and wall time is turmoil's pinned simulated epoch plus the host's elapsed time plus a per-host skew, so a scenario
//! can set one host's clock apart from the others (a 3-minute skew between a gateway and a server has been seen).
//!
//! The skew has three parts, as real clocks go wrong: a constant offset, a linear drift (a rate: 0.02 runs 2% fast,
//! so it gains 1.2 s a minute), and step jumps (an NTP correction, a VM resumed). Changes take the simulated instant
//! they happen at, because the step loop that applies faults runs outside every host.
//!
//! A live run (`mcpstorm live`) uses the same clocks on real time: [`RunTime`] says where "time since the start of
//! the run" comes from, turmoil's simulated clock or tokio's real one since the run began.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcpstorm_core::Clock;
use tokio::time::Instant;

use super::EPOCH_SECS;

/// Where a run's time since its start comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunTime {
    /// turmoil's simulated clock, read on the current host (zero outside every host).
    #[default]
    Simulated,
    /// Real time since `start` (a live run, on tokio's real clock). `lead`: how much earlier than asked each of the
    /// load's timers is set, the runtime's measured timer overshoot (see `live::timer_overshoot`).
    Live { start: Instant, lead: Duration },
}

impl RunTime {
    /// Time since the start of the run.
    pub fn elapsed(self) -> Option<Duration> {
        match self {
            RunTime::Simulated => turmoil::sim_elapsed(),
            RunTime::Live { start, .. } => Some(start.elapsed()),
        }
    }

    /// The instant to set a timer for so that it fires at `deadline` on average. tokio's timers tick in whole
    /// milliseconds and fire on the first tick after their deadline, then wait for the worker to wake: a live timer
    /// is late by about a millisecond each time, so a live run aims early by the overshoot it measured. Simulated
    /// timers fire on turmoil's ticks and are aimed where asked.
    pub fn aim(self, deadline: Instant) -> Instant {
        deadline.checked_sub(self.lead()).unwrap_or(deadline)
    }

    /// How much earlier than asked this run's timers are set: the live runtime's measured overshoot, zero simulated.
    pub fn lead(self) -> Duration {
        match self {
            RunTime::Simulated => Duration::ZERO,
            RunTime::Live { lead, .. } => lead,
        }
    }
}

/// Simulated time since the start of the run, as `turmoil::sim_elapsed()` reads it on this host, read from the host's
/// own tokio clock.
///
/// `sim_elapsed()` finds the current host in turmoil's world (a hashed lookup) and then reads tokio's clock anyway.
/// Within one run of a host's software the two differ by a constant: turmoil moves the host's elapsed time and its
/// runtime's paused clock forward by the same tick. A restarted host gets a new runtime, and its software a new
/// `HostTime`. So one reading of both when the software starts gives that constant.
#[derive(Debug, Clone, Copy)]
pub struct HostTime {
    anchor: Instant,
    at_anchor: Duration,
}

impl HostTime {
    /// Anchored now. Simulated: inside a turmoil host only (outside one, simulated time reads as zero at the anchor).
    pub fn new(time: RunTime) -> HostTime {
        HostTime { anchor: Instant::now(), at_anchor: time.elapsed().unwrap_or_default() }
    }

    /// Simulated time at `instant` of this host's clock (`Instant::now()` for now).
    pub fn at(&self, instant: Instant) -> Duration {
        let at = self.at_anchor + instant.saturating_duration_since(self.anchor);
        // Every simulation the tests run (debug builds) holds this to what turmoil says, at the instant it says it.
        #[cfg(debug_assertions)]
        if instant == Instant::now()
            && let Some(turmoil_says) = turmoil::sim_elapsed()
        {
            assert_eq!(at, turmoil_says, "a host's simulated time strayed from turmoil's");
        }
        at
    }

    /// Simulated time now.
    pub fn now(&self) -> Duration {
        self.at(Instant::now())
    }
}

#[derive(Debug, Clone, Default)]
pub struct SimClock {
    /// Shared so a fault can change it mid-run while hosts read it.
    skew: Arc<Mutex<Skew>>,
    /// Where the run's time comes from (turmoil's unless the run is live).
    time: RunTime,
}

/// Skew at simulated time `t`: `offset_ms + rate · (t − anchor)`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Skew {
    offset_ms: f64,
    rate: f64,
    anchor: Duration,
}

impl Skew {
    fn at(&self, t: Duration) -> f64 {
        self.offset_ms + self.rate * (t.saturating_sub(self.anchor).as_secs_f64() * 1000.0)
    }

    /// Folds the drift so far into the offset, so the rate can change at `t` without a step.
    fn fold(&mut self, t: Duration) {
        self.offset_ms = self.at(t);
        self.anchor = t;
    }
}

impl SimClock {
    pub fn new(offset_ms: i64) -> Self {
        let skew = Skew { offset_ms: offset_ms as f64, ..Skew::default() };
        SimClock { skew: Arc::new(Mutex::new(skew)), time: RunTime::Simulated }
    }

    /// A clock with no skew on the run time `time`.
    pub fn on(time: RunTime) -> Self {
        SimClock { time, ..SimClock::default() }
    }

    /// Where this clock's run time comes from.
    pub fn time(&self) -> RunTime {
        self.time
    }

    fn lock(&self) -> MutexGuard<'_, Skew> {
        // Plain numbers, consistent after any panic.
        self.skew.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the skew to `offset_ms` at simulated time `now` (the drift rate carries on from there).
    pub fn set_offset_ms(&self, now: Duration, offset_ms: i64) {
        let mut s = self.lock();
        s.fold(now);
        s.offset_ms = offset_ms as f64;
    }

    /// From `now` on, the clock gains `rate` seconds per second (negative: loses).
    pub fn set_drift(&self, now: Duration, rate: f64) {
        let mut s = self.lock();
        s.fold(now);
        s.rate = if rate.is_finite() { rate } else { 0.0 };
    }

    /// Steps the clock by `ms` at `now` (negative: back).
    pub fn jump_ms(&self, now: Duration, ms: i64) {
        let mut s = self.lock();
        s.fold(now);
        s.offset_ms += ms as f64;
    }

    /// Back to true time, no drift.
    pub fn reset(&self, now: Duration) {
        *self.lock() = Skew { anchor: now, ..Skew::default() };
    }

    /// What [`Clock::wall_ms`] reads at simulated time `now`, for a caller that has just read `now` itself (every
    /// read of the host's clock is a lookup of the current host and a lock of tokio's clock). turmoil's
    /// `since_epoch()` is the pinned epoch plus `sim_elapsed()`.
    pub fn wall_ms_at(&self, now: Duration) -> u64 {
        let since_epoch = EPOCH_SECS as i64 * 1000 + now.as_millis() as i64;
        since_epoch.saturating_add(self.skew_ms(now)).max(0) as u64
    }

    /// How far ahead of true time this clock is at `now`, in ms (negative: behind).
    pub fn skew_ms(&self, now: Duration) -> i64 {
        self.lock().at(now).round() as i64
    }
}

impl Clock for SimClock {
    /// Outside a simulation (no turmoil host is running) this reads 0 plus the skew: the simulator never calls it
    /// there.
    fn wall_ms(&self) -> u64 {
        match self.time.elapsed() {
            Some(now) => self.wall_ms_at(now),
            None => self.skew_ms(Duration::ZERO).max(0) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn offset_drift_and_jumps_compose_without_steps_when_the_rate_changes() {
        let c = SimClock::new(-180_000);
        assert_eq!(c.skew_ms(10 * S), -180_000);
        c.set_drift(10 * S, 0.02);
        assert_eq!(c.skew_ms(70 * S), -180_000 + 1_200, "2% of a minute");
        c.jump_ms(70 * S, 30_000);
        assert_eq!(c.skew_ms(70 * S), -148_800);
        c.set_drift(70 * S, 0.0);
        assert_eq!(c.skew_ms(1000 * S), -148_800, "a rate change folds what drifted so far");
        c.set_offset_ms(1000 * S, 5);
        assert_eq!(c.skew_ms(2000 * S), 5);
        c.set_drift(2000 * S, f64::NAN);
        c.reset(3000 * S);
        assert_eq!(c.skew_ms(4000 * S), 0);
        // Clones share the skew: the fault timeline steers the clock a host holds.
        let held = c.clone();
        c.jump_ms(4000 * S, -7);
        assert_eq!(held.skew_ms(4000 * S), -7);
    }
}
