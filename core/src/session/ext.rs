//! The mcpstorm session extension: sessions with an id and a TTL, and auth-scheme negotiation, over any transport.
//!
//! MCP itself ties a session to a transport (the streamable-HTTP `Mcp-Session-Id` header; over stdio the process is
//! the session) and says nothing about TTLs or auth schemes outside HTTP. The gateway needs both, so they travel in
//! `_meta`, which every MCP message may carry and servers that do not know these keys ignore. A server that grants
//! nothing (every real server we test against) gets plain MCP from us: the client sends none of these keys until a
//! server has granted a session or declared schemes.
//!
//! # On the wire
//!
//! **Grant.** The server puts a grant in the `_meta` of its `initialize` result (legacy era) or `server/discover`
//! result (modern era), and of every [`RENEW`] result:
//! ```json
//! "_meta": {"io.mcpstorm/session": {"id": "s-17", "ttlMs": 600000, "expiresAtMs": 1735690200000},
//!           "io.mcpstorm/authSchemes": ["bearer", "api-key"]}
//! ```
//! `ttlMs` is how long the session lives from the moment the server sent the grant. `expiresAtMs` is the same instant
//! on the *server's* wall clock, for display only: a client must compute expiry from its own monotonic clock at receipt
//! (`received + ttlMs`), never by comparing `expiresAtMs` with its wall clock, because the two clocks can disagree by
//! minutes (a 3-minute skew between a gateway and its server has been seen). The naive gateway profile does exactly
//! that comparison, to show the failure.
//!
//! **Use.** Every later request carries `_meta["io.mcpstorm/session"] = "<id>"` and, when the server declared
//! schemes, `_meta["io.mcpstorm/authorization"] = {"scheme": "bearer", "credential": "<secret>"}`.
//!
//! **Renew.** Request [`RENEW`] (params: just the `_meta` above) extends the session: the result's `_meta` carries a
//! fresh grant (same id, new TTL). A server that does not know the method answers -32601; the client then starts a
//! new session instead.
//!
//! **Errors**, both raised before the request runs, so resending after fixing the cause is safe:
//! - [`ErrorCode::SESSION_NOT_FOUND`] (-32001) "Session not found" / "session expired": the id is unknown or expired.
//! - [`ErrorCode::AUTH_MISMATCH`] (-32003) `MCP_AUTH_MISMATCH`: `data = {"accepted": ["mcp-jwt"]}`. The
//!   credential itself is never echoed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::credential::{AuthScheme, Credential};
use crate::jsonrpc::{ErrorCode, ErrorObject};

/// Result `_meta` key: the session grant. Request `_meta` key: the session id.
pub const META_SESSION: &str = "io.mcpstorm/session";
/// Result `_meta` key: the auth schemes the server accepts, as a list of [`AuthScheme`] names.
pub const META_AUTH_SCHEMES: &str = "io.mcpstorm/authSchemes";
/// Request `_meta` key: the credential, `{"scheme": ..., "credential": ...}`.
pub const META_AUTHORIZATION: &str = "io.mcpstorm/authorization";
/// Renews the session named in the request's `_meta`.
pub const RENEW: &str = "mcpstorm/session/renew";

/// A session as the server granted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionGrant {
    pub id: String,
    /// Lifetime from the moment the grant was sent.
    pub ttl_ms: u64,
    /// Expiry on the server's wall clock (ms since the Unix epoch). Informative only; see the module docs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
}

impl SessionGrant {
    /// The grant in a result's `_meta`, if the server sent one (a malformed grant counts as none).
    pub fn from_result_meta(meta: Option<&Value>) -> Option<SessionGrant> {
        serde_json::from_value(meta?.get(META_SESSION)?.clone()).ok()
    }
}

/// The schemes a result's `_meta` declares, if any (unknown scheme names are skipped).
pub fn auth_schemes(meta: Option<&Value>) -> Option<Vec<AuthScheme>> {
    let list = meta?.get(META_AUTH_SCHEMES)?.as_array()?;
    Some(list.iter().filter_map(|v| serde_json::from_value(v.clone()).ok()).collect())
}

/// The credential to use against a server accepting `accepted`: the first configured one whose scheme it accepts.
pub fn pick_credential<'a>(configured: &'a [Credential], accepted: &[AuthScheme]) -> Option<&'a Credential> {
    configured.iter().find(|c| accepted.contains(&c.scheme))
}

/// Whether a server error says the session is gone: the code, or (from servers that use another code) the text.
pub fn is_session_not_found(error: &ErrorObject) -> bool {
    if error.code() == ErrorCode::SESSION_NOT_FOUND {
        return true;
    }
    let text = error.message.to_ascii_lowercase();
    text.contains("session not found") || text.contains("session expired") || text.contains("unknown session")
}

/// The schemes an [`ErrorCode::AUTH_MISMATCH`] error says the server accepts (`None` for any other error).
pub fn auth_mismatch_accepted(error: &ErrorObject) -> Option<Vec<AuthScheme>> {
    if error.code() != ErrorCode::AUTH_MISMATCH {
        return None;
    }
    let list = error.data.as_ref().and_then(|d| d.get("accepted")).and_then(Value::as_array);
    Some(list.map(|l| l.iter().filter_map(|v| serde_json::from_value(v.clone()).ok()).collect()).unwrap_or_default())
}

/// How the gateway treats sessions and schemas. The naive profile exists to show, in the same scenario, the failures
/// the default one prevents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GatewayProfile {
    /// Expiry from local monotonic time at receipt, proactive renewal, one transparent re-handshake on
    /// session-not-found, schemas re-fetched on every signal of drift.
    #[default]
    Default,
    /// The naive first design: expiry from the server's `expiresAtMs` against the local wall clock, no
    /// renewal, no reaction to session-not-found beyond failing the call, and tool schemas cached forever.
    Naive,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::credential::Secret;

    #[test]
    fn grant_and_schemes_from_meta() {
        let meta = json!({META_SESSION: {"id": "s-1", "ttlMs": 600000, "expiresAtMs": 5}, META_AUTH_SCHEMES: ["bearer", "nope", "api-key"]});
        let grant = SessionGrant::from_result_meta(Some(&meta)).unwrap();
        assert_eq!(grant, SessionGrant { id: "s-1".into(), ttl_ms: 600_000, expires_at_ms: Some(5) });
        assert_eq!(auth_schemes(Some(&meta)), Some(vec![AuthScheme::Bearer, AuthScheme::ApiKey]));
        assert_eq!(SessionGrant::from_result_meta(Some(&json!({META_SESSION: {"id": 3}}))), None);
        assert_eq!(auth_schemes(None), None);
    }

    #[test]
    fn picks_the_first_accepted_credential() {
        let creds = vec![
            Credential { scheme: AuthScheme::ApiKey, secret: Secret::new("a") },
            Credential { scheme: AuthScheme::Jwt, secret: Secret::new("j") },
        ];
        assert_eq!(pick_credential(&creds, &[AuthScheme::Jwt, AuthScheme::ApiKey]).unwrap().secret.expose(), "a");
        assert_eq!(pick_credential(&creds, &[AuthScheme::Jwt]).unwrap().secret.expose(), "j");
        assert!(pick_credential(&creds, &[AuthScheme::Bearer]).is_none());
    }

    #[test]
    fn classifies_errors() {
        let e = |code, message: &str, data| ErrorObject { code, message: message.into(), data };
        assert!(is_session_not_found(&e(-32001, "Session not found", None)));
        assert!(is_session_not_found(&e(-32600, "Bad Request: Session expired", None)));
        assert!(!is_session_not_found(&e(-32602, "invalid params", None)));
        let m = e(-32003, "MCP_AUTH_MISMATCH", Some(json!({"accepted": ["mcp-jwt"]})));
        assert_eq!(auth_mismatch_accepted(&m), Some(vec![AuthScheme::Jwt]));
        assert_eq!(auth_mismatch_accepted(&e(-32003, "x", None)), Some(vec![]));
        assert_eq!(auth_mismatch_accepted(&e(-32001, "x", None)), None);
    }
}
