//! A client for one MCP server: dials (connect timeout), performs the handshake (handshake timeout, version
//! negotiation), discovers tools (following `nextCursor`), and transparently rebuilds its connection when the old one
//! has failed.
//!
//! Sessions of the mcpstorm session extension (its wire names are in [`crate::session`]) ride on that: a server that grants one gets
//! its id (and the negotiated credential) on every request, the lease is renewed in the background and replaced
//! before it runs out (the lease's own module, `session/lease.rs`), and a call the server refuses with session-not-found or an auth mismatch is sent
//! once more on a new session. See [`McpClient::call_tool`].

//!
//! The client's work lives in one file per concern: `connect.rs` (dialing, the handshake, the session's lifecycle),
//! `call.rs` (a tool call: its one deadline, the session resend, the schema-drift re-check) and `tools.rs` (the
//! capability record).

mod call;
mod call_log;
mod config;
mod connect;
mod live;
mod ready;
mod snapshot;
mod tools;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

pub use config::ClientConfig;
use live::Live;
pub use snapshot::{ResumeError, SessionSnapshot};

use crate::capabilities::{Capabilities, DriftCounters, ListingLimits, SchemaCache, ToolCache};
use crate::conn::Connection;
use crate::error::CallError;
use crate::history::{CallHistory, IdempotencyCache};
use crate::mcp::InitializeResult;
use crate::observe::{NoopObserver, Observer};
use crate::resilience::inflight::InFlightLimit;
use crate::rt::{Clock, Dialer, SeededRng, TokioClock};
use crate::session::{Era, EraCache, LifecycleConfig, SessionCounters, SessionEvents, SessionLease, SessionStats};
use crate::transport::HttpEndpoint;

/// A live connection with its handshake result and tool cache.
#[derive(Debug, Clone)]
pub struct Session {
    pub conn: Connection,
    pub init: Arc<InitializeResult>,
    /// The protocol era this session speaks (see [`crate::session`]).
    pub era: Era,
    tools: Arc<ToolCache>,
    /// The session extension's lease and credential on this connection (empty for servers that grant nothing).
    lease: Arc<SessionLease>,
}

#[derive(Debug)]
pub struct McpClient {
    server: String,
    dialer: Arc<dyn Dialer>,
    /// Streamable HTTP to this endpoint over the dialer's connections; `None`: newline-delimited JSON-RPC.
    http: Option<Arc<HttpEndpoint>>,
    config: ClientConfig,
    /// What establishing a session reads of `config`, built once.
    lifecycle: LifecycleConfig,
    /// How much of a tool listing `config` accepts.
    limits: ListingLimits,
    observer: Arc<dyn Observer>,
    rng: SeededRng,
    global: Option<InFlightLimit>,
    /// The current session; its slot is held only while (re)connecting.
    live: Live,
    /// The last failed connect, until a connect succeeds. While it stands, a caller that finds another one dialing
    /// fails at once with it instead of queueing behind the dial (gRPC's TRANSIENT_FAILURE): a dead replica answers
    /// its callers in microseconds, so a gateway can send them to a sibling, rather than after the connect timeout
    /// times the lifecycle retries.
    /// Counted with each connect that failed: a caller that queued behind a dial and finds the count moved shares
    /// that dial's failure instead of dialing again.
    unreachable: std::sync::Mutex<(u64, Option<CallError>)>,
    conn_seq: AtomicU64,
    /// The era the server was found to speak, so reconnects skip detection.
    eras: EraCache,
    /// Compiled tool schemas, kept across sessions and reused while the tool list's hash is unchanged.
    schemas: SchemaCache,
    /// Wall time for the naive profile's expiry belief and for history timestamps; monotonic time is tokio's.
    clock: Arc<dyn Clock>,
    events: SessionEvents,
    history: Option<std::sync::Mutex<CallHistory>>,
    idempotency: Option<std::sync::Mutex<IdempotencyCache>>,
    /// A snapshot to resume from, taken by the first connection.
    resume: std::sync::Mutex<Option<SessionSnapshot>>,
    /// The naive profile's record: the first one fetched, kept forever (see [`GatewayProfile::Naive`]).
    pinned: tokio::sync::Mutex<Option<Arc<Capabilities>>>,
    drift: DriftCounters,
    /// Told after the server's `notifications/tools/list_changed` has marked the listing stale, and after a re-fetch
    /// on a drift signal.
    list_changed: Option<ListChanged>,
    /// Told the URI of each `notifications/resources/updated` the server sends (see [`McpClient::watch_resources`]).
    resource_updated: WatchSlot,
}

/// What [`McpClient::watch_resources`] calls with the URI of each `notifications/resources/updated`.
#[derive(Clone)]
pub struct ResourceUpdated(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for ResourceUpdated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResourceUpdated")
    }
}

/// The resource-update hook, settable while connections are live (every connection's handler reads it).
pub(crate) type WatchSlot = Arc<std::sync::RwLock<Option<ResourceUpdated>>>;

/// What [`McpClient::on_list_changed`] calls: a gateway re-lists the server and tells its own agents.
#[derive(Clone)]
pub struct ListChanged(pub Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for ListChanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListChanged")
    }
}

impl McpClient {
    /// A client of `server`, dialing with `dialer`. `rng` is the stream for reconnect backoff jitter: it has no
    /// default, so that processes of one fleet never share a stream (seed it from the OS in a live process, fork it
    /// from the run's seed in a simulation).
    pub fn new(server: impl Into<String>, dialer: Arc<dyn Dialer>, config: ClientConfig, rng: SeededRng) -> Self {
        let server = server.into();
        let observer: Arc<dyn Observer> = Arc::new(NoopObserver);
        McpClient {
            events: SessionEvents {
                server: server.clone(),
                observer: observer.clone(),
                counters: Arc::new(SessionCounters::default()),
            },
            server,
            dialer,
            http: None,
            lifecycle: config.lifecycle(),
            limits: config.listing_limits(),
            config,
            observer,
            rng,
            global: None,
            live: Live::default(),
            unreachable: std::sync::Mutex::new((0, None)),
            conn_seq: AtomicU64::new(0),
            eras: EraCache::default(),
            schemas: SchemaCache::default(),
            // Wall time counted from 0 at creation: enough for history timestamps when the embedder gives no clock.
            // Session expiry never reads it (only the naive profile does, on purpose).
            clock: Arc::new(TokioClock::new(0)),
            history: None,
            idempotency: None,
            resume: std::sync::Mutex::new(None),
            pinned: tokio::sync::Mutex::new(None),
            drift: DriftCounters::default(),
            list_changed: None,
            resource_updated: WatchSlot::default(),
        }
    }

    /// Calls `hook` with the URI of every `notifications/resources/updated` the server sends from now on, on the
    /// current connection and every later one (replacing a previous hook): a gateway that subscribed to a resource
    /// upstream hands the update to the agents that subscribed through it.
    pub fn watch_resources(&self, hook: ResourceUpdated) {
        *self.resource_updated.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(hook);
    }

    /// Calls `hook` whenever the server sends `notifications/tools/list_changed` (after the client has marked its
    /// listing stale, so a listing made from the hook is fresh), and after the client fetched the listing again on a
    /// drift signal (a call refused for its parameters, a tool error naming its schema, a new server version).
    pub fn on_list_changed(mut self, hook: ListChanged) -> Self {
        self.list_changed = Some(hook);
        self
    }

    /// A client of the Streamable HTTP server at `endpoint`, dialing its host and port over TCP (TLS for
    /// `https`). Give it a clock anchored to real time ([`McpClient::with_clock`]) for `https`.
    pub fn http(server: impl Into<String>, endpoint: HttpEndpoint, config: ClientConfig, rng: SeededRng) -> Self {
        let dialer = Arc::new(endpoint.tcp_dialer());
        McpClient::new(server, dialer, config, rng).with_http(endpoint)
    }

    /// Speaks Streamable HTTP to `endpoint` instead of newline-delimited JSON-RPC; the dialer opens each of the
    /// transport's pooled connections (TLS is layered over them for `https`).
    pub fn with_http(mut self, endpoint: HttpEndpoint) -> Self {
        self.http = Some(Arc::new(endpoint));
        self
    }

    /// The clock for wall time (the simulator passes its per-host `SimClock`, so skew reaches the client).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// How many session events of each kind this client has seen.
    pub fn session_stats(&self) -> SessionStats {
        self.events.counters.snapshot()
    }

    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.events.observer = observer.clone();
        self.observer = observer;
        self
    }

    /// Shares a client-wide in-flight limit across this client's connections (and other clients given the same).
    pub fn with_global_limit(mut self, limit: InFlightLimit) -> Self {
        self.global = Some(limit);
        self
    }

    /// The most calls this client can have in flight: the shared limit when it has one, else one connection's.
    pub fn in_flight_cap(&self) -> usize {
        self.global.as_ref().map_or(self.config.connection.max_in_flight, InFlightLimit::max)
    }

    /// How long a call waits for one of the in-flight slots before it fails with a queue timeout.
    pub fn queue_wait(&self) -> std::time::Duration {
        self.config.connection.queue_wait
    }

    /// Whether this client's in-flight cap is a limit shared with other clients ([`McpClient::with_global_limit`]).
    pub fn shares_limit(&self) -> bool {
        self.global.is_some()
    }

    /// Calls waiting for a response on the current connection, and slots of the client-wide in-flight limit held
    /// now (both 0 when the client is idle): for audits that every call gave back what it took. Never waits: while a
    /// connect holds the session, there is no connection to count.
    pub fn in_flight_snapshot(&self) -> (usize, usize) {
        let pending = self.live.try_lock().and_then(|live| live.get().map(|s| s.conn.pending())).unwrap_or(0);
        (pending, self.global.as_ref().map_or(0, InFlightLimit::in_flight))
    }

    /// The current session, if there is one; never connects.
    pub fn current_session(&self) -> Option<Session> {
        self.live.current().map(|s| Session::clone(&s))
    }

    /// Shares an era cache (keyed by server name) with other clients; by default each client has its own.
    pub fn with_era_cache(mut self, cache: EraCache) -> Self {
        self.eras = cache;
        self
    }

    pub fn era_cache(&self) -> &EraCache {
        &self.eras
    }

    pub fn server(&self) -> &str {
        &self.server
    }
}
