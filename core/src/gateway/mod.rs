//! The gateway: the one facade an agent platform calls. Two entry points, named for what they do:
//!
//! - [`Gateway::call`] is the protected path (`protected.rs`): routing, then breakers, bulkheads and throttles per
//!   replica, retries under a per-server budget and one deadline, and a degraded result when no replica can take the
//!   call.
//! - [`Gateway::call_unprotected`] is one routed attempt and nothing else:
//!
//! ```text
//! agent -> Gateway::call_unprotected
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
mod layers;
mod manual;
mod outcome;
mod protected;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::capabilities::RouterHints;
use crate::client::McpClient;
use crate::conn::CallOptions;
use crate::error::CallError;
use crate::mcp::CallToolResult;
use crate::observe::{Event, NoopObserver, Observer};
use crate::resilience::breaker::{BreakerCounts, BreakerState, BreakerTransition, Gate};
use crate::router::{Registry, ReplicaId, Requirement, RouteError, RouteRequest, Router, run_health_checks};
use crate::rt::{Clock, SeededRng};
use checker::ClientChecker;
use layers::Layers;
pub use layers::ResilienceConfig;
pub use manual::{ManualError, Operation};
pub use outcome::RouterVerdict;
use protected::{Arguments, Unprepared};
pub use protected::{Degraded, Last, Routed};

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
/// | `call_deadline`     | 300 s   | a gateway call's one deadline (all the attempts of a [`Gateway::call`]) when the caller gives none |
/// | `resilience`        | all off | breakers, retries, budgets, throttling, bulkheads (see [`ResilienceConfig`]) |
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
    /// Borrowed when the caller keeps its own copy (an agent retrying with the same arguments): each attempt then
    /// clones what it sends, rather than the caller cloning for the call and the call again for each attempt.
    pub arguments: Cow<'a, Value>,
    /// Replicas this logical call already tried (an agent's or the gateway's retry): avoided while others remain.
    pub tried: &'a [ReplicaId],
    /// Requirements beyond those the arguments impose under the configured rules, e.g. a `server:<name>` tag that
    /// pins a call to one server's replicas.
    pub requires: &'a [Requirement],
    pub opts: CallOptions,
}

impl<'a> ToolCall<'a> {
    pub fn new(tool: &'a str, arguments: Value) -> Self {
        Self::with_arguments(tool, Cow::Owned(arguments))
    }

    /// A call whose arguments the caller keeps.
    pub fn borrowing(tool: &'a str, arguments: &'a Value) -> Self {
        Self::with_arguments(tool, Cow::Borrowed(arguments))
    }

    fn with_arguments(tool: &'a str, arguments: Cow<'a, Value>) -> Self {
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

/// See [`Gateway::in_flight_snapshot`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InFlightSnapshot {
    /// Bulkhead permits held, over every pool.
    pub bulkhead_permits: usize,
    /// Calls the router counts as in flight, over every replica.
    pub routed: u64,
    /// Requests waiting for a response, over every replica client's current connection.
    pub pending: usize,
    /// Slots of the clients' in-flight limits held (the largest over clients: they may share one limit).
    pub client_slots: usize,
}

/// One routing decision: the replica, its server and endpoint, and what its server declared (for bulkhead caps).
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub replica: ReplicaId,
    pub server: String,
    pub endpoint: Arc<str>,
    pub hints: Option<RouterHints>,
}

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
    /// now). A layer whose settings its state machine rejects stays off, so validate `config.resilience` first.
    ///
    /// `rng` is the stream for backoff jitter, breaker open-period jitter and throttle draws. It has no default on
    /// purpose: gateways of one fleet that shared a stream would draw the same "full jitter" and retry in step.
    /// Seed it from the OS in a live process and fork it from the run's seed in a simulation.
    pub fn new(
        mut router: Router,
        mut registry: Box<dyn Registry>,
        connector: Arc<dyn Connector>,
        clock: Arc<dyn Clock>,
        config: GatewayConfig,
        rng: SeededRng,
    ) -> Self {
        let now = clock.now();
        router.sync(registry.as_mut(), now);
        let layers = Layers::new(config.resilience.clone(), now, rng);
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

    /// Where breaker transitions and degraded decisions go.
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// The breakers made so far, by (replica endpoint, tool), for reports.
    pub fn breakers(&self) -> Vec<((String, String), Arc<Gate>)> {
        self.layers.breakers()
    }

    /// The bulkhead pools made so far: (pool, in flight, limit), in pool order (a replica endpoint, or a server under
    /// server scope).
    pub fn bulkheads(&self) -> Vec<(String, usize, usize)> {
        self.layers.bulkheads()
    }

    /// What the gateway holds for calls in flight right now, each counter 0 when it is idle: a check, after the
    /// traffic stops, that every call gave back what it took (a leak shows as a count that never returns to 0).
    pub fn in_flight_snapshot(&self) -> InFlightSnapshot {
        let clients: Vec<Arc<McpClient>> = {
            let clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
            clients.values().map(|(_, c)| c.clone()).collect()
        };
        let (pending, client_slots) =
            clients.iter().map(|c| c.in_flight_snapshot()).fold((0, 0), |(p, s), (cp, cs)| (p + cp, s.max(cs)));
        InFlightSnapshot {
            bulkhead_permits: self.layers.permits_held(),
            routed: self.router().in_flight_total(),
            pending,
            client_slots,
        }
    }

    /// Another gateway node reported the breaker of `(endpoint, tool)` open for `open_for` (for slowness alone:
    /// `slow_only`): this node's breaker follows (made now if it did not exist), unless it is already open or switched
    /// manually. The transition goes to the observer like a local one, with reason `remote`. `None` when breakers are
    /// off, the endpoint is not one this gateway routes to, or nothing changed.
    pub fn follow_remote_open(
        &self,
        endpoint: &str,
        tool: &str,
        open_for: Duration,
        slow_only: bool,
    ) -> Option<BreakerTransition> {
        let route = self.route_to(endpoint)?;
        let gate = self.layers.breaker(endpoint, tool)?;
        let transition = gate.follow_remote_open(self.clock.now(), open_for, slow_only);
        layers::report(self.observer.as_ref(), &route, tool, transition.clone());
        transition
    }

    /// Another node reported the breaker of `(endpoint, tool)` open, and nothing here corroborates it: a closed
    /// breaker goes half-open, so that a few probes decide by this node's own evidence (breaker sync's rule against
    /// poisoning, `crate::sync`). Reported with reason `remote`.
    pub fn suspect_remote(&self, endpoint: &str, tool: &str) -> Option<BreakerTransition> {
        let route = self.route_to(endpoint)?;
        let gate = self.layers.breaker(endpoint, tool)?;
        let transition = gate.suspect_remote(self.clock.now());
        layers::report(self.observer.as_ref(), &route, tool, transition.clone());
        transition
    }

    /// This node's own evidence about `(endpoint, tool)`: its breaker's state, its window now and the failure rate
    /// that trips it (`None` when breakers are off or the endpoint is not routed to).
    pub fn local_view(&self, endpoint: &str, tool: &str) -> Option<(BreakerState, BreakerCounts, f64)> {
        self.route_to(endpoint)?;
        let gate = self.layers.breaker(endpoint, tool)?;
        Some((gate.state(), gate.counts(self.clock.now()), gate.trip_rate()))
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

    /// The client of one endpoint if it was made already (nothing is dialed).
    fn existing_client(&self, endpoint: &str) -> Option<Arc<McpClient>> {
        let clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients.get(endpoint).map(|(_, c)| c.clone())
    }

    /// The requirements `arguments` impose under the configured rules.
    pub fn requirements(&self, arguments: &Value) -> Vec<Requirement> {
        Requirement::from_arguments(arguments, &self.config.requirement_rules)
    }

    /// Routes and makes one attempt, with no resilience layer (see [`Gateway::call`] for the protected path). `Err`
    /// only when no replica could take it (no candidate); every failure after a replica was chosen is in the
    /// [`Attempt`]'s outcome, with the replica named.
    pub async fn call_unprotected(&self, call: ToolCall<'_>) -> Result<Attempt, RouteError> {
        self.unprotected(call, None::<Unprepared>).await
    }

    /// [`Gateway::call_unprotected`], with the arguments finished by `prepare` once the replica is chosen, from its client:
    /// an agent that builds its call from the tool schema the serving replica shows (filling parameters a schema
    /// drift added) needs the replica first. Routing reads the arguments as given; `prepare`'s time counts as the
    /// replica's (it is that replica's session and schema work).
    pub async fn call_unprotected_prepared<F, Fut>(&self, call: ToolCall<'_>, prepare: F) -> Result<Attempt, RouteError>
    where
        F: FnOnce(Arc<McpClient>, Value) -> Fut,
        Fut: Future<Output = Value>,
    {
        self.unprotected(call, Some(prepare)).await
    }

    async fn unprotected<F, Fut>(&self, call: ToolCall<'_>, prepare: Option<F>) -> Result<Attempt, RouteError>
    where
        F: FnOnce(Arc<McpClient>, Value) -> Fut,
        Fut: Future<Output = Value>,
    {
        let requirements = self.call_requirements(&call);
        let route = self.route(call.tool, &requirements, call.tried)?;
        let started = self.clock.now();
        // A gateway call enters here: its one deadline is resolved now (nothing was awaited since `started`).
        let opts = call.opts.bounded(|| started, self.config.call_deadline);
        let arguments = Arguments { value: call.arguments, prepare };
        Ok(self.attempt(&route, call.tool, arguments, opts, started).await.0)
    }

    /// The requirements of one call: its arguments' under the rules, and its own extra ones.
    fn call_requirements(&self, call: &ToolCall<'_>) -> Vec<Requirement> {
        let mut requirements = self.requirements(&call.arguments);
        requirements.extend_from_slice(call.requires);
        requirements
    }

    /// One routing decision.
    fn route(&self, tool: &str, requirements: &[Requirement], tried: &[ReplicaId]) -> Result<Route, RouteError> {
        // Timed with the wait for the router's lock: a decision an operator finds slow is usually a contended one.
        let started = self.clock.now();
        let route = {
            let router = &mut self.router();
            router.route(&RouteRequest { tool, requirements, tried }).map(|replica| Self::route_of(router, replica))
        };
        let elapsed = self.clock.now().saturating_duration_since(started);
        self.observer.event(&Event::RouteDecided { tool, elapsed });
        route
    }

    /// The route to a known endpoint, without a decision.
    fn route_to(&self, endpoint: &str) -> Option<Route> {
        let router = &self.router();
        router.replica_id(endpoint).map(|replica| Self::route_of(router, replica))
    }

    fn route_of(router: &Router, replica: ReplicaId) -> Route {
        let server = router.server_of(replica);
        Route {
            replica,
            server: server.map(|s| s.name.clone()).unwrap_or_default(),
            endpoint: Arc::from(router.endpoint(replica).unwrap_or_default()),
            hints: server.map(|s| s.hints),
        }
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
        let (router, clock, observer) = (self.router.clone(), self.clock.clone(), self.observer.clone());
        let health = run_health_checks(router, checker, clock, self.config.refresh_every, observer, cancel);
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
