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

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::client::McpClient;
use crate::conn::CallOptions;
use crate::error::CallError;
use crate::mcp::CallToolResult;
use crate::router::{Registry, ReplicaId, Requirement, RouteError, RouteRequest, Router, run_health_checks};
use crate::rt::Clock;
use checker::ClientChecker;
pub use outcome::Verdict;

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
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub refresh_every: Duration,
    pub requirement_rules: Vec<(String, String)>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig { refresh_every: Duration::from_secs(1), requirement_rules: Vec::new() }
    }
}

/// One call as an agent makes it.
#[derive(Debug, Clone)]
pub struct ToolCall<'a> {
    pub tool: &'a str,
    pub arguments: Value,
    /// Replicas this logical call already tried (an agent's or the gateway's retry): avoided while others remain.
    pub tried: &'a [ReplicaId],
    pub opts: CallOptions,
}

impl<'a> ToolCall<'a> {
    pub fn new(tool: &'a str, arguments: Value) -> Self {
        ToolCall { tool, arguments, tried: &[], opts: CallOptions::default() }
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
}

impl Gateway {
    /// A gateway routing with `router` over the servers `registry` announces (its initial members are applied
    /// now).
    pub fn new(
        mut router: Router,
        mut registry: Box<dyn Registry>,
        connector: Arc<dyn Connector>,
        clock: Arc<dyn Clock>,
        config: GatewayConfig,
    ) -> Self {
        router.sync(registry.as_mut(), clock.now());
        Gateway {
            router: Arc::new(Mutex::new(router)),
            registry: Mutex::new(registry),
            connector,
            clients: Mutex::new(BTreeMap::new()),
            clock,
            config,
        }
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
        let rules: Vec<(&str, &str)> =
            self.config.requirement_rules.iter().map(|(a, m)| (a.as_str(), m.as_str())).collect();
        Requirement::from_arguments(arguments, &rules)
    }

    /// Routes and makes one call. `Err` only when no replica could take it (no candidate); every failure after a
    /// replica was chosen is in the [`Attempt`]'s outcome, with the replica named.
    pub async fn call_tool(&self, call: ToolCall<'_>) -> Result<Attempt, RouteError> {
        let requirements = self.requirements(&call.arguments);
        let (replica, server, endpoint) = {
            let mut router = self.router();
            let replica =
                router.route(&RouteRequest { tool: call.tool, requirements: &requirements, tried: call.tried })?;
            router.call_started(replica);
            let server = router.server_of(replica).map(|s| s.name.clone()).unwrap_or_default();
            let endpoint = router.endpoint(replica).unwrap_or_default().to_owned();
            (replica, server, endpoint)
        };
        // From here the in-flight count is held: the guard gives it back even if this future is dropped.
        let mut pending = InFlight { gateway: self, replica, done: false };
        let (endpoint, client) = self.client(&server, &endpoint);
        let started = self.clock.now();
        let outcome = client.call_tool(call.tool, call.arguments, call.opts).await;
        let now = self.clock.now();
        pending.done = true;
        let mut router = self.router();
        match Verdict::of(&outcome) {
            Verdict::NoVerdict => router.call_abandoned(replica),
            v => router.call_finished(replica, v == Verdict::Ok, now.saturating_duration_since(started), now),
        }
        Ok(Attempt { replica, endpoint, outcome })
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
