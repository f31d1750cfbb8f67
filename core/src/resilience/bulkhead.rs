//! Bulkheads (each server gets its own pool and quota; nothing is shared globally), scoped to the
//! replica endpoint by default: one [`LimitedPool`] per replica, so a hung or slow replica holds at most its own
//! permits, and the gateway sends the next call to a sibling with room (see `gateway/protected.rs`). A verdict for a
//! whole server (a degraded `bulkhead_full`) is reached only when no candidate replica has room.
//!
//! A pool's hard cap, first found wins: the configuration's per-server override, the server's declared
//! `max_concurrent_requests` (a router hint, which each replica declares for itself), the configuration's
//! `max_concurrent`, and — when that is unset, the default — the replica client's own in-flight cap, so that a healthy
//! server reaches every concurrency the agents can offer through the client.
//!
//! When that in-flight cap is a limit the clients of several servers share, a permit also takes one of its slots
//! through [`SharedSlots`]: each server keeps a floor, and borrows what the others leave idle. A hung server cannot
//! take the others' floors; a slow one is not cut to a fixed split of slots it could have used.
//!
//! Inside the cap an adaptive [`Limiter`](super::limiter::Limiter) sets the limit. The default is AIMD starting at
//! the cap: loss-based, it only moves down on evidence (timeouts, overload errors, calls slower than its timeout), so
//! a server with flat or merely queueing latency is never throttled below what it was offered, and a replica whose
//! calls time out sheds its share to its siblings within a few drops. A delay-based limiter (Gradient2) shrinks on
//! queueing alone: on a single server that only moves the queue from the server into the gateway and, with a queue
//! wait, turns waits into degraded results — worse than no bulkhead. It stays available for those who want it.
//!
//! [`BulkheadScope::Server`] keeps the older behaviour: one pool per server shared by all its replicas (for an
//! upstream whose `max_concurrent_requests` is a budget for the whole service). Off by default.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use super::limiter::{AimdConfig, LimitPermit, LimitedPool, LimiterKind, PoolTimeout, SampleOutcome};
use super::shared_slots::{SharedSlots, SlotShare};

/// What one pool guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BulkheadScope {
    /// One pool per replica endpoint (the default): a sick replica is contained, its siblings take the load.
    #[default]
    Replica,
    /// One pool per server, shared by its replicas: a server-wide budget.
    Server,
}

/// Bulkhead settings.
///
/// | field         | default                 | meaning                                                          |
/// |---------------|-------------------------|------------------------------------------------------------------|
/// | `max_concurrent` | `None`: the client's in-flight cap | a pool's cap when neither an override nor a declaration gives one |
/// | `per_server`  | none                    | caps by server name, overriding what the server declares         |
/// | `limiter`     | AIMD from the cap       | the adaptive limit inside the cap ([`AimdConfig::from_ceiling`])  |
/// | `queue_wait`  | `None`: the client's    | how long a call waits when no candidate has room (bounded by its deadline); by default as long as the client waits for an in-flight slot, so the bulkhead sheds nothing the unprotected path would have queued and served |
/// | `scope`       | replica                 | see [`BulkheadScope`]                                            |
#[derive(Debug, Clone, PartialEq)]
pub struct BulkheadConfig {
    pub max_concurrent: Option<usize>,
    pub per_server: BTreeMap<String, usize>,
    pub limiter: LimiterKind,
    pub queue_wait: Option<Duration>,
    pub scope: BulkheadScope,
    /// A deliberate defect for testing the tests: when set, a permit whose call failed on the replica is never
    /// given back, so the pool leaks a slot per failure. Off by default and unreachable from any configuration
    /// file; only code that builds this struct can set it (the simulator's swarm tests prove they find it). It exists
    /// only under the `testing` feature, which the crates' own tests turn on and no release binary does.
    #[doc(hidden)]
    #[cfg(feature = "testing")]
    pub leak_permit_on_replica_failure: bool,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig {
            max_concurrent: None,
            per_server: BTreeMap::new(),
            limiter: LimiterKind::Aimd(AimdConfig::from_ceiling()),
            queue_wait: None,
            scope: BulkheadScope::Replica,
            #[cfg(feature = "testing")]
            leak_permit_on_replica_failure: false,
        }
    }
}

/// Where a pool sits and what bounds it: the inputs of [`Bulkheads::pool`].
#[derive(Clone, Copy)]
pub struct PoolKey<'a> {
    pub server: &'a str,
    pub endpoint: &'a str,
    /// The replica's declared `max_concurrent_requests`, if it declared one.
    pub declared_max: Option<u32>,
    /// The in-flight limit of the client that will carry the call: the cap when nothing else sets one, and whether
    /// it is shared. A function, read only when a pool is made: finding the client costs a lock and a lookup the call
    /// path need not pay.
    pub client: &'a (dyn Fn() -> ClientLimit + Sync),
}

/// The in-flight limit of the client that carries a pool's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimit {
    /// The most calls it can have in flight.
    pub cap: usize,
    /// When the clients of several servers share that limit: how (see [`SharedSlots`]).
    pub share: Option<SlotShare>,
    /// How long the client waits for one of its in-flight slots: the bulkhead's queue wait unless set.
    pub queue_wait: Duration,
}

impl ClientLimit {
    /// A limit of the client's own.
    pub fn own(cap: usize, queue_wait: Duration) -> Self {
        ClientLimit { cap, share: None, queue_wait }
    }
}

/// A pool as one call finds it: the pool, the shared limit's shares if its calls take one, and its hard cap.
struct Entry<'a> {
    pool: Arc<LimitedPool>,
    shared: Option<&'a Arc<SharedSlots>>,
    cap: usize,
}

/// A pool, and whether its calls also take a slot of the shared limit.
#[derive(Debug)]
struct Pool {
    pool: Arc<LimitedPool>,
    shared: bool,
    /// Its hard cap, fixed when it was made: what bounds breakers' probes (see [`Bulkheads::try_acquire_probe`]).
    cap: usize,
}

impl std::fmt::Debug for PoolKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolKey")
            .field("server", &self.server)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// The pools, created on first use.
#[derive(Debug)]
pub struct Bulkheads {
    config: BulkheadConfig,
    pools: Mutex<BTreeMap<String, Pool>>,
    /// The shared limit's shares, made when the first pool whose client shares one is made. One gateway's clients
    /// share one limit (or none), so one is enough.
    shared: OnceLock<Arc<SharedSlots>>,
}

impl Bulkheads {
    pub fn new(config: BulkheadConfig) -> Self {
        Bulkheads { config, pools: Mutex::new(BTreeMap::new()), shared: OnceLock::new() }
    }

    /// Gives back the permit of a call that ended at `now`, with the limiter's sample. `replica_failed` is read only by
    /// the planted defect (`BulkheadConfig::leak_permit_on_replica_failure`, under the `testing` feature), which keeps
    /// such a call's permit for good.
    pub(crate) fn finish(&self, permit: LimitPermit, now: Instant, sample: SampleOutcome, replica_failed: bool) {
        #[cfg(feature = "testing")]
        if replica_failed && self.config.leak_permit_on_replica_failure {
            permit.leak();
            return;
        }
        #[cfg(not(feature = "testing"))]
        let _ = replica_failed;
        permit.finish(now, sample);
    }

    /// Permits held right now, over every pool: 0 when no call is in flight.
    pub fn permits_held(&self) -> usize {
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools.values().map(|p| p.pool.in_flight()).sum()
    }

    /// The hard cap of a pool for `key`.
    pub fn cap(&self, key: &PoolKey<'_>) -> usize {
        self.cap_of(key, (key.client)().cap)
    }

    fn cap_of(&self, key: &PoolKey<'_>, client_cap: usize) -> usize {
        let declared = key.declared_max.map(|n| n as usize);
        let c = &self.config;
        c.per_server.get(key.server).copied().or(declared).or(c.max_concurrent).unwrap_or(client_cap).max(1)
    }

    /// The pool for `key` (its replica's, or its server's under [`BulkheadScope::Server`]); the first use fixes its
    /// cap (a later declaration does not resize a pool in use).
    pub fn pool(&self, key: &PoolKey<'_>) -> Arc<LimitedPool> {
        self.entry(key).pool
    }

    /// The pool for `key`, and the shared limit's shares when its client shares one.
    fn entry(&self, key: &PoolKey<'_>) -> Entry<'_> {
        let name = match self.config.scope {
            BulkheadScope::Replica => key.endpoint,
            BulkheadScope::Server => key.server,
        };
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pools.get(name) {
            let shared = if p.shared { self.shared.get() } else { None };
            return Entry { pool: p.pool.clone(), shared, cap: p.cap };
        }
        let client = (key.client)();
        let cap = self.cap_of(key, client.cap);
        let pool = LimitedPool::new(self.config.limiter.build(cap));
        let shared = client.share.map(|share| self.shared.get_or_init(|| SharedSlots::new(share, Instant::now())));
        pools.insert(name.to_owned(), Pool { pool: pool.clone(), shared: shared.is_some(), cap });
        Entry { pool, shared, cap }
    }

    /// A permit for one call now, or `None` when the pool is at its limit (or its server has no slot of a shared
    /// limit left).
    pub fn try_acquire(&self, key: &PoolKey<'_>) -> Option<LimitPermit> {
        let Entry { pool, shared, .. } = self.entry(key);
        Self::with_slot(key, pool.try_acquire()?, shared)
    }

    /// A permit for a breaker's probe: over the pool's adaptive limit, with at most the pool's hard cap of probes in
    /// flight (see [`LimitedPool::try_acquire_probe`]); a shared limit's slots are never exceeded.
    pub fn try_acquire_probe(&self, key: &PoolKey<'_>) -> Option<LimitPermit> {
        let Entry { pool, shared, cap } = self.entry(key);
        Self::with_slot(key, pool.try_acquire_probe(cap)?, shared)
    }

    fn with_slot(key: &PoolKey<'_>, permit: LimitPermit, shared: Option<&Arc<SharedSlots>>) -> Option<LimitPermit> {
        match shared {
            None => Some(permit),
            Some(slots) => slots.try_acquire(key.server, Instant::now()).map(|slot| permit.with_slot(slot)),
        }
    }

    /// A permit for one call, waiting at most the configured queue wait or `at_most`, whichever is shorter.
    pub async fn acquire(&self, key: &PoolKey<'_>, at_most: Duration) -> Result<LimitPermit, PoolTimeout> {
        let wait = self.config.queue_wait.unwrap_or_else(|| (key.client)().queue_wait).min(at_most);
        let deadline = Instant::now() + wait;
        let Entry { pool, shared, .. } = self.entry(key);
        let permit = pool.acquire(wait).await?;
        let Some(slots) = shared else { return Ok(permit) };
        match slots.acquire(key.server, deadline).await {
            Some(slot) => Ok(permit.with_slot(slot)),
            None => Err(PoolTimeout { waited: wait, limit: slots.share().slots }),
        }
    }

    /// (pool, in flight, limit) for every pool, in name order: for the observer's time series.
    pub fn snapshot(&self) -> Vec<(String, usize, usize)> {
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools.iter().map(|(name, p)| (name.clone(), p.pool.in_flight(), p.pool.limit())).collect()
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;
    use crate::resilience::limiter::SampleOutcome;

    fn key<'a>(server: &'a str, endpoint: &'a str, declared_max: Option<u32>) -> PoolKey<'a> {
        PoolKey { server, endpoint, declared_max, client: &|| ClientLimit::own(50, Duration::from_secs(1)) }
    }

    #[test]
    fn cap_comes_from_override_then_declaration_then_default_then_the_client() {
        let config = BulkheadConfig {
            max_concurrent: Some(16),
            per_server: BTreeMap::from([("db".to_owned(), 4)]),
            ..BulkheadConfig::default()
        };
        let b = Bulkheads::new(config);
        let declared = Some(8);
        assert_eq!(b.cap(&key("db", "db-0", declared)), 4);
        assert_eq!(b.cap(&key("search", "search-0", declared)), 8);
        assert_eq!(b.cap(&key("search", "search-0", None)), 16);
        let unset = Bulkheads::new(BulkheadConfig::default());
        assert_eq!(unset.cap(&key("search", "search-0", None)), 50, "no setting: the client's own cap");
        assert_eq!(b.pool(&key("search", "search-0", declared)).limit(), 8);
        assert_eq!(b.pool(&key("search", "search-0", None)).limit(), 8, "the first use fixed it");
    }

    #[test]
    fn the_default_starts_at_the_cap_and_pools_are_per_replica() {
        let b = Bulkheads::new(BulkheadConfig::default());
        let held: Vec<_> = (0..50).map(|_| b.try_acquire(&key("api", "api-0", None)).expect("room")).collect();
        assert!(b.try_acquire(&key("api", "api-0", None)).is_none(), "api-0 is at the client's cap");
        assert!(b.try_acquire(&key("api", "api-1", None)).is_some(), "its sibling has its own pool");
        drop(held);
        let server = Bulkheads::new(BulkheadConfig { scope: BulkheadScope::Server, ..BulkheadConfig::default() });
        let held: Vec<_> = (0..50).map(|_| server.try_acquire(&key("api", "api-0", None)).expect("room")).collect();
        assert!(server.try_acquire(&key("api", "api-1", None)).is_none(), "server scope: one pool for both");
        drop(held);
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_replica_cannot_take_permits_from_a_healthy_one() {
        let config = BulkheadConfig {
            max_concurrent: Some(3),
            queue_wait: Some(Duration::from_millis(50)),
            ..Default::default()
        };
        let b = Bulkheads::new(config);
        let hung = key("inv", "inv-0", None);
        // Three calls to the hung replica never return: its pool is full and its callers time out in the queue.
        let stuck: Vec<_> = (0..3).map(|_| b.try_acquire(&hung).unwrap()).collect();
        assert!(b.acquire(&hung, Duration::MAX).await.is_err());
        // The healthy one admits its full quota at once, undisturbed.
        let start = Instant::now();
        let mut ok = vec![];
        for _ in 0..3 {
            ok.push(b.acquire(&key("inv", "inv-1", None), Duration::MAX).await.unwrap());
        }
        assert_eq!((ok.len(), start.elapsed()), (3, Duration::ZERO));
        assert_eq!(b.snapshot(), vec![("inv-0".into(), 3, 3), ("inv-1".into(), 3, 3)]);
        drop(ok);
        drop(stuck);
        assert_eq!(b.snapshot(), vec![("inv-0".into(), 0, 3), ("inv-1".into(), 0, 3)]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_is_bounded_by_the_callers_deadline() {
        let b = Bulkheads::new(BulkheadConfig { max_concurrent: Some(1), ..Default::default() });
        let k = key("s", "s-0", None);
        let _held = b.try_acquire(&k).unwrap();
        let start = Instant::now();
        assert!(b.acquire(&k, Duration::from_millis(30)).await.is_err());
        assert_eq!(start.elapsed(), Duration::from_millis(30), "not the 1 s queue wait");
    }

    #[tokio::test(start_paused = true)]
    async fn drops_lower_the_default_limit_and_successes_keep_it() {
        let declared = Some(10);
        let b = Bulkheads::new(BulkheadConfig::default());
        let k = key("s", "s-0", declared);
        let pool = b.pool(&k);
        assert_eq!(pool.limit(), 10, "AIMD starts at the declared cap");
        for _ in 0..20 {
            b.try_acquire(&k).unwrap().finish(Instant::now(), SampleOutcome::Ok);
        }
        assert_eq!(pool.limit(), 10, "flat successes: never below the cap");
        for _ in 0..5 {
            b.try_acquire(&k).unwrap().finish(Instant::now(), SampleOutcome::Dropped);
        }
        assert_eq!(pool.limit(), 5, "timeouts lowered it: 10 → 9 → 8 → 7 → 6 → 5");
        assert_eq!(pool.in_flight(), 0);
    }
}
