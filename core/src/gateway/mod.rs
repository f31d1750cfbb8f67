//! The gateway: the one facade an agent platform calls. [`Gateway::call_tool`] runs the whole path of a tool call
//! (DESIGN.md, "The path of one tool call"):
//!
//! ```text
//! agent -> Gateway::call_tool
//!       -> Router: candidates (capability matrix, health) -> formula -> a replica   (router/)
//!       -> the replica's McpClient: session, schema check, connection, phased timeouts (client/)
//!       <- outcome -> router statistics (latency, errors, in-flight)
//! ```
//!
//! One gateway per gateway process (one per gateway host in the simulator). It owns the router and one
//! [`McpClient`] per replica endpoint, made on first use by the embedder's [`Connector`] (which knows how to dial:
//! tokio TCP or stdio in production, turmoil in the simulator). Its background task ([`Gateway::run_background`])
//! applies registry membership changes, refreshes the router's statistics and runs the active health checks through
//! the same clients; nothing of that runs on a call's path.

mod checker;
mod outcome;
mod resilience;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::client::McpClient;
use crate::conn::CallOptions;
use crate::error::CallError;
use crate::mcp::CallToolResult;
use crate::observe::{NoopObserver, Observer};
use crate::resilience::breaker::{Verdict as BreakerVerdict, classify};
use crate::resilience::degraded::DegradedReason;
use crate::resilience::limiter::SampleOutcome;
use crate::resilience::retry::{RetryPlan, auto_retry_allowed};
use crate::router::{Registry, ReplicaId, Requirement, RouteError, RouteRequest, Router, run_health_checks};
use crate::rt::Clock;
use crate::rt::SeededRng;
use checker::ClientChecker;
pub use outcome::Verdict;
use resilience::Layers;
pub use resilience::{Degraded, ResilienceConfig, Routed};

/// Makes the client for one replica endpoint. Called once per endpoint, on first use.
pub trait Connector: Send + Sync + std::fmt::Debug + 'static {
    fn connect(&self, server: &str, endpoint: &str) -> Arc<McpClient>;
}

/// Gateway settings.
///
/// | field               | default | meaning                                                                    |
/// |---------------------|---------|----------------------------------------------------------------------------|
/// | `refresh_every`     | 1 s     | how often the background task folds statistics and starts due health checks |
/// | `requirement_rules` | none    | `(argument, matrix attribute)`: a string argument `language: "rust"` requires `language_support ∋ rust` |
/// | `call_deadline`     | 300 s   | one deadline for all the attempts of a [`Gateway::call`] when the caller gives none |
/// | `resilience`        | all off | breakers, retries, budgets, throttling (see [`ResilienceConfig`])            |
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub refresh_every: Duration,
    pub requirement_rules: Vec<(String, String)>,
    pub call_deadline: Duration,
    pub resilience: ResilienceConfig,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            refresh_every: Duration::from_secs(1),
            requirement_rules: Vec::new(),
            call_deadline: Duration::from_secs(300),
            resilience: ResilienceConfig::default(),
        }
    }
}

/// One call as an agent makes it.
#[derive(Debug, Clone)]
pub struct ToolCall<'a> {
    pub tool: &'a str,
    pub arguments: Value,
    /// Replicas this logical call already tried (an agent's or the gateway's retry): avoided while others remain.
    pub tried: &'a [ReplicaId],
    /// Requirements beyond those the arguments impose under the configured rules, e.g. a `server:<name>` tag that
    /// pins a call to one server's replicas.
    pub requires: &'a [Requirement],
    pub opts: CallOptions,
}

impl<'a> ToolCall<'a> {
    pub fn new(tool: &'a str, arguments: Value) -> Self {
        ToolCall { tool, arguments, tried: &[], requires: &[], opts: CallOptions::default() }
    }
}

/// Where a call went and how it ended there.
#[derive(Debug)]
pub struct Attempt {
    pub replica: ReplicaId,
    pub endpoint: Arc<str>,
    pub outcome: Result<CallToolResult, CallError>,
}

/// A replica endpoint's name (shared into every [`Attempt`]) and its client.
pub type Endpoint = (Arc<str>, Arc<McpClient>);

/// See the module documentation.
#[derive(Debug)]
pub struct Gateway {
    router: Arc<Mutex<Router>>,
    registry: Mutex<Box<dyn Registry>>,
    connector: Arc<dyn Connector>,
    /// Endpoint → its client (and the endpoint as a shared string for [`Attempt`]s). BTreeMap: iteration order is
    /// the endpoints' order, so closing them all is deterministic.
    clients: Mutex<BTreeMap<String, Endpoint>>,
    clock: Arc<dyn Clock>,
    config: GatewayConfig,
    layers: Layers,
    observer: Arc<dyn Observer>,
}

impl Gateway {
    /// A gateway routing with `router` over the servers `registry` announces (its initial members are applied
    /// now). Validate `config.resilience` first ([`ResilienceConfig::validate`]): a layer whose settings its state
    /// machine rejects stays off.
    pub fn new(
        mut router: Router,
        mut registry: Box<dyn Registry>,
        connector: Arc<dyn Connector>,
        clock: Arc<dyn Clock>,
        config: GatewayConfig,
    ) -> Self {
        let now = clock.now();
        router.sync(registry.as_mut(), now);
        let layers = Layers::new(config.resilience.clone(), now, SeededRng::new(0));
        Gateway {
            router: Arc::new(Mutex::new(router)),
            registry: Mutex::new(registry),
            connector,
            clients: Mutex::new(BTreeMap::new()),
            clock,
            config,
            layers,
            observer: Arc::new(NoopObserver),
        }
    }

    /// The stream for backoff jitter, breaker open-period jitter and throttle draws (fork it from the run's seed).
    pub fn with_rng(mut self, rng: SeededRng) -> Self {
        self.layers = Layers::new(self.config.resilience.clone(), self.clock.now(), rng);
        self
    }

    /// Where breaker transitions and degraded decisions go.
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// The breakers made so far, by (server, tool), for reports.
    pub fn breakers(&self) -> Vec<((String, String), Arc<crate::resilience::breaker::Gate>)> {
        self.layers.breakers()
    }

    /// Another gateway node reported `(server, tool)`'s breaker open for `open_for`: this node's breaker follows
    /// (made now if it did not exist), unless it is already open or switched manually. The transition goes to the
    /// observer like a local one, with reason `remote`. `None` when breakers are off or nothing changed.
    pub fn follow_remote_open(
        &self,
        server: &str,
        tool: &str,
        open_for: Duration,
    ) -> Option<crate::resilience::breaker::Transition> {
        let gate = self.layers.breaker(server, tool)?;
        let transition = gate.follow_remote_open(self.clock.now(), open_for);
        resilience::report(self.observer.as_ref(), server, tool, transition.clone());
        transition
    }

    fn router(&self) -> std::sync::MutexGuard<'_, Router> {
        self.router.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the router (for reports and tests: statistics, formula name). Keep it short: calls wait.
    pub fn with_router<R>(&self, f: impl FnOnce(&mut Router) -> R) -> R {
        f(&mut self.router())
    }

    /// The client of one endpoint, made on first use.
    pub fn client(&self, server: &str, endpoint: &str) -> Endpoint {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients
            .entry(endpoint.to_owned())
            .or_insert_with(|| (Arc::from(endpoint), self.connector.connect(server, endpoint)))
            .clone()
    }

    /// The requirements `arguments` impose under the configured rules.
    pub fn requirements(&self, arguments: &Value) -> Vec<Requirement> {
        Requirement::from_arguments(arguments, &self.config.requirement_rules)
    }

    /// Routes and makes one call. `Err` only when no replica could take it (no candidate); every failure after a
    /// replica was chosen is in the [`Attempt`]'s outcome, with the replica named. No resilience layer applies: see
    /// [`Gateway::call`] for the protected path.
    pub async fn call_tool(&self, call: ToolCall<'_>) -> Result<Attempt, RouteError> {
        self.call_tool_prepared(call, |_, arguments| std::future::ready(arguments)).await
    }

    /// [`Gateway::call_tool`], with the arguments finished by `prepare` once the replica is chosen, from its client:
    /// an agent that builds its call from the tool schema the serving replica shows (filling parameters a schema
    /// drift added) needs the replica first. Routing reads the arguments as given; `prepare`'s time counts as the
    /// replica's (it is that replica's session and schema work).
    pub async fn call_tool_prepared<F, Fut>(&self, call: ToolCall<'_>, prepare: F) -> Result<Attempt, RouteError>
    where
        F: FnOnce(Arc<McpClient>, Value) -> Fut,
        Fut: Future<Output = Value>,
    {
        let requirements = self.call_requirements(&call);
        let (replica, server, endpoint) = self.route(call.tool, &requirements, call.tried)?;
        Ok(self.attempt(replica, &server, &endpoint, call.tool, (call.arguments, prepare), call.opts).await)
    }

    /// The requirements of one call: its arguments' under the rules, and its own extra ones.
    fn call_requirements(&self, call: &ToolCall<'_>) -> Vec<Requirement> {
        let mut requirements = self.requirements(&call.arguments);
        requirements.extend_from_slice(call.requires);
        requirements
    }

    /// One routing decision: the replica, its server and its endpoint.
    fn route(
        &self,
        tool: &str,
        requirements: &[Requirement],
        tried: &[ReplicaId],
    ) -> Result<(ReplicaId, String, String), RouteError> {
        let router = &mut self.router();
        let replica = router.route(&RouteRequest { tool, requirements, tried })?;
        let server = router.server_of(replica).map(|s| s.name.clone()).unwrap_or_default();
        let endpoint = router.endpoint(replica).unwrap_or_default().to_owned();
        Ok((replica, server, endpoint))
    }

    /// One call on a chosen replica, with the router's in-flight count and statistics kept. The arguments are
    /// finished by `prepare` on the replica's client (see [`Gateway::call_tool_prepared`]).
    async fn attempt<F, Fut>(
        &self,
        replica: ReplicaId,
        server: &str,
        endpoint: &str,
        tool: &str,
        (arguments, prepare): (Value, F),
        opts: CallOptions,
    ) -> Attempt
    where
        F: FnOnce(Arc<McpClient>, Value) -> Fut,
        Fut: Future<Output = Value>,
    {
        self.router().call_started(replica);
        // From here the in-flight count is held: the guard gives it back even if this future is dropped.
        let mut pending = InFlight { gateway: self, replica, done: false };
        let (endpoint, client) = self.client(server, endpoint);
        let started = self.clock.now();
        let arguments = prepare(client.clone(), arguments).await;
        let outcome = client.call_tool(tool, arguments, opts).await;
        let now = self.clock.now();
        pending.done = true;
        let mut router = self.router();
        match Verdict::of(&outcome) {
            Verdict::NoVerdict => router.call_abandoned(replica),
            v => router.call_finished(replica, v == Verdict::Ok, now.saturating_duration_since(started), now),
        }
        Attempt { replica, endpoint, outcome }
    }

    /// The protected path: routing, throttling, breakers, retries under a budget and one deadline, and a degraded
    /// result when the gateway declines (see [`resilience`](ResilienceConfig) for the layers).
    pub async fn call(&self, call: ToolCall<'_>) -> Routed {
        self.call_prepared(call, |_, arguments| std::future::ready(arguments)).await
    }

    /// [`Gateway::call`], with each attempt's arguments finished by `prepare` on the chosen replica's client (as in
    /// [`Gateway::call_tool_prepared`]): called once per attempt, in attempt order, just before it is sent.
    pub async fn call_prepared<F, Fut>(&self, call: ToolCall<'_>, prepare: F) -> Routed
    where
        F: Fn(Arc<McpClient>, Value) -> Fut,
        Fut: Future<Output = Value>,
    {
        let now = self.clock.now();
        let deadline = call.opts.deadline.unwrap_or(now + self.config.call_deadline);
        let requirements = self.call_requirements(&call);
        let mut tried: Vec<ReplicaId> = call.tried.to_vec();
        let mut attempts: Vec<Attempt> = Vec::new();
        let mut plan: Option<RetryPlan> = None;
        let declined = |reason, retry_after, attempts| {
            self.observer.event(&crate::observe::Event::Degraded { tool: call.tool, reason });
            let result = self.layers.degraded(call.tool, reason, retry_after);
            Routed { attempts, degraded: Some(Degraded { reason, result }) }
        };
        loop {
            // Route around breakers that refuse: each refusal adds its replica to the avoided set, so the loop ends
            // (the router returns an avoided replica only when nothing else is left).
            let mut refused: Vec<ReplicaId> = Vec::new();
            let mut soonest: Option<Duration> = None;
            let chosen = loop {
                let avoid: Vec<ReplicaId> = tried.iter().chain(&refused).copied().collect();
                let (replica, server, endpoint) = match self.route(call.tool, &requirements, &avoid) {
                    Ok(r) => r,
                    Err(_) => return declined(DegradedReason::NoCandidate, None, attempts),
                };
                if refused.contains(&replica) {
                    break None;
                }
                let Some(gate) = self.layers.breaker(&server, call.tool) else {
                    break Some((replica, server, endpoint, None));
                };
                let admission = gate.try_acquire(self.clock.now());
                resilience::report(self.observer.as_ref(), &server, call.tool, admission.transition);
                match admission.decision {
                    Ok(permit) => break Some((replica, server, endpoint, Some(permit))),
                    Err(rejected) => {
                        refused.push(replica);
                        soonest = match (soonest, rejected.retry_after) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        };
                    }
                }
            };
            let Some((replica, server, endpoint, permit)) = chosen else {
                return declined(DegradedReason::BreakerOpen, soonest, attempts);
            };
            let now = self.clock.now();
            if attempts.is_empty() {
                self.layers.with_budget(&server, now, |b| b.deposit(now));
            }
            if !self.layers.throttle_admits(&server, now) {
                drop(permit);
                return declined(DegradedReason::Throttled, None, attempts);
            }
            // The server's bulkhead: a hung server holds at most its own permits; its callers wait at most the
            // queue wait and then get a degraded result, while calls to other servers are admitted as before.
            let bulkhead = match self.layers.bulkheads() {
                None => None,
                Some(bulkheads) => {
                    let hints = self.router().server_of(replica).map(|s| s.hints);
                    match bulkheads.acquire(&server, hints.as_ref()).await {
                        Ok(p) => Some(p),
                        Err(_) => {
                            drop(permit);
                            return declined(DegradedReason::BulkheadFull, None, attempts);
                        }
                    }
                }
            };
            if let Some(plan) = plan.as_mut() {
                plan.start_attempt();
            }
            let opts = CallOptions { deadline: Some(deadline), ..call.opts.clone() };
            let arguments = (call.arguments.clone(), &prepare);
            let attempt = self.attempt(replica, &server, &endpoint, call.tool, arguments, opts).await;
            let now = self.clock.now();
            let verdict = classify(&attempt.outcome);
            if let Some(p) = bulkhead {
                p.finish(now, limiter_sample(verdict));
            }
            if let Some(permit) = permit {
                resilience::report(self.observer.as_ref(), &server, call.tool, permit.record(now, verdict));
            }
            let accepted = !matches!(verdict, BreakerVerdict::Failure | BreakerVerdict::RetryAfter(_));
            self.layers.throttle_outcome(&server, now, accepted);
            let error = match &attempt.outcome {
                Err(e) if self.layers.config().retry.is_some() => Some(e.clone()),
                _ => None,
            };
            attempts.push(attempt);
            let Some(error) = error else {
                return Routed { attempts, degraded: None };
            };
            // The plan is made at the first failure: only then has the replica's client listed the tools, so only
            // then are the tool's annotations (is it idempotent?) known.
            let plan = plan.get_or_insert_with(|| {
                let idempotent = self.idempotent(&server, &endpoint, call.tool);
                let mut plan =
                    RetryPlan::new(self.layers.config().retry.clone().unwrap_or_default(), deadline, idempotent);
                plan.start_attempt();
                plan
            });
            // Retryable: what the error class allows, or — for an idempotent tool — any failure that was the
            // replica's (a server error, an overload): another replica may well serve it.
            let replica_failed = matches!(verdict, BreakerVerdict::Failure | BreakerVerdict::RetryAfter(_));
            let retryable = error.retry_allowed(plan.idempotent()) || (plan.idempotent() && replica_failed);
            let rng = self.layers.rng();
            let next = self
                .layers
                .with_budget(&server, now, |b| plan.next_if(retryable, now, rng, Some(b)))
                .unwrap_or_else(|| plan.next_if(retryable, now, rng, None));
            match next {
                Ok(delay) => {
                    tried.push(replica);
                    tokio::time::sleep(delay).await;
                }
                Err(give_up) => {
                    if let Some(reason) = DegradedReason::from_give_up(give_up) {
                        return declined(reason, None, attempts);
                    }
                    return Routed { attempts, degraded: None };
                }
            }
        }
    }

    /// Whether `tool` may be retried automatically: its annotations (read-only or idempotent) as the replica's
    /// client has them cached. Unknown (nothing cached yet) counts as not idempotent: never guess towards retrying.
    fn idempotent(&self, server: &str, endpoint: &str, tool: &str) -> bool {
        let (_, client) = self.client(server, endpoint);
        let caps = client.cached_capabilities();
        let annotations = caps.as_ref().and_then(|c| c.tool(tool)).map(|t| t.annotations().clone());
        auto_retry_allowed(crate::mcp::method::TOOLS_CALL, annotations.as_ref())
    }

    /// The background work of one gateway, until `cancel`: registry changes, statistics refresh and active health
    /// checks, every `refresh_every`.
    pub async fn run_background(self: Arc<Self>, cancel: CancelToken) {
        let checker = Arc::new(ClientChecker { gateway: Arc::downgrade(&self) });
        let sync = {
            let gateway = self.clone();
            let cancel = cancel.clone();
            async move {
                loop {
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return,
                        _ = tokio::time::sleep(gateway.config.refresh_every) => {
                            let now = gateway.clock.now();
                            let mut registry = gateway.registry.lock().unwrap_or_else(PoisonError::into_inner);
                            gateway.router().sync(registry.as_mut(), now);
                        }
                    }
                }
            }
        };
        let health =
            run_health_checks(self.router.clone(), checker, self.clock.clone(), self.config.refresh_every, cancel);
        tokio::join!(sync, health);
    }

    /// Closes every client's connection.
    pub async fn close(&self) {
        let clients: Vec<Arc<McpClient>> = {
            let clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
            clients.values().map(|(_, c)| c.clone()).collect()
        };
        for c in clients {
            c.close().await;
        }
    }
}

/// What an attempt tells a server's adaptive limiter: a failure the breaker counts (timeout, transport, overload)
/// is the limiter's loss signal; a request-level error is no evidence either way.
fn limiter_sample(verdict: BreakerVerdict) -> SampleOutcome {
    match verdict {
        BreakerVerdict::Success => SampleOutcome::Ok,
        BreakerVerdict::Failure | BreakerVerdict::RetryAfter(_) => SampleOutcome::Dropped,
        BreakerVerdict::Ignore => SampleOutcome::Ignored,
    }
}

/// Holds one in-flight slot of a replica in the router; a call future dropped mid-way (cancelled by its caller)
/// gives it back as abandoned.
struct InFlight<'a> {
    gateway: &'a Gateway,
    replica: ReplicaId,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.gateway.router().call_abandoned(self.replica);
        }
    }
}
