//! Opaque access tokens asked about at the issuer (RFC 7662), as a confidential client. Answers are cached by the
//! token's SHA-256 (never the token), bounded in count, each until the token's `exp` or the cache's ttl, whichever
//! is first; an inactive answer is cached too, so one bad token repeated costs one request. At most `CONCURRENT`
//! introspections run at once: a flood of distinct made-up tokens queues here, it does not multiply at the issuer.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpstorm_core::serve::auth::{Denied, DenyReason, Principal};
use mcpstorm_core::transport::Fetcher;
use mcpstorm_core::{Clock, Secret};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// Introspection requests in flight at once.
const CONCURRENT: usize = 16;

#[derive(Debug, Deserialize)]
struct Answer {
    #[serde(default)]
    active: bool,
    scope: Option<String>,
    client_id: Option<String>,
    sub: Option<String>,
    exp: Option<f64>,
    iss: Option<String>,
    aud: Option<Value>,
}

type Cached = (Result<Principal, Denied>, Instant);

#[derive(Debug, Default)]
struct Cache {
    entries: HashMap<[u8; 32], Cached>,
    /// Insertion order, for evicting the oldest when full.
    order: VecDeque<[u8; 32]>,
}

/// The introspection endpoint and its cache.
#[derive(Debug)]
pub struct Introspector {
    fetcher: Fetcher,
    /// `Basic base64(client_id:secret)`.
    authorization: Secret,
    issuer: String,
    audience: String,
    clock: Arc<dyn Clock>,
    capacity: usize,
    ttl: Duration,
    cache: Mutex<Cache>,
    slots: Semaphore,
}

impl Introspector {
    pub fn new(
        fetcher: Fetcher,
        client_id: &str,
        secret: &Secret,
        expect: (&str, &str),
        clock: Arc<dyn Clock>,
        capacity: usize,
        ttl: Duration,
    ) -> Introspector {
        Introspector {
            fetcher,
            authorization: super::basic_credentials(client_id, secret),
            issuer: expect.0.to_owned(),
            audience: expect.1.to_owned(),
            clock,
            capacity: capacity.max(1),
            ttl,
            cache: Mutex::default(),
            slots: Semaphore::new(CONCURRENT),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Who `token` belongs to, by the issuer's answer (cached).
    pub async fn check(&self, token: &str) -> Result<Principal, Denied> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(found) = self.cached(&key) {
            return found.map(|p| Principal { token: Some(Secret::new(token)), ..p });
        }
        let _slot = self.slots.acquire().await.map_err(|_| Denied::new(DenyReason::Unverifiable, "stopping"))?;
        if let Some(found) = self.cached(&key) {
            return found.map(|p| Principal { token: Some(Secret::new(token)), ..p });
        }
        let form = [("token", token), ("token_type_hint", "access_token")];
        let answer = match self.fetcher.post_form(&form, Some(&self.authorization)).await {
            Ok(f) if f.status == 200 => {
                serde_json::from_slice::<Answer>(&f.body).map_err(|_| "not an introspection answer".to_owned())
            }
            Ok(f) => Err(format!("HTTP {}", f.status)),
            Err(e) => Err(e.to_string()),
        };
        let answer = answer.map_err(|why| {
            tracing::warn!(error = %why, url = self.fetcher.url(), "token introspection failed");
            Denied::new(DenyReason::Unverifiable, "the issuer cannot be asked about this token now; retry later")
        })?;
        let now_ms = self.clock.wall_ms();
        let (outcome, lifetime) = self.judge(answer, now_ms);
        self.store(key, outcome.clone(), lifetime);
        outcome.map(|p| Principal { token: Some(Secret::new(token)), ..p })
    }

    fn cached(&self, key: &[u8; 32]) -> Option<Result<Principal, Denied>> {
        let now = self.clock.now();
        self.cache().entries.get(key).filter(|(_, until)| *until > now).map(|(outcome, _)| outcome.clone())
    }

    /// The answer's verdict, and how long it may be cached.
    fn judge(&self, a: Answer, now_ms: u64) -> (Result<Principal, Denied>, Duration) {
        let refuse = |reason, why: &str| (Err(Denied::new(reason, why)), self.ttl);
        if !a.active {
            return refuse(DenyReason::Inactive, "the issuer says the token is not active");
        }
        if a.iss.as_ref().is_some_and(|iss| *iss != self.issuer) {
            return refuse(DenyReason::Issuer, "issued by another issuer");
        }
        let audience_ok = match &a.aud {
            None => true,
            Some(Value::String(s)) => *s == self.audience,
            Some(Value::Array(list)) => list.iter().any(|v| v.as_str() == Some(self.audience.as_str())),
            Some(_) => false,
        };
        if !audience_ok {
            return refuse(DenyReason::Audience, &format!("not issued for {}", self.audience));
        }
        let left = a.exp.map(|exp| exp - now_ms as f64 / 1000.0);
        if left.is_some_and(|s| s <= 0.0) {
            return refuse(DenyReason::Expired, "the token has expired");
        }
        let lifetime = left.map_or(self.ttl, |s| self.ttl.min(Duration::from_secs_f64(s)));
        let scopes = a.scope.iter().flat_map(|s| s.split_whitespace()).map(str::to_owned).collect();
        (Ok(Principal { subject: a.sub, client_id: a.client_id, scopes: Some(scopes), token: None }), lifetime)
    }

    fn store(&self, key: [u8; 32], outcome: Result<Principal, Denied>, lifetime: Duration) {
        let now = self.clock.now();
        let mut cache = self.cache();
        if cache.entries.len() >= self.capacity {
            cache.entries.retain(|_, (_, until)| *until > now);
        }
        while cache.entries.len() >= self.capacity {
            let Some(oldest) = cache.order.pop_front() else { break };
            cache.entries.remove(&oldest);
        }
        if cache.entries.insert(key, (outcome, now + lifetime)).is_none() {
            cache.order.push_back(key);
        }
        // Keys already evicted by expiry linger in `order` until popped; bounded by twice the capacity.
        if cache.order.len() > 2 * self.capacity {
            let Cache { entries, order } = &mut *cache;
            order.retain(|k| entries.contains_key(k));
        }
    }
}
