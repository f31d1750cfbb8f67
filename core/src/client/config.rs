use std::time::Duration;

use crate::capabilities::ListingLimits;
use crate::conn::ConnectionConfig;
use crate::credential::Credential;
use crate::mcp::{Implementation, SUPPORTED_PROTOCOL_VERSIONS};
use crate::resilience::backoff::Backoff;
use crate::session::GatewayProfile;
use crate::session::{EraMode, LifecycleConfig, MODERN_PROTOCOL_VERSIONS};
use crate::transport::DEFAULT_MAX_FRAME;

/// Client settings. Defaults:
///
/// | field               | default | meaning                                                   |
/// |---------------------|---------|-----------------------------------------------------------|
/// | `connect_timeout`   | 10 s    | dialing (TCP connect, process spawn)                      |
/// | `handshake_timeout` | 30 s    | `initialize` until its result                             |
/// | `discover_timeout`  | 5 s     | the `server/discover` era probe; silence falls back to `initialize` |
/// | `era_mode`          | auto    | probe `server/discover`, fall back to `initialize` (see [`crate::session`]) |
/// | `lifecycle_retries` | 3       | reconnect attempts after a failed connect or handshake    |
/// | `backoff`           | reconnect | 1, 2, 4, 8 s capped at 10 s, ±20% jitter ([`Backoff::RECONNECT`]) |
/// | `max_frame`         | 16 MiB  | largest incoming frame                                    |
/// | `max_tool_pages`    | 1000    | `tools/list` pages followed before giving up (a cursor loop guard) |
/// | `max_tools`         | 10,000  | tools one listing may hold; more is an error naming this limit |
/// | `max_tool_list_bytes` | 32 MiB | the listing's size as JSON, all pages together; more is an error naming this limit |
/// | `profile`           | default | session and schema behaviour; `naive` reproduces the naive design's failures |
/// | `credentials`       | none    | offered to servers that declare auth schemes (first accepted wins) |
/// | `client_capabilities` | `{}`  | declared in `initialize`: what the client answers when a server asks mid-call |
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub connection: ConnectionConfig,
    pub connect_timeout: Duration,
    pub handshake_timeout: Duration,
    /// How long the `server/discover` probe may stay unanswered before the legacy handshake is tried instead.
    pub discover_timeout: Duration,
    /// Which protocol era(s) to speak: detect (default), or only one.
    pub era_mode: EraMode,
    pub lifecycle_retries: u32,
    pub backoff: Backoff,
    pub max_frame: usize,
    pub max_tool_pages: usize,
    /// A server can list anything: these bound what one listing can make the client hold. Schemas compile at a
    /// tool's first call, so validators are bounded by the tools used, not the tools listed.
    pub max_tools: usize,
    pub max_tool_list_bytes: usize,
    pub client_info: Implementation,
    /// Handshake-era (legacy) versions we accept, the first is the one we ask for.
    pub protocol_versions: Vec<String>,
    /// Modern (per-request `_meta`) versions we speak, newest first; the first is the one we probe with.
    pub modern_protocol_versions: Vec<String>,
    /// Session and schema behaviour (see [`GatewayProfile`]).
    pub profile: GatewayProfile,
    /// Credentials for servers that declare auth schemes; never printed (see [`Secret`](crate::Secret)).
    pub credentials: Vec<Credential>,
    /// Declared in `initialize` (2025-11-25): the server requests (sampling, elicitation, roots) the client answers,
    /// by relaying them to whoever a call's `CallOptions::asks` names.
    pub client_capabilities: serde_json::Value,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connection: ConnectionConfig::default(),
            connect_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(30),
            discover_timeout: Duration::from_secs(5),
            era_mode: EraMode::default(),
            lifecycle_retries: 3,
            backoff: Backoff::RECONNECT,
            max_frame: DEFAULT_MAX_FRAME,
            max_tool_pages: 1000,
            max_tools: 10_000,
            max_tool_list_bytes: 32 << 20,
            client_info: Implementation::new("mcpstorm", env!("CARGO_PKG_VERSION")),
            protocol_versions: SUPPORTED_PROTOCOL_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
            modern_protocol_versions: MODERN_PROTOCOL_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
            profile: GatewayProfile::default(),
            credentials: Vec::new(),
            client_capabilities: serde_json::json!({}),
        }
    }
}

impl ClientConfig {
    /// The settings establishing a session reads (see [`LifecycleConfig`]).
    pub fn lifecycle(&self) -> LifecycleConfig {
        LifecycleConfig {
            era_mode: self.era_mode,
            handshake_timeout: self.handshake_timeout,
            discover_timeout: self.discover_timeout,
            client_info: self.client_info.clone(),
            protocol_versions: self.protocol_versions.clone(),
            modern_protocol_versions: self.modern_protocol_versions.clone(),
            credentials: self.credentials.clone(),
            client_capabilities: self.client_capabilities.clone(),
        }
    }
    /// How much of a tool listing the client accepts.
    pub(crate) fn listing_limits(&self) -> ListingLimits {
        ListingLimits { max_pages: self.max_tool_pages, max_tools: self.max_tools, max_bytes: self.max_tool_list_bytes }
    }
}
