//! mcpstorm-core: an MCP gateway core that runs unchanged in production and inside a deterministic simulator.
//!
//! The crate root holds what an embedder uses: the [`Gateway`] facade ([`Gateway::call`] runs routing and the
//! resilience layers; [`Gateway::call_unprotected`] is one routed attempt), the [`McpClient`] of one server, the
//! [`Connection`] beneath it, the errors, and the seams a simulator swaps ([`Dialer`], [`Clock`], [`SeededRng`],
//! [`Observer`], the message transport). Six modules are public because each is a vocabulary of its own:
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 messages and their decoding; [`mcp`]: MCP message types and method names.
//! - [`session`]: the two protocol eras (legacy `initialize`, modern `server/discover` + per-request `_meta`), era
//!   detection and the per-server era cache, and the mcpstorm session extension's wire names.
//! - [`router`]: discovery and candidates, health, routing formulas and the weighted choice.
//! - [`resilience`]: circuit breakers, retry budgets, backoff, adaptive concurrency, bulkheads, the client-wide
//!   in-flight cap, degraded responses.
//! - [`history`]: call records, the idempotency cache, failure attribution and resume.
//!
//! The other modules are internal, their public items exported here: `conn` (one connection: ids, pending table,
//! writer lanes, reader, phased timeouts, cancellation), `client` (dial, session, tool discovery, reconnection),
//! `capabilities` (the capability record, its per-session cache and schema drift), `schema` (JSON Schema checks),
//! `gateway`, `transport`, `rt`, `observe`, `credential`, `error` and `cancel`.

mod cancel;
mod capabilities;
mod client;
mod conn;
mod credential;
mod error;
mod gateway;
pub mod history;
pub mod jsonrpc;
pub mod mcp;
mod observe;
pub mod resilience;
pub mod router;
mod rt;
mod schema;
pub mod session;
mod transport;

pub use cancel::CancelToken;
pub use capabilities::{Capabilities, DriftStats, RouterHints, SchemaCache, ToolEntry};
pub use client::{ClientConfig, McpClient, ResumeError, Session, SessionSnapshot};
pub use conn::{
    CallOptions, Connection, ConnectionConfig, ConnectionParts, ConnectionStats, Lane, NotificationHandler,
};
pub use credential::{AuthScheme, Credential, Secret};
pub use error::{AuthError, CallError, ErrorClass, HttpError, LifecycleError, LocalError, TransportError};
pub use gateway::{
    Attempt, Connector, Degraded, Endpoint, Gateway, GatewayConfig, InFlightSnapshot, Last, ResilienceConfig, Routed,
    RouterVerdict, ToolCall,
};
pub use observe::{
    Anomaly, AnomalyLog, AnomalyReport, ConnId, Event, NoopObserver, Observer, RefetchReason, SessionEvent,
    TracingObserver,
};
pub use rt::{ByteStream, Clock, DialFuture, Dialer, SeededRng, StdioDialer, TcpDialer, TokioClock};
pub use schema::{
    ArgumentError, ContentHash, Dialect, MAX_VIOLATIONS, OutputError, SchemaError, SchemaKind, SchemaValidator,
    ToolSchemas, Violation, canonical_json,
};
pub use transport::{
    DEFAULT_MAX_FRAME, FrameError, HttpConfigError, HttpContext, HttpEndpoint, HttpLimits, HttpResponseHead, HttpSink,
    HttpSource, LineSink, LineSource, MessageSink, MessageSource, PoolConfig, PoolGauge, PoolState, ResponseHook,
    decode_frame, http_transport, line_transport,
};
