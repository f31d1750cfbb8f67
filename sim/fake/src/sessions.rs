//! The mcpstorm session and auth extension, server side (the wire contract is `mcpstorm_core::session::ext`).
//!
//! Sessions belong to the server, not to a connection: every connection of a replica sees the same table, and a
//! session granted on one connection is valid on another, as behind a real load balancer with shared session state.
//! They expire by the server's *wall clock* (its `Clock`): that is what a real server compares, so stepping or
//! drifting the server's clock makes it expire sessions early or late, exactly the failure a gateway must survive.
//!
//! The gate runs before a request does anything: a credential of a scheme the server does not accept is -32003
//! (checked first: who you are comes before which session you hold), then a missing, unknown or expired session id
//! is -32001. Neither answer ever echoes the credential.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::method;
use mcpstorm_core::rt::Clock;
use mcpstorm_core::session::DISCOVER;
use mcpstorm_core::session::ext::{META_AUTH_SCHEMES, META_AUTHORIZATION, META_SESSION, RENEW, SessionGrant};
use serde_json::{Value, json};

use crate::server::Shared;
use crate::stats::Counters;

/// One replica's sessions: id → expiry on the server's wall clock (ms since the epoch).
#[derive(Debug)]
pub(crate) struct SessionTable {
    clock: Arc<dyn Clock>,
    /// `None`: the server grants no sessions and checks none.
    ttl_ms: Option<u64>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    live: BTreeMap<String, u64>,
}

impl SessionTable {
    pub fn new(clock: Arc<dyn Clock>, ttl_ms: Option<u64>) -> Self {
        SessionTable { clock, ttl_ms, inner: Mutex::default() }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Plain data, consistent after any panic.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn enabled(&self) -> bool {
        self.ttl_ms.is_some()
    }

    /// A new session, or `None` when the server grants none. Expired sessions are swept here, so the table holds
    /// about as many sessions as were granted within one TTL.
    pub fn grant(&self) -> Option<SessionGrant> {
        let ttl_ms = self.ttl_ms?;
        let now = self.clock.wall_ms();
        let mut inner = self.lock();
        inner.live.retain(|_, expires| *expires > now);
        inner.next += 1;
        let id = format!("s-{}", inner.next);
        let expires = now.saturating_add(ttl_ms);
        inner.live.insert(id.clone(), expires);
        Some(SessionGrant { id, ttl_ms, expires_at_ms: Some(expires) })
    }

    /// A fresh expiry for a live session (`None` if it is not live).
    pub fn renew(&self, id: &str) -> Option<SessionGrant> {
        let ttl_ms = self.ttl_ms?;
        let now = self.clock.wall_ms();
        let mut inner = self.lock();
        let expires = inner.live.get_mut(id).filter(|e| **e > now)?;
        *expires = now.saturating_add(ttl_ms);
        Some(SessionGrant { id: id.to_owned(), ttl_ms, expires_at_ms: Some(*expires) })
    }

    pub fn is_live(&self, id: &str) -> bool {
        let now = self.clock.wall_ms();
        self.lock().live.get(id).is_some_and(|expires| *expires > now)
    }

    /// Forgets every session (a `session_expiry` fault, a restart). Ids are never reused.
    pub fn drop_all(&self) {
        self.lock().live.clear();
    }
}

/// Methods that need no session: the lifecycle that grants one, and `ping`. Everything else (tools, lists, renew)
/// needs one once the server grants sessions.
fn exempt(method: &str) -> bool {
    method == method::INITIALIZE || method == DISCOVER || method == method::PING
}

/// The gate: `Err` is the answer to send instead of running the request. Counts each refusal.
pub fn check(shared: &Shared, method: &str, params: Option<&Value>) -> Result<(), ErrorObject> {
    // A renew the server does not offer is an unknown method (-32601), whatever the session.
    if exempt(method) || (method == RENEW && !renews(shared, method)) {
        return Ok(());
    }
    let meta = params.and_then(|p| p.get("_meta"));
    if let Some(accepted) = shared.auth() {
        let scheme = meta.and_then(|m| m.get(META_AUTHORIZATION)).and_then(|a| a.get("scheme"));
        let ok = scheme.is_some_and(|s| accepted.iter().any(|a| *s == json!(a)));
        if !ok {
            Counters::bump(&shared.counters.auth_mismatches);
            let mut e = ErrorObject::new(ErrorCode::AUTH_MISMATCH, "MCP_AUTH_MISMATCH");
            e.data = Some(json!({"accepted": accepted}));
            return Err(e);
        }
    }
    if shared.sessions.enabled() {
        let id = meta.and_then(|m| m.get(META_SESSION)).and_then(Value::as_str);
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
pub fn renew(shared: &Shared, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let id = params.and_then(|p| p.get("_meta")).and_then(|m| m.get(META_SESSION)).and_then(Value::as_str);
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
