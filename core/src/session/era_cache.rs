//! The era each server was found to speak, remembered across reconnects so a reconnect skips detection.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::Era;
use super::wire::DiscoverResult;

/// Most servers one cache remembers. Beyond it new servers are simply not remembered (each of their connects
/// detects again): bounded, and never wrong.
pub const MAX_CACHED_SERVERS: usize = 4096;

/// What a cache entry holds.
#[derive(Debug, Clone, PartialEq)]
pub enum CachedEra {
    Legacy,
    /// The version we settled on and the discovery result, which a reconnect reuses without asking again.
    Modern {
        version: String,
        discover: Arc<DiscoverResult>,
    },
}

impl CachedEra {
    pub fn era(&self) -> Era {
        match self {
            CachedEra::Legacy => Era::Legacy,
            CachedEra::Modern { .. } => Era::Modern,
        }
    }
}

/// Per-server era cache, keyed by the client's server name. Cheap to clone; clones share entries, so several
/// clients of the same server can share one (see `McpClient::with_era_cache`).
#[derive(Debug, Clone, Default)]
pub struct EraCache {
    inner: Arc<Mutex<BTreeMap<String, CachedEra>>>,
}

impl EraCache {
    pub fn new() -> Self {
        EraCache::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, CachedEra>> {
        // Held for single map operations only; the map cannot be torn by a panic elsewhere.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, server: &str) -> Option<CachedEra> {
        self.lock().get(server).cloned()
    }

    pub fn era(&self, server: &str) -> Option<Era> {
        self.get(server).map(|c| c.era())
    }

    /// Remembers `server`'s era. False when the cache is full and `server` is new.
    pub fn put(&self, server: &str, entry: CachedEra) -> bool {
        let mut map = self.lock();
        if map.len() >= MAX_CACHED_SERVERS && !map.contains_key(server) {
            return false;
        }
        map.insert(server.to_owned(), entry);
        true
    }

    /// Forgets `server`'s era; its next connect detects again. True if there was an entry.
    pub fn invalidate(&self, server: &str) -> bool {
        self.lock().remove(server).is_some()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_per_server_shared_by_clones_and_bounded() {
        let cache = EraCache::new();
        let clone = cache.clone();
        assert!(cache.put("a", CachedEra::Legacy));
        assert_eq!((clone.era("a"), clone.era("b")), (Some(Era::Legacy), None));
        assert!(clone.invalidate("a") && !clone.invalidate("a"));
        assert!(cache.is_empty());
        for i in 0..MAX_CACHED_SERVERS {
            assert!(cache.put(&format!("s{i}"), CachedEra::Legacy));
        }
        assert!(!cache.put("one-too-many", CachedEra::Legacy), "full: a new server is not remembered");
        assert!(cache.put("s0", CachedEra::Legacy), "full: a known server is still updated");
        assert_eq!(cache.len(), MAX_CACHED_SERVERS);
    }
}
