//! mcpstorm-core: an MCP gateway core that runs unchanged in production and inside a deterministic simulator.
//!
//! The crate root holds what an embedder uses (about forty names): the [`Gateway`] facade ([`Gateway::call`] runs
//! routing and the resilience layers; [`Gateway::call_unprotected`] is one routed attempt) with its config and
//! results, the [`McpClient`] of one server, the [`Connection`] beneath it, the common errors, the credential, and
//! the seams a simulator swaps ([`Dialer`], [`Clock`], [`SeededRng`], [`Observer`], [`MessageSink`] /
//! [`MessageSource`]). Everything else lives under the module that owns its concept:
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 messages and their decoding; [`mcp`]: MCP message types and method names.
//! - [`session`]: the two protocol eras (legacy `initialize`, modern `server/discover` + per-request `_meta`), era
//!   detection and the per-server era cache, and the mcpstorm session extension's wire names.
//! - [`client`]: dial, session, tool discovery, reconnection, session snapshots and resume.
//! - [`conn`]: one connection: ids, pending table, writer lanes, reader, phased timeouts, cancellation, its stats.
//! - [`capabilities`]: the capability record, its per-session cache, schema drift, the hints a router reads.
//! - [`schema`]: JSON Schema checks of arguments and results (feature `schema`), and content hashes.
//! - [`router`]: discovery and candidates, health, routing formulas and the weighted choice.
//! - [`resilience`]: circuit breakers, retry budgets, backoff, adaptive concurrency, bulkheads, the client-wide
//!   in-flight cap, degraded responses.
//! - [`gateway`]: the facade's parts: attempts, in-flight snapshots, router verdicts.
//! - [`history`]: call records, the idempotency cache, failure attribution and resume.
//! - [`transport`]: newline-delimited frames and Streamable HTTP, their limits and pools.
//! - [`observe`]: events, anomalies and the observers that receive them.
//! - `serve` (feature `serve`): the server side: the MCP front a gateway serves agents with (Streamable HTTP,
//!   stdio), its signed session ids and its limits.
//! - `sync` (feature `sync`): breaker sync between gateway nodes through Redis.
//! - [`rt`]: the runtime seams: clock, dialers, the seeded random stream.
//! - [`error`]: every error type, by layer.
//!
//! `credential` and `cancel` are internal; their few public items are exported here.
//!
//! # Features
//!
//! The heavy parts are optional, as tower's middleware is; all are on by default. A client-only build
//! (`default-features = false`: the client, sessions, routing, the resilience layers and the [`Gateway`] facade)
//! compiles none of them, and a part that is off is absent from the API rather than a stand-in that claims to work.
//!
//! - `serve`: the `serve` module, the MCP front, with hyper's server half and the HMAC of its session ids.
//! - `sync`: the `sync` module, breaker sync between gateway nodes, with the `redis` crate.
//! - `schema`: runtime JSON Schema checks with `jsonschema` (`schema::ToolSchemas`, `ToolEntry::schemas`): a tool's
//!   arguments are checked before a call is sent and its structured result after. Without it, a call's arguments
//!   go out unchecked (beyond "a JSON object") and results are accepted as sent; the error types and content
//!   hashes of [`schema`] stay.
//! - `testing`: a planted defect for the test suites (off by default, never in production).

mod cancel;
pub mod capabilities;
pub mod client;
pub mod conn;
mod credential;
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
#[cfg(feature = "serve")]
pub mod serve;
pub mod session;
#[cfg(feature = "sync")]
pub mod sync;
pub mod transport;

pub use cancel::CancelToken;
pub use capabilities::{Capabilities, ToolEntry};
pub use client::{ClientConfig, McpClient, Session};
pub use conn::{CallOptions, Connection, ConnectionConfig};
pub use credential::{AuthScheme, Credential, Secret};
pub use error::{CallError, Delivery, ErrorClass, LocalError, TransportError};
pub use gateway::{Connector, Degraded, Endpoint, Gateway, GatewayConfig, ResilienceConfig, Routed, ToolCall};
pub use observe::{Event, NoopObserver, Observer, TracingObserver};
pub use rt::{ByteStream, Clock, DialFuture, Dialer, SeededRng, StdioDialer, TcpDialer, TokioClock};
pub use transport::{HttpEndpoint, MessageSink, MessageSource};
