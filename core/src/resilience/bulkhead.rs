//! Bulkheads (seed 001's "each server gets its own pool and quota; nothing is shared globally"): one
//! [`LimitedPool`] per server, so a hung server can hold at most its own permits and calls to every other server
//! are admitted as if it did not exist.
//!
//! A server's cap, first found wins: the configuration's per-server override, the server's declared
//! `max_concurrent_requests` ([`RouterHints`]), the configuration's default. The adaptive limiter (if any) works
//! inside that cap: it can lower a server's concurrency when its RTT or timeouts say so, never raise it past what
//! the server declared.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::limiter::{LimitPermit, LimitedPool, LimiterKind, PoolTimeout};
use crate::schema::RouterHints;

/// Defaults: `default_max` 32, no overrides, a fixed limit (no adaptation), queue wait 1 s.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkheadConfig {
    pub default_max: usize,
    pub per_server: BTreeMap<String, usize>,
    pub limiter: LimiterKind,
    /// How long a call may wait for one of its server's permits.
    pub queue_wait: Duration,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig {
            default_max: 32,
            per_server: BTreeMap::new(),
            limiter: LimiterKind::Fixed,
            queue_wait: Duration::from_secs(1),
        }
    }
}

/// The per-server pools, created on first use.
#[derive(Debug)]
pub struct Bulkheads {
    config: BulkheadConfig,
    pools: Mutex<BTreeMap<String, Arc<LimitedPool>>>,
}

impl Bulkheads {
    pub fn new(config: BulkheadConfig) -> Self {
        Bulkheads { config, pools: Mutex::new(BTreeMap::new()) }
    }

    /// The cap for `server` given what it declared.
    pub fn cap(&self, server: &str, hints: Option<&RouterHints>) -> usize {
        let declared = hints.and_then(|h| h.max_concurrent_requests).map(|n| n as usize);
        self.config.per_server.get(server).copied().or(declared).unwrap_or(self.config.default_max).max(1)
    }

    /// `server`'s pool; the first call fixes its cap (a later declaration does not resize a pool in use).
    pub fn pool(&self, server: &str, hints: Option<&RouterHints>) -> Arc<LimitedPool> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pools.get(server) {
            return p.clone();
        }
        let pool = LimitedPool::new(self.config.limiter.build(self.cap(server, hints)));
        pools.insert(server.to_owned(), pool.clone());
        pool
    }

    /// A permit for one call to `server`, within the configured queue wait.
    pub async fn acquire(&self, server: &str, hints: Option<&RouterHints>) -> Result<LimitPermit, PoolTimeout> {
        self.pool(server, hints).acquire(self.config.queue_wait).await
    }

    /// (server, in flight, limit) for every pool, in name order: for the observer's time series.
    pub fn snapshot(&self) -> Vec<(String, usize, usize)> {
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools.iter().map(|(name, p)| (name.clone(), p.in_flight(), p.limit())).collect()
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;
    use crate::resilience::limiter::{AimdConfig, SampleOutcome};

    #[test]
    fn cap_comes_from_override_then_declaration_then_default() {
        let config = BulkheadConfig {
            default_max: 16,
            per_server: BTreeMap::from([("db".to_owned(), 4)]),
            ..BulkheadConfig::default()
        };
        let b = Bulkheads::new(config);
        let declared = RouterHints { max_concurrent_requests: Some(8), ..RouterHints::default() };
        assert_eq!(b.cap("db", Some(&declared)), 4);
        assert_eq!(b.cap("search", Some(&declared)), 8);
        assert_eq!(b.cap("search", None), 16);
        assert_eq!(b.pool("search", Some(&declared)).limit(), 8);
        assert_eq!(b.pool("search", None).limit(), 8, "the first use fixed it");
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_server_cannot_take_permits_from_a_healthy_one() {
        let config = BulkheadConfig { default_max: 3, queue_wait: Duration::from_millis(50), ..Default::default() };
        let b = Bulkheads::new(config);
        // Three calls to "hung" never return: its pool is full and its callers time out in the queue.
        let stuck: Vec<_> = (0..3).map(|_| b.pool("hung", None).try_acquire().unwrap()).collect();
        assert!(b.acquire("hung", None).await.is_err());
        // "healthy" admits its full quota at once, undisturbed.
        let start = Instant::now();
        let ok: Vec<_> = acquire_n(&b, "healthy", 3).await;
        assert_eq!((ok.len(), start.elapsed()), (3, Duration::ZERO));
        assert_eq!(b.snapshot(), vec![("healthy".into(), 3, 3), ("hung".into(), 3, 3)]);
        drop(ok);
        drop(stuck);
        assert_eq!(b.snapshot(), vec![("healthy".into(), 0, 3), ("hung".into(), 0, 3)]);
    }

    async fn acquire_n(b: &Bulkheads, server: &str, n: usize) -> Vec<LimitPermit> {
        let mut out = vec![];
        for _ in 0..n {
            out.push(b.acquire(server, None).await.unwrap());
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn the_adaptive_limit_works_inside_the_declared_cap() {
        let config = BulkheadConfig {
            limiter: LimiterKind::Aimd(AimdConfig { initial: 100, ..AimdConfig::default() }),
            ..BulkheadConfig::default()
        };
        let b = Bulkheads::new(config);
        let declared = RouterHints { max_concurrent_requests: Some(10), ..RouterHints::default() };
        let pool = b.pool("s", Some(&declared));
        assert_eq!(pool.limit(), 10);
        for _ in 0..5 {
            let p = b.acquire("s", None).await.unwrap();
            p.finish(Instant::now(), SampleOutcome::Dropped);
        }
        assert_eq!(pool.limit(), 5, "timeouts lowered it: 10 → 9 → 8 → 7 → 6 → 5");
        assert_eq!(pool.in_flight(), 0);
    }
}
