//! Active health checks: the schedule, the 3-strikes rule, and the task that runs them on tokio time.
//!
//! Check the capability, not the process: a live process can still fail every call. Each replica runs its server's
//! [`HealthCheck`]s (a `ping`, or a declared health tool with minimal arguments) every `check_interval`;
//! `failure_threshold` consecutive failures take the replica's weight to zero — for the whole server, or only for the
//! tool the check guards — and one success restores it. The router only schedules and interprets: the embedder's
//! [`HealthChecker`] makes the call. [`run_health_checks`] drives both checks and the statistics refresh as one
//! background task, so neither ever runs on the decision path.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::JoinSet;

use super::registry::HealthCheck;
use super::{ReplicaId, Router};
use crate::cancel::CancelToken;
use crate::observe::{Event, Observer};
use crate::rt::Clock;

/// One check of one replica, its consecutive failures and when it is next due.
#[derive(Debug, Clone)]
pub struct CheckState {
    pub spec: HealthCheck,
    failures: u32,
    next_due: Duration,
}

impl CheckState {
    /// Due at once: a joining replica is checked before it has served long.
    pub fn new(spec: HealthCheck, now: Duration) -> Self {
        CheckState { spec, failures: 0, next_due: now }
    }

    /// A success clears the strikes; a failure adds one.
    pub fn record(&mut self, ok: bool) {
        self.failures = if ok { 0 } else { self.failures.saturating_add(1) };
    }

    pub fn failures(&self) -> u32 {
        self.failures
    }

    pub fn is_down(&self, threshold: u32) -> bool {
        self.failures >= threshold.max(1)
    }

    /// Whether a failure of this check excludes the replica from `tool`'s routes.
    pub fn guards(&self, tool: &str) -> bool {
        self.spec.capability.as_deref().is_none_or(|c| c == tool)
    }

    /// If due at `now`, reschedules it one interval later and returns true.
    pub fn take_if_due(&mut self, now: Duration, interval: Duration) -> bool {
        if self.next_due > now {
            return false;
        }
        self.next_due = now + interval;
        true
    }
}

/// Which check a probe result belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProbeId {
    pub replica: ReplicaId,
    pub check: usize,
}

/// A health check to make now.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub id: ProbeId,
    pub server: String,
    /// The endpoint to call.
    pub replica: String,
    pub check: HealthCheck,
}

pub type CheckFuture = Pin<Box<dyn Future<Output = bool> + Send + 'static>>;

/// Makes health-check calls: `ping`, or the probe's tool with its arguments, against the probe's replica. `true`
/// when the call succeeded (for a tool: a result that is not `isError`). The router applies the timeout.
pub trait HealthChecker: Send + Sync + std::fmt::Debug + 'static {
    fn check(&self, probe: &Probe) -> CheckFuture;
}

/// The background task of one router: every `tick` it refreshes the statistics snapshot and starts the checks that
/// are due, and in between it starts each ejected replica's readmission probe when due; each check runs
/// concurrently, bounded by the configured check timeout (a timeout is a failure), and its result is recorded when
/// it lands (a readmission goes to `observer`). Returns when `cancel` fires.
///
/// The lock is held only to collect probes, record a result or refresh, never across an await.
pub async fn run_health_checks(
    router: Arc<Mutex<Router>>,
    checker: Arc<dyn HealthChecker>,
    clock: Arc<dyn Clock>,
    tick: Duration,
    observer: Arc<dyn Observer>,
    cancel: CancelToken,
) {
    let lock = || router.lock().unwrap_or_else(PoisonError::into_inner);
    let timeout = lock().config().check_timeout;
    let mut running: JoinSet<(Probe, bool)> = JoinSet::new();
    let mut probes = Vec::new();
    let mut next_tick = clock.now();
    loop {
        // A readmission probe falls due between ticks: waiting for the tick would keep a replica that is back out
        // of rotation for up to a tick longer.
        let next = lock().next_readmission_probe().map_or(next_tick, |p| p.min(next_tick));
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return,
            Some(done) = running.join_next(), if !running.is_empty() => {
                // A check task that panicked is a failed check we cannot attribute; the next round retries.
                if let Ok((probe, ok)) = done
                    && lock().record_check(probe.id, ok, clock.now())
                {
                    let (server, replica) = (probe.server.as_str(), probe.replica.as_str());
                    observer.event(&Event::Ejection { server, replica, ejected: false });
                }
            }
            _ = tokio::time::sleep_until(next) => {
                let now = clock.now();
                {
                    let mut r = lock();
                    r.due_checks(now, &mut probes);
                    if now >= next_tick {
                        r.refresh(now);
                        next_tick = now + tick.max(Duration::from_millis(1));
                    }
                }
                for probe in probes.drain(..) {
                    let call = checker.check(&probe);
                    running.spawn(async move {
                        let ok = tokio::time::timeout(timeout, call).await.unwrap_or(false);
                        (probe, ok)
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_strikes_and_one_success_restores() {
        let mut c = CheckState::new(HealthCheck::ping(), Duration::ZERO);
        c.record(false);
        c.record(false);
        assert!(!c.is_down(3), "two failures are not enough");
        c.record(false);
        assert!(c.is_down(3));
        c.record(false);
        assert_eq!(c.failures(), 4);
        c.record(true);
        assert!(!c.is_down(3), "one success restores the weight");
        c.record(false);
        c.record(false);
        assert!(!c.is_down(3), "strikes must be consecutive");
    }

    #[test]
    fn checks_fall_due_every_interval() {
        let s = Duration::from_secs;
        let mut c = CheckState::new(HealthCheck::ping(), s(0));
        assert!(c.take_if_due(s(0), s(15)), "due at once");
        assert!(!c.take_if_due(s(14), s(15)));
        assert!(c.take_if_due(s(15), s(15)));
        assert!(!c.take_if_due(s(29), s(15)));
    }

    #[test]
    fn a_capability_check_guards_only_its_tool() {
        let c = CheckState::new(HealthCheck::tool("review", "health", serde_json::json!({})), Duration::ZERO);
        assert!(c.guards("review") && !c.guards("lint"));
        assert!(CheckState::new(HealthCheck::ping(), Duration::ZERO).guards("lint"));
    }
}
