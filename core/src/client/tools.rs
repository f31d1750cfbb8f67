//! The tool list of one session: fetched once (all pages) and turned into the session's capability record, then
//! re-fetched when something says it may be stale — `notifications/tools/list_changed`, a modern `ttlMs` running
//! out, or a drift signal from a call (see [`super::drift`]). Compiled schemas live in the client's
//! [`SchemaCache`], which outlives sessions: a re-fetch whose content hash is unchanged compiles nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use tokio::time::{Duration, Instant};

use super::ClientConfig;
use super::drift::{self, RefetchReason};
use crate::conn::{CallOptions, Connection, Lane};
use crate::error::CallError;
use crate::mcp::{Implementation, InitializeResult, ListToolsResult, Tool, method};
use crate::schema::{Capabilities, SchemaCache};

/// What a fetch needs: the session's connection and identity, and the client's schema cache and settings.
#[derive(Debug, Clone, Copy)]
pub(super) struct FetchCtx<'a> {
    pub conn: &'a Connection,
    pub init: &'a InitializeResult,
    pub schemas: &'a SchemaCache,
    pub config: &'a ClientConfig,
}

#[derive(Debug, Default)]
pub(super) struct ToolCache {
    stale: AtomicBool,
    /// Async mutex: concurrent callers wait for one fetch instead of each listing the tools.
    state: tokio::sync::Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    current: Option<Arc<Capabilities>>,
    /// When the current list stops being fresh (a modern `ttlMs`); `None`: until a signal.
    expires: Option<Instant>,
    /// A newer `serverInfo` seen stamped on a result, which replaces the handshake's in later records (otherwise
    /// every later result would signal the same version change again).
    server: Option<Implementation>,
}

/// A record, and why it was fetched again if it just was (`None` for the first fetch or a cache hit).
pub(super) type Got = (Arc<Capabilities>, Option<RefetchReason>);

impl ToolCache {
    pub fn mark_stale(&self) {
        self.stale.store(true, Ordering::Release);
    }

    /// The capability record fetched so far, without fetching (waits for a fetch in progress).
    pub async fn current(&self) -> Option<Arc<Capabilities>> {
        self.state.lock().await.current.clone()
    }

    /// The current record without waiting or fetching: `None` while a fetch holds the lock or before the first.
    pub fn peek(&self) -> Option<Arc<Capabilities>> {
        self.state.try_lock().ok().and_then(|s| s.current.clone())
    }

    /// The session's capability record, fetching it first if there is none or it went stale.
    pub async fn get_or_fetch(&self, ctx: FetchCtx<'_>) -> Result<Got, CallError> {
        let mut state = self.state.lock().await;
        let stale = self.stale.swap(false, Ordering::AcqRel);
        let expired = state.expires.is_some_and(|at| Instant::now() >= at);
        let reason = match &state.current {
            Some(_) if stale => RefetchReason::ListChanged,
            Some(_) if expired => RefetchReason::Ttl,
            Some(current) => return Ok((current.clone(), None)),
            None => return fetch_into(&mut state, ctx).await.map(|c| (c, None)),
        };
        match fetch_into(&mut state, ctx).await {
            Ok(c) => Ok((c, Some(reason))),
            Err(e) => {
                if stale {
                    self.mark_stale();
                }
                Err(e)
            }
        }
    }

    /// Fetches again because a call checked against `seen` signalled drift — unless another caller already replaced
    /// `seen`, in which case its newer record is returned (one re-fetch per drift, however many calls noticed it).
    /// `server` is a newer identity the signal carried. The flag says whether this call fetched.
    pub async fn refetch_after(
        &self,
        ctx: FetchCtx<'_>,
        seen: &Arc<Capabilities>,
        server: Option<Implementation>,
    ) -> Result<(Arc<Capabilities>, bool), CallError> {
        let mut state = self.state.lock().await;
        if let Some(s) = server {
            state.server = Some(s);
        }
        match &state.current {
            Some(current) if !Arc::ptr_eq(current, seen) => Ok((current.clone(), false)),
            _ => fetch_into(&mut state, ctx).await.map(|c| (c, true)),
        }
    }
}

async fn fetch_into(state: &mut State, ctx: FetchCtx<'_>) -> Result<Arc<Capabilities>, CallError> {
    let (tools, ttl) = fetch_all(ctx.conn, ctx.config).await?;
    let server = state.server.clone().unwrap_or_else(|| ctx.init.server_info.clone());
    let fresh = Arc::new(ctx.schemas.record(server, ctx.init.extra.get("_meta"), tools));
    state.current = Some(fresh.clone());
    state.expires = ttl.map(|ms| Instant::now() + Duration::from_millis(ms));
    Ok(fresh)
}

/// Follows `nextCursor` until the last page; returns the tools and the shortest `ttlMs` any page gave. A server
/// that repeats a cursor or never stops is cut off with a malformed-response error rather than looping forever.
async fn fetch_all(conn: &Connection, config: &ClientConfig) -> Result<(Vec<Tool>, Option<u64>), CallError> {
    let mut all = Vec::new();
    let mut ttl: Option<u64> = None;
    let mut cursor: Option<String> = None;
    for _ in 0..config.max_tool_pages {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let opts = CallOptions { lane: Lane::Priority, ..CallOptions::default() };
        let raw = conn.request(method::TOOLS_LIST, params, opts).await?;
        let page: ListToolsResult =
            serde_json::from_value(raw).map_err(|e| CallError::MalformedResponse(format!("tools/list: {e}")))?;
        all.extend(page.tools);
        if let Some(t) = drift::ttl_ms(&page.extra) {
            ttl = Some(ttl.map_or(t, |old| old.min(t)));
        }
        match page.next_cursor {
            Some(next) if cursor.as_ref() == Some(&next) => {
                return Err(CallError::MalformedResponse(format!("tools/list repeated cursor {next:?}")));
            }
            Some(next) => cursor = Some(next),
            None => return Ok((all, ttl)),
        }
    }
    Err(CallError::MalformedResponse(format!("tools/list did not end within {} pages", config.max_tool_pages)))
}
