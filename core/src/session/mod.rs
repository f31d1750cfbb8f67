//! Sessions across the two MCP protocol eras: which era a server speaks, how that is detected, and the per-server
//! cache that lets a reconnect skip detection.
//!
//! - **Legacy** (handshake era, revisions up to 2025-11-25): `initialize` → result (`protocolVersion`,
//!   `capabilities`, `serverInfo`) → `notifications/initialized`; the version is negotiated once per connection and
//!   a client that cannot speak the server's answer disconnects ([`LifecycleError::VersionMismatch`]).
//! - **Modern** (2026-07-28): no handshake. `server/discover` describes the server; every request carries its own
//!   protocol version and client capabilities in `params._meta`.
//!
//! # The 2026-07-28 lifecycle on the wire
//!
//! Sources: the Python SDK 2.3.0 source (`mcp_types/_v2026_07_28`, `mcp_types/jsonrpc.py`, `mcp/shared/inbound.py`,
//! `mcp/server/runner.py`, `mcp/client/_probe.py`), the spec pages `specification/2026-07-28/server/discover` and
//! `.../basic/lifecycle` ("Versioning and Compatibility"), and raw stdio probes of real servers (below, verbatim).
//!
//! **`server/discover` request.** No body parameters beyond the standard `_meta`, which carries the envelope like
//! any modern request:
//! ```json
//! {"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
//!   "io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!   "io.modelcontextprotocol/clientCapabilities":{},
//!   "io.modelcontextprotocol/clientInfo":{"name":"mcpstorm","version":"0.1.0"}}}}
//! ```
//! **Result** (`DiscoverResult`): `supportedVersions` (string list, required), `capabilities` (`ServerCapabilities`,
//! required), `ttlMs` (integer ≥ 0, required: how long the client MAY treat the result as fresh; 0 = immediately
//! stale), `cacheScope` (`"private"` | `"public"`, required: whether a cache may be shared across authorization
//! contexts), `resultType` (`"complete"`, required on every modern result), `instructions` (optional). There is no
//! `serverInfo` field: the server identifies itself in the result's `_meta` under
//! `io.modelcontextprotocol/serverInfo` (SHOULD, on every modern result; display only). `server/discover` is one of
//! the cacheable methods, with `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`,
//! `resources/read`; those results carry `ttlMs`/`cacheScope` too.
//!
//! **Per-request `_meta` keys** (request side): `io.modelcontextprotocol/protocolVersion` (string, required),
//! `io.modelcontextprotocol/clientCapabilities` (object, required; `{}` declares none; servers MUST NOT infer
//! capabilities from earlier requests), `io.modelcontextprotocol/clientInfo` (`Implementation`, SHOULD),
//! `io.modelcontextprotocol/logLevel` (optional; replaces `logging/setLevel`), and the usual `progressToken`. Result
//! side: `io.modelcontextprotocol/serverInfo`. Gone in 2026-07-28: `initialize`, `notifications/initialized`,
//! `ping`, `logging/setLevel`, `resources/subscribe`/`unsubscribe` (replaced by `subscriptions/listen`); the only
//! client notification left is `notifications/cancelled`; servers send no requests (no sampling/elicitation/roots
//! round trips; multi-round-trip results with `resultType: "input_required"` instead).
//!
//! **Error codes** (`-32020..-32099` are reserved for the spec, allocated from -32020; `-32000..-32019` are
//! implementation-defined):
//! - `-32020` **HeaderMismatch**: over HTTP, the `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` headers are
//!   missing or disagree with the body (HTTP 400). Never sent on stdio.
//! - `-32021` **MissingRequiredClientCapability**: handling the request needs a capability the request's
//!   `clientCapabilities` did not declare; `data: {"requiredCapabilities": {...}}`.
//! - `-32022` **UnsupportedProtocolVersion**: the request's protocol version is not served;
//!   `data: {"supported": [...], "requested": "..."}`. The client retries with a mutually supported version.
//!
//! A modern request *without* the envelope is a shape error, not a version error: the Python SDK answers
//! `-32602` (invalid params) naming the missing key(s).
//!
//! **The Python SDK 2.3.0 server over stdio** (`tests/peers/py_server.py`) is dual-era, decided per connection by
//! the first request: one carrying `_meta["io.modelcontextprotocol/protocolVersion"]` (other than `initialize`)
//! makes the connection modern; anything else makes it legacy. `server/discover` with the envelope, as the first
//! request, answers:
//! ```json
//! {"jsonrpc":"2.0","id":1,"result":{"cacheScope":"private","capabilities":{"prompts":{"listChanged":true},
//!   "resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}},"resultType":"complete",
//!   "supportedVersions":["2026-07-28"],"ttlMs":0,
//!   "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpstorm-py-peer","version":""}}}}
//! ```
//! On that (modern) connection: a request without the envelope →
//! `{"code":-32602,"message":"params._meta must be an object carrying the required
//! 'io.modelcontextprotocol/protocolVersion' and 'io.modelcontextprotocol/clientCapabilities' envelope keys"}`;
//! envelope lacking capabilities → `{"code":-32602,"message":"params._meta is missing the required envelope key(s):
//! io.modelcontextprotocol/clientCapabilities"}`; `initialize` → `{"code":-32022,"message":"connection is serving
//! the 2026-07-28 protocol; the initialize handshake is not accepted","data":{"supported":["2026-07-28"],
//! "requested":"2025-11-25"}}`; version `2099-01-01` → `{"code":-32022,"message":"Unsupported protocol
//! version","data":{"supported":["2026-07-28"],"requested":"2099-01-01"}}`; enveloped `ping` →
//! `{"code":-32601,"message":"Method not found","data":"ping"}`; `tools/call` works, progress notifications
//! included, and every result carries `"resultType":"complete"` and the `serverInfo` stamp. `server/discover`
//! *without* the envelope as the first request → `{"code":-32601,"message":"Method not found",
//! "data":"server/discover"}` and the connection is legacy; an enveloped request on a legacy connection →
//! `{"code":-32600,"message":"this connection serves the handshake protocol era; requests carrying the 2026-07-28
//! envelope are not accepted on it"}`.
//!
//! **`@modelcontextprotocol/server-everything` 2026.8.31** (TypeScript SDK 1.32.2), legacy only: `server/discover`
//! with or without the envelope, before or after `initialize` → `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,
//! "message":"Method not found"}}`, and a later `initialize` succeeds.
//!
//! **Python `mcp` 1.30.0** (FastMCP), legacy only: `server/discover` (any params, before or after `initialize`) →
//! `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid request parameters","data":""}}` — *not*
//! -32601 (its request union fails to validate) — and a later `initialize` succeeds. Hence the fallback is keyed to
//! no particular code.
//!
//! # Detection (what [`establish`] does)
//!
//! As the Python SDK's `mode='auto'` and the spec's stdio backward-compatibility rules: send `server/discover` at
//! our newest modern version, on the priority lane, bounded by `ClientConfig::discover_timeout`.
//! - A well-formed result listing a version we speak → modern: that version's envelope is set on the connection
//!   ([`Connection::set_request_meta`](crate::conn::Connection::set_request_meta)), so every later request carries
//!   it; no handshake.
//! - -32022 naming a modern version we share → probe once more at it. -32022 naming only versions we share in no
//!   era → [`LifecycleError::VersionMismatch`].
//! - Anything else — any other error code, a malformed or legacy-only result, silence until the timeout — → the
//!   legacy `initialize` handshake on the same connection. If that handshake is answered -32022 (the server got
//!   our probe after all and now serves the connection as modern), probe once more.
//! - A transport failure is never an era verdict: it is returned as is (and the client reconnects).
//!
//! The outcome is cached per server name ([`EraCache`]): a reconnect uses it without probing (a modern reconnect
//! reuses the cached discovery result and sends nothing at connect). It is invalidated, and the era detected again
//! on the next connect, when a modern server refuses our envelope (-32022 or -32020 on any request, seen through
//! [`Connection::request_meta_rejected`](crate::conn::Connection::request_meta_rejected)), or when a cached-legacy
//! server answers `initialize` with -32022. -32021 does not invalidate: it names a capability one request needs,
//! which detecting again cannot supply; it reaches the caller as a protocol error naming the code.
//!
//! [`LifecycleError::VersionMismatch`]: crate::error::LifecycleError::VersionMismatch

mod cache;
mod detect;
pub mod ext;
mod wire;

use serde::{Deserialize, Serialize};

pub use cache::{CachedEra, EraCache, MAX_CACHED_SERVERS};
pub use detect::{Detection, Established, establish};
pub use wire::{
    DISCOVER, DiscoverResult, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    META_SERVER_INFO, MODERN_PROTOCOL_VERSIONS, UnsupportedVersion, envelope, envelope_version,
};

/// The protocol era a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// The `initialize` handshake (2025-11-25 and earlier).
    Legacy,
    /// Stateless, per-request `_meta` (2026-07-28).
    Modern,
}

impl Era {
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which era(s) a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraMode {
    /// Detect per server (probe `server/discover`, fall back to `initialize`) and cache the result.
    #[default]
    Auto,
    /// Always the `initialize` handshake; never probe.
    Legacy,
}
