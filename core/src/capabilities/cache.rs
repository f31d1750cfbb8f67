//! The tool list of one session: fetched once (all pages) and turned into the session's capability record, then
//! re-fetched when something says it may be stale — `notifications/tools/list_changed`, a modern `ttlMs` running
//! out, or a drift signal from a call (see [`super::drift`]). Compiled schemas live in the client's
//! [`SchemaCache`], which outlives sessions: a re-fetch whose content hash is unchanged compiles nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};

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

/// What a fetch needs: the session's connection and identity, the client's schema cache and listing limits, and the
/// deadline of the call the fetch serves (every page's request shares it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FetchCtx<'a> {
    pub conn: &'a Connection,
    pub init: &'a InitializeResult,
    pub schemas: &'a SchemaCache,
    pub limits: &'a ListingLimits,
    pub deadline: Instant,
}

#[derive(Debug, Default)]
pub(crate) struct ToolCache {
    stale: AtomicBool,
    /// A fetch is under way (set while `state` is held across one): the record in `current` is about to be replaced,
    /// so the fast path leaves it to the slow one, which waits for the new record.
    fetching: AtomicBool,
    /// The record and its expiry, read by every call without waiting; written only by a fetch, under `state`.
    current: std::sync::Mutex<Current>,
    /// Async mutex: concurrent callers wait for one fetch instead of each listing the tools.
    state: tokio::sync::Mutex<State>,
}

#[derive(Debug, Default, Clone)]
struct Current {
    record: Option<Arc<Capabilities>>,
    /// When the record stops being fresh (a modern `ttlMs`); `None`: until a signal.
    expires: Option<Instant>,
}

#[derive(Debug, Default)]
struct State {
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

    fn current(&self) -> Current {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The capability record fetched so far, without fetching (waits for a fetch in progress).
    pub async fn settled(&self) -> Option<Arc<Capabilities>> {
        let _state = self.state.lock().await;
        self.current().record
    }

    /// The current record without waiting or fetching: `None` while a fetch is under way or before the first.
    pub fn peek(&self) -> Option<Arc<Capabilities>> {
        if self.fetching.load(Ordering::Acquire) {
            return None;
        }
        self.current().record
    }

    /// The current record when [`ToolCache::get_or_fetch`] would return it as it is (neither stale nor expired at
    /// `now`, read only when the record has an expiry), without waiting: `None` when it would fetch, or while a
    /// fetch is under way. The per-call fast path.
    pub fn ready(&self, now: impl FnOnce() -> Instant) -> Option<Arc<Capabilities>> {
        if self.stale.load(Ordering::Acquire) || self.fetching.load(Ordering::Acquire) {
            return None;
        }
        let Current { record, expires } = self.current();
        match expires {
            Some(at) if now() >= at => None,
            _ => record,
        }
    }

    /// The session's capability record, fetching it first if there is none or it went stale.
    pub async fn get_or_fetch(&self, ctx: FetchCtx<'_>) -> Result<Got, CallError> {
        let mut state = self.state.lock().await;
        let stale = self.stale.swap(false, Ordering::AcqRel);
        let Current { record, expires } = self.current();
        let expired = expires.is_some_and(|at| Instant::now() >= at);
        let reason = match record {
            Some(_) if stale => RefetchReason::ListChanged,
            Some(_) if expired => RefetchReason::Ttl,
            Some(current) => return Ok((current, None)),
            None => return self.fetch_into(&mut state, ctx).await.map(|c| (c, None)),
        };
        match self.fetch_into(&mut state, ctx).await {
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
        match self.current().record {
            Some(current) if !Arc::ptr_eq(&current, seen) => Ok((current, false)),
            _ => self.fetch_into(&mut state, ctx).await.map(|c| (c, true)),
        }
    }

    /// Lists the tools and installs the new record (the caller holds `state`, so fetches never overlap).
    async fn fetch_into(&self, state: &mut State, ctx: FetchCtx<'_>) -> Result<Arc<Capabilities>, CallError> {
        let _fetching = Fetching::start(&self.fetching);
        let (tools, ttl) = fetch_all(ctx.conn, ctx.limits, ctx.deadline).await?;
        let server = state.server.clone().unwrap_or_else(|| ctx.init.server_info.clone());
        let fresh = Arc::new(ctx.schemas.record(server, ctx.init.extra.get("_meta"), tools));
        let expires = ttl.map(|ms| Instant::now() + Duration::from_millis(ms));
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Current { record: Some(fresh.clone()), expires };
        Ok(fresh)
    }
}

/// Raises the fetching flag for as long as a fetch runs, however it ends (a caller may drop it mid-way).
struct Fetching<'a>(&'a AtomicBool);

impl<'a> Fetching<'a> {
    fn start(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Release);
        Fetching(flag)
    }
}

impl Drop for Fetching<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Follows `nextCursor` until the last page; returns the tools and the shortest `ttlMs` any page gave. A server
/// that repeats a cursor or never stops is cut off with a malformed-response error rather than looping forever, and
/// one that lists more than `max_tools` tools or `max_tool_list_bytes` of them gets an error naming the limit: the
/// listing is refused whole, since a silently truncated tool list would make calls to the missing tools look like
/// the server's fault.
async fn fetch_all(
    conn: &Connection,
    limits: &ListingLimits,
    deadline: Instant,
) -> Result<(Vec<Tool>, Option<u64>), CallError> {
    let mut all = Vec::new();
    let mut bytes = 0usize;
    let mut ttl: Option<u64> = None;
    let mut cursor: Option<String> = None;
    for _ in 0..limits.max_pages {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let opts = CallOptions { lane: Lane::Priority, ..CallOptions::default() }.until(deadline);
        let raw = conn.request_bounded(method::TOOLS_LIST, params, opts, Instant::now()).await?;
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
    use crate::conn::{ConnectionConfig, ConnectionParts};
    use crate::observe::{ConnId, NoopObserver};
    use crate::transport::line_transport;

    /// A connection whose server is gone: any fetch fails at once, so a slow path that answers `Ok` did not fetch.
    fn dead_connection() -> Connection {
        let (client, server) = tokio::io::duplex(64);
        drop(server);
        let (reader, writer) = tokio::io::split(client);
        let (sink, source) = line_transport(reader, writer, 1 << 20);
        let parts = ConnectionParts {
            id: ConnId(0),
            server: "srv".into(),
            config: ConnectionConfig::default(),
            observer: Arc::new(NoopObserver),
            global: None,
            on_notification: None,
            guard: None,
        };
        Connection::start(sink, source, parts)
    }

    fn install(cache: &ToolCache, expires: Option<Instant>) -> Arc<Capabilities> {
        let server = Implementation::new("srv", "1.0");
        let record = Arc::new(SchemaCache::default().record(server, None, Vec::new()));
        *cache.current.lock().unwrap() = Current { record: Some(record.clone()), expires };
        record
    }

    /// The fast path's answer, checked against the slow path's at the same instant: the same record when the fast
    /// path has one, and a fetch (failing here) when it has none.
    async fn agree(cache: &ToolCache, conn: &Connection) -> Option<Arc<Capabilities>> {
        let init: InitializeResult = serde_json::from_value(json!({
            "protocolVersion": "2025-11-25", "serverInfo": {"name": "srv", "version": "1.0"}
        }))
        .unwrap();
        let (schemas, limits) = (SchemaCache::default(), ListingLimits { max_pages: 1, max_tools: 1, max_bytes: 1 });
        let fast = cache.ready(Instant::now);
        let deadline = Instant::now() + Duration::from_secs(300);
        let ctx = FetchCtx { conn, init: &init, schemas: &schemas, limits: &limits, deadline };
        let slow = cache.get_or_fetch(ctx).await;
        match (&fast, slow) {
            (Some(fast), Ok((slow, None))) => assert!(Arc::ptr_eq(fast, &slow)),
            (None, Err(_)) => {}
            (fast, slow) => panic!("fast path {fast:?} but slow path {slow:?}"),
        }
        fast
    }

    #[tokio::test(start_paused = true)]
    async fn the_fast_path_answers_what_the_slow_path_would() {
        let (cache, conn) = (ToolCache::default(), dead_connection());
        assert!(agree(&cache, &conn).await.is_none(), "nothing fetched yet");

        let record = install(&cache, None);
        assert!(
            agree(&cache, &conn).await.is_some_and(|r| Arc::ptr_eq(&r, &record)),
            "no expiry: fresh until a signal"
        );

        cache.mark_stale();
        assert!(agree(&cache, &conn).await.is_none(), "list_changed: refetch");
        assert!(cache.stale.load(Ordering::Acquire), "the failed refetch left it stale");
        assert!(agree(&cache, &conn).await.is_none(), "still stale");
        cache.stale.store(false, Ordering::Release);

        let expires = Instant::now() + Duration::from_secs(10);
        install(&cache, Some(expires));
        assert!(agree(&cache, &conn).await.is_some(), "before its ttl");
        tokio::time::advance(Duration::from_millis(9_999)).await;
        assert!(agree(&cache, &conn).await.is_some(), "just before its ttl");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(agree(&cache, &conn).await.is_none(), "expired at the instant itself");

        install(&cache, None);
        let fetching = Fetching::start(&cache.fetching);
        assert!(cache.ready(Instant::now).is_none() && cache.peek().is_none(), "a fetch under way: wait for it");
        drop(fetching);
        assert!(cache.ready(Instant::now).is_some() && cache.peek().is_some());
    }

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
