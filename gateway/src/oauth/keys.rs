//! The issuer's signing keys (its JWK set), fetched once and cached. A token signed by a key we do not have makes
//! one refresh, at most once per `min_interval` however many such tokens arrive, so rotation works and a flood of
//! made-up key ids cannot make the gateway hammer the issuer. Refreshes are single-flight. A failed fetch keeps the
//! keys we had, and is retried after a backoff that grows to `min_interval`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey};
use mcpstorm_core::Clock;
use mcpstorm_core::transport::Fetcher;
use tokio::time::Instant;

/// A usable key: its decoding form and the algorithms it may verify.
#[derive(Clone)]
pub struct Key {
    pub decoding: DecodingKey,
    /// The algorithms this key's type and curve allow (narrowed to the JWK's own `alg` when it names one).
    pub algorithms: Vec<Algorithm>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key").field("algorithms", &self.algorithms).finish_non_exhaustive()
    }
}

/// Why no key was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyMiss {
    /// The set, fresh, has no such key.
    Unknown,
    /// The set could not be fetched and we have none to fall back on.
    Unreachable(String),
}

#[derive(Debug, Default)]
struct Cache {
    keys: HashMap<String, Key>,
    /// When the set was last fetched successfully.
    fetched: Option<Instant>,
    /// The earliest time the next fetch may start (after a failure, or a refresh for an unknown key).
    next_allowed: Option<Instant>,
    /// Consecutive failures, for the backoff.
    failures: u32,
    last_error: Option<String>,
}

/// The keys at one `jwks_uri`.
#[derive(Debug)]
pub struct KeySet {
    fetcher: Fetcher,
    clock: Arc<dyn Clock>,
    ttl: Duration,
    min_interval: Duration,
    cache: Mutex<Cache>,
    /// Held by the one fetch in progress; others wait for it and read its result.
    refreshing: tokio::sync::Mutex<()>,
}

/// The backoff after the first failed fetch.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

impl KeySet {
    pub fn new(fetcher: Fetcher, clock: Arc<dyn Clock>, ttl: Duration, min_interval: Duration) -> KeySet {
        KeySet { fetcher, clock, ttl, min_interval, cache: Mutex::default(), refreshing: tokio::sync::Mutex::new(()) }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key `kid` names (with no `kid`, the set's only key), refreshing the set when it is stale, or once per
    /// `min_interval` when the key is unknown.
    pub async fn key(&self, kid: Option<&str>) -> Result<Key, KeyMiss> {
        let started = self.clock.now();
        if let Some(found) = self.lookup(kid, started) {
            return Ok(found);
        }
        let _refreshing = self.refreshing.lock().await;
        // Another caller may have refreshed while we waited: use its result rather than fetching again.
        let refreshed_meanwhile = self.cache().fetched.is_some_and(|f| f >= started);
        if !refreshed_meanwhile && self.may_fetch() {
            self.refresh().await;
        }
        let cache = self.cache();
        match pick(&cache.keys, kid) {
            Some(key) => Ok(key),
            None if cache.keys.is_empty() && cache.fetched.is_none() => {
                Err(KeyMiss::Unreachable(cache.last_error.clone().unwrap_or_else(|| "not fetched yet".to_owned())))
            }
            None => Err(KeyMiss::Unknown),
        }
    }

    /// A cached key, when the set is fresh and has it.
    fn lookup(&self, kid: Option<&str>, now: Instant) -> Option<Key> {
        let cache = self.cache();
        let fresh = cache.fetched.is_some_and(|f| now.duration_since(f) < self.ttl);
        if fresh { pick(&cache.keys, kid) } else { None }
    }

    fn may_fetch(&self) -> bool {
        self.cache().next_allowed.is_none_or(|t| self.clock.now() >= t)
    }

    async fn refresh(&self) {
        let outcome = match self.fetcher.get_json().await {
            Ok(f) if f.status == 200 => f.json().ok_or_else(|| "the key set is not JSON".to_owned()).map(parse_set),
            Ok(f) => Err(format!("{} answered HTTP {}", self.fetcher.url(), f.status)),
            Err(e) => Err(format!("{}: {e}", self.fetcher.url())),
        };
        let now = self.clock.now();
        let mut cache = self.cache();
        match outcome {
            Ok(keys) => {
                tracing::info!(keys = keys.len(), url = self.fetcher.url(), "fetched the issuer's signing keys");
                cache.keys = keys;
                cache.fetched = Some(now);
                cache.failures = 0;
                cache.last_error = None;
                cache.next_allowed = Some(now + self.min_interval);
            }
            Err(why) => {
                tracing::warn!(error = %why, "could not fetch the issuer's signing keys; keeping the ones we had");
                let backoff = FIRST_BACKOFF.saturating_mul(1 << cache.failures.min(16)).min(self.min_interval);
                cache.failures += 1;
                cache.last_error = Some(why);
                cache.next_allowed = Some(now + backoff);
            }
        }
    }
}

/// The key for `kid`; without one, the set's only key.
fn pick(keys: &HashMap<String, Key>, kid: Option<&str>) -> Option<Key> {
    match kid {
        Some(kid) => keys.get(kid).cloned(),
        None if keys.len() == 1 => keys.values().next().cloned(),
        None => None,
    }
}

/// The usable signing keys of a JWK set, by `kid`: a key of a type or curve we cannot verify with, an encryption
/// key, or a symmetric one (never trusted from a published set) is skipped, not an error for the others.
fn parse_set(doc: serde_json::Value) -> HashMap<String, Key> {
    let mut keys = HashMap::new();
    let Some(list) = doc.get("keys").and_then(|k| k.as_array()) else { return keys };
    for (i, raw) in list.iter().enumerate() {
        if raw.get("use").and_then(|u| u.as_str()).is_some_and(|u| u != "sig") {
            continue;
        }
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else { continue };
        let mut algorithms = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
            ],
            AlgorithmParameters::EllipticCurve(p) => match p.curve {
                EllipticCurve::P256 => vec![Algorithm::ES256],
                EllipticCurve::P384 => vec![Algorithm::ES384],
                _ => continue,
            },
            AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
            _ => continue,
        };
        if let Some(alg) = raw.get("alg").and_then(|a| a.as_str()) {
            algorithms.retain(|a| format!("{a:?}") == alg);
        }
        let Ok(decoding) = DecodingKey::from_jwk(&jwk) else { continue };
        let kid = jwk.common.key_id.clone().unwrap_or_else(|| format!("#{i}"));
        keys.insert(kid, Key { decoding, algorithms });
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn symmetric_encryption_and_unknown_keys_are_skipped_and_the_others_kept() {
        let set = json!({"keys": [
            {"kty": "oct", "kid": "h", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "sXch", "e": "AQAB"},
            {"kty": "XYZ", "kid": "odd"},
            {"kty": "RSA", "kid": "r", "alg": "RS256", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"},
        ]});
        let keys = parse_set(set);
        assert_eq!(keys.len(), 1, "{:?}", keys.keys().collect::<Vec<_>>());
        assert_eq!(keys["r"].algorithms, [Algorithm::RS256]);
    }

    #[test]
    fn without_a_kid_only_a_set_of_one_answers() {
        let mut keys = HashMap::new();
        let key = Key { decoding: DecodingKey::from_ed_components("AAAA").expect("key"), algorithms: vec![] };
        keys.insert("a".to_owned(), key.clone());
        assert!(pick(&keys, None).is_some());
        keys.insert("b".to_owned(), key);
        assert!(pick(&keys, None).is_none());
        assert!(pick(&keys, Some("b")).is_some());
    }
}
