//! The tool list of one session: fetched once (all pages) and turned into the session's capability record, then
//! re-fetched when something says it may be stale — `notifications/tools/list_changed`, a modern `ttlMs` running
//! out, or a drift signal from a call (see [`super::drift`]). Compiled schemas live in the client's
//! [`SchemaCache`], which outlives sessions: a re-fetch whose content hash is unchanged compiles nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tokio::time::{Duration, Instant};

use super::drift;
use super::{Capabilities, SchemaCache};
use crate::conn::{CallOptions, Connection, Lane};
use crate::error::CallError;
use crate::mcp::{Implementation, InitializeResult, ListToolsResult, Tool, method};
use crate::observe::RefetchReason;

/// How much of a tool listing a client accepts: a server can list anything (`ClientConfig` builds these from its
/// `max_tool_pages`, `max_tools` and `max_tool_list_bytes`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListingLimits {
    /// `tools/list` pages followed before giving up (a cursor loop guard).
    pub max_pages: usize,
    pub max_tools: usize,
    /// The listing's size as JSON, all pages together.
    pub max_bytes: usize,
}

/// What a fetch needs: the session's connection and identity, and the client's schema cache and listing limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FetchCtx<'a> {
    pub conn: &'a Connection,
    pub init: &'a InitializeResult,
    pub schemas: &'a SchemaCache,
    pub limits: &'a ListingLimits,
}

#[derive(Debug, Default)]
pub(crate) struct ToolCache {
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
pub(crate) type Got = (Arc<Capabilities>, Option<RefetchReason>);

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
    let (tools, ttl) = fetch_all(ctx.conn, ctx.limits).await?;
    let server = state.server.clone().unwrap_or_else(|| ctx.init.server_info.clone());
    let fresh = Arc::new(ctx.schemas.record(server, ctx.init.extra.get("_meta"), tools));
    state.current = Some(fresh.clone());
    state.expires = ttl.map(|ms| Instant::now() + Duration::from_millis(ms));
    Ok(fresh)
}

/// Follows `nextCursor` until the last page; returns the tools and the shortest `ttlMs` any page gave. A server
/// that repeats a cursor or never stops is cut off with a malformed-response error rather than looping forever, and
/// one that lists more than `max_tools` tools or `max_tool_list_bytes` of them gets an error naming the limit: the
/// listing is refused whole, since a silently truncated tool list would make calls to the missing tools look like
/// the server's fault.
async fn fetch_all(conn: &Connection, limits: &ListingLimits) -> Result<(Vec<Tool>, Option<u64>), CallError> {
    let mut all = Vec::new();
    let mut bytes = 0usize;
    let mut ttl: Option<u64> = None;
    let mut cursor: Option<String> = None;
    for _ in 0..limits.max_pages {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let opts = CallOptions { lane: Lane::Priority, ..CallOptions::default() };
        let raw = conn.request(method::TOOLS_LIST, params, opts).await?;
        bytes = bytes.saturating_add(json_size(&raw));
        if bytes > limits.max_bytes {
            return Err(too_large(format!(
                "is larger than {} bytes (ClientConfig::max_tool_list_bytes, --max-tool-list-mib)",
                limits.max_bytes
            )));
        }
        // Counted on the parsed page, before it is turned into tools: refusing costs no second copy.
        let listed = raw.get("tools").and_then(Value::as_array).map_or(0, Vec::len);
        if all.len().saturating_add(listed) > limits.max_tools {
            let limit = limits.max_tools;
            return Err(too_large(format!("has more than {limit} tools (ClientConfig::max_tools, --max-tools)")));
        }
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
    Err(CallError::MalformedResponse(format!(
        "tools/list did not end within {} pages (ClientConfig::max_tool_pages)",
        limits.max_pages
    )))
}

fn too_large(what: String) -> CallError {
    CallError::MalformedResponse(format!("the server's tool list {what}: refused; raise the limit to accept it"))
}

/// The length of `value` as compact JSON, without serializing it: what a listing costs to hold, measured as the
/// wire would. Strings count their UTF-8 bytes plus quotes (escapes are not counted: a lower bound within a few
/// percent for real listings).
fn json_size(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(b) => 4 + usize::from(!b),
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => s.len() + 2,
        // Brackets, and a comma between items.
        Value::Array(items) => items.iter().map(json_size).sum::<usize>() + items.len().saturating_sub(1) + 2,
        // Braces, a quoted key and a colon per entry, and a comma between entries.
        Value::Object(map) => {
            map.iter().map(|(k, v)| k.len() + 3 + json_size(v)).sum::<usize>() + map.len().saturating_sub(1) + 2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_size_is_the_compact_length_for_plain_values() {
        for v in [
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}, "n": 12, "x": null, "b": false}]}),
            json!([]),
            json!({}),
            json!([1, [true, {"k": [null, "v"]}], -2.5]),
        ] {
            assert_eq!(json_size(&v), serde_json::to_string(&v).unwrap().len(), "{v}");
        }
    }
}
