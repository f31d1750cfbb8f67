//! The state of the resilience layers, scoped to the smallest unit that can fail: breakers per (replica endpoint,
//! tool), throttles and bulkheads per replica endpoint, retry budgets per server (a budget bounds the load a whole
//! server receives). Each layer is optional, so the naive gateway is the same code with every layer off.
//! [`Layers::admit`] is one replica's admission; the protected path (`protected.rs`) walks the candidates with it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::Route;
use crate::mcp::CallToolResult;
use crate::observe::{Event, Observer};
use crate::resilience::breaker::{Breaker, BreakerConfig, BreakerTransition, Gate, HealthVerdict, Permit, Rejected};
use crate::resilience::budget::{BudgetConfig, RetryBudget};
use crate::resilience::bulkhead::{BulkheadConfig, Bulkheads, ClientLimit, PoolKey};
use crate::resilience::degraded::{DegradedReason, Fallbacks, degraded_result};
use crate::resilience::limiter::{LimitPermit, PoolTimeout, SampleOutcome};
use crate::resilience::retry::RetryPolicy;
use crate::resilience::throttle::{AdaptiveThrottle, ThrottleConfig};
use crate::rt::SeededRng;

/// Which layers are on. `Default` is all off — the naive gateway: one attempt, whatever happens.
///
/// | field      | off (`None`)                       | on                                                      |
/// |------------|------------------------------------|---------------------------------------------------------|
/// | `breaker`  | every call goes through            | a breaker per (replica, tool); open → the next candidate, degraded when none is left |
/// | `retry`    | one attempt; the agent decides     | idempotent tools retried on another replica with backoff, one deadline |
/// | `budget`   | retries limited by `retry` alone   | retries per server ≤ ratio × requests + a floor; spent → degraded |
/// | `throttle` | no shedding                        | SRE adaptive throttling per replica (K = 2); shed → the next candidate |
/// | `bulkhead` | no per-replica limit               | a permit pool per replica with an adaptive limit (see [`BulkheadConfig`]); full → the next candidate, a wait when none has room |
/// | `failover` | `false`: a refused call fails      | `true`: a call never sent (see [`crate::Delivery`]) goes to a replica not tried yet, any tool, no backoff, no budget; a replica whose address refuses connections is ejected until a probe answers (the router's `ejection.rs`) |
#[derive(Debug, Clone, Default)]
pub struct ResilienceConfig {
    pub breaker: Option<BreakerConfig>,
    pub retry: Option<RetryPolicy>,
    pub budget: Option<BudgetConfig>,
    pub throttle: Option<ThrottleConfig>,
    pub bulkhead: Option<BulkheadConfig>,
    /// Never-sent failover and ejection (see the table).
    pub failover: bool,
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
            failover: true,
            fallbacks: Fallbacks::default(),
        }
    }
}

/// How a call comes to one replica's admission.
#[derive(Debug)]
pub(super) enum Entry {
    /// On the first walk over the candidates: an open breaker declines (its probes are for calls nothing else can
    /// serve, so one sick replica among healthy ones costs nothing).
    First,
    /// Every candidate refused: an open breaker may take the call as its probe. `past_slow`: see [`Entry::Room`].
    LastResort { past_slow: bool },
    /// After waiting for room, with the bulkhead permit already held. `past_slow`: a breaker that refuses for slowness
    /// alone (`Rejected::slow_only`) is passed — the other layers still apply, and the outcome is not recorded (the
    /// breaker's probes decide when it closes); see `protected.rs` for when.
    Room { permit: LimitPermit, past_slow: bool },
}

/// Why one replica did not take a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Refusal {
    /// Its breaker for the tool is open (or forced open, or half-open with every probe slot taken): why, as it said.
    Breaker(Rejected),
    /// Its bulkhead is at its limit: a permit may free soon.
    Full,
    /// Its throttle shed the call.
    Throttled,
}

/// A replica that took a call: the permits its layers handed out, given back by [`Admitted::settle`] or on drop.
#[derive(Debug)]
pub(super) struct Admitted {
    pub route: Route,
    breaker: Option<Permit>,
    bulkhead: Option<LimitPermit>,
}

/// The per-replica and per-server state of the layers, made on first use.
#[derive(Debug)]
pub(super) struct Layers {
    config: ResilienceConfig,
    origin: Instant,
    rng: SeededRng,
    /// `(replica endpoint, tool)` → its breaker. BTreeMap: deterministic order for reports.
    /// By endpoint, then tool: nested so that a lookup borrows both names (every call looks its breaker up).
    breakers: Mutex<BTreeMap<String, BTreeMap<String, Arc<Gate>>>>,
    /// Server → its retry budget.
    budgets: Mutex<BTreeMap<String, RetryBudget>>,
    /// Replica endpoint → its throttle.
    throttles: Mutex<BTreeMap<String, AdaptiveThrottle>>,
    bulkheads: Option<Bulkheads>,
    /// Streams forked for each new breaker / throttle, in creation order (deterministic given the call order).
    forks: AtomicU64,
    /// Fallback tools an operator named (the manual switch's force-degrade), ahead of the configured ones.
    fallback_overrides: Mutex<BTreeMap<String, String>>,
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
            forks: AtomicU64::new(1),
            fallback_overrides: Mutex::default(),
        }
    }

    pub fn config(&self) -> &ResilienceConfig {
        &self.config
    }

    pub fn rng(&self) -> &SeededRng {
        &self.rng
    }

    fn fork(&self) -> SeededRng {
        self.rng.fork(self.forks.fetch_add(1, Ordering::Relaxed))
    }

    /// The breaker of `(endpoint, tool)`, if breakers are on. A config the breaker rejects was validated when the
    /// gateway was built, so `None` here only means "off".
    pub fn breaker(&self, endpoint: &str, tool: &str) -> Option<Arc<Gate>> {
        let config = self.config.breaker.as_ref()?;
        let mut breakers = self.breakers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(g) = breakers.get(endpoint).and_then(|tools| tools.get(tool)) {
            return Some(g.clone());
        }
        let gate = Gate::new(Breaker::new(config.clone(), self.origin, self.fork()).ok()?);
        breakers.entry(endpoint.to_owned()).or_default().insert(tool.to_owned(), gate.clone());
        Some(gate)
    }

    /// Every breaker made so far, in (endpoint, tool) order.
    pub fn breakers(&self) -> Vec<((String, String), Arc<Gate>)> {
        let breakers = self.breakers.lock().unwrap_or_else(PoisonError::into_inner);
        breakers
            .iter()
            .flat_map(|(endpoint, tools)| {
                tools.iter().map(move |(tool, g)| ((endpoint.clone(), tool.clone()), g.clone()))
            })
            .collect()
    }

    /// One replica's admission, in the order that wastes least: its breaker (a state read), then a bulkhead permit
    /// without waiting, then its throttle (last, so that it counts only requests the other layers would have let
    /// through). `permit` is a bulkhead permit already waited for; with it, the bulkhead step is skipped.
    pub fn admit(
        &self,
        route: Route,
        tool: &str,
        client: &(dyn Fn(&Route) -> ClientLimit + Sync),
        entry: Entry,
        now: Instant,
        observer: &dyn Observer,
    ) -> Result<Admitted, (Route, Refusal)> {
        let (permit, may_probe, past_slow) = match entry {
            Entry::First => (None, false, false),
            Entry::LastResort { past_slow } => (None, true, past_slow),
            Entry::Room { permit, past_slow } => (Some(permit), false, past_slow),
        };
        let breaker = match self.breaker(&route.endpoint, tool) {
            None => None,
            Some(gate) => {
                let admission = if may_probe { gate.try_acquire(now) } else { gate.try_acquire_no_probe(now) };
                report(observer, &route, tool, admission.transition);
                match admission.decision {
                    Ok(p) => Some(p),
                    Err(r) if r.slow_only && past_slow => None,
                    Err(r) => return Err((route, Refusal::Breaker(r))),
                }
            }
        };
        let bulkhead = match (permit, &self.bulkheads) {
            (Some(p), _) => Some(p),
            (None, None) => None,
            // A breaker's probe goes over the pool's adaptive limit, up to its hard cap: the timeouts of the fault it
            // probes shrank that limit, and behind it the probe would wait for the fault's own hung calls, so the end
            // of the fault would be seen only when they time out. The breaker paces its probes itself.
            (None, Some(b)) => {
                let client = || client(&route);
                let key = pool_key(&route, &client);
                let acquired = match breaker.as_ref().is_some_and(Permit::is_probe) {
                    true => b.try_acquire_probe(&key),
                    false => b.try_acquire(&key),
                };
                match acquired {
                    Some(p) => Some(p),
                    None => return Err((route, Refusal::Full)),
                }
            }
        };
        if !self.throttle_admits(&route.endpoint, now) {
            return Err((route, Refusal::Throttled));
        }
        Ok(Admitted { route, breaker, bulkhead })
    }

    /// Waits for a permit of `route`'s bulkhead, at most the queue wait and `at_most`.
    pub async fn wait_for_room(
        &self,
        route: &Route,
        client: &(dyn Fn(&Route) -> ClientLimit + Sync),
        at_most: Duration,
    ) -> Result<Option<LimitPermit>, PoolTimeout> {
        match &self.bulkheads {
            None => Ok(None),
            Some(b) => b.acquire(&pool_key(route, &|| client(route)), at_most).await.map(Some),
        }
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

    /// Whether `endpoint`'s throttle admits a request now (always, when throttling is off).
    fn throttle_admits(&self, endpoint: &str, now: Instant) -> bool {
        let Some(config) = self.config.throttle.as_ref() else { return true };
        let mut throttles = self.throttles.lock().unwrap_or_else(PoisonError::into_inner);
        let throttle = throttles
            .entry(endpoint.to_owned())
            .or_insert_with(|| AdaptiveThrottle::new(config.clone(), self.origin.min(now), self.fork()));
        throttle.admit(now)
    }

    /// An admitted request ended, accepted by the backend (answered without an overload failure) or not.
    fn throttle_outcome(&self, endpoint: &str, now: Instant, accepted: bool) {
        if self.config.throttle.is_none() {
            return;
        }
        let mut throttles = self.throttles.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = throttles.get_mut(endpoint) {
            t.record_outcome(now, accepted);
        }
    }

    /// Bulkhead permits held right now, over every pool (0 when bulkheads are off).
    pub fn permits_held(&self) -> usize {
        self.bulkheads.as_ref().map_or(0, Bulkheads::permits_held)
    }

    /// The bulkhead pools' (pool, in flight, limit), for observers.
    pub fn bulkheads(&self) -> Vec<(String, usize, usize)> {
        self.bulkheads.as_ref().map(Bulkheads::snapshot).unwrap_or_default()
    }

    pub fn degraded(&self, tool: &str, reason: DegradedReason, retry_after: Option<Duration>) -> CallToolResult {
        let overrides = self.fallback_overrides.lock().unwrap_or_else(PoisonError::into_inner);
        match overrides.get(tool) {
            Some(fallback) => degraded_result(tool, reason, retry_after, Some(fallback)),
            None => self.config.fallbacks.result(tool, reason, retry_after),
        }
    }

    /// Names `fallback` in `tool`'s degraded results from now on (`None`: back to the configured one).
    pub fn set_fallback(&self, tool: &str, fallback: Option<String>) {
        let mut overrides = self.fallback_overrides.lock().unwrap_or_else(PoisonError::into_inner);
        match fallback {
            Some(f) => overrides.insert(tool.to_owned(), f),
            None => overrides.remove(tool),
        };
    }
}

impl Admitted {
    /// The attempt ended at `now` with `verdict`: every layer learns it once, and the permits go back. Gives back
    /// the route, for the retry decision.
    pub fn settle(
        self,
        layers: &Layers,
        tool: &str,
        now: Instant,
        verdict: HealthVerdict,
        sample: SampleOutcome,
        observer: &dyn Observer,
    ) -> Route {
        if let (Some(p), Some(bulkheads)) = (self.bulkhead, &layers.bulkheads) {
            bulkheads.finish(p, now, sample, verdict.replica_failed());
        }
        if let Some(p) = self.breaker {
            report(observer, &self.route, tool, p.record(now, verdict));
        }
        layers.throttle_outcome(&self.route.endpoint, now, !verdict.replica_failed());
        self.route
    }
}

fn pool_key<'a>(route: &'a Route, client: &'a (dyn Fn() -> ClientLimit + Sync)) -> PoolKey<'a> {
    PoolKey {
        server: &route.server,
        endpoint: &route.endpoint,
        declared_max: route.hints.and_then(|h| h.max_concurrent_requests),
        client,
    }
}

/// Forwards a breaker transition of `route`'s replica to the observer.
pub(super) fn report(observer: &dyn Observer, route: &Route, tool: &str, transition: Option<BreakerTransition>) {
    if let Some(t) = transition {
        observer.event(&Event::Breaker { server: &route.server, replica: &route.endpoint, tool, transition: &t });
    }
}
