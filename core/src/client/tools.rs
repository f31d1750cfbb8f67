//! The tool list of one session: fetched once (all pages), cached until the server sends
//! `notifications/tools/list_changed`, and turned into the session's capability record. Compiled schemas live in the
//! client's [`SchemaCache`], which outlives sessions: a re-fetch whose content hash is unchanged compiles nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use super::ClientConfig;
use crate::conn::{CallOptions, Connection, Lane};
use crate::error::CallError;
use crate::mcp::{InitializeResult, ListToolsResult, Tool, method};
use crate::schema::{Capabilities, SchemaCache};

#[derive(Debug, Default)]
pub(super) struct ToolCache {
    stale: AtomicBool,
    /// Async mutex: concurrent callers wait for one fetch instead of each listing the tools.
    tools: tokio::sync::Mutex<Option<Arc<Capabilities>>>,
}

impl ToolCache {
    pub fn mark_stale(&self) {
        self.stale.store(true, Ordering::Release);
    }

    /// The session's capability record; `init` supplies the server's identity and server-level `_meta`.
    pub async fn get_or_fetch(
        &self,
        conn: &Connection,
        init: &InitializeResult,
        schemas: &SchemaCache,
        config: &ClientConfig,
    ) -> Result<Arc<Capabilities>, CallError> {
        let mut tools = self.tools.lock().await;
        let stale = self.stale.swap(false, Ordering::AcqRel);
        if let Some(t) = tools.as_ref().filter(|_| !stale) {
            return Ok(t.clone());
        }
        match fetch_all(conn, config).await {
            Ok(fresh) => {
                let fresh = Arc::new(schemas.record(init.server_info.clone(), init.extra.get("_meta"), fresh));
                *tools = Some(fresh.clone());
                Ok(fresh)
            }
            Err(e) => {
                if stale {
                    self.mark_stale();
                }
                Err(e)
            }
        }
    }
}

/// Follows `nextCursor` until the last page. A server that repeats a cursor or never stops is cut off with a
/// malformed-response error rather than looping forever.
async fn fetch_all(conn: &Connection, config: &ClientConfig) -> Result<Vec<Tool>, CallError> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..config.max_tool_pages {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let opts = CallOptions { lane: Lane::Priority, ..CallOptions::default() };
        let raw = conn.request(method::TOOLS_LIST, params, opts).await?;
        let page: ListToolsResult =
            serde_json::from_value(raw).map_err(|e| CallError::MalformedResponse(format!("tools/list: {e}")))?;
        all.extend(page.tools);
        match page.next_cursor {
            Some(next) if cursor.as_ref() == Some(&next) => {
                return Err(CallError::MalformedResponse(format!("tools/list repeated cursor {next:?}")));
            }
            Some(next) => cursor = Some(next),
            None => return Ok(all),
        }
    }
    Err(CallError::MalformedResponse(format!("tools/list did not end within {} pages", config.max_tool_pages)))
}
