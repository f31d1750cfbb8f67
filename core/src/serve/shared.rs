//! What every connection and request of one front shares: the service, the keys and limits, the revoked ids, the
//! sessions' local state, the drain, the broadcast of server notifications and the stop signals.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ring::hmac;
use ring::rand::SystemRandom;
use tokio::sync::broadcast;

use super::admission::Admission;
use super::keys::{KeyError, Keys};
use super::limits::FrontLimits;
use super::live::{Drain, SessionTable};
use super::service::Service;
use super::token::Revoked;
use crate::cancel::CancelToken;
use crate::jsonrpc::Message;
use crate::rt::Clock;

/// Server notifications queued per listener (GET stream, stdio); a listener further behind skips the oldest, which
/// costs nothing for `list_changed` (the agent re-lists once either way).
const NOTICES: usize = 64;

pub(crate) struct Shared {
    pub service: Arc<dyn Service>,
    pub keys: Keys,
    pub limits: FrontLimits,
    /// Wall time for session ids' issue times and ages.
    pub clock: Arc<dyn Clock>,
    revoked: Mutex<Revoked>,
    pub sessions: SessionTable,
    /// Who runs and who waits when agents send more than `max_calls_in_flight`.
    pub admission: Arc<Admission>,
    pub drain: Arc<Drain>,
    pub notices: broadcast::Sender<Message>,
    /// Stop accepting connections and requests.
    pub closing: CancelToken,
    /// The drain deadline passed: every request, stream and connection ends. Parent of every session's token.
    pub root: CancelToken,
    streams: AtomicU64,
    pub connections: AtomicUsize,
    bearer: Bearer,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("limits", &self.limits)
            .field("sessions", &self.sessions.len())
            .field("in_flight", &self.drain.count())
            .field("admission", &self.admission.load())
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub fn revoked(&self) -> MutexGuard<'_, Revoked> {
        self.revoked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Unix seconds by the front's clock.
    pub fn now_secs(&self) -> u64 {
        self.clock.wall_ms() / 1000
    }

    pub fn next_stream_id(&self) -> u64 {
        self.streams.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether an `Authorization` header value is one of the agent tokens (or none are configured).
    pub fn authorized(&self, authorization: Option<&[u8]>) -> bool {
        self.bearer.check(authorization)
    }
}

/// The agent tokens, kept as HMAC tags under a random key of this process: checking one is a constant-time tag
/// comparison whatever the lengths, and the tokens themselves are not kept.
struct Bearer {
    key: hmac::Key,
    tags: Vec<hmac::Tag>,
}

impl Bearer {
    fn new(limits: &FrontLimits) -> Result<Bearer, KeyError> {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &SystemRandom::new()).map_err(|_| KeyError::Random)?;
        let tags = limits.agent_tokens.iter().map(|t| hmac::sign(&key, t.expose().as_bytes())).collect();
        Ok(Bearer { key, tags })
    }

    fn check(&self, authorization: Option<&[u8]>) -> bool {
        if self.tags.is_empty() {
            return true;
        }
        // The scheme is case-insensitive (RFC 9110); the token is not.
        let token = authorization
            .and_then(|v| v.split_at_checked(7))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(b"bearer "));
        let Some((_, token)) = token else {
            return false;
        };
        // Every tag is tried: the time taken does not say which token matched.
        self.tags.iter().fold(false, |found, tag| hmac::verify(&self.key, token, tag.as_ref()).is_ok() | found)
    }
}

impl Shared {
    pub fn new(
        service: Arc<dyn Service>,
        keys: Keys,
        limits: FrontLimits,
        clock: Arc<dyn Clock>,
    ) -> Result<Shared, KeyError> {
        Ok(Shared {
            service,
            keys,
            clock,
            revoked: Mutex::new(Revoked::new(limits.max_revoked)),
            sessions: SessionTable::new(limits.max_sessions),
            admission: Admission::new(limits.max_calls_in_flight, limits.max_queued_calls),
            drain: Arc::default(),
            notices: broadcast::channel(NOTICES).0,
            closing: CancelToken::new(),
            root: CancelToken::new(),
            streams: AtomicU64::new(1),
            connections: AtomicUsize::new(0),
            bearer: Bearer::new(&limits)?,
            limits,
        })
    }
}
