//! The state a fake server's connections share: its configuration, the catalog in force, sessions, accepted auth
//! schemes, the HTTP transport's state, the open connections' outboxes, the random stream, the worker pool, faults, the hang switch and counters.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcpstorm_core::AuthScheme;
use mcpstorm_core::Clock;
use mcpstorm_core::mcp::Tool;
use mcpstorm_core::session::META_SERVER_INFO;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::value::{RawValue, to_raw_value};
use serde_json::{Map, json};

use crate::config::{FakeServerConfig, ToolConfig};
use crate::conn_registry::ConnRegistry;
use crate::faults::FaultCell;
use crate::http_state::HttpState;
use crate::idp::TokenAuthority;
use crate::latency::PreparedLatency;
use crate::sessions::SessionTable;
use crate::stats::Counters;
use crate::workers::WorkerPool;

#[derive(Debug)]
pub(crate) struct Shared {
    /// As configured. The tools and version in force are the catalog's: schema drift changes them at run time.
    pub config: FakeServerConfig,
    catalog: Mutex<Arc<Catalog>>,
    pub sessions: SessionTable,
    /// The Streamable HTTP transport's sessions and streams (unused on NDJSON).
    pub http: HttpState,
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
    /// How much earlier than its latency a call's timer is set (zero but in a live run: `with_timer_lead`).
    pub timer_lead: Duration,
    /// With an identity provider: every HTTP request needs a bearer token it issued and still honours.
    pub tokens: Option<Arc<TokenAuthority>>,
}

/// The tools and version a server shows right now. Replaced whole by a drift, so a call keeps the snapshot it was
/// checked against.
#[derive(Debug, Clone)]
pub(crate) struct Catalog {
    /// The server's name (as configured; a drift keeps it).
    pub server: String,
    pub version: String,
    /// The `_meta` a modern result carries, `{"io.modelcontextprotocol/serverInfo": {"name", "version"}}`, written
    /// once per catalog rather than on every answer.
    pub stamp: Box<RawValue>,
    pub tools: Vec<ToolConfig>,
    /// What `tools/list` returns, in configuration order.
    pub listing: Vec<Tool>,
    /// Each tool's latency, ready to draw from, in configuration order.
    pub latency: Vec<PreparedLatency>,
    /// Tool name → index into `tools`, `listing` and `latency`.
    pub by_name: BTreeMap<String, usize>,
}

impl Catalog {
    pub fn new(server: String, version: String, tools: Vec<ToolConfig>) -> Catalog {
        let listing = tools.iter().map(listed_tool).collect();
        let latency = tools.iter().map(|t| t.latency.prepare()).collect();
        let by_name = tools.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        let stamp = json!({META_SERVER_INFO: {"name": server, "version": version}});
        // A map of strings: serialising it cannot fail.
        let stamp = to_raw_value(&stamp).unwrap_or_else(|_| RawValue::NULL.to_owned());
        Catalog { server, version, stamp, tools, listing, latency, by_name }
    }
}

impl Shared {
    /// The state of a new server (its configuration already validated) whose sessions expire by `clock`.
    pub fn new(config: FakeServerConfig, clock: Arc<dyn Clock>) -> Shared {
        Shared {
            catalog: Mutex::new(Arc::new(Catalog::new(
                config.name.clone(),
                config.version.clone(),
                config.tools.clone(),
            ))),
            sessions: SessionTable::new(clock.clone(), config.session_ttl_ms),
            http: HttpState::new(&config, clock),
            auth: Mutex::new(config.auth_schemes.clone()),
            conns: ConnRegistry::default(),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
            pool: WorkerPool::new(config.workers),
            faults: FaultCell::default(),
            hang: Hang::default(),
            counters: Arc::default(),
            timer_lead: Duration::ZERO,
            tokens: None,
            config,
        }
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_catalog(&self, catalog: Catalog) {
        *self.catalog.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(catalog);
    }

    pub fn auth(&self) -> Option<Vec<AuthScheme>> {
        self.auth_now().clone()
    }

    /// The schemes accepted now, borrowed: the gate reads them on every request, and a copy would allocate.
    pub fn auth_now(&self) -> MutexGuard<'_, Option<Vec<AuthScheme>>> {
        self.auth.lock().unwrap_or_else(|p| p.into_inner())
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
