//! A client for one MCP server: dials (connect timeout), performs the handshake (handshake timeout, version
//! negotiation), discovers tools (following `nextCursor`), and transparently rebuilds its connection when the old one
//! has failed.
//!
//! Sessions of the mcpstorm session extension ([`crate::session::ext`]) ride on that: a server that grants one gets
//! its id (and the negotiated credential) on every request, the lease is renewed in the background and replaced
//! before it runs out ([`SessionLease`]), and a call the server refuses with session-not-found or an auth mismatch is sent
//! once more on a new session. See [`McpClient::call_tool`].

mod call_log;
mod config;
mod live;
mod ready;
mod snapshot;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

use serde_json::{Map, Value};
use tokio::time::{Instant, sleep, timeout};

pub use config::ClientConfig;
use live::Live;
use ready::{LazyNow, Unusable};
pub use snapshot::{ResumeError, SessionSnapshot};

use crate::capabilities::{
    self, Capabilities, DriftCounters, DriftStats, FetchCtx, ListingLimits, SchemaCache, ToolCache,
};
use crate::conn::{CallOptions, Connection, ConnectionConfig, ConnectionParts, Lane, NotificationHandler};
use crate::error::{CallError, LocalError, TransportError};
use crate::history::{CallHistory, IdempotencyCache};
use crate::mcp::{CallToolResult, Implementation, InitializeResult, Tool, method};
use crate::observe::{ConnId, Event, NoopObserver, Observer, RefetchReason, SessionEvent};
use crate::resilience::inflight::InFlightLimit;
use crate::rt::{Clock, Dialer, SeededRng, TokioClock};
use crate::schema::ArgumentError;
use crate::session::{
    self, Era, EraCache, GatewayProfile, LifecycleConfig, SessionCounters, SessionEvents, SessionGrant, SessionLease,
    SessionStats,
};
use crate::transport::{HttpContext, HttpEndpoint, PoolGauge, ResponseHook, http_transport, line_transport};

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
        }
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

    /// The current session, connecting (with lifecycle retries and backoff) if there is none, it has failed, or its
    /// lease is inside the re-handshake margin (or the server said it is gone). A session merely due for renewal is
    /// returned at once, the renewal running in the background.
    ///
    /// While the last connect failed and another caller is dialing again, fails at once with that failure.
    pub async fn session(&self) -> Result<Session, CallError> {
        self.live_session().await.map(|s| Session::clone(&s))
    }

    /// [`McpClient::session`], shared.
    async fn live_session(&self) -> Result<Arc<Session>, CallError> {
        if let Some(s) = self.ready_session(Instant::now) {
            return Ok(s);
        }
        let mut live = match self.live.try_lock() {
            Some(live) => live,
            None => {
                let (failures, last) = self.connect_failures();
                if let Some(e) = last {
                    return Err(e);
                }
                let live = self.live.lock().await;
                // The dial we queued behind failed: its failure is ours too (one dial per wave of callers).
                if let (now, Some(e)) = self.connect_failures()
                    && now != failures
                {
                    return Err(e);
                }
                live
            }
        };
        if let Some(s) = live.get().cloned() {
            match self.usable(s, Instant::now) {
                Ok(s) => return Ok(s),
                Err(Unusable::Expiring) => {
                    // Dropping our handle closes the old connection once its in-flight calls let go of it.
                    self.events.emit(SessionEvent::Rehandshake);
                    live.take();
                }
                Err(Unusable::Closed) => {}
            }
        }
        if live.take().is_some_and(|s| s.conn.request_meta_rejected()) {
            // The server refused our modern envelope (-32022/-32020): the cached era is stale. Detect it again on a
            // new connection; the old one closes when its last in-flight call lets go of it.
            tracing::info!(server = %self.server, "protocol version refused; detecting the era again");
            self.eras.invalidate(&self.server);
        }
        let mut attempt = 0;
        loop {
            let connected = self.connect_once().await;
            {
                let mut unreachable = self.unreachable.lock().unwrap_or_else(PoisonError::into_inner);
                unreachable.0 += u64::from(connected.is_err());
                unreachable.1 = connected.as_ref().err().cloned();
            }
            match connected {
                Ok(s) => {
                    let s = Arc::new(s);
                    live.set(s.clone());
                    return Ok(s);
                }
                Err(e) if attempt < self.config.lifecycle_retries && e.retry_allowed(true) => {
                    let wait = self.config.backoff.delay(attempt, &self.rng);
                    tracing::debug!(server = %self.server, attempt, ?wait, error = %e, "connect failed; backing off");
                    attempt += 1;
                    sleep(wait).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// (failed connects so far, the last connect's failure if it failed).
    fn connect_failures(&self) -> (u64, Option<CallError>) {
        self.unreachable.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    async fn connect_once(&self) -> Result<Session, CallError> {
        let connect = self.config.connect_timeout;
        let tools = Arc::new(ToolCache::default());
        let id = ConnId(self.conn_seq.fetch_add(1, Ordering::Relaxed));
        let parts = |guard, config| ConnectionParts {
            id,
            server: self.server.clone(),
            config,
            observer: self.observer.clone(),
            global: self.global.clone(),
            on_notification: Some(notification_handler(tools.clone())),
            guard,
        };
        let conn = match &self.http {
            None => {
                let stream = timeout(connect, self.dialer.dial())
                    .await
                    .map_err(|_| TransportError::ConnectTimeout(connect))??;
                let (sink, source) = line_transport(stream.reader, stream.writer, self.config.max_frame);
                let mut config = self.config.connection.clone();
                if stream.guard.is_some() {
                    // A child process over pipes (the guard owns it): pipes never lose bytes, so a silent child is
                    // busy or hung, which its calls' own timeouts cover. An early probe would only queue behind a
                    // server that runs one request at a time and kill the connection under its slow call.
                    config.probe_after = None;
                }
                Connection::start(sink, source, parts(stream.guard, config))
            }
            Some(endpoint) => {
                // Nothing is dialed yet: the transport's pool dials per connection, on the first request.
                let (observer, server) = (self.observer.clone(), self.server.clone());
                let gauge: PoolGauge =
                    Arc::new(move |pool| observer.event(&Event::HttpPool { conn: id, server: &server, pool }));
                let (observer, server) = (self.observer.clone(), self.server.clone());
                let on_response: ResponseHook =
                    Arc::new(move |head| observer.event(&Event::HttpResponse { conn: id, server: &server, head }));
                let cx = HttpContext {
                    dialer: self.dialer.clone(),
                    connect_timeout: connect,
                    clock: self.clock.clone(),
                    gauge: Some(gauge),
                    on_response: Some(on_response),
                };
                // Not ConnectFailed: a configuration that cannot be built is refused as it is, never retried.
                let (sink, source) = http_transport(endpoint.clone(), cx)
                    .map_err(|e| TransportError::Config(format!("{}: {e}", endpoint.url())))?;
                // No early probe: each request is its own exchange on a pooled connection, so one lost exchange
                // says nothing of the next, and a ping waits for a pool slot like any request: a slow server's full
                // pool would look like a dead stream.
                let config = ConnectionConfig { probe_after: None, ..self.config.connection.clone() };
                Connection::start(sink, source, parts(None, config))
            }
        };
        match session::establish(&conn, &self.lifecycle, &self.eras, &self.server).await {
            Ok(est) => {
                let meta = est.init.extra.get("_meta");
                let lease = Arc::new(SessionLease::from_result_meta(meta, Instant::now(), &self.lifecycle.credentials));
                if lease.grant().is_some() {
                    self.events.emit(SessionEvent::Granted);
                }
                match self.take_resumed_lease() {
                    Some(saved) => lease.install(saved, &conn),
                    None => lease.apply(&conn),
                }
                if lease.auth().check().is_err() {
                    self.events.emit(SessionEvent::AuthMismatch);
                }
                Ok(Session { conn, init: Arc::new(est.init), era: est.era, tools, lease })
            }
            Err(e) => {
                conn.shutdown();
                Err(e)
            }
        }
    }

    /// The server's tools, from cache unless the server announced a change or the session is new.
    pub async fn list_tools(&self) -> Result<Arc<Vec<Tool>>, CallError> {
        Ok(self.capabilities().await?.tools().clone())
    }

    /// The capability record of the current session (fetching the tool list if needed): server identity, tools with
    /// compiled schemas, annotations, router hints and the list's content hash.
    /// The server's capability record (tools and their schemas), fetched when the cache says so. Bounded by the
    /// connection's `call_deadline`, like a call: a replica that cannot be reached never holds its caller longer.
    pub async fn capabilities(&self) -> Result<Arc<Capabilities>, CallError> {
        // The usual case, a live session with a current record, needs no timer: nothing below would wait.
        let mut now = LazyNow::default();
        let ready = self.ready_session(|| now.get());
        if let Some(session) = &ready
            && let Some(caps) = self.ready_capabilities(session, || now.get())?
        {
            return Ok(caps);
        }
        let fetch = async {
            let session = match ready {
                Some(s) => s,
                None => self.live_session().await?,
            };
            self.capabilities_of(&session).await
        };
        // Boxed, like every path a call takes only when the cache or the session is not ready: a future holds room for
        // everything it may await, so an unboxed connect-and-fetch would enlarge every call's future for good.
        timeout(self.config.connection.call_deadline, Box::pin(fetch))
            .await
            .unwrap_or_else(|_| Err(LocalError::DeadlineExceeded.into()))
    }

    async fn capabilities_of(&self, session: &Session) -> Result<Arc<Capabilities>, CallError> {
        if let Some(caps) = self.ready_capabilities(session, Instant::now)? {
            return Ok(caps);
        }
        if self.config.profile == GatewayProfile::Naive {
            // Cached forever: across sessions, deaf to list_changed and to every drift signal.
            let mut pinned = self.pinned.lock().await;
            if let Some(caps) = pinned.as_ref() {
                return Ok(caps.clone());
            }
            let (caps, _) = session.tools.get_or_fetch(self.fetch_ctx(session)).await?;
            *pinned = Some(caps.clone());
            return Ok(caps);
        }
        let (caps, refetched) = session.tools.get_or_fetch(self.fetch_ctx(session)).await?;
        if let Some(reason) = refetched {
            self.refetched(reason);
        }
        Ok(caps)
    }

    /// The capability record as cached right now, without connecting, waiting or fetching (`None` when there is
    /// none yet or it is being fetched). For decisions that must not block, such as whether a tool is idempotent.
    pub fn cached_capabilities(&self) -> Option<Arc<Capabilities>> {
        if self.config.profile == GatewayProfile::Naive
            && let Some(pinned) = self.pinned.try_lock().ok().and_then(|p| p.clone())
        {
            return Some(pinned);
        }
        self.live.try_lock()?.get()?.tools.peek()
    }

    fn fetch_ctx<'a>(&'a self, session: &'a Session) -> FetchCtx<'a> {
        FetchCtx { conn: &session.conn, init: &session.init, schemas: &self.schemas, limits: &self.limits }
    }

    /// Counts a re-fetch and tells the observer: the one place both happen, so `drift_stats` and the events agree.
    fn refetched(&self, reason: RefetchReason) {
        self.drift.refetched(reason);
        self.observer.event(&Event::SchemaRefetched { server: &self.server, reason });
    }

    /// How many tools' schemas this client has compiled (re-fetches with an unchanged hash add nothing).
    pub fn schema_compilations(&self) -> u64 {
        self.schemas.compilations()
    }

    /// Schema-drift counters: re-fetches by reason, calls resent after one, calls stopped locally by the fresh
    /// schema.
    pub fn drift_stats(&self) -> DriftStats {
        self.drift.snapshot()
    }

    /// Calls a tool. Arguments must be a JSON object; the tool must be one the server lists. A tool-level failure
    /// comes back as `Ok` with `is_error: true`, as MCP specifies.
    ///
    /// Arguments are checked against the tool's `inputSchema` first: invalid ones fail with
    /// [`LocalError::InvalidArguments`] (naming the JSON pointer) and nothing is sent. A successful result's
    /// `structuredContent` is checked against the `outputSchema`; a mismatch is [`CallError::MalformedResponse`].
    ///
    /// When the outcome signals schema drift (see the table in `capabilities/drift.rs`), the tool list is fetched again and a call the
    /// server rejected is re-checked against the fresh schema: resent once if it passes, failed locally if not.
    /// One deadline covers every attempt.
    ///
    /// Sessions (default profile): a call answered session-not-found, or `MCP_AUTH_MISMATCH`, is sent once more on a
    /// new session (one re-handshake, shared by concurrent callers). With no credential matching the server's
    /// schemes the call fails with [`CallError::Auth`] and nothing is sent. The naive profile returns both server
    /// errors as they are.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        opts: CallOptions,
    ) -> Result<CallToolResult, CallError> {
        if !arguments.is_object() {
            return Err(LocalError::InvalidArguments(ArgumentError::not_an_object(name, &arguments)).into());
        }
        let opts = CallOptions {
            deadline: Some(opts.deadline.unwrap_or_else(|| Instant::now() + self.config.connection.call_deadline)),
            ..opts
        };
        let mut attempt = 0;
        loop {
            let start = self.begin_record();
            // The call's deadline bounds getting a session too: a replica that died mid-run makes every dial hang
            // until the connect timeout, and the reconnect loop (retries with backoff) could otherwise hold a call
            // many times its deadline.
            // A ready session needs no timer: `timeout_at` polls its future first, so it would return it too.
            let session = match self.ready_session(Instant::now) {
                Some(s) => Ok(s),
                None => {
                    let deadline = opts.deadline.unwrap_or_else(Instant::now);
                    tokio::time::timeout_at(deadline, Box::pin(self.live_session()))
                        .await
                        .unwrap_or_else(|_| Err(LocalError::DeadlineExceeded.into()))
                }
            };
            let session = match session {
                Ok(s) => s,
                Err(e) => {
                    self.record(start, name, &arguments, Err(&e), attempt);
                    return Err(e);
                }
            };
            if attempt > 0 {
                self.events.emit(SessionEvent::Resent);
            }
            let outcome = self.call_on(&session, name, &arguments, opts.clone()).await;
            match &outcome {
                Ok(Answer { cached: true, .. }) => {}
                _ => self.record(start, name, &arguments, outcome.as_ref().map(|a| &a.result), attempt),
            }
            match outcome {
                Ok(answer) => return Ok(answer.result),
                Err(e) => self.resend_after(&session, e, attempt)?,
            }
            attempt += 1;
        }
    }

    /// Decides whether a failed call is sent again (`Ok`) on a new session, or fails with the returned error.
    ///
    /// Only two server answers qualify, and only once per call: session-not-found and auth mismatch. Both are raised
    /// before the tool runs (see [`crate::session::ext`]), so resending is safe for any tool, read-only or not. A call
    /// that failed for any other reason after it was written (a transport failure, a timeout) may have run, and is
    /// not resent here.
    fn resend_after(&self, session: &Session, e: CallError, attempt: u32) -> Result<(), CallError> {
        let CallError::Protocol(obj) = &e else {
            return Err(e);
        };
        let naive = self.config.profile == GatewayProfile::Naive;
        if session::is_session_not_found(obj) {
            self.events.emit(SessionEvent::NotFound);
            if naive || attempt > 0 {
                return Err(e);
            }
        } else if let Some(accepted) = session::auth_mismatch_accepted(obj) {
            self.events.emit(SessionEvent::AuthMismatch);
            if naive {
                return Err(e);
            }
            if attempt > 0 {
                return Err(session::mismatch(&accepted, &self.lifecycle.credentials).into());
            }
        } else {
            return Err(e);
        }
        // The next `session()` re-handshakes: a new connection, a new grant, the schemes declared again.
        session.lease.mark_dead();
        Ok(())
    }

    /// One attempt of [`McpClient::call_tool`] on `session`: from the idempotency cache if it holds the answer, else
    /// sent (with the schema-drift re-check).
    async fn call_on(
        &self,
        session: &Session,
        name: &str,
        arguments: &Value,
        opts: CallOptions,
    ) -> Result<Answer, CallError> {
        let caps = match self.ready_capabilities(session, Instant::now)? {
            Some(caps) => caps,
            None => Box::pin(self.capabilities_of(session)).await?,
        };
        if let Some(result) = caps.tool(name).and_then(|tool| self.cached(tool.tool(), arguments)) {
            return Ok(Answer { result, cached: true });
        }
        let result = self.send_with_drift_check(session, caps, name, arguments, opts).await?;
        Ok(Answer { result, cached: false })
    }

    /// Sends against `caps`; when the outcome signals schema drift, fetches the tool list again and re-checks.
    async fn send_with_drift_check(
        &self,
        session: &Session,
        caps: Arc<Capabilities>,
        name: &str,
        arguments: &Value,
        opts: CallOptions,
    ) -> Result<CallToolResult, CallError> {
        let first = self.send_checked(session, &caps, name, arguments, opts.clone()).await;
        if self.config.profile == GatewayProfile::Naive {
            return first;
        }
        let Some(signal) = capabilities::signal(&first, &caps) else {
            return first;
        };
        // Boxed: the drift path is rare, and unboxed it would enlarge every call's future by its re-fetch.
        Box::pin(self.recheck(session, caps, signal, name, arguments, opts)).await.unwrap_or(first)
    }

    /// The drift path of [`McpClient::send_with_drift_check`]: fetches the tool list again and, when the server
    /// rejected the call and the fresh schema differs, checks and sends it once more. `None`: the first outcome
    /// stands.
    async fn recheck(
        &self,
        session: &Session,
        caps: Arc<Capabilities>,
        (reason, server): (RefetchReason, Option<Implementation>),
        name: &str,
        arguments: &Value,
        opts: CallOptions,
    ) -> Option<Result<CallToolResult, CallError>> {
        let (fresh, fetched) = match session.tools.refetch_after(self.fetch_ctx(session), &caps, server).await {
            Ok(got) => got,
            Err(e) => return Some(Err(e)),
        };
        if fetched {
            self.refetched(reason);
        }
        if !reason.rejected_call() || fresh.hash() == caps.hash() {
            return None;
        }
        let again = self.send_checked(session, &fresh, name, arguments, opts).await;
        self.drift.after_recheck(&again);
        Some(again)
    }

    /// Checks the arguments against `caps`, sends, and checks the result's structured content.
    async fn send_checked(
        &self,
        session: &Session,
        caps: &Capabilities,
        name: &str,
        arguments: &Value,
        opts: CallOptions,
    ) -> Result<CallToolResult, CallError> {
        let tool = caps.tool(name).ok_or_else(|| LocalError::UnknownTool(name.to_owned()))?;
        let schemas = tool.schemas().map_err(|e| LocalError::UnusableSchema(e.clone()))?;
        schemas.validate_arguments(arguments).map_err(LocalError::InvalidArguments)?;
        // Built by hand: `json!` would copy `arguments` by serializing it into a new tree, not by cloning it.
        let mut params = Map::with_capacity(2);
        params.insert("name".to_owned(), Value::String(name.to_owned()));
        params.insert("arguments".to_owned(), arguments.clone());
        let params = Value::Object(params);
        let result = session.conn.call_tool_result(params, opts).await?;
        schemas.validate_result(&result).map_err(|e| CallError::MalformedResponse(e.to_string()))?;
        self.remember(tool.tool(), arguments, &result);
        Ok(result)
    }

    /// Renews the current session now (connecting first if needed), as `mcpstorm diagnose` forces it: the fresh
    /// grant, or `None` for a server that grants no sessions. A refusal marks the session for replacement, as a
    /// background renewal's would.
    pub async fn renew_session(&self) -> Result<Option<SessionGrant>, CallError> {
        let session = self.live_session().await?;
        if session.lease.grant().is_none() {
            return Ok(None);
        }
        session.lease.renew(&session.conn, &self.events).await.map(Some)
    }

    /// Starts the session's renewal in the background unless one is already running.
    fn spawn_renewal(&self, session: &Session) {
        if !session.lease.start_renewal() {
            return;
        }
        let (lease, conn, events) = (session.lease.clone(), session.conn.clone(), self.events.clone());
        tokio::spawn(async move { lease.renew_in_background(&conn, &events).await });
    }

    /// Round-trip time of one `ping` on the priority lane (`server/discover` in the modern era, which has no ping).
    pub async fn ping(&self) -> Result<std::time::Duration, CallError> {
        let session = self.live_session().await?;
        let started = Instant::now();
        let opts = CallOptions { lane: Lane::Priority, ..CallOptions::default() };
        let method = if session.era == Era::Modern { session::DISCOVER } else { method::PING };
        session.conn.request(method, None, opts).await?;
        Ok(started.elapsed())
    }

    /// Closes the current connection (pending calls fail with `Shutdown`); the next call reconnects.
    pub async fn close(&self) {
        if let Some(s) = self.live.lock().await.take() {
            s.conn.shutdown();
        }
    }
}

/// A tool result, and whether it came from the idempotency cache instead of the server.
struct Answer {
    result: CallToolResult,
    cached: bool,
}

fn notification_handler(tools: Arc<ToolCache>) -> NotificationHandler {
    Arc::new(move |n| {
        if n.method == method::TOOLS_LIST_CHANGED {
            tools.mark_stale();
        } else {
            tracing::trace!(method = %n.method, "server notification");
        }
        Box::pin(async {})
    })
}
