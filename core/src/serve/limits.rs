//! What one front allows a hostile or careless agent: every bound has a default and a refusal.

use std::sync::Arc;
use std::time::Duration;

use super::auth::AgentAuth;

use crate::credential::Secret;

/// The front's bounds and access rules. Each refusal is named where it applies.
#[derive(Debug, Clone)]
pub struct FrontLimits {
    /// Largest request body: 413 beyond (by `Content-Length` at once, else as it streams in). On stdio, the
    /// longest line: the frame is refused (-32700) and the stream goes on. Default 4 MiB.
    pub max_body: usize,
    /// Most request headers: 431 beyond (hyper). Default 64.
    pub max_headers: usize,
    /// Largest request head (request line and headers): 431 beyond (hyper). Default 16 KiB.
    pub max_header_bytes: usize,
    /// How long a client may take to send a request head (slowloris): the connection is closed after it.
    /// Default 10 s.
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request body once its head is in (a slow-drip body): 408 after it.
    /// Default 30 s.
    pub body_read_timeout: Duration,
    /// Most 2025-11-25 sessions with state in this process (requests in flight, an open GET stream, streams kept
    /// for resumption). A session id costs nothing while idle; when the table is full the least recently used idle
    /// session's state is dropped (its finished streams can no longer be resumed), and with none idle a new
    /// `initialize` or a request on a session new to this process gets 503. Default 1,024.
    pub max_sessions: usize,
    /// Most agent requests running at once in this front, over every session: up to it nothing waits, whoever
    /// sends; beyond it a request waits, and each freed slot goes to the waiting session with the fewest running
    /// (a fair share that bites only under contention: `admission.rs`). Default 4,096.
    pub max_calls_in_flight: usize,
    /// Most requests waiting for a slot, over every session. When full, the session queueing the most sheds its
    /// newest request (HTTP 429 with `Retry-After`, on stdio a JSON-RPC error -32603 with `retryAfterMs`), never
    /// another session's. Default 4,096.
    pub max_queued_calls: usize,
    /// Longest wait for a slot: a request still waiting then is refused as above. The gateway sets it to its
    /// call deadline (a request admitted later could not finish in time). Default 30 s.
    pub queue_wait: Duration,
    /// Most open HTTP connections; beyond it a new connection is closed at once. Default 4,096.
    pub max_connections: usize,
    /// `Origin` values allowed besides loopback ones (DNS rebinding: a request whose `Origin` is present and not
    /// allowed gets 403). Exact match, e.g. `https://app.example.com`. Default none.
    pub allowed_origins: Vec<String>,
    /// Whether `http://localhost[:port]`, `http://127.0.0.1[:port]` and `http://[::1][:port]` (and https) origins
    /// are allowed. Default true.
    pub allow_loopback_origins: bool,
    /// Agent bearer tokens: when not empty, every `/mcp` request needs `Authorization: Bearer <one of them>`
    /// (compared in constant time), else 401 with `WWW-Authenticate: Bearer`. `/healthz` and `/readyz` stay open.
    /// Default none (no agent auth: keep the listener on loopback).
    pub agent_tokens: Vec<Secret>,
    /// An agent authenticator (an OAuth 2.1 resource server) asked about every `/mcp` request no static token
    /// matched: when set, it decides, and its refusals carry its challenge (`auth.rs`). Default none.
    pub auth: Option<Arc<dyn AgentAuth>>,
    /// How long a session id stays valid after `initialize`: 404 after it (the agent starts a new session). Bounds
    /// how long a revoked id lives on replicas that did not see its DELETE. Default 24 h.
    pub session_max_age: Duration,
    /// Revoked session ids remembered per process (the oldest forgotten first). Default 65,536.
    pub max_revoked: usize,
    /// Request streams kept per session for `Last-Event-ID` resumption (each keeps its last `sse::RING` events).
    /// Default 16.
    pub max_streams_per_session: usize,
}

impl Default for FrontLimits {
    fn default() -> Self {
        FrontLimits {
            max_body: 4 * 1024 * 1024,
            max_headers: 64,
            max_header_bytes: 16 * 1024,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_sessions: 1024,
            max_calls_in_flight: 4096,
            max_queued_calls: 4096,
            queue_wait: Duration::from_secs(30),
            max_connections: 4096,
            allowed_origins: Vec::new(),
            allow_loopback_origins: true,
            agent_tokens: Vec::new(),
            auth: None,
            session_max_age: Duration::from_secs(24 * 3600),
            max_revoked: 65_536,
            max_streams_per_session: 16,
        }
    }
}

/// Whether `origin` is allowed by `limits` (the caller checks only present `Origin` headers).
pub(crate) fn origin_allowed(limits: &FrontLimits, origin: &str) -> bool {
    if limits.allowed_origins.iter().any(|o| o == origin) {
        return true;
    }
    if !limits.allow_loopback_origins {
        return false;
    }
    let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(h, _)| h),
        None => rest.split(':').next().unwrap_or_default(),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_and_listed_origins_are_allowed() {
        let mut limits = FrontLimits::default();
        for ok in ["http://localhost", "http://localhost:3000", "https://127.0.0.1:8848", "http://[::1]:80"] {
            assert!(origin_allowed(&limits, ok), "{ok}");
        }
        for bad in ["http://evil.example", "http://localhost.evil.example", "null", "file://", "http://127.0.0.2"] {
            assert!(!origin_allowed(&limits, bad), "{bad}");
        }
        limits.allowed_origins.push("https://app.example.com".into());
        limits.allow_loopback_origins = false;
        assert!(origin_allowed(&limits, "https://app.example.com"));
        assert!(!origin_allowed(&limits, "http://localhost"));
    }
}
