//! The fake server: state shared by all its connections (tools, worker pool, RNG, faults, counters), and the
//! accept loop.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcpstorm_core::mcp::Tool;
use mcpstorm_core::transport::DEFAULT_MAX_FRAME;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::config::{ConfigError, FakeServerConfig};
use super::control::{FakeControl, FaultCell};
use super::listener::Listener;
use super::stats::{Counters, FakeStats};
use super::workers::WorkerPool;

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
    pub config: FakeServerConfig,
    /// What `tools/list` returns, in configuration order.
    pub listing: Vec<Tool>,
    /// Tool name → index into `config.tools`.
    pub by_name: BTreeMap<String, usize>,
    /// One generator for the whole server. Draws happen in the order requests are read, so a single-threaded
    /// simulator replays them exactly.
    rng: Mutex<ChaCha8Rng>,
    pub pool: WorkerPool,
    pub faults: FaultCell,
    pub hang: watch::Sender<bool>,
    pub counters: Arc<Counters>,
}

impl Shared {
    pub fn rng(&self) -> MutexGuard<'_, ChaCha8Rng> {
        // Never held across an await; a panic mid-draw cannot leave ChaCha in an invalid state.
        self.rng.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves at once unless the server is hung; then when it is un-hung.
    pub async fn unhung(&self) {
        let mut rx = self.hang.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail while we wait.
        let _ = rx.wait_for(|hung| !*hung).await;
    }
}

impl FakeServer {
    /// Validates the configuration and builds the server. Nothing runs until a connection is served.
    pub fn new(config: FakeServerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let listing = config.tools.iter().map(listed_tool).collect();
        let by_name = config.tools.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        let shared = Shared {
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
            pool: WorkerPool::new(config.workers),
            faults: FaultCell::default(),
            hang: watch::channel(false).0,
            counters: Arc::default(),
            listing,
            by_name,
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

    /// Serves one connection until the client closes it (or the byte stream fails). Every call still running then
    /// is aborted and its worker returned. Dropping this future does the same.
    pub async fn serve_connection<R, W>(&self, reader: R, writer: W)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        super::conn::serve(self.shared.clone(), self.max_frame, reader, writer).await;
    }

    /// Accepts connections forever, serving each on its own task. Dropping this future aborts every connection.
    pub async fn serve<L: Listener>(&self, mut listener: L) {
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

fn listed_tool(t: &super::config::ToolConfig) -> Tool {
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
