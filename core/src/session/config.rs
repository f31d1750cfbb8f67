//! What establishing a session reads from the client's settings: the era preferences, the lifecycle timeouts and the
//! credentials, and nothing of its connection, retry or tool-list settings (`ClientConfig::lifecycle` builds it).

use std::time::Duration;

use super::EraMode;
use crate::credential::Credential;
use crate::mcp::Implementation;

/// The lifecycle settings of one client; see `ClientConfig` for their defaults.
#[derive(Debug, Clone)]
pub struct LifecycleConfig {
    /// Which protocol era(s) to speak: detect, or only the legacy one.
    pub era_mode: EraMode,
    /// `initialize` until its result.
    pub handshake_timeout: Duration,
    /// How long the `server/discover` probe may stay unanswered before the legacy handshake is tried instead.
    pub discover_timeout: Duration,
    pub client_info: Implementation,
    /// Handshake-era (legacy) versions we accept, the first is the one we ask for.
    pub protocol_versions: Vec<String>,
    /// Modern (per-request `_meta`) versions we speak, newest first; the first is the one we probe with.
    pub modern_protocol_versions: Vec<String>,
    /// Offered to servers that declare auth schemes (first accepted wins).
    pub credentials: Vec<Credential>,
    /// What `initialize` declares the client answers (see `ClientConfig::client_capabilities`).
    pub client_capabilities: serde_json::Value,
}
