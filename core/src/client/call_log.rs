//! The client's optional call history and idempotency cache ([`crate::history`]), both off by default: with them
//! on, every `call_tool` attempt is a [`ServerCallRecord`](crate::history::ServerCallRecord) (a resend after a
//! lost session is a second row with `retries` 1), and a read-only or idempotent tool called again with the same
//! arguments within the cache's TTL is answered from the cache without a request (and without a row: nothing was
//! sent).

use std::sync::Mutex;

use serde_json::Value;
use tokio::time::Instant;

use super::McpClient;
use crate::error::CallError;
use crate::history::{CallHistory, CallKey, CallStart, FailureAttribution, IdempotencyCache, IdempotencyConfig};
use crate::mcp::{CallToolResult, Tool};

impl McpClient {
    /// Records every `call_tool` attempt in a history of `capacity` rows (the oldest are dropped).
    pub fn with_history(mut self, capacity: usize) -> Self {
        self.history = Some(Mutex::new(CallHistory::new(capacity)));
        self
    }

    /// Answers repeated calls of read-only / idempotent tools (per their annotations) from a cache.
    pub fn with_idempotency_cache(mut self, config: IdempotencyConfig) -> Self {
        self.idempotency = Some(Mutex::new(IdempotencyCache::new(config)));
        self
    }

    /// Reads the call history (`None` when it is off).
    pub fn history<R>(&self, read: impl FnOnce(&CallHistory) -> R) -> Option<R> {
        self.history.as_ref().map(|h| read(&h.lock().unwrap_or_else(|p| p.into_inner())))
    }

    /// The last failed call in the history, its server and code, and the server's metrics around it.
    pub fn attribute_failure(&self) -> Option<FailureAttribution> {
        self.history(CallHistory::attribute_failure).flatten()
    }

    /// The idempotency cache's counters (`None` when it is off).
    pub fn idempotency_stats(&self) -> Option<crate::history::CacheStats> {
        self.idempotency.as_ref().map(|c| c.lock().unwrap_or_else(|p| p.into_inner()).stats())
    }

    /// Reads the clocks for a record, if recording.
    pub(super) fn begin_record(&self) -> Option<CallStart> {
        self.history(|h| h.begin(self.clock.as_ref()))
    }

    pub(super) fn record(
        &self,
        start: Option<CallStart>,
        tool: &str,
        arguments: &Value,
        outcome: Result<&CallToolResult, &CallError>,
        retries: u32,
    ) {
        if let (Some(start), Some(history)) = (start, &self.history) {
            let key = CallKey::new(self.server.clone(), tool, arguments);
            history.lock().unwrap_or_else(|p| p.into_inner()).record(start, key, outcome, retries);
        }
    }

    /// A cached result for this call, if the cache is on and holds one.
    pub(super) fn cached(&self, tool: &Tool, arguments: &Value) -> Option<CallToolResult> {
        let cache = self.idempotency.as_ref().filter(|_| IdempotencyCache::eligible(tool))?;
        let key = CallKey::new(self.server.clone(), tool.name.clone(), arguments);
        cache.lock().unwrap_or_else(|p| p.into_inner()).get(tool, &key, Instant::now())
    }

    /// Offers a fresh result to the cache (it keeps only eligible tools' successes).
    pub(super) fn remember(&self, tool: &Tool, arguments: &Value, result: &CallToolResult) {
        if let Some(cache) = self.idempotency.as_ref().filter(|_| IdempotencyCache::eligible(tool)) {
            let key = CallKey::new(self.server.clone(), tool.name.clone(), arguments);
            cache.lock().unwrap_or_else(|p| p.into_inner()).put(tool, key, result, Instant::now());
        }
    }
}
