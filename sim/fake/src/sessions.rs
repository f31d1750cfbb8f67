//! The mcpstorm session and auth extension, server side (the wire contract is `mcpstorm_core::session::ext`).
//!
//! Sessions belong to the server, not to a connection: every connection of a replica sees the same table, and a
//! session granted on one connection is valid on another, as behind a real load balancer with shared session state.
//! They expire by the server's *wall clock* (its `Clock`): that is what a real server compares, so stepping or
//! drifting the server's clock makes it expire sessions early or late, exactly the failure a gateway must survive.
//!
//! This is the table of a server's sessions; [`crate::gate`] checks requests against it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use mcpstorm_core::Clock;
use mcpstorm_core::session::SessionGrant;

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
