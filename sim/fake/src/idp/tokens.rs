//! The tokens an identity provider issues and the servers check: who signed them, when they were issued, and when
//! they stop being good.
//!
//! A token reads `sim.<key>.<issued_ms>.<serial>`: the signing key's number, the issuer's wall time at issue, and a
//! serial. It is opaque to the gateway, as access tokens are to a client (RFC 6749 §1.4); only the servers read it.
//! The servers consult the [`TokenAuthority`] directly instead of a JWKS they fetch and cache: the double models a
//! key set that every server learns at once, so a rotation is felt by every server at the same instant.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpstorm_core::Clock;

/// Why a server refused a token: the `error_description` of its 401 `invalid_token`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token, or not one this provider issued.
    Malformed,
    /// Signed with a key that has been withdrawn (`key_rotation`).
    UnknownKey,
    /// Past its lifetime, or issued before a `token_expiry`.
    Expired,
}

impl Refusal {
    pub fn describe(self) -> &'static str {
        match self {
            Refusal::Malformed => "not an access token of this issuer",
            Refusal::UnknownKey => "signed by a key that is no longer published",
            Refusal::Expired => "the token has expired",
        }
    }
}

#[derive(Debug, Default)]
struct Keys {
    /// The key signing now; every earlier one is withdrawn.
    current: u32,
    /// Tokens issued before this wall time (ms) are expired (`token_expiry`).
    expired_before_ms: u64,
    serial: u64,
}

/// What issues tokens and what checks them: shared by the identity provider and every server that requires them.
#[derive(Debug)]
pub struct TokenAuthority {
    /// Each token's lifetime.
    ttl: Duration,
    clock: Arc<dyn Clock>,
    keys: Mutex<Keys>,
}

impl TokenAuthority {
    /// An authority whose tokens last `ttl`, by `clock`'s wall time.
    pub fn new(ttl: Duration, clock: Arc<dyn Clock>) -> Arc<TokenAuthority> {
        Arc::new(TokenAuthority { ttl, clock, keys: Mutex::default() })
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The authority's wall time (ms).
    pub fn wall_ms(&self) -> u64 {
        self.clock.wall_ms()
    }

    /// A new token, signed with the current key.
    pub fn issue(&self) -> String {
        let now = self.clock.wall_ms();
        let mut keys = self.keys();
        keys.serial += 1;
        format!("sim.{}.{now}.{}", keys.current, keys.serial)
    }

    /// Whether `token` is good now.
    pub fn check(&self, token: &str) -> Result<(), Refusal> {
        let mut parts = token.strip_prefix("sim.").ok_or(Refusal::Malformed)?.split('.');
        let mut number = || parts.next().and_then(|p| p.parse::<u64>().ok()).ok_or(Refusal::Malformed);
        let (key, issued, _serial) = (number()?, number()?, number()?);
        let keys = self.keys();
        if key != u64::from(keys.current) {
            return Err(if key < u64::from(keys.current) { Refusal::UnknownKey } else { Refusal::Malformed });
        }
        let lifetime = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        if issued < keys.expired_before_ms || self.clock.wall_ms() >= issued.saturating_add(lifetime) {
            return Err(Refusal::Expired);
        }
        Ok(())
    }

    /// `token_expiry`: every token issued until wall time `now_ms` (the authority's clock, read by the caller: the
    /// simulator applies faults outside every host, where only it knows the time) stops being good.
    pub fn expire_issued(&self, now_ms: u64) {
        // A token issued in this very millisecond expires too: the next one issued is the first good one.
        self.keys().expired_before_ms = now_ms.saturating_add(1);
    }

    /// `key_rotation`: a new signing key; the old one is withdrawn, and the tokens it signed with it.
    pub fn rotate(&self) {
        let mut keys = self.keys();
        keys.current = keys.current.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpstorm_core::TokioClock;

    #[tokio::test(start_paused = true)]
    async fn tokens_expire_by_lifetime_by_a_mass_expiry_and_by_rotation() {
        let authority = TokenAuthority::new(Duration::from_secs(10), Arc::new(TokioClock::new(1_000)));
        let first = authority.issue();
        assert_eq!(authority.check(&first), Ok(()));
        assert_eq!(authority.check("sim.0.x.1"), Err(Refusal::Malformed));
        assert_eq!(authority.check("Bearer sim.0.1000.1"), Err(Refusal::Malformed));
        assert_eq!(authority.check("sim.7.1000.1"), Err(Refusal::Malformed), "a key never published");
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(authority.check(&first), Err(Refusal::Expired), "its lifetime is over");

        let second = authority.issue();
        authority.expire_issued(authority.wall_ms());
        assert_eq!(authority.check(&second), Err(Refusal::Expired), "issued before the mass expiry");
        tokio::time::advance(Duration::from_millis(1)).await;
        let third = authority.issue();
        assert_eq!(authority.check(&third), Ok(()), "issued after it");

        authority.rotate();
        assert_eq!(authority.check(&third), Err(Refusal::UnknownKey));
        assert_eq!(authority.check(&authority.issue()), Ok(()));
    }
}
