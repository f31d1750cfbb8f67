//! Scripted fake MCP servers.
//!
//! A fake speaks the real wire protocol (JSON-RPC 2.0 in newline-delimited frames; MCP 2025-11-25 with the
//! `initialize` handshake, 2026-07-28 with `server/discover` and per-request `_meta`, or both) exactly as real
//! servers do; only its behaviour is scripted: each tool's latency distribution, error rate and kind, progress, a
//! worker pool shared by all connections, and runtime faults through [`FakeControl`].
//!
//! The server is generic over the byte stream ([`FakeServer::serve_connection`]) and the listener ([`Listener`]):
//! tokio TCP for live benchmarks ([`live_server`], the CLI's `serve-fake`), turmoil TCP inside the simulator.
//!
//! Map: `config` (the scenario-file section) · `latency` (distributions) · `args` (argument checks, reply templates) ·
//! `shared` (the state every connection shares) · `server` (construction, accept loop) · `conn` (one connection:
//! reader, tasks, writer) · `conn_registry` (the open connections' outboxes) · `call` (one tool call) · `call_frame`
//! (the quick read of a plain `tools/call`) · `params` (a request's params as the server reads them) · `reply` (a
//! result on its way to the wire) · `methods` (both eras' lifecycles: initialize, server/discover, the `_meta`
//! envelope; tools/list) · `workers` (the resizable pool) · `faults` (the knobs) · `control` (the handle that turns
//! them) · `drift` (schema drift) · `sessions` (the session table, expiring by the server's clock) · `gate` (the
//! session and auth check before each request, the grant in each handshake) · `stats` · `pipe` (a server on an
//! in-memory pipe) · `doubles` (servers the tests play by hand).
//!
//! Redis: `redis` is a RESP2 double of `redis-server` 7.0, the engine the gateway nodes share breaker transitions
//! through (issue 27). It lives here because in the simulator Redis is a host of the simulated world, served over the
//! same [`Listener`] seam and expiring keys on the same simulated clock; a differential test against a real
//! `redis-server` keeps its replies byte-identical ([`RedisDouble`], [`live_redis`], [`RedisControl`]).

mod args;
mod call;
mod call_frame;
mod config;
mod conn;
mod conn_registry;
mod control;
mod dispatch;
pub mod doubles;
mod drift;
mod faults;
mod gate;
mod http;
mod http_state;
pub mod idp;
mod inflight;
mod latency;
mod listener;
mod methods;
mod params;
pub mod pipe;
mod redis;
mod reply;
mod server;
mod sessions;
mod shared;
mod sse;
mod stats;
mod workers;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use mcpstorm_core::TokioClock;

pub use config::{
    ConfigError, DEFAULT_HTTP_MAX_BODY, DEFAULT_HTTP_MAX_SESSIONS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_REPLY, ErrorKind,
    FakeServerConfig, HttpGet, HttpResponse, LegacyDiscover, ProtocolEra, ToolConfig, Transport, ValidationError,
    both_eras, default_max_in_flight, is_default_max_in_flight,
};
pub use control::FakeControl;
pub use drift::Drift;
pub use faults::{Faults, StatusBurst};
pub use latency::{LatencyDist, LatencyDraw, MAX_EMPIRICAL_POINTS, MAX_LATENCY, empirical_at, lognormal_params};
pub use listener::Listener;
pub use redis::{RedisConfig, RedisControl, RedisDouble, RequestLimits, live_redis};
pub use server::FakeServer;
pub use stats::FakeStats;

/// A server for live use (the CLI's `serve-fake`): its sessions expire by the system's wall clock, read once here and
/// then advanced by tokio's monotonic time. An invalid configuration is refused before anything is bound.
pub fn live_server(config: FakeServerConfig) -> Result<FakeServer, ConfigError> {
    // The one reading of the system clock: session expiry then runs on tokio's monotonic time from it.
    #[allow(clippy::disallowed_methods)]
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let clock = Arc::new(TokioClock::new(wall.as_millis() as u64));
    FakeServer::with_clock(config, clock)
}
