//! The agent session id of the 2025-11-25 era: an authenticated token, not a table key.
//!
//! It carries what the front needs of the agent's session on any replica (the negotiated protocol version, the
//! client's info and capabilities, the issue time, a random nonce) and an HMAC-SHA256 tag under the front's current
//! key: `v1.<base64url(JSON claims)>.<base64url(tag)>`. Any process holding one of the keys verifies it without a
//! shared store, so a session begun on one gateway replica continues on another. The claims are signed, not
//! encrypted: nothing secret belongs in them (the client's own info and capabilities are all there is).
//!
//! A DELETE revokes the id in the process that saw it ([`Revoked`], bounded); another replica still accepts it until
//! it expires (`FrontLimits::session_max_age`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashSet, VecDeque};

use super::keys::{KeyError, Keys};
use crate::mcp::Implementation;

/// The longest session id made or read: a header of this size is cheap, and an id beyond it is refused before any
/// HMAC is computed.
pub const MAX_TOKEN: usize = 4096;
const PREFIX: &str = "v1";

/// What a session id carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionClaims {
    /// The protocol version `initialize` negotiated.
    #[serde(rename = "v")]
    pub protocol_version: String,
    #[serde(rename = "ci", default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
    #[serde(rename = "cc", default)]
    pub client_capabilities: Value,
    /// Seconds since the Unix epoch, by the front's wall clock (`Clock::wall_ms`).
    #[serde(rename = "iat")]
    pub issued_at: u64,
    /// 16 random bytes, hex: the session's identity within the claims (what a revocation names).
    #[serde(rename = "n")]
    pub nonce: String,
}

impl SessionClaims {
    /// New claims issued at `now_secs` (Unix seconds), with a fresh nonce.
    pub fn issue(
        protocol_version: String,
        client_info: Option<Implementation>,
        client_capabilities: Value,
        now_secs: u64,
    ) -> Result<SessionClaims, KeyError> {
        let mut nonce = [0u8; 16];
        SystemRandom::new().fill(&mut nonce).map_err(|_| KeyError::Random)?;
        let nonce = nonce.iter().map(|b| format!("{b:02x}")).collect();
        Ok(SessionClaims { protocol_version, client_info, client_capabilities, issued_at: now_secs, nonce })
    }
}

/// Signs `claims` with the current key. `None` when the id would exceed [`MAX_TOKEN`].
pub fn sign(keys: &Keys, claims: &SessionClaims) -> Option<String> {
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).ok()?);
    let signed = format!("{PREFIX}.{body}");
    let tag = hmac::sign(keys.current.hmac(), signed.as_bytes());
    let token = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()));
    (token.len() <= MAX_TOKEN).then_some(token)
}

/// Why a session id was refused. Every case is answered the same (404): an agent learns nothing from the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not of our format, or too long.
    Malformed,
    /// No key of ours made this tag (forged, tampered with, or signed by a key rotated out).
    BadTag,
    Expired,
    Revoked,
}

/// Checks a session id at `now_secs`: well formed, a tag by one of `keys`, younger than `max_age_secs`, not in
/// `revoked`. (Replicas compare wall clocks here: keep them in NTP sync; the default age is a day.)
pub fn verify(
    keys: &Keys,
    revoked: &Revoked,
    token: &str,
    now_secs: u64,
    max_age_secs: u64,
) -> Result<SessionClaims, Refusal> {
    if token.len() > MAX_TOKEN {
        return Err(Refusal::Malformed);
    }
    let (signed, tag) = token.rsplit_once('.').ok_or(Refusal::Malformed)?;
    let body = signed.strip_prefix(PREFIX).and_then(|b| b.strip_prefix('.')).ok_or(Refusal::Malformed)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Refusal::Malformed)?;
    if !keys.verifying().any(|key| hmac::verify(key.hmac(), signed.as_bytes(), &tag).is_ok()) {
        return Err(Refusal::BadTag);
    }
    let json = URL_SAFE_NO_PAD.decode(body).map_err(|_| Refusal::Malformed)?;
    let claims: SessionClaims = serde_json::from_slice(&json).map_err(|_| Refusal::Malformed)?;
    if now_secs.saturating_sub(claims.issued_at) > max_age_secs {
        return Err(Refusal::Expired);
    }
    if revoked.contains(&claims.nonce) {
        return Err(Refusal::Revoked);
    }
    Ok(claims)
}

/// The nonces of sessions this process saw DELETEd, the oldest forgotten first beyond `cap`. Per process: a replica
/// that did not see the DELETE accepts the id until it expires.
#[derive(Debug)]
pub struct Revoked {
    set: HashSet<String>,
    order: VecDeque<String>,
    cap: usize,
}

impl Revoked {
    pub fn new(cap: usize) -> Revoked {
        Revoked { set: HashSet::new(), order: VecDeque::new(), cap: cap.max(1) }
    }

    pub fn insert(&mut self, nonce: &str) {
        if !self.set.insert(nonce.to_owned()) {
            return;
        }
        self.order.push_back(nonce.to_owned());
        while self.order.len() > self.cap {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    pub fn contains(&self, nonce: &str) -> bool {
        self.set.contains(nonce)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::serve::keys::SessionKey;

    const NOW: u64 = 1_790_000_000;

    fn claims() -> SessionClaims {
        SessionClaims::issue("2025-11-25".into(), Some(Implementation::new("agent", "1")), json!({"roots": {}}), NOW)
            .unwrap()
    }

    #[test]
    fn a_token_verifies_under_its_key_and_any_tampering_is_refused() {
        let keys = Keys::random().unwrap();
        let none = Revoked::new(4);
        let c = claims();
        let token = sign(&keys, &c).unwrap();
        assert_eq!(verify(&keys, &none, &token, NOW, 60), Ok(c.clone()));
        // Another process's random key: refused.
        assert_eq!(verify(&Keys::random().unwrap(), &none, &token, NOW, 60), Err(Refusal::BadTag));
        // Claims changed under the same tag (a later protocol version, say).
        let (_, body, tag) = {
            let mut parts = token.split('.');
            (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap())
        };
        let mut forged = c.clone();
        forged.protocol_version = "2099-01-01".into();
        let forged_body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        assert_ne!(forged_body, body);
        assert_eq!(verify(&keys, &none, &format!("v1.{forged_body}.{tag}"), NOW, 60), Err(Refusal::BadTag));
        for bad in ["", "v1", "v1.abc", "v2.x.y", &format!("{token}x"), &"a".repeat(MAX_TOKEN + 1)] {
            assert!(verify(&keys, &none, bad, NOW, 60).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rotation_verifies_with_previous_keys_and_revocation_is_bounded() {
        let old = SessionKey::random().unwrap();
        let before = Keys::new(old.clone());
        let token = sign(&before, &claims()).unwrap();
        let rotated = Keys { current: SessionKey::random().unwrap(), previous: vec![old] };
        let mut revoked = Revoked::new(2);
        let c = verify(&rotated, &revoked, &token, NOW, 60).unwrap();
        let mut aged = c.clone();
        aged.issued_at -= 120;
        assert_eq!(verify(&rotated, &revoked, &sign(&rotated, &aged).unwrap(), NOW, 60), Err(Refusal::Expired));
        revoked.insert(&c.nonce);
        assert_eq!(verify(&rotated, &revoked, &token, NOW, 60), Err(Refusal::Revoked));
        revoked.insert("b");
        revoked.insert("c");
        assert!(!revoked.contains(&c.nonce), "the oldest revocation is forgotten beyond the cap");
        assert_eq!(verify(&rotated, &revoked, &token, NOW, 60), Ok(c));
    }
}
