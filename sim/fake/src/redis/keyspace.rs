//! The keyspace: 16 databases of strings and hashes, each key with an optional deadline on the double's clock
//! (tokio time; turmoil's simulated time in the simulator), never the system's.
//!
//! An expired key is gone the moment it is looked at (Redis's lazy expiry); `sweep` drops the ones nobody looks at
//! so memory stays bounded (Redis's active expiry). Keys live in a `BTreeMap` and hashes in insertion order: no
//! hasher's iteration order can reach the wire.

use std::collections::BTreeMap;

use tokio::time::Instant;

/// Redis's default `databases`.
pub(crate) const DATABASES: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Str(Vec<u8>),
    /// Field-value pairs in insertion order, as a small Redis hash (a listpack) returns them: an update keeps the
    /// field's place, a deleted field leaves no gap.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
}

#[derive(Debug, Clone)]
struct Entry {
    value: Value,
    expires: Option<Instant>,
}

#[derive(Debug)]
pub(crate) struct Keyspace {
    dbs: Vec<BTreeMap<Vec<u8>, Entry>>,
}

impl Default for Keyspace {
    fn default() -> Self {
        Keyspace { dbs: (0..DATABASES).map(|_| BTreeMap::new()).collect() }
    }
}

impl Keyspace {
    /// Drops `key` if its deadline has passed; the map of `db`.
    fn live(&mut self, db: usize, key: &[u8], now: Instant) -> &mut BTreeMap<Vec<u8>, Entry> {
        let map = &mut self.dbs[db];
        if map.get(key).and_then(|e| e.expires).is_some_and(|deadline| deadline <= now) {
            map.remove(key);
        }
        map
    }

    pub(crate) fn get(&mut self, db: usize, key: &[u8], now: Instant) -> Option<&Value> {
        self.live(db, key, now).get(key).map(|e| &e.value)
    }

    pub(crate) fn get_mut(&mut self, db: usize, key: &[u8], now: Instant) -> Option<&mut Value> {
        self.live(db, key, now).get_mut(key).map(|e| &mut e.value)
    }

    /// Stores `value` under `key`, replacing any value of any type and its deadline.
    pub(crate) fn set(&mut self, db: usize, key: &[u8], value: Value, expires: Option<Instant>) {
        self.dbs[db].insert(key.to_vec(), Entry { value, expires });
    }

    /// Replaces the value and keeps the deadline (what INCR and HSET do); a new key gets none.
    pub(crate) fn put(&mut self, db: usize, key: &[u8], value: Value, now: Instant) {
        let expires = self.live(db, key, now).get(key).and_then(|e| e.expires);
        self.set(db, key, value, expires);
    }

    /// True when a live key was removed.
    pub(crate) fn remove(&mut self, db: usize, key: &[u8], now: Instant) -> bool {
        self.live(db, key, now).remove(key).is_some()
    }

    pub(crate) fn exists(&mut self, db: usize, key: &[u8], now: Instant) -> bool {
        self.live(db, key, now).contains_key(key)
    }

    /// `None`: no such key; `Some(None)`: a key without a deadline.
    pub(crate) fn deadline(&mut self, db: usize, key: &[u8], now: Instant) -> Option<Option<Instant>> {
        self.live(db, key, now).get(key).map(|e| e.expires)
    }

    /// Sets a live key's deadline; false when there is no such key.
    pub(crate) fn set_deadline(&mut self, db: usize, key: &[u8], deadline: Instant, now: Instant) -> bool {
        match self.live(db, key, now).get_mut(key) {
            Some(entry) => {
                entry.expires = Some(deadline);
                true
            }
            None => false,
        }
    }

    /// Drops every expired key of every database.
    pub(crate) fn sweep(&mut self, now: Instant) {
        for map in &mut self.dbs {
            map.retain(|_, e| e.expires.is_none_or(|deadline| deadline > now));
        }
    }
}
