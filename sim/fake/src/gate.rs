//! The gate before each request, and the grant in each handshake result: the session and auth extension's server side
//! over a server's [`SessionTable`](crate::sessions::SessionTable) and accepted schemes.
//!
//! A credential of a scheme the server does not accept is -32003 (checked first: who you are comes before which
//! session you hold), then a missing, unknown or expired session id is -32001. Neither answer ever echoes the
//! credential.

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::method;
use mcpstorm_core::session::DISCOVER;
use mcpstorm_core::session::{META_AUTH_SCHEMES, META_AUTHORIZATION, META_SESSION, RENEW};
use serde_json::{Value, json};

use crate::params::Params;
use crate::shared::Shared;
use crate::stats::Counters;

/// Methods that need no session: the lifecycle that grants one, and `ping`. Everything else (tools, lists, renew)
/// needs one once the server grants sessions.
fn exempt(method: &str) -> bool {
    method == method::INITIALIZE || method == DISCOVER || method == method::PING
}

/// The gate: `Err` is the answer to send instead of running the request. Counts each refusal.
pub fn check(shared: &Shared, method: &str, params: &Params) -> Result<(), ErrorObject> {
    // A renew the server does not offer is an unknown method (-32601), whatever the session.
    if exempt(method) || (method == RENEW && !renews(shared, method)) {
        return Ok(());
    }
    if let Some(accepted) = shared.auth_now().as_ref() {
        let scheme = params.meta(META_AUTHORIZATION).and_then(|a| a.get("scheme"));
        let ok = scheme.is_some_and(|s| accepted.iter().any(|a| *s == json!(a)));
        if !ok {
            Counters::bump(&shared.counters.auth_mismatches);
            let mut e = ErrorObject::new(ErrorCode::AUTH_MISMATCH, "MCP_AUTH_MISMATCH");
            e.data = Some(json!({"accepted": accepted}));
            return Err(e);
        }
    }
    if shared.sessions.enabled() {
        let id = params.meta_str(META_SESSION);
        if !id.is_some_and(|id| shared.sessions.is_live(id)) {
            Counters::bump(&shared.counters.sessions_not_found);
            return Err(ErrorObject::new(ErrorCode::SESSION_NOT_FOUND, "Session not found"));
        }
    }
    Ok(())
}

/// Whether the server answers [`RENEW`] at all (else it is an unknown method, -32601).
pub fn renews(shared: &Shared, method: &str) -> bool {
    method == RENEW && shared.sessions.enabled() && shared.config.renew
}

/// The [`RENEW`] result: `{}` with a fresh grant for the session the request names (the gate made sure it is live).
pub fn renew(shared: &Shared, params: &Params) -> Result<Value, ErrorObject> {
    let id = params.meta_str(META_SESSION);
    match id.and_then(|id| shared.sessions.renew(id)) {
        Some(grant) => {
            Counters::bump(&shared.counters.renewals);
            Ok(json!({"_meta": {META_SESSION: grant}}))
        }
        // Expired between the gate and here (the clock moved): the same answer the gate gives.
        None => Err(ErrorObject::new(ErrorCode::SESSION_NOT_FOUND, "Session not found")),
    }
}

/// Puts a new grant, the accepted schemes and the configured extra entries (router hints, capability matrix) into a
/// handshake result's `_meta` (`initialize`, `server/discover`).
pub fn stamp_grant(shared: &Shared, result: &mut Value) {
    let grant = shared.sessions.grant();
    let schemes = shared.auth();
    let extra = shared.config.meta.as_ref();
    if grant.is_none() && schemes.is_none() && extra.is_none() {
        return;
    }
    let Some(obj) = result.as_object_mut() else { return };
    let Some(meta) = obj.entry("_meta").or_insert_with(|| json!({})).as_object_mut() else { return };
    for (key, value) in extra.into_iter().flatten() {
        meta.entry(key.clone()).or_insert_with(|| value.clone());
    }
    if let Some(grant) = grant {
        Counters::bump(&shared.counters.sessions_granted);
        meta.insert(META_SESSION.to_owned(), json!(grant));
    }
    if let Some(schemes) = schemes {
        meta.insert(META_AUTH_SCHEMES.to_owned(), json!(schemes));
    }
}
