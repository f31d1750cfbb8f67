//! The keys that sign and check agent session ids.
//!
//! `MCPSTORM_SESSION_KEY` holds one key or a comma-separated list, each hex or base64 (standard or URL-safe) of at
//! least 32 bytes. The first signs new session ids; every key of the list verifies. Rotation: put the new key first
//! and keep the old one after it on every replica, until every session signed with the old one has ended or expired
//! (`FrontLimits::session_max_age`); then drop it. Without the variable a process makes a random key of its own:
//! its sessions then do not survive a second replica or a restart.

use std::fmt;

use base64::Engine;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// The environment variable holding the session keys.
pub const SESSION_KEY_ENV: &str = "MCPSTORM_SESSION_KEY";
/// The shortest key accepted: HMAC-SHA256's block of output.
pub const MIN_KEY_BYTES: usize = 32;

/// One HMAC-SHA256 key. Its bytes never print.
#[derive(Clone)]
pub struct SessionKey(hmac::Key);

impl fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionKey([redacted])")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("session key is neither hex nor base64")]
    Encoding,
    #[error("session key has {0} bytes; at least {MIN_KEY_BYTES} are required")]
    TooShort(usize),
    #[error("the system random source failed")]
    Random,
}

impl SessionKey {
    /// Raw key bytes (at least [`MIN_KEY_BYTES`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<SessionKey, KeyError> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(KeyError::TooShort(bytes.len()));
        }
        Ok(SessionKey(hmac::Key::new(hmac::HMAC_SHA256, bytes)))
    }

    /// A key written as hex, or as base64 (standard or URL-safe, padded or not). Hex is tried first: a hex string
    /// is also valid base64, and an operator who wrote hex meant hex.
    pub fn parse(text: &str) -> Result<SessionKey, KeyError> {
        let text = text.trim();
        let bytes = hex(text).or_else(|| base64_any(text)).ok_or(KeyError::Encoding)?;
        SessionKey::from_bytes(&bytes)
    }

    /// A fresh key from the system's random source.
    pub fn random() -> Result<SessionKey, KeyError> {
        let mut bytes = [0u8; MIN_KEY_BYTES];
        SystemRandom::new().fill(&mut bytes).map_err(|_| KeyError::Random)?;
        SessionKey::from_bytes(&bytes)
    }

    pub(crate) fn hmac(&self) -> &hmac::Key {
        &self.0
    }
}

/// The signing key and the keys still accepted (key rotation).
#[derive(Debug, Clone)]
pub struct Keys {
    /// Signs new session ids (and verifies).
    pub current: SessionKey,
    /// Only verify: the keys being rotated out.
    pub previous: Vec<SessionKey>,
}

impl Keys {
    pub fn new(current: SessionKey) -> Keys {
        Keys { current, previous: Vec::new() }
    }

    /// A comma-separated list, the signing key first (the format of [`SESSION_KEY_ENV`]).
    pub fn parse(list: &str) -> Result<Keys, KeyError> {
        let mut keys = list.split(',').filter(|k| !k.trim().is_empty()).map(SessionKey::parse);
        let current = keys.next().ok_or(KeyError::Encoding)??;
        Ok(Keys { current, previous: keys.collect::<Result<_, _>>()? })
    }

    /// The keys of [`SESSION_KEY_ENV`], or `None` when it is unset or empty.
    pub fn from_env() -> Result<Option<Keys>, KeyError> {
        match std::env::var(SESSION_KEY_ENV) {
            Ok(list) if !list.trim().is_empty() => Keys::parse(&list).map(Some),
            _ => Ok(None),
        }
    }

    /// A random key of this process alone (sessions do not survive a replica or a restart).
    pub fn random() -> Result<Keys, KeyError> {
        SessionKey::random().map(Keys::new)
    }

    /// Every key that verifies, the signing key first.
    pub(crate) fn verifying(&self) -> impl Iterator<Item = &SessionKey> {
        std::iter::once(&self.current).chain(&self.previous)
    }
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

fn base64_any(text: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD].iter().find_map(|engine| engine.decode(text).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_from_hex_and_base64_and_refuse_short_or_garbage() {
        let hex_key = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        assert!(SessionKey::parse(hex_key).is_ok());
        let b64 = base64::engine::general_purpose::STANDARD.encode([7u8; 48]);
        assert!(SessionKey::parse(&b64).is_ok());
        assert_eq!(SessionKey::parse("abcd").unwrap_err(), KeyError::TooShort(2));
        assert_eq!(SessionKey::parse("not a key!").unwrap_err(), KeyError::Encoding);
        let keys = Keys::parse(&format!("{hex_key}, {b64}")).unwrap();
        assert_eq!(keys.previous.len(), 1);
        assert!(Keys::parse(" , ").is_err());
        assert_eq!(format!("{:?}", keys.current), "SessionKey([redacted])");
    }
}
