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

/// One replica's sessions: id → expiry on the server's wall clock (ms since the epoch), and what the server keeps per
/// session (`T`: nothing for the `_meta` extension, the in-flight table and streams for a Streamable HTTP session).
#[derive(Debug)]
pub(crate) struct SessionTable<T = ()> {
    clock: Arc<dyn Clock>,
    /// `None`: the server grants no sessions and checks none.
    ttl_ms: Option<u64>,
    /// Most live sessions: a client opening sessions in a loop cannot grow the table without bound.
    max: usize,
    inner: Mutex<Inner<T>>,
}

#[derive(Debug)]
struct Inner<T> {
    next: u64,
    live: BTreeMap<String, Entry<T>>,
}

#[derive(Debug)]
struct Entry<T> {
    expires: u64,
    value: T,
}

impl<T: Clone> SessionTable<T> {
    pub fn new(clock: Arc<dyn Clock>, ttl_ms: Option<u64>) -> Self {
        Self::bounded(clock, ttl_ms, usize::MAX)
    }

    /// A table holding at most `max` live sessions.
    pub fn bounded(clock: Arc<dyn Clock>, ttl_ms: Option<u64>, max: usize) -> Self {
        SessionTable { clock, ttl_ms, max, inner: Mutex::new(Inner { next: 0, live: BTreeMap::new() }) }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        // Plain data, consistent after any panic.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn enabled(&self) -> bool {
        self.ttl_ms.is_some()
    }

    /// A new session, or `None` when the server grants none or the table is full. Expired sessions are swept here,
    /// so the table holds about as many sessions as were granted within one TTL.
    pub fn grant(&self) -> Option<SessionGrant>
    where
        T: Default,
    {
        self.grant_with(T::default)
    }

    /// [`SessionTable::grant`], keeping `value()` for the new session.
    pub fn grant_with(&self, value: impl FnOnce() -> T) -> Option<SessionGrant> {
        let ttl_ms = self.ttl_ms?;
        let now = self.clock.wall_ms();
        let mut inner = self.lock();
        inner.live.retain(|_, e| e.expires > now);
        if inner.live.len() >= self.max {
            return None;
        }
        inner.next += 1;
        let id = format!("s-{}", inner.next);
        let expires = now.saturating_add(ttl_ms);
        inner.live.insert(id.clone(), Entry { expires, value: value() });
        Some(SessionGrant { id, ttl_ms, expires_at_ms: Some(expires) })
    }

    /// A fresh expiry for a live session (`None` if it is not live).
    pub fn renew(&self, id: &str) -> Option<SessionGrant> {
        let ttl_ms = self.ttl_ms?;
        let now = self.clock.wall_ms();
        let mut inner = self.lock();
        let entry = inner.live.get_mut(id).filter(|e| e.expires > now)?;
        entry.expires = now.saturating_add(ttl_ms);
        Some(SessionGrant { id: id.to_owned(), ttl_ms, expires_at_ms: Some(entry.expires) })
    }

    pub fn is_live(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// What the server keeps for a live session.
    pub fn get(&self, id: &str) -> Option<T> {
        let now = self.clock.wall_ms();
        self.lock().live.get(id).filter(|e| e.expires > now).map(|e| e.value.clone())
    }

    /// Ends one session (a client's HTTP DELETE); what it kept, if it was live.
    pub fn remove(&self, id: &str) -> Option<T> {
        let now = self.clock.wall_ms();
        self.lock().live.remove(id).filter(|e| e.expires > now).map(|e| e.value)
    }

    /// Forgets every session (a `session_expiry` fault, a restart) and returns what they kept. Ids are never reused.
    pub fn drop_all(&self) -> Vec<T> {
        std::mem::take(&mut self.lock().live).into_values().map(|e| e.value).collect()
    }
}
