//! Sessions across the two MCP protocol eras: which era a server speaks, how that is detected (and the legacy
//! handshake), the per-server cache that lets a reconnect skip detection, and the session extension's lease,
//! renewal and credential on each connection.
//!
//! - **Legacy** (revisions up to 2025-11-25): the `initialize` handshake negotiates the version once per connection.
//! - **Modern** (2026-07-28): no handshake; `server/discover` describes the server and every request carries its
//!   protocol version and client capabilities in `params._meta`.
//!
//! [`establish`] probes with `server/discover` and falls back to the legacy handshake on any answer that is not a
//! usable modern result, because real legacy servers refuse the probe with different codes. A transport failure is
//! never an era verdict. The outcome is cached per server name ([`EraCache`]) and invalidated when a modern server
//! refuses our envelope (-32022, -32020) or a cached-legacy server answers `initialize` with -32022.
//!
//! The wire facts (the `server/discover` exchange, the `_meta` keys, the era error codes, verbatim replies of real
//! servers) and the detection rules in full: see docs/sessions.md.
//!
//! The mcpstorm session extension rides on either era: a server may grant a session with a TTL ([`SessionGrant`] under
//! [`META_SESSION`]) and declare auth schemes ([`META_AUTH_SCHEMES`]); the client then sends the session id and its
//! credential in every request's `_meta`, renews with [`RENEW`] and replaces the session before it runs out. Both of
//! its errors ([`is_session_not_found`], [`auth_mismatch_accepted`]) are raised before a request runs. The wire
//! contract in full is in `ext.rs`.

mod auth;
mod config;
mod detect;
mod era_cache;
mod ext;
mod handshake;
mod lease;
mod stats;
mod wire;

use serde::{Deserialize, Serialize};

pub(crate) use auth::mismatch;
pub use config::LifecycleConfig;
pub use detect::{Detection, Established, establish, stateless_envelope};
pub use era_cache::{CachedEra, EraCache, MAX_CACHED_SERVERS};
pub use ext::{
    GatewayProfile, META_AUTH_SCHEMES, META_AUTHORIZATION, META_SESSION, RENEW, SessionGrant, auth_mismatch_accepted,
    auth_schemes, is_session_not_found, pick_credential,
};
pub(crate) use lease::{Lease, LeaseState, SessionLease};
pub use stats::SessionStats;
pub(crate) use stats::{SessionCounters, SessionEvents};
pub use wire::{
    DISCOVER, DiscoverResult, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    META_SERVER_INFO, MODERN_PROTOCOL_VERSIONS, UnsupportedVersion, envelope, envelope_version,
};

/// The protocol era a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Era {
    /// The `initialize` handshake (2025-11-25 and earlier).
    Legacy,
    /// Stateless, per-request `_meta` (2026-07-28).
    Modern,
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.into())
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
    /// The `initialize` handshake first; a server that refuses it as a 2026-07-28-only server does (-32022) is
    /// detected as `Auto` detects. A gateway's choice: a dual-era server is spoken 2025-11-25, the era in which it
    /// can ask the agent mid-call (sampling, elicitation, roots) and take subscriptions; the Python SDK's `ctx.elicit`
    /// and `ctx.sample` have no 2026-07-28 path.
    HandshakeFirst,
}
