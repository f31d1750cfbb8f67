//! The fake server: state shared by all its connections (tools, worker pool, RNG, faults, counters), and the
//! accept loop.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcpstorm_core::mcp::Tool;
use mcpstorm_core::rt::{Clock, TokioClock};
use mcpstorm_core::session::ext::AuthScheme;
use mcpstorm_core::transport::DEFAULT_MAX_FRAME;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

use crate::config::{ConfigError, FakeServerConfig, ToolConfig};
use crate::conn::ConnRegistry;
use crate::control::{FakeControl, FaultCell};
use crate::listener::Listener;
use crate::sessions::SessionTable;
use crate::stats::{Counters, FakeStats};
use crate::workers::WorkerPool;

/// After a failed accept (out of file descriptors, say), wait this long before the next: no busy loop, and the
/// server recovers by itself when the condition clears.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A scripted MCP server. Cheap to clone: clones are the same server (same pool, RNG, faults and counters).
#[derive(Debug, Clone)]
pub struct FakeServer {
    shared: Arc<Shared>,
    max_frame: usize,
}

#[derive(Debug)]
pub(crate) struct Shared {
    /// As configured. The tools and version in force are the catalog's: schema drift changes them at run time.
    pub config: FakeServerConfig,
    catalog: Mutex<Arc<Catalog>>,
    pub sessions: SessionTable,
    /// The schemes accepted now (`None`: no auth); an auth rotation replaces them.
    auth: Mutex<Option<Vec<AuthScheme>>>,
    /// The outboxes of the open connections, for `notifications/tools/list_changed` after a drift.
    pub conns: ConnRegistry,
    /// One generator for the whole server. Draws happen in the order requests are read, so a single-threaded
    /// simulator replays them exactly.
    rng: Mutex<ChaCha8Rng>,
    pub pool: WorkerPool,
    pub faults: FaultCell,
    pub hang: Hang,
    pub counters: Arc<Counters>,
}

/// The tools and version a server shows right now. Replaced whole by a drift, so a call keeps the snapshot it was
/// checked against.
#[derive(Debug, Clone)]
pub(crate) struct Catalog {
    pub version: String,
    pub tools: Vec<ToolConfig>,
    /// What `tools/list` returns, in configuration order.
    pub listing: Vec<Tool>,
    /// Tool name → index into `tools` and `listing`.
    pub by_name: BTreeMap<String, usize>,
}

impl Catalog {
    pub fn new(version: String, tools: Vec<ToolConfig>) -> Catalog {
        let listing = tools.iter().map(listed_tool).collect();
        let by_name = tools.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        Catalog { version, tools, listing, by_name }
    }
}

impl Shared {
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_catalog(&self, catalog: Catalog) {
        *self.catalog.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(catalog);
    }

    pub fn auth(&self) -> Option<Vec<AuthScheme>> {
        self.auth.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_auth(&self, schemes: Option<Vec<AuthScheme>>) {
        *self.auth.lock().unwrap_or_else(|p| p.into_inner()) = schemes;
    }

    pub fn rng(&self) -> MutexGuard<'_, ChaCha8Rng> {
        // Never held across an await; a panic mid-draw cannot leave ChaCha in an invalid state.
        self.rng.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves at once unless the server is hung; then when it is un-hung.
    pub async fn unhung(&self) {
        self.hang.unhung().await;
    }
}

/// The hang switch. Not a `watch` channel: tokio's `watch` wakes its receivers through randomly chosen shards, so
/// the order in which hundreds of parked requests resume (and the simulator's output) would differ run to run.
/// A [`Notify`](tokio::sync::Notify) wakes its waiters in the order they parked.
#[derive(Debug, Default)]
pub struct Hang {
    hung: std::sync::atomic::AtomicBool,
    released: tokio::sync::Notify,
}

impl Hang {
    pub fn set(&self, hung: bool) {
        self.hung.store(hung, std::sync::atomic::Ordering::SeqCst);
        if !hung {
            self.released.notify_waiters();
        }
    }

    pub fn get(&self) -> bool {
        self.hung.load(std::sync::atomic::Ordering::SeqCst)
    }

    async fn unhung(&self) {
        loop {
            // Registered before the check, so a release between the check and the wait is not missed.
            let released = self.released.notified();
            if !self.get() {
                return;
            }
            released.await;
        }
    }
}

impl FakeServer {
    /// Validates the configuration and builds the server. Nothing runs until a connection is served.
    ///
    /// Its wall clock (by which sessions expire) starts at the Unix epoch: durations are right, the `expiresAtMs` it
    /// shows are not. [`FakeServer::with_clock`] gives it a real or a simulated one.
    pub fn new(config: FakeServerConfig) -> Result<Self, ConfigError> {
        Self::with_clock(config, Arc::new(TokioClock::new(0)))
    }

    /// A server whose sessions expire by `clock`'s wall time.
    pub fn with_clock(config: FakeServerConfig, clock: Arc<dyn Clock>) -> Result<Self, ConfigError> {
        config.validate()?;
        let shared = Shared {
            catalog: Mutex::new(Arc::new(Catalog::new(config.version.clone(), config.tools.clone()))),
            sessions: SessionTable::new(clock, config.session_ttl_ms),
            auth: Mutex::new(config.auth_schemes.clone()),
            conns: ConnRegistry::default(),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
            pool: WorkerPool::new(config.workers),
            faults: FaultCell::default(),
            hang: Hang::default(),
            counters: Arc::default(),
            config,
        };
        Ok(FakeServer { shared: Arc::new(shared), max_frame: DEFAULT_MAX_FRAME })
    }

    /// The built-in server ([`FakeServerConfig::builtin`]).
    pub fn builtin() -> Self {
        // The built-in configuration is covered by a test; `new` cannot reject it.
        match Self::new(FakeServerConfig::builtin()) {
            Ok(server) => server,
            Err(e) => unreachable!("builtin fake server config is invalid: {e}"),
        }
    }

    /// Largest incoming frame (default 16 MiB, as the core's client). Larger frames are answered with `-32600`.
    pub fn with_max_frame(mut self, max_frame: usize) -> Self {
        self.max_frame = max_frame;
        self
    }

    pub fn config(&self) -> &FakeServerConfig {
        &self.shared.config
    }

    /// A handle to steer the running server (faults, hang, workers) and read its counters.
    pub fn control(&self) -> FakeControl {
        FakeControl::new(self.shared.clone())
    }

    pub fn stats(&self) -> FakeStats {
        self.shared.counters.snapshot()
    }

    /// Serves one connection until the client has closed its side and every request read has been answered, or
    /// the byte stream fails. Every call still running then is aborted and its worker returned. Dropping this future
    /// does the same.
    pub async fn serve_connection<R, W>(&self, reader: R, writer: W)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        crate::conn::serve(self.shared.clone(), self.max_frame, reader, writer).await;
    }

    /// Accepts connections forever, serving each on its own task. Dropping this future aborts every connection.
    ///
    /// A new serve is a new process: it starts with no sessions (a restarted server has forgotten them).
    pub async fn serve<L: Listener>(&self, mut listener: L) {
        self.shared.sessions.drop_all();
        let mut conns = JoinSet::new();
        loop {
            // Reap finished connections so the set stays as large as the number open, not the number ever opened.
            while conns.try_join_next().is_some() {}
            match listener.accept().await {
                Ok((reader, writer, peer)) => {
                    tracing::debug!(server = %self.shared.config.name, %peer, "fake server accepted a connection");
                    let server = self.clone();
                    conns.spawn(async move { server.serve_connection(reader, writer).await });
                }
                Err(e) => {
                    tracing::warn!(server = %self.shared.config.name, error = %e, "accept failed; retrying");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }
}

fn listed_tool(t: &ToolConfig) -> Tool {
    // FastMCP's convention for structured results: `{"result": ...}`, announced by an output schema (or the
    // configured one, which may contradict it).
    let output_schema = t.structured_content.then(|| {
        t.output_schema.clone().unwrap_or_else(
            || json!({"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}),
        )
    });
    Tool {
        name: t.name.clone(),
        title: t.title.clone(),
        description: t.description.clone(),
        input_schema: t.schema(),
        output_schema,
        annotations: t.annotations.clone(),
        extra: Map::new(),
    }
}
