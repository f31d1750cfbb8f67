//! The protected call path: [`Gateway::call`](super::Gateway::call) wraps single attempts in the resilience layers
//! (seed 001, issue 6), each optional so a "naive" gateway is the same code with the layers switched off.
//!
//! ```text
//! call ─▶ route (avoiding tried and breaker-rejected replicas) ─▶ SRE throttle(server) ─▶ breaker(server, tool)
//!      ─▶ attempt ─▶ permit.record(classify(outcome)) ─▶ success: done
//!                                                      └▶ failure: retry plan (idempotent only, attempts, one
//!                                                          deadline, budget(server)) ─▶ backoff ─▶ route again
//! ```
//!
//! When the gateway itself declines — every candidate's breaker open, the retry budget spent, the throttle shedding,
//! no candidate left — the agent gets a degraded semantic result (`isError: true`, "do not retry", the fallback
//! tool, `retryAfterMs`) instead of an error it would retry.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::CallError;
use crate::mcp::CallToolResult;
use crate::observe::{Event, Observer};
use crate::resilience::breaker::{Breaker, BreakerConfig, Gate, Transition};
use crate::resilience::budget::{BudgetConfig, RetryBudget};
use crate::resilience::bulkhead::{BulkheadConfig, Bulkheads};
use crate::resilience::degraded::{DegradedReason, Fallbacks};
use crate::resilience::retry::RetryPolicy;
use crate::resilience::throttle::{AdaptiveThrottle, ThrottleConfig};
use crate::rt::SeededRng;

/// Which layers are on. `Default` is all off — the naive gateway: one attempt, whatever happens.
///
/// | field      | off (`None`)                       | on                                                      |
/// |------------|------------------------------------|---------------------------------------------------------|
/// | `breaker`  | every call goes through            | a breaker per (server, tool); open → another replica or degraded |
/// | `retry`    | one attempt; the agent decides     | idempotent tools retried on another replica with backoff, one deadline |
/// | `budget`   | retries limited by `retry` alone   | retries per server ≤ ratio × requests + a floor; spent → degraded |
/// | `throttle` | no shedding                        | SRE adaptive throttling per server (K = 2)               |
/// | `bulkhead` | no per-server limit                | a permit pool per server (declared `max_concurrent_requests` or configured), optionally adaptive; full → degraded |
#[derive(Debug, Clone, Default)]
pub struct ResilienceConfig {
    pub breaker: Option<BreakerConfig>,
    pub retry: Option<RetryPolicy>,
    pub budget: Option<BudgetConfig>,
    pub throttle: Option<ThrottleConfig>,
    pub bulkhead: Option<BulkheadConfig>,
    /// Fallback tools named in degraded results.
    pub fallbacks: Fallbacks,
}

impl ResilienceConfig {
    /// Every layer on, with its defaults.
    pub fn protective() -> Self {
        ResilienceConfig {
            breaker: Some(BreakerConfig::default()),
            retry: Some(RetryPolicy::default()),
            budget: Some(BudgetConfig::default()),
            throttle: Some(ThrottleConfig::default()),
            bulkhead: Some(BulkheadConfig::default()),
            fallbacks: Fallbacks::default(),
        }
    }
}

/// The per-server and per-(server, tool) state of the layers, made on first use.
#[derive(Debug)]
pub(super) struct Layers {
    config: ResilienceConfig,
    origin: Instant,
    rng: SeededRng,
    /// `(server, tool)` → its breaker. BTreeMap: deterministic order for reports.
    breakers: Mutex<BTreeMap<(String, String), Arc<Gate>>>,
    budgets: Mutex<BTreeMap<String, RetryBudget>>,
    throttles: Mutex<BTreeMap<String, AdaptiveThrottle>>,
    bulkheads: Option<Bulkheads>,
    /// Streams forked for each new breaker / throttle, in creation order (deterministic given the call order).
    forks: std::sync::atomic::AtomicU64,
}

impl Layers {
    pub fn new(config: ResilienceConfig, origin: Instant, rng: SeededRng) -> Self {
        Layers {
            bulkheads: config.bulkhead.clone().map(Bulkheads::new),
            config,
            origin,
            rng,
            breakers: Mutex::default(),
            budgets: Mutex::default(),
            throttles: Mutex::default(),
            forks: std::sync::atomic::AtomicU64::new(1),
        }
    }

    pub fn config(&self) -> &ResilienceConfig {
        &self.config
    }

    pub fn rng(&self) -> &SeededRng {
        &self.rng
    }

    fn fork(&self) -> SeededRng {
        self.rng.fork(self.forks.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// The breaker of `(server, tool)`, if breakers are on. A config the breaker rejects was validated when the
    /// gateway was built, so `None` here only means "off".
    pub fn breaker(&self, server: &str, tool: &str) -> Option<Arc<Gate>> {
        let config = self.config.breaker.as_ref()?;
        let mut breakers = self.breakers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(g) = breakers.get(&(server.to_owned(), tool.to_owned())) {
            return Some(g.clone());
        }
        let gate = Gate::new(Breaker::new(config.clone(), self.origin, self.fork()).ok()?);
        breakers.insert((server.to_owned(), tool.to_owned()), gate.clone());
        Some(gate)
    }

    /// Every breaker made so far, in (server, tool) order.
    pub fn breakers(&self) -> Vec<((String, String), Arc<Gate>)> {
        let breakers = self.breakers.lock().unwrap_or_else(PoisonError::into_inner);
        breakers.iter().map(|(k, g)| (k.clone(), g.clone())).collect()
    }

    /// Runs `f` on `server`'s retry budget; `None` when budgets are off.
    pub fn with_budget<R>(&self, server: &str, now: Instant, f: impl FnOnce(&mut RetryBudget) -> R) -> Option<R> {
        let config = self.config.budget.as_ref()?;
        let mut budgets = self.budgets.lock().unwrap_or_else(PoisonError::into_inner);
        if !budgets.contains_key(server) {
            let budget = RetryBudget::new(config.clone(), self.origin.min(now)).ok()?;
            budgets.insert(server.to_owned(), budget);
        }
        budgets.get_mut(server).map(f)
    }

    /// Whether `server`'s throttle admits a request now (always, when throttling is off).
    pub fn throttle_admits(&self, server: &str, now: Instant) -> bool {
        let Some(config) = self.config.throttle.as_ref() else { return true };
        let mut throttles = self.throttles.lock().unwrap_or_else(PoisonError::into_inner);
        let throttle = throttles
            .entry(server.to_owned())
            .or_insert_with(|| AdaptiveThrottle::new(config.clone(), self.origin.min(now), self.fork()));
        throttle.admit(now)
    }

    /// An admitted request ended, accepted by the backend (answered without an overload failure) or not.
    pub fn throttle_outcome(&self, server: &str, now: Instant, accepted: bool) {
        if self.config.throttle.is_none() {
            return;
        }
        let mut throttles = self.throttles.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = throttles.get_mut(server) {
            t.record_outcome(now, accepted);
        }
    }

    /// The per-server bulkheads, if on.
    pub fn bulkheads(&self) -> Option<&Bulkheads> {
        self.bulkheads.as_ref()
    }

    pub fn degraded(&self, tool: &str, reason: DegradedReason, retry_after: Option<Duration>) -> CallToolResult {
        self.config.fallbacks.result(tool, reason, retry_after)
    }
}

/// Forwards a breaker transition to the observer.
pub(super) fn report(observer: &dyn Observer, server: &str, tool: &str, transition: Option<Transition>) {
    if let Some(t) = transition {
        observer.event(&Event::Breaker { server, tool, transition: &t });
    }
}

/// How a protected call ended: every attempt it made, and, when the gateway declined, the degraded result.
#[derive(Debug)]
pub struct Routed {
    pub attempts: Vec<super::Attempt>,
    pub degraded: Option<Degraded>,
}

/// The gateway declined: why, and the result the agent gets instead (`isError: true`, "do not retry").
#[derive(Debug)]
pub struct Degraded {
    pub reason: DegradedReason,
    pub result: CallToolResult,
}

impl Routed {
    /// What the agent gets: the degraded result, else the last attempt's outcome.
    pub fn outcome(&self) -> Result<&CallToolResult, &CallError> {
        match (&self.degraded, self.attempts.last()) {
            (Some(d), _) => Ok(&d.result),
            (None, Some(a)) => a.outcome.as_ref(),
            (None, None) => Err(&NO_ATTEMPT),
        }
    }

    pub fn into_outcome(mut self) -> Result<CallToolResult, CallError> {
        match (self.degraded, self.attempts.pop()) {
            (Some(d), _) => Ok(d.result),
            (None, Some(a)) => a.outcome,
            (None, None) => Err(NO_ATTEMPT.clone()),
        }
    }
}

/// Unreachable by construction (a call either makes an attempt or is declined), but a value rather than a panic.
static NO_ATTEMPT: CallError = CallError::MalformedResponse(String::new());
