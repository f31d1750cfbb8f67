//! The capability record of the current session: the tool list and its compiled schemas, fetched when the cache
//! says so, and the drift counters a re-fetch moves.

use std::sync::Arc;

use tokio::time::{Instant, timeout_at};

use super::ready::LazyNow;
use super::{McpClient, Session};
use crate::capabilities::{Capabilities, DriftStats, FetchCtx};
use crate::error::{CallError, LocalError};
use crate::mcp::Tool;
use crate::observe::{Event, RefetchReason};
use crate::session::GatewayProfile;

impl McpClient {
    /// The server's tools, from cache unless the server announced a change or the session is new.
    pub async fn list_tools(&self) -> Result<Arc<Vec<Tool>>, CallError> {
        Ok(self.capabilities().await?.tools().clone())
    }

    /// The capability record of the current session (fetching the tool list if needed): server identity, tools with
    /// compiled schemas, annotations, router hints and the list's content hash, fetched when the cache says so.
    /// Bounded by the connection's `call_deadline` from now, like a direct call: a replica that cannot be reached
    /// never holds its caller longer. (Read on a gateway call's path, by the embedder's `prepare`, it is bounded by
    /// what is left of that call's deadline too: the gateway bounds `prepare`.)
    pub async fn capabilities(&self) -> Result<Arc<Capabilities>, CallError> {
        // The usual case, a live session with a current record, needs no timer: nothing below would wait.
        let mut now = LazyNow::default();
        let ready = self.ready_session(|| now.get());
        if let Some(session) = &ready
            && let Some(caps) = self.ready_capabilities(session, || now.get())?
        {
            return Ok(caps);
        }
        // This is where a direct read of the record enters: its deadline is resolved here, on the slow path only.
        let deadline = Instant::now() + self.config.connection.call_deadline;
        let fetch = async {
            let session = match ready {
                Some(s) => s,
                None => self.live_session().await?,
            };
            self.capabilities_of(&session, deadline).await
        };
        // Boxed, like every path a call takes only when the cache or the session is not ready: a future holds room for
        // everything it may await, so an unboxed connect-and-fetch would enlarge every call's future for good.
        timeout_at(deadline, Box::pin(fetch)).await.unwrap_or_else(|_| Err(LocalError::DeadlineExceeded.into()))
    }

    /// The capability record of `session` for a call already under way, within what is left of its deadline.
    pub(super) async fn capabilities_within(
        &self,
        session: &Session,
        deadline: Instant,
    ) -> Result<Arc<Capabilities>, CallError> {
        timeout_at(deadline, self.capabilities_of(session, deadline))
            .await
            .unwrap_or_else(|_| Err(LocalError::DeadlineExceeded.into()))
    }

    /// The record, fetched if the cache says so, each request of the fetch under `deadline`.
    async fn capabilities_of(&self, session: &Session, deadline: Instant) -> Result<Arc<Capabilities>, CallError> {
        if let Some(caps) = self.ready_capabilities(session, Instant::now)? {
            return Ok(caps);
        }
        if self.config.profile == GatewayProfile::Naive {
            // Cached forever: across sessions, deaf to list_changed and to every drift signal.
            let mut pinned = self.pinned.lock().await;
            if let Some(caps) = pinned.as_ref() {
                return Ok(caps.clone());
            }
            let (caps, _) = session.tools.get_or_fetch(self.fetch_ctx(session, deadline)).await?;
            *pinned = Some(caps.clone());
            return Ok(caps);
        }
        let (caps, refetched) = session.tools.get_or_fetch(self.fetch_ctx(session, deadline)).await?;
        if let Some(reason) = refetched {
            self.refetched(reason);
        }
        Ok(caps)
    }

    /// The capability record as cached right now, without connecting, waiting or fetching (`None` when there is
    /// none yet or it is being fetched). For decisions that must not block, such as whether a tool is idempotent.
    pub fn cached_capabilities(&self) -> Option<Arc<Capabilities>> {
        if self.config.profile == GatewayProfile::Naive
            && let Some(pinned) = self.pinned.try_lock().ok().and_then(|p| p.clone())
        {
            return Some(pinned);
        }
        self.live.try_lock()?.get()?.tools.peek()
    }

    pub(super) fn fetch_ctx<'a>(&'a self, session: &'a Session, deadline: Instant) -> FetchCtx<'a> {
        let (schemas, limits) = (&self.schemas, &self.limits);
        FetchCtx { conn: &session.conn, init: &session.init, schemas, limits, deadline }
    }

    /// Counts a re-fetch and tells the observer: the one place both happen, so `drift_stats` and the events agree.
    /// A re-fetch on a drift signal (a server that changed its tools without `list_changed`) tells the
    /// [`ListChanged`](super::ListChanged) hook too, as the notification would have: a gateway in front of this
    /// client must re-list the server for its own agents, or they keep calling with the stale schema.
    pub(super) fn refetched(&self, reason: RefetchReason) {
        self.drift.refetched(reason);
        self.observer.event(&Event::SchemaRefetched { server: &self.server, reason });
        let drift = !matches!(reason, RefetchReason::ListChanged | RefetchReason::Ttl);
        if drift && let Some(hook) = &self.list_changed {
            (hook.0)();
        }
    }

    /// How many tools' schemas this client has compiled (re-fetches with an unchanged hash add nothing).
    pub fn schema_compilations(&self) -> u64 {
        self.schemas.compilations()
    }

    /// Schema-drift counters: re-fetches by reason, calls resent after one, calls stopped locally by the fresh
    /// schema.
    pub fn drift_stats(&self) -> DriftStats {
        self.drift.snapshot()
    }
}
