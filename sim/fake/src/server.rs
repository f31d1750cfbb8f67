//! The fake server: its construction from a configuration, and the accept loop.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::transport::DEFAULT_MAX_FRAME;
use mcpstorm_core::{Clock, TokioClock};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

use crate::config::{ConfigError, FakeServerConfig, Transport};
use crate::control::FakeControl;
use crate::listener::Listener;
use crate::shared::Shared;
use crate::stats::FakeStats;

/// After a failed accept (out of file descriptors, say), wait this long before the next: no busy loop, and the
/// server recovers by itself when the condition clears.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A scripted MCP server. Cheap to clone: clones are the same server (same pool, RNG, faults and counters).
#[derive(Debug, Clone)]
pub struct FakeServer {
    shared: Arc<Shared>,
    max_frame: usize,
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
        Ok(FakeServer { shared: Arc::new(Shared::new(config, clock)), max_frame: DEFAULT_MAX_FRAME })
    }

    /// The built-in server ([`FakeServerConfig::builtin`]).
    pub fn builtin() -> Self {
        // The built-in configuration is covered by a test; `new` cannot reject it.
        match Self::new(FakeServerConfig::builtin()) {
            Ok(server) => server,
            Err(e) => unreachable!("builtin fake server config is invalid: {e}"),
        }
    }

    /// Sets every tool call's latency timer this much early (default zero): a live run's measured timer overshoot,
    /// so that a call takes its drawn latency on average rather than a millisecond more. Before serving: a server
    /// whose state is already shared keeps its lead.
    pub fn with_timer_lead(mut self, lead: Duration) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.timer_lead = lead;
        }
        self
    }

    /// Requires a bearer token `authority` issued and still honours on every HTTP request (401 `invalid_token`
    /// otherwise). Before serving, as [`FakeServer::with_timer_lead`].
    pub fn with_tokens(mut self, authority: Arc<crate::idp::TokenAuthority>) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.tokens = Some(authority);
        }
        self
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

    /// Serves one connection in the configured transport. NDJSON: until the client has closed its side and every request read has been answered, or
    /// the byte stream fails. Every call still running then is aborted and its worker returned. Dropping this future
    /// does the same.
    pub async fn serve_connection<R, W>(&self, reader: R, writer: W)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        match self.shared.config.transport {
            Transport::Ndjson => crate::conn::serve(self.shared.clone(), self.max_frame, reader, writer).await,
            Transport::Http => crate::http::serve_connection(self.shared.clone(), reader, writer).await,
        }
    }

    /// Accepts connections forever, serving each on its own task. Dropping this future aborts every connection.
    ///
    /// A new serve is a new process: it starts with no sessions (a restarted server has forgotten them).
    pub async fn serve<L: Listener>(&self, mut listener: L) {
        self.shared.sessions.drop_all();
        self.shared.http.sessions.drop_all();
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
