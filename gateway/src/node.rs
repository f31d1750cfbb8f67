//! One gateway node: a [`Federation`] over its servers, its core gateway built from the `[gateway]` and `[client]`
//! tables, breaker sync with the other nodes, and its background work started (statistics and health checks,
//! re-listing servers that have no listing or said their tools changed).
//!
//! The `mcpstorm gateway` process and a simulated gateway node (`[nodes]` in a scenario) both start here: only the
//! seams differ ([`Seams`]: how replicas are dialed, the clock, the observer, Redis's dialer), so the simulator runs
//! the process's path unchanged. A simulated load host's in-process gateway is built by [`core_gateway`], the same
//! construction of the core gateway without the federation.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::client::ListChanged;
use mcpstorm_core::router::{Registry, ServerEntry, StaticRegistry};
use mcpstorm_core::sync::BreakerSync;
use mcpstorm_core::{CancelToken, Clock, Connector, Dialer, Gateway as CoreGateway, GatewayConfig, Observer};
use tokio::sync::mpsc;

use super::federation::Federation;
use super::metrics::Metrics;
use super::tap::AttemptTap;
use crate::config::file::gateway_config;
use crate::config::{ClientSpec, GatewaySpec, UpstreamSpec};
use crate::seed::Seed;

/// The longest a node's start waits for its servers' first listing before it serves what is listed.
pub const STARTUP_LISTING: Duration = Duration::from_secs(3);

/// A change to the core's settings built from the tables (see [`Seams::adjust`]).
pub type Adjust = Box<dyn FnOnce(&mut GatewayConfig) + Send>;

/// What a node is made of besides its tables: where the process and the simulator differ.
pub struct Seams {
    /// Makes each replica's client.
    pub connector: Arc<dyn Connector>,
    pub clock: Arc<dyn Clock>,
    /// The core gateway's observer (breaker sync's tap wraps it, to publish this node's own transitions).
    pub observer: Arc<dyn Observer>,
    /// Breaker sync with the other nodes, and the dialer of its Redis (`[gateway.sync]`).
    pub sync: Option<(BreakerSync, Arc<dyn Dialer>)>,
    /// Names the servers whose tool list changed (their replicas said so), to list again.
    pub list_changed: Option<mpsc::UnboundedReceiver<String>>,
    /// Sees every attempt (the simulator's recorder).
    pub tap: Option<Arc<dyn AttemptTap>>,
    pub metrics: Arc<Metrics>,
    /// Configured servers that start out of rotation until [`Federation::admit`] (a simulated server's later
    /// `join_at`); the process has none.
    pub withheld: Vec<String>,
    /// Servers declared to the router before their first listing, so calls route from the first instant (a
    /// simulated load host's node, whose agents start with the run: the scenario says what each server offers);
    /// each listing then declares its server again, as in the process, which declares nothing before it lists.
    pub declared: Vec<ServerEntry>,
    /// How long the start waits for the first listing of every server before it returns ([`STARTUP_LISTING`] for
    /// the process; zero for a node that declared its servers).
    pub startup_listing: Duration,
    /// Changes the core's settings built from the tables before the node is built: only the simulator's test
    /// machinery (its planted defect) uses it.
    pub adjust: Option<Adjust>,
}

impl std::fmt::Debug for Seams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seams").field("sync", &self.sync.is_some()).finish_non_exhaustive()
    }
}

/// The hook each replica's client of a node calls when its server's tool list changed (or its client saw the
/// listing drift): sends the server's name to `changed`, the receiving end of [`Seams::list_changed`], to list again.
pub fn list_changed_hook(changed: &mpsc::UnboundedSender<String>, server: &str) -> ListChanged {
    let (changed, server) = (changed.clone(), server.to_owned());
    ListChanged(Arc::new(move || {
        let _ = changed.send(server.clone());
    }))
}

/// A started node: its federation, and the token that stops its background work.
#[derive(Debug)]
pub struct Node {
    pub federation: Arc<Federation>,
    pub stop: CancelToken,
}

/// What the core gateway of a node is made of besides `[gateway]`: its settings (from [`gateway_config`]), where
/// its servers come from, and the seams.
pub struct CoreParts {
    pub config: GatewayConfig,
    pub registry: Box<dyn Registry>,
    pub connector: Arc<dyn Connector>,
    pub clock: Arc<dyn Clock>,
    pub observer: Arc<dyn Observer>,
}

impl std::fmt::Debug for CoreParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreParts").field("config", &self.config).finish_non_exhaustive()
    }
}

/// The core gateway of a node: its router from `[gateway]` (formula, settings) and the layers of `parts.config`,
/// with `sync`'s tap around the observer so this node's own breaker transitions are published. `seed` forks the
/// router's and the resilience layers' streams. The one construction of a core gateway, for [`start`] and for a
/// simulated load host's in-process gateway alike.
pub fn core_gateway(
    gateway: &GatewaySpec,
    parts: CoreParts,
    sync: Option<&BreakerSync>,
    seed: &Seed,
) -> Result<CoreGateway, String> {
    let router = gateway.router(seed.fork("router").seeded_rng(), tokio::time::Instant::now())?;
    let observer = match sync {
        Some(sync) => sync.observer(parts.observer),
        None => parts.observer,
    };
    let core = CoreGateway::new(
        router,
        parts.registry,
        parts.connector,
        parts.clock,
        parts.config,
        seed.fork("resilience").seeded_rng(),
    );
    Ok(core.with_observer(observer))
}

/// Builds the node of `servers` with `gateway` and `client`, lists every server, and starts its background work.
/// `seed` forks the router's, the resilience layers' and the clients' random streams.
pub async fn start(
    servers: Vec<UpstreamSpec>,
    gateway: &GatewaySpec,
    client: &ClientSpec,
    seams: Seams,
    seed: &Seed,
) -> Result<Node, String> {
    let mut config = gateway_config(gateway, client);
    if let Some(adjust) = seams.adjust {
        adjust(&mut config);
    }
    let parts = CoreParts {
        config,
        // The servers are declared to the router as the federation lists them (and before, when the seams say so).
        registry: Box::new(StaticRegistry::new(seams.declared)),
        connector: seams.connector,
        clock: seams.clock,
        observer: seams.observer,
    };
    let core = core_gateway(gateway, parts, seams.sync.as_ref().map(|(sync, _)| sync), seed)?;
    let mut federation = Federation::new(Arc::new(core), servers, gateway.tools.prefix, seams.metrics);
    let stop = CancelToken::new();
    if let Some((sync, dialer)) = seams.sync {
        let sync = Arc::new(sync);
        sync.spawn(federation.gateway().clone(), dialer, stop.clone());
        federation = federation.with_sync(sync);
    }
    if let Some(tap) = seams.tap {
        federation = federation.with_tap(tap);
    }
    let federation = Arc::new(federation);
    for server in &seams.withheld {
        federation.withdraw(server);
    }
    // Listing every server is awaited up to a bound, then goes on in the background: a server that is down or
    // unresolvable at start must not keep the process from serving the others (its replicas are each tried up to
    // their connect and handshake timeouts, one after another). What is still unlisted then answers as missing and
    // is listed when it comes (see `relist_missing`); `/readyz` says 503 until every server is listed.
    let discovery = {
        let federation = federation.clone();
        tokio::spawn(async move { federation.discover().await })
    };
    let _ = tokio::time::timeout(seams.startup_listing, discovery).await;
    tokio::spawn(federation.gateway().clone().run_background(stop.clone()));
    {
        let (federation, stop) = (federation.clone(), stop.clone());
        tokio::spawn(async move { federation.relist_missing(stop).await });
    }
    if let Some(mut changed) = seams.list_changed {
        let (federation, stop) = (federation.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let server = tokio::select! {
                    biased;
                    () = stop.cancelled() => return,
                    s = changed.recv() => s,
                };
                let Some(server) = server else { return };
                federation.relist(&server).await;
            }
        });
    }
    Ok(Node { federation, stop })
}
