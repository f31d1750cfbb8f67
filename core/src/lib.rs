//! mcpstorm-core: an MCP gateway core that runs unchanged in production and inside a deterministic simulator.
//!
//! Map of the crate:
//! - [`jsonrpc`]: JSON-RPC 2.0 messages and their decoding.
//! - [`transport`]: the message-level transport seam and newline-delimited framing.
//! - [`conn`]: one connection — ids, pending table, writer lanes, reader, phased timeouts, cancellation.
//! - [`gateway`]: the facade — `Gateway::call` (routing plus the resilience layers) and `Gateway::call_unprotected`
//!   (one routed attempt), plus the background health work.
//! - [`client`]: a client for one server — dial, handshake, tool discovery, reconnection.
//! - [`session`]: the two protocol eras (legacy `initialize`, modern `server/discover` + per-request `_meta`),
//!   era detection and the per-server era cache.
//! - [`mcp`]: MCP message types.
//! - [`schema`]: JSON Schema checks of arguments and structured results; the capability record and its hash.
//! - [`router`]: discovery and candidates, health, routing formulas and the weighted choice.
//! - [`rt`]: the seams (dialer, clock, RNG); [`observe`]: the metrics seam.
//! - [`history`]: call records, the idempotency cache, failure attribution and resume.
//! - [`resilience`]: circuit breakers, retry budgets, backoff, adaptive concurrency, bulkheads, the client-wide
//!   in-flight cap, degraded responses.
//! - [`error`]: error classes; [`cancel`]: the cancellation token.

pub mod cancel;
pub mod capabilities;
pub mod client;
pub mod conn;
pub mod credential;
pub mod error;
pub mod gateway;
pub mod history;
pub mod jsonrpc;
pub mod mcp;
pub mod observe;
pub mod resilience;
pub mod router;
pub mod rt;
pub mod schema;
pub mod session;
pub mod transport;

pub use cancel::CancelToken;
pub use client::{ClientConfig, McpClient};
pub use conn::{CallOptions, Connection, ConnectionConfig, Lane};
pub use error::{AuthError, CallError, ErrorClass, LifecycleError, LocalError, TransportError};
