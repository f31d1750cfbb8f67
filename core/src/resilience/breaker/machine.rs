//! The breaker's pure state machine: `now` and outcomes in, admission decisions and transitions out. No clock reads,
//! no locks, no tasks; randomness (the open period's jitter) from the injected [`SeededRng`].

use std::time::Duration;

use tokio::time::Instant;

use super::classify::HealthVerdict;
use super::config::{BreakerConfig, BreakerConfigError};
use super::window::{BreakerCounts, Window};
use crate::rt::SeededRng;

/// The breaker's state as observers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
    /// Manual: reject everything until reset.
    ForcedOpen,
    /// Manual: admit everything, record nothing.
    Disabled,
    /// Manual: admit everything, record the window, never trip.
    MetricsOnly,
}

/// The manual switch's positions; [`Breaker::reset`] returns to automatic operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManualSwitch {
    ForcedOpen,
    Disabled,
    MetricsOnly,
}

/// Why a transition happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum TransitionReason {
    /// Closed → open: the failure rate reached its threshold.
    FailureRate,
    /// Closed → open: the slow-call rate reached its threshold.
    SlowCallRate,
    /// → open for the period the server named.
    ServerRetryAfter,
    /// Half-open → open: a probe failed.
    ProbeFailed,
    /// Half-open → open: a probe succeeded, but slowly.
    ProbeSlow,
    /// Half-open → open: no decision within `half_open_max_wait` (a probe never reported).
    HalfOpenTimeout,
    /// Open → half-open: the open period elapsed.
    OpenElapsed,
    /// Open → half-open: a probe admitted while open (one per `probe_interval`) succeeded in time.
    ProbeRecovered,
    /// Half-open → closed: `half_open_probes` consecutive probe successes.
    ProbesSucceeded,
    /// Another gateway node reported this breaker open.
    Remote,
    /// The manual switch (or its reset).
    Manual,
}

/// One state change, for the embedder to forward to its observer.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerTransition {
    pub from: BreakerState,
    pub to: BreakerState,
    pub reason: TransitionReason,
    pub at: Instant,
    /// For a transition to open: how long it stays open.
    pub open_for: Option<Duration>,
    /// The window when it happened (after the outcome that caused it).
    pub counts: BreakerCounts,
}

/// Why a call was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::IntoStaticStr)]
pub enum RejectReason {
    #[strum(serialize = "breaker_open")]
    Open,
    #[strum(serialize = "breaker_forced_open")]
    ForcedOpen,
    /// Half-open, and every probe slot is taken.
    #[strum(serialize = "breaker_half_open")]
    HalfOpenFull,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejected {
    pub reason: RejectReason,
    /// When asking again could succeed: the rest of the open period. `None` when unknown (forced open) or when a
    /// probe slot may free at any moment (half-open).
    pub retry_after: Option<Duration>,
    /// How long a caller may wait for this breaker to let calls through again, at most (`None`: decline now). Set
    /// while open on a *latency* fault that probes are watching: such a fault ends with the calls queued on it
    /// answered, and a caller whose deadline outlives it is served when the probes see the end (see
    /// [`BreakerConfig::hold`]). A fault that fails fast is declined at once: waiting would only make it slow. Set in
    /// half-open too, whose probes decide within a round trip.
    pub hold: Option<Duration>,
    /// The breaker refuses for slowness alone: it opened because calls were slow while the server still answered them
    /// (its failure rate under the threshold), and no probe has failed since. When no candidate took a call, the
    /// gateway passes such a breaker if the answer fits the call's deadline (`gateway/protected.rs`): a slow answer is
    /// better than a degraded one when there is no faster replica to send it to.
    pub slow_only: bool,
}

/// The right to report one outcome. Outcomes count only toward the state period (epoch) they were admitted in, so a
/// late answer from before a transition cannot skew the next period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    epoch: u64,
    probe: Probe,
}

/// Whether an admitted call is a probe, and of which state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    No,
    /// Admitted while open, one per `probe_interval`: its success in time ends the open period at once.
    Open,
    /// One of half-open's `half_open_probes` slots.
    HalfOpen,
}

impl Ticket {
    /// Whether this call is a probe (of the open or the half-open state).
    pub fn is_probe(&self) -> bool {
        self.probe != Probe::No
    }

    /// Whether this call is an open-state probe.
    pub fn is_open_probe(&self) -> bool {
        self.probe == Probe::Open
    }
}

/// An admission decision plus the transition it caused, if any (an elapsed open period is noticed on admission).
#[derive(Debug)]
pub struct Admission<T> {
    pub decision: Result<T, Rejected>,
    pub transition: Option<BreakerTransition>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Closed,
    /// `probed`: when the last open-state probe was admitted (`None`: none yet this period, or the last one was
    /// released unsent). Probes in flight are not capped here: into a server that hangs, a cap would be full of
    /// hung probes when the server recovers, and the recovery would be seen only when they time out. The
    /// bulkhead's hard cap bounds them. `slow`: the fault is one of latency (the calls that opened it, then the last
    /// failed probe, were slow), so callers may hold for its end. `slow_only`: see [`Rejected::slow_only`].
    Open {
        until: Instant,
        probed: Option<Instant>,
        slow: bool,
        slow_only: bool,
    },
    /// `slow_only`: the open period before it was one of slowness alone.
    HalfOpen {
        since: Instant,
        in_flight: u32,
        successes: u32,
        slow_only: bool,
    },
    ForcedOpen,
    Disabled,
    MetricsOnly,
}

/// One circuit breaker, for one (server, tool). See the module docs of `resilience/breaker/` for the state diagram.
#[derive(Debug)]
pub struct Breaker {
    config: BreakerConfig,
    phase: Phase,
    epoch: u64,
    window: Window,
    /// Opens since the last successful close: the exponent of the open period's growth.
    reopens: u32,
    rng: SeededRng,
}

impl Breaker {
    /// A closed breaker whose time window counts from `origin`.
    pub fn new(config: BreakerConfig, origin: Instant, rng: SeededRng) -> Result<Self, BreakerConfigError> {
        config.validate()?;
        let window = Window::new(config.window, origin);
        Ok(Breaker { config, phase: Phase::Closed, epoch: 0, window, reopens: 0, rng })
    }

    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// The state as of the last call; an elapsed open period shows only once time is passed in.
    pub fn state(&self) -> BreakerState {
        match self.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { .. } => BreakerState::Open,
            Phase::HalfOpen { .. } => BreakerState::HalfOpen,
            Phase::ForcedOpen => BreakerState::ForcedOpen,
            Phase::Disabled => BreakerState::Disabled,
            Phase::MetricsOnly => BreakerState::MetricsOnly,
        }
    }

    /// The current state period: every transition starts a new one.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Probes admitted in half-open that have not reported (0 in any other state).
    pub fn probes_in_flight(&self) -> u32 {
        match self.phase {
            Phase::HalfOpen { in_flight, .. } => in_flight,
            _ => 0,
        }
    }

    /// The window's counts at `now`.
    pub fn counts(&mut self, now: Instant) -> BreakerCounts {
        self.window.counts(now)
    }

    /// Lets time pass: open → half-open when the open period has elapsed, half-open → open when it has waited too
    /// long for its probes.
    pub fn advance(&mut self, now: Instant) -> Option<BreakerTransition> {
        match self.phase {
            Phase::Open { until, slow_only, .. } if now >= until => {
                let phase = Phase::HalfOpen { since: now, in_flight: 0, successes: 0, slow_only };
                Some(self.enter(now, phase, TransitionReason::OpenElapsed, None))
            }
            Phase::HalfOpen { since, .. } if now.saturating_duration_since(since) >= self.config.half_open_max_wait => {
                Some(self.open(now, TransitionReason::HalfOpenTimeout, None))
            }
            _ => None,
        }
    }

    /// Admits a call, as an open-state probe when open and the probe interval has passed.
    pub fn try_acquire(&mut self, now: Instant) -> Admission<Ticket> {
        self.acquire(now, true)
    }

    /// Admits a call, but never as an open-state probe: for a caller that still has healthy replicas to try, so that
    /// probes go only to calls nothing else could serve (one sick replica among healthy ones costs nothing).
    pub fn try_acquire_no_probe(&mut self, now: Instant) -> Admission<Ticket> {
        self.acquire(now, false)
    }

    fn acquire(&mut self, now: Instant, may_probe: bool) -> Admission<Ticket> {
        let transition = self.advance(now);
        let ticket = |probe| Ticket { epoch: self.epoch, probe };
        let decision = match &mut self.phase {
            Phase::Closed | Phase::Disabled | Phase::MetricsOnly => Ok(ticket(Probe::No)),
            Phase::Open { until, probed, slow, slow_only } => match self.config.probe_interval {
                // Continuous low-rate probing: one real call per interval goes through, so the end of a fault is
                // seen within an interval plus a round trip instead of at the end of the open period.
                Some(every) if may_probe && probed.is_none_or(|at| now.saturating_duration_since(at) >= every) => {
                    *probed = Some(now);
                    Ok(ticket(Probe::Open))
                }
                _ => {
                    let retry_after = until.saturating_duration_since(now);
                    let retry_after = self.config.probe_interval.map_or(retry_after, |every| retry_after.min(every));
                    let hold = self.config.hold.filter(|_| *slow && self.config.probe_interval.is_some());
                    let slow_only = *slow_only;
                    Err(Rejected { reason: RejectReason::Open, retry_after: Some(retry_after), hold, slow_only })
                }
            },
            Phase::ForcedOpen => {
                Err(Rejected { reason: RejectReason::ForcedOpen, retry_after: None, hold: None, slow_only: false })
            }
            Phase::HalfOpen { in_flight, slow_only, .. } => {
                if *in_flight < self.config.half_open_probes {
                    *in_flight += 1;
                    Ok(ticket(Probe::HalfOpen))
                } else {
                    // Its probes decide within a round trip: a caller may hold for the close (or the re-open, which
                    // declines it then unless the fault is one of latency).
                    let (hold, slow_only) = (self.config.hold, *slow_only);
                    Err(Rejected { reason: RejectReason::HalfOpenFull, retry_after: None, hold, slow_only })
                }
            }
        };
        Admission { decision, transition }
    }

    /// Reports how an admitted call ended, `elapsed` after its admission.
    pub fn on_outcome(
        &mut self,
        now: Instant,
        ticket: Ticket,
        verdict: HealthVerdict,
        elapsed: Duration,
    ) -> Option<BreakerTransition> {
        if let Some(t) = self.advance(now) {
            // Time moved the breaker to a new period; the ticket belongs to the old one.
            return Some(t);
        }
        if ticket.epoch != self.epoch {
            return None;
        }
        let slow = elapsed >= self.config.slow_call;
        match (&mut self.phase, verdict) {
            (Phase::HalfOpen { in_flight, .. }, _) if ticket.probe == Probe::HalfOpen => {
                *in_flight = in_flight.saturating_sub(1);
            }
            _ => {}
        }
        // A failed open-state probe says what kind of fault is still on: slow (hold callers) or fast (do not), and
        // that it is no longer one of slowness alone.
        if let (Phase::Open { slow: kind, slow_only, .. }, HealthVerdict::Failure | HealthVerdict::RetryAfter(_)) =
            (&mut self.phase, verdict)
            && ticket.probe == Probe::Open
        {
            *kind = slow;
            *slow_only = false;
            return None;
        }
        match (self.phase, verdict) {
            // An open-state probe answered in time: the server is back. Half-open takes it from here, this probe
            // counting as its first success.
            (Phase::Open { slow_only, .. }, HealthVerdict::Success) if ticket.probe == Probe::Open && !slow => {
                let phase = Phase::HalfOpen { since: now, in_flight: 0, successes: 1, slow_only };
                if self.config.half_open_probes <= 1 {
                    self.reopens = 0;
                    self.window.clear();
                    return Some(self.enter(now, Phase::Closed, TransitionReason::ProbesSucceeded, None));
                }
                Some(self.enter(now, phase, TransitionReason::ProbeRecovered, None))
            }
            (_, HealthVerdict::Ignore) | (Phase::Disabled | Phase::Open { .. } | Phase::ForcedOpen, _) => None,
            (Phase::MetricsOnly, v) => {
                self.window.record(now, v != HealthVerdict::Success, slow);
                None
            }
            (Phase::Closed, v) => {
                self.window.record(now, v != HealthVerdict::Success, slow);
                if let HealthVerdict::RetryAfter(d) = v {
                    return Some(self.open(now, TransitionReason::ServerRetryAfter, Some(d)));
                }
                self.trip_reason(now).map(|reason| self.open(now, reason, None))
            }
            (Phase::HalfOpen { .. }, HealthVerdict::RetryAfter(d)) => {
                Some(self.open(now, TransitionReason::ServerRetryAfter, Some(d)))
            }
            (Phase::HalfOpen { .. }, HealthVerdict::Failure) => {
                Some(self.open(now, TransitionReason::ProbeFailed, None))
            }
            (Phase::HalfOpen { .. }, HealthVerdict::Success) if slow => {
                Some(self.open(now, TransitionReason::ProbeSlow, None))
            }
            (Phase::HalfOpen { since, in_flight, successes, slow_only }, HealthVerdict::Success) => {
                if successes + 1 >= self.config.half_open_probes {
                    self.reopens = 0;
                    self.window.clear();
                    Some(self.enter(now, Phase::Closed, TransitionReason::ProbesSucceeded, None))
                } else {
                    self.phase = Phase::HalfOpen { since, in_flight, successes: successes + 1, slow_only };
                    None
                }
            }
        }
    }

    /// Frees an admitted call's slot without an outcome (cancelled, dropped): counted as ignored. An open-state
    /// probe released unsent (a later layer refused the call) leaves its turn to the next call.
    pub fn release(&mut self, ticket: Ticket) {
        if ticket.epoch != self.epoch {
            return;
        }
        match (&mut self.phase, ticket.probe) {
            (Phase::HalfOpen { in_flight, .. }, Probe::HalfOpen) => *in_flight = in_flight.saturating_sub(1),
            (Phase::Open { probed, .. }, Probe::Open) => *probed = None,
            _ => {}
        }
    }

    /// Sets the manual switch. `None` if already in that position.
    pub fn set_manual(&mut self, now: Instant, manual: ManualSwitch) -> Option<BreakerTransition> {
        let phase = match manual {
            ManualSwitch::ForcedOpen => Phase::ForcedOpen,
            ManualSwitch::Disabled => Phase::Disabled,
            ManualSwitch::MetricsOnly => Phase::MetricsOnly,
        };
        if self.phase == phase {
            return None;
        }
        self.window.clear();
        Some(self.enter(now, phase, TransitionReason::Manual, None))
    }

    /// Back to automatic operation, closed, with an empty window and no open-period growth.
    pub fn reset(&mut self, now: Instant) -> Option<BreakerTransition> {
        if self.phase == Phase::Closed {
            return None;
        }
        self.reopens = 0;
        self.window.clear();
        Some(self.enter(now, Phase::Closed, TransitionReason::Manual, None))
    }

    /// Another gateway node opened this breaker for `open_for` (for slowness alone: `slow_only`, see
    /// [`Rejected::slow_only`]): follow it unless already open or switched manually.
    pub fn follow_remote_open(
        &mut self,
        now: Instant,
        open_for: Duration,
        slow_only: bool,
    ) -> Option<BreakerTransition> {
        match self.phase {
            Phase::Closed | Phase::HalfOpen { .. } => {
                let transition = self.open(now, TransitionReason::Remote, Some(open_for));
                if let Phase::Open { slow_only: followed, .. } = &mut self.phase {
                    *followed = slow_only;
                }
                Some(transition)
            }
            _ => None,
        }
    }

    /// Another node opened this breaker and nothing here corroborates it (breaker sync, `crate::sync`): closed →
    /// half-open, so that a few probes decide with this node's own evidence (success closes it again, failure opens
    /// it) instead of a remote node's verdict ejecting a replica this node still reaches.
    pub fn suspect_remote(&mut self, now: Instant) -> Option<BreakerTransition> {
        match self.phase {
            Phase::Closed => {
                let phase = Phase::HalfOpen { since: now, in_flight: 0, successes: 0, slow_only: false };
                Some(self.enter(now, phase, TransitionReason::Remote, None))
            }
            _ => None,
        }
    }

    /// Which threshold the window has reached, if any (both inclusive; failure rate first).
    fn trip_reason(&mut self, now: Instant) -> Option<TransitionReason> {
        let counts = self.window.counts(now);
        let minimum = match self.config.window {
            super::WindowConfig::Count { size } => self.config.minimum_calls.min(size),
            super::WindowConfig::Time { .. } => self.config.minimum_calls,
        };
        if counts.calls < minimum {
            None
        } else if counts.failure_rate() >= self.config.failure_rate {
            Some(TransitionReason::FailureRate)
        } else if counts.slow_rate() >= self.config.slow_call_rate {
            Some(TransitionReason::SlowCallRate)
        } else {
            None
        }
    }

    /// Opens for `dictated` (a server's retry-after or a peer's period, capped; no growth) or for the next grown
    /// and jittered period.
    fn open(&mut self, now: Instant, reason: TransitionReason, dictated: Option<Duration>) -> BreakerTransition {
        let period = match dictated {
            Some(d) => d.min(self.config.retry_after_cap),
            None => {
                self.reopens = self.reopens.saturating_add(1);
                self.rng.jitter(self.open_period(self.reopens), self.config.open_jitter)
            }
        };
        let counts = self.window.counts(now);
        let slow = reason == TransitionReason::ProbeSlow
            || counts.calls > 0 && counts.slow_rate() >= self.config.slow_call_rate;
        // Slow answers, none of them failures: the trip's own reason, or a half-open probe answered late.
        let slow_only = matches!(reason, TransitionReason::SlowCallRate | TransitionReason::ProbeSlow);
        let phase = Phase::Open { until: now + period, probed: None, slow, slow_only };
        self.enter(now, phase, reason, Some(period))
    }

    /// `open × open_growth^(n − 1)`, capped at `open_max`, before jitter.
    pub fn open_period(&self, n: u32) -> Duration {
        let c = &self.config;
        let exp = i32::try_from(n.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = c.open.as_secs_f64() * c.open_growth.powi(exp);
        if secs >= c.open_max.as_secs_f64() { c.open_max } else { Duration::from_secs_f64(secs) }
    }

    fn enter(
        &mut self,
        now: Instant,
        phase: Phase,
        reason: TransitionReason,
        open_for: Option<Duration>,
    ) -> BreakerTransition {
        let from = self.state();
        self.phase = phase;
        self.epoch += 1;
        BreakerTransition { from, to: self.state(), reason, at: now, open_for, counts: self.window.counts(now) }
    }
}
