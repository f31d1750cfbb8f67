//! What every connection and request of one front shares: the service, the keys and limits, the revoked ids, the
//! sessions' local state, the drain, the broadcast of server notifications and the stop signals.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::broadcast;

use super::admission::Admission;
use super::asks::Asks;
use super::auth::{Denied, DenyReason, Principal, ResourceMetadata, StaticTokens, bearer_token};
use super::keys::{KeyError, Keys};
use super::limits::FrontLimits;
use super::live::{Drain, SessionTable};
use super::parked::Parks;
use super::service::Service;
use super::token::Revoked;
use crate::cancel::CancelToken;
use crate::jsonrpc::Message;
use crate::rt::Clock;

/// Server notifications queued per listener (GET stream, stdio), those for other sessions included; a listener
/// further behind skips the oldest, which costs nothing for `list_changed` (the agent re-lists once either way) and
/// loses a `resources/updated` (the agent reads the resource at the next one).
const NOTICES: usize = 64;

/// A server notification for agents: every connected session's (`to` is `None`), or one session's (its nonce, or
/// `"stdio"` for the stdio peer).
#[derive(Debug, Clone)]
pub(crate) struct Notice {
    pub to: Option<Arc<str>>,
    pub msg: Message,
}

impl Notice {
    /// Whether the listener of session `key` takes this notice.
    pub fn for_session(&self, key: &str) -> bool {
        self.to.as_deref().is_none_or(|to| to == key)
    }
}

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
    pub notices: broadcast::Sender<Notice>,
    /// Stop accepting connections and requests.
    pub closing: CancelToken,
    /// The drain deadline passed: every request, stream and connection ends. Parent of every session's token.
    pub root: CancelToken,
    streams: AtomicU64,
    pub connections: AtomicUsize,
    tokens: StaticTokens,
    /// The requests this process's calls made of their agents, waiting for answers.
    pub asks: Arc<Asks>,
    /// 2026-07-28 agents' calls waiting for their agents' retries (see `parked`).
    pub parks: Arc<Parks>,
    /// The service's `serverInfo` as every 2026-07-28 result's `_meta` carries it, encoded once (the description is
    /// fixed for the front's life) rather than for each answer.
    pub server_info: Value,
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

    /// The resource metadata document served at `path`, if any.
    pub fn metadata_at(&self, path: &str) -> Option<&ResourceMetadata> {
        self.limits.auth.as_ref()?.metadata().filter(|m| m.paths.iter().any(|p| p == path))
    }

    /// Who sent a request with this `Authorization` header value: a static token first (the operator's, every
    /// scope), then the front's [`AgentAuth`]; with neither configured, anyone.
    pub async fn authenticate(&self, authorization: Option<&[u8]>) -> Result<Principal, Denied> {
        let token = authorization.and_then(bearer_token);
        if token.is_some_and(|t| self.tokens.matches(t)) {
            return Ok(Principal::operator());
        }
        match &self.limits.auth {
            Some(auth) => {
                let outcome = auth.authenticate(authorization).await;
                if let Err(denied) = &outcome {
                    auth.refused(denied);
                }
                outcome
            }
            None if self.tokens.is_empty() => Ok(Principal::operator()),
            None if token.is_none() => Err(Denied::new(DenyReason::Missing, "an agent token is required")),
            None => Err(Denied::new(DenyReason::Malformed, "not an agent token of this gateway")),
        }
    }
}

impl Shared {
    pub fn new(
        service: Arc<dyn Service>,
        keys: Keys,
        limits: FrontLimits,
        clock: Arc<dyn Clock>,
    ) -> Result<Shared, KeyError> {
        let asks = Arc::new(Asks::new(keys.clone()));
        let root = CancelToken::new();
        let server_info = serde_json::to_value(service.describe().server_info).unwrap_or_default();
        Ok(Shared {
            server_info,
            service,
            keys: keys.clone(),
            clock,
            revoked: Mutex::new(Revoked::new(limits.max_revoked)),
            sessions: SessionTable::new(limits.max_sessions),
            admission: Admission::new(limits.max_calls_in_flight, limits.max_queued_calls),
            drain: Arc::default(),
            notices: broadcast::channel(NOTICES).0,
            closing: CancelToken::new(),
            root: root.clone(),
            streams: AtomicU64::new(1),
            connections: AtomicUsize::new(0),
            tokens: StaticTokens::new(&limits.agent_tokens)?,
            asks: asks.clone(),
            parks: Arc::new(Parks::new(asks, root.clone())),
            limits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_for_everyone_or_for_one_session() {
        let msg = Message::notification("notifications/resources/updated", None);
        let all = Notice { to: None, msg: msg.clone() };
        let one = Notice { to: Some(Arc::from("n1")), msg };
        assert!(all.for_session("n1") && all.for_session("stdio"));
        assert!(one.for_session("n1") && !one.for_session("n2"));
    }
}
