//! The idempotency cache: a repeated call to a read-only or idempotent tool with the same input returns the result
//! it got last time, without a call.
//!
//! Only tools that say so (`readOnlyHint` or `idempotentHint`) take part, and only successful results that are not
//! `isError` are kept: replaying a failure would hide a recovery. Entries expire after a TTL measured on tokio's
//! monotonic clock (never wall time, which a skewed or stepped clock can move backwards), and the cache is bounded
//! twice: by entry count, evicting the least recently used, and by the size of one result, so one huge answer cannot
//! hold the memory of a thousand small ones.

use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::record::CallKey;
use crate::mcp::{CallToolResult, Tool};

/// The cache's bounds.
///
/// Defaults: `capacity` 1024 entries, `ttl` 60 s, `max_result_bytes` 256 KiB (the result's JSON size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyConfig {
    /// Most entries kept; 0 disables the cache.
    pub capacity: usize,
    /// How long a stored result may be returned, from when it was stored (a hit does not extend it).
    pub ttl: Duration,
    /// Results larger than this (serialised JSON bytes) are not stored.
    pub max_result_bytes: usize,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        IdempotencyConfig { capacity: 1024, ttl: Duration::from_secs(60), max_result_bytes: 256 * 1024 }
    }
}

/// Counters since the cache was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    pub hits: u64,
    /// Lookups of eligible tools that found nothing usable (absent or expired).
    pub misses: u64,
    /// Entries found expired at lookup or purged.
    pub expired: u64,
    /// Entries evicted to make room.
    pub evicted: u64,
    pub stored: u64,
}

/// What [`IdempotencyCache::put`] did with a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    Stored,
    /// The tool declares neither `readOnlyHint` nor `idempotentHint`, or the key names another tool.
    NotEligible,
    /// An `isError` result: never cached.
    ToolError,
    /// Larger than `max_result_bytes`.
    TooLarge,
    /// `capacity` is 0.
    Disabled,
}

#[derive(Debug)]
struct Entry {
    result: CallToolResult,
    stored_at: Instant,
    /// Position in `recency`.
    used: u64,
}

#[derive(Debug)]
pub struct IdempotencyCache {
    config: IdempotencyConfig,
    entries: BTreeMap<CallKey, Entry>,
    /// Use order: the first entry is the least recently used.
    recency: BTreeMap<u64, CallKey>,
    tick: u64,
    stats: CacheStats,
}

impl IdempotencyCache {
    pub fn new(config: IdempotencyConfig) -> Self {
        IdempotencyCache {
            config,
            entries: BTreeMap::new(),
            recency: BTreeMap::new(),
            tick: 0,
            stats: CacheStats::default(),
        }
    }

    /// Whether calls to `tool` may be answered from the cache.
    pub fn eligible(tool: &Tool) -> bool {
        tool.hint("readOnlyHint") || tool.hint("idempotentHint")
    }

    /// The stored result for `key`, if the tool is eligible and the entry has not expired at `now` (pass the
    /// [`Clock`](crate::rt::Clock)'s monotonic now).
    pub fn get(&mut self, tool: &Tool, key: &CallKey, now: Instant) -> Option<CallToolResult> {
        if !Self::eligible(tool) || tool.name != key.tool || self.config.capacity == 0 {
            return None;
        }
        let ttl = self.config.ttl;
        let Some(entry) = self.entries.get_mut(key) else {
            self.stats.misses += 1;
            return None;
        };
        if now.saturating_duration_since(entry.stored_at) >= ttl {
            let used = entry.used;
            self.entries.remove(key);
            self.recency.remove(&used);
            self.stats.expired += 1;
            self.stats.misses += 1;
            return None;
        }
        self.recency.remove(&entry.used);
        self.tick += 1;
        entry.used = self.tick;
        self.recency.insert(self.tick, key.clone());
        self.stats.hits += 1;
        Some(entry.result.clone())
    }

    /// Stores a result for `key`, stamped `now`, evicting the least recently used entry when full.
    pub fn put(&mut self, tool: &Tool, key: CallKey, result: &CallToolResult, now: Instant) -> PutOutcome {
        if self.config.capacity == 0 {
            return PutOutcome::Disabled;
        }
        if !Self::eligible(tool) || tool.name != key.tool {
            return PutOutcome::NotEligible;
        }
        if result.is_error {
            return PutOutcome::ToolError;
        }
        if json_size(result, self.config.max_result_bytes) > self.config.max_result_bytes {
            return PutOutcome::TooLarge;
        }
        if let Some(old) = self.entries.remove(&key) {
            self.recency.remove(&old.used);
        }
        while self.entries.len() >= self.config.capacity {
            let Some((_, lru)) = self.recency.pop_first() else { break };
            self.entries.remove(&lru);
            self.stats.evicted += 1;
        }
        self.tick += 1;
        self.recency.insert(self.tick, key.clone());
        self.entries.insert(key, Entry { result: result.clone(), stored_at: now, used: self.tick });
        self.stats.stored += 1;
        PutOutcome::Stored
    }

    /// Removes every entry expired at `now`; returns how many.
    pub fn purge_expired(&mut self, now: Instant) -> usize {
        let ttl = self.config.ttl;
        let expired: Vec<(CallKey, u64)> = self
            .entries
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.stored_at) >= ttl)
            .map(|(k, e)| (k.clone(), e.used))
            .collect();
        for (k, used) in &expired {
            self.entries.remove(k);
            self.recency.remove(used);
        }
        self.stats.expired += expired.len() as u64;
        expired.len()
    }

    /// Forgets every entry of one server (its tools changed, or its session was replaced by one that may differ).
    pub fn invalidate_server(&mut self, server: &str) {
        let gone: Vec<(CallKey, u64)> =
            self.entries.iter().filter(|(k, _)| k.server == server).map(|(k, e)| (k.clone(), e.used)).collect();
        for (k, used) in gone {
            self.entries.remove(&k);
            self.recency.remove(&used);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    pub fn config(&self) -> &IdempotencyConfig {
        &self.config
    }
}

/// The result's serialised size, counting no further than just past `limit`.
fn json_size(result: &CallToolResult, limit: usize) -> usize {
    struct Count {
        n: usize,
        limit: usize,
    }
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.n += buf.len();
            if self.n > self.limit {
                // Stop serialising: the answer is already "too large".
                return Err(io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count { n: 0, limit };
    let _ = serde_json::to_writer(&mut c, result);
    c.n
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, annotations: serde_json::Value) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}, "annotations": annotations}))
            .unwrap()
    }

    fn key(server: &str, tool: &str, q: &str) -> CallKey {
        CallKey::new(server, tool, &json!({ "q": q }))
    }

    fn cache(capacity: usize, ttl_s: u64) -> IdempotencyCache {
        IdempotencyCache::new(IdempotencyConfig {
            capacity,
            ttl: Duration::from_secs(ttl_s),
            ..IdempotencyConfig::default()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn hit_miss_and_expiry_on_monotonic_time() {
        let search = tool("search", json!({"readOnlyHint": true}));
        let mut c = cache(8, 10);
        let k = key("s", "search", "mcp");
        assert_eq!(c.get(&search, &k, Instant::now()), None);
        let r = CallToolResult::text("3 hits", false);
        assert_eq!(c.put(&search, k.clone(), &r, Instant::now()), PutOutcome::Stored);
        // Same arguments in another key order: same key, a hit.
        let k2 = CallKey::new("s", "search", &serde_json::from_str(r#"{"q":"mcp"}"#).unwrap());
        assert_eq!(c.get(&search, &k2, Instant::now()), Some(r.clone()));
        // Another input, server or tool: a miss.
        assert_eq!(c.get(&search, &key("s", "search", "other"), Instant::now()), None);
        assert_eq!(c.get(&search, &key("s2", "search", "mcp"), Instant::now()), None);

        tokio::time::advance(Duration::from_millis(9_999)).await;
        assert_eq!(c.get(&search, &k, Instant::now()), Some(r.clone()), "still inside the TTL; hits do not extend it");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(c.get(&search, &k, Instant::now()), None, "expired at exactly the TTL");
        assert!(c.is_empty());
        assert_eq!(c.stats(), CacheStats { hits: 2, misses: 4, expired: 1, evicted: 0, stored: 1 }, "{:?}", c.stats());
    }

    #[tokio::test(start_paused = true)]
    async fn only_eligible_tools_and_clean_results() {
        let plain = tool("write", json!({}));
        let idem = tool("put", json!({"idempotentHint": true}));
        let ro_false = tool("read", json!({"readOnlyHint": false}));
        let mut c = cache(8, 10);
        let now = Instant::now();
        let ok = CallToolResult::text("done", false);
        assert_eq!(c.put(&plain, key("s", "write", "a"), &ok, now), PutOutcome::NotEligible);
        assert_eq!(c.put(&ro_false, key("s", "read", "a"), &ok, now), PutOutcome::NotEligible);
        assert_eq!(c.put(&idem, key("s", "write", "a"), &ok, now), PutOutcome::NotEligible, "key names another tool");
        let failed = CallToolResult::text("disk full", true);
        assert_eq!(c.put(&idem, key("s", "put", "a"), &failed, now), PutOutcome::ToolError);
        assert_eq!(c.get(&idem, &key("s", "put", "a"), now), None);
        assert_eq!(c.put(&idem, key("s", "put", "a"), &ok, now), PutOutcome::Stored);
        assert_eq!(c.get(&idem, &key("s", "put", "a"), now), Some(ok.clone()));
        // A tool that lost its hint is no longer answered from the cache.
        let demoted = tool("put", json!({}));
        assert_eq!(c.get(&demoted, &key("s", "put", "a"), now), None);
        assert_eq!(c.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn bounded_by_count_evicting_the_least_recently_used() {
        let t = tool("search", json!({"readOnlyHint": true}));
        let mut c = cache(3, 60);
        let now = Instant::now();
        for q in ["a", "b", "c"] {
            c.put(&t, key("s", "search", q), &CallToolResult::text(q, false), now);
        }
        // Touch "a": "b" becomes the least recently used.
        assert!(c.get(&t, &key("s", "search", "a"), now).is_some());
        c.put(&t, key("s", "search", "d"), &CallToolResult::text("d", false), now);
        assert_eq!(c.len(), 3);
        assert!(c.get(&t, &key("s", "search", "b"), now).is_none(), "b was evicted");
        for q in ["a", "c", "d"] {
            assert!(c.get(&t, &key("s", "search", q), now).is_some(), "{q} kept");
        }
        for i in 0..100 {
            c.put(&t, key("s", "search", &format!("x{i}")), &CallToolResult::text("x", false), now);
            assert!(c.len() <= 3);
        }
        assert_eq!(c.stats().evicted, 101);
        // Replacing an entry does not evict another.
        let last = key("s", "search", "x99");
        c.put(&t, last.clone(), &CallToolResult::text("new", false), now);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(&t, &last, now), Some(CallToolResult::text("new", false)));
        assert_eq!(c.stats().evicted, 101);
    }

    #[tokio::test(start_paused = true)]
    async fn bounded_by_result_size_and_disabled_at_zero() {
        let t = tool("search", json!({"readOnlyHint": true}));
        let mut c = IdempotencyCache::new(IdempotencyConfig { max_result_bytes: 100, ..IdempotencyConfig::default() });
        let now = Instant::now();
        let big = CallToolResult::text("x".repeat(200), false);
        assert_eq!(c.put(&t, key("s", "search", "a"), &big, now), PutOutcome::TooLarge);
        let small = CallToolResult::text("x", false);
        assert_eq!(c.put(&t, key("s", "search", "a"), &small, now), PutOutcome::Stored);
        let mut off = cache(0, 60);
        assert_eq!(off.put(&t, key("s", "search", "a"), &small, now), PutOutcome::Disabled);
        assert_eq!(off.get(&t, &key("s", "search", "a"), now), None);
    }

    #[tokio::test(start_paused = true)]
    async fn purge_and_invalidate() {
        let t = tool("search", json!({"readOnlyHint": true}));
        let mut c = cache(8, 10);
        c.put(&t, key("s1", "search", "old"), &CallToolResult::text("o", false), Instant::now());
        tokio::time::advance(Duration::from_secs(6)).await;
        c.put(&t, key("s1", "search", "new"), &CallToolResult::text("n", false), Instant::now());
        c.put(&t, key("s2", "search", "new"), &CallToolResult::text("n", false), Instant::now());
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(c.purge_expired(Instant::now()), 1);
        assert_eq!(c.len(), 2);
        c.invalidate_server("s1");
        assert_eq!(c.len(), 1);
        assert!(c.get(&t, &key("s2", "search", "new"), Instant::now()).is_some());
    }
}
