//! The session extension's state on one connection ([`crate::session::ext`]): the lease on the granted session, the
//! negotiated credential, and the renewal. A server that grants nothing and declares no schemes gets an empty state
//! that adds nothing to requests and never expires, so real MCP servers see exactly plain MCP.
//!
//! The state lives beside its connection in the client's [`Session`](super::Session): a new session (re-handshake)
//! is a new connection with a new state, never a mutation of the old one, so calls still in flight on the old
//! connection finish on it undisturbed.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::auth::AuthChoice;
use super::lease::{Lease, LeaseState};
use super::session_stats::SessionEvents;
use crate::conn::{CallOptions, Connection, Lane};
use crate::error::CallError;
use crate::jsonrpc::ErrorCode;
use crate::observe::SessionEvent;
use crate::session::ext::{self, Credential, GatewayProfile, META_SESSION, RENEW, SessionGrant};

#[derive(Debug)]
pub(crate) struct SessionExt {
    lease: Mutex<Option<Lease>>,
    auth: AuthChoice,
    /// The server said this session is gone (or cannot be renewed): replace it before the next send.
    dead: AtomicBool,
    /// A renewal is in flight (single flight: at most one per session).
    renewing: AtomicBool,
}

impl SessionExt {
    /// The state a connect produced: the grant and declared schemes in the `_meta` of the initialize (legacy) or
    /// `server/discover` (modern) result, received at monotonic `now`.
    pub fn from_result_meta(meta: Option<&Value>, now: Instant, credentials: &[Credential]) -> SessionExt {
        let lease = SessionGrant::from_result_meta(meta).map(|g| Lease::new(g, now));
        let declared = ext::auth_schemes(meta);
        SessionExt {
            lease: Mutex::new(lease),
            auth: AuthChoice::negotiate(declared.as_deref(), credentials),
            dead: AtomicBool::new(false),
            renewing: AtomicBool::new(false),
        }
    }

    fn lease(&self) -> std::sync::MutexGuard<'_, Option<Lease>> {
        self.lease.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn grant(&self) -> Option<SessionGrant> {
        self.lease().as_ref().map(|l| l.grant.clone())
    }

    pub fn auth(&self) -> &AuthChoice {
        &self.auth
    }

    /// Time left on the lease by local monotonic reckoning; `None` without a grant.
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        self.lease().as_ref().map(|l| l.remaining(now))
    }

    /// Writes the session id and authorization into `conn`'s per-request `_meta` (nothing when there are none).
    pub fn apply(&self, conn: &Connection) {
        let mut meta = Map::new();
        if let Some(lease) = self.lease().as_ref() {
            meta.insert(META_SESSION.to_owned(), json!(lease.grant.id));
        }
        self.auth.add_to_meta(&mut meta);
        conn.set_session_meta((!meta.is_empty()).then_some(meta));
    }

    /// Replaces the lease (a renewal's grant, or a resumed session's) and the request `_meta` that names it.
    pub fn install(&self, lease: Lease, conn: &Connection) {
        *self.lease() = Some(lease);
        self.apply(conn);
    }

    /// The lease's verdict; a session without a grant is always fresh unless the server said it is gone.
    pub fn state(&self, profile: GatewayProfile, now: Instant, wall_ms: u64) -> LeaseState {
        if self.dead.load(Ordering::Acquire) {
            return LeaseState::Expiring;
        }
        self.lease().as_ref().map_or(LeaseState::Fresh, |l| l.state(profile, now, wall_ms))
    }

    pub fn mark_dead(&self) {
        self.dead.store(true, Ordering::Release);
    }

    /// Claims the renewal; `false` when one is already running.
    pub fn start_renewal(&self) -> bool {
        !self.renewing.swap(true, Ordering::AcqRel)
    }

    /// Sends one renewal on the priority lane and returns the fresh grant.
    ///
    /// - A fresh grant replaces the lease.
    /// - -32601: this server cannot renew, so the session is replaced (re-handshake) before the next send.
    /// - Session-not-found: the same.
    /// - Anything else (timeout, a closed connection, a result without a grant): the lease stays; the next call
    ///   after it tries again, and the re-handshake margin still protects the session's end.
    pub async fn renew(&self, conn: &Connection, events: &SessionEvents) -> Result<SessionGrant, CallError> {
        let opts = CallOptions { lane: Lane::Priority, ..CallOptions::default() };
        let received = conn.request(RENEW, None, opts).await;
        let now = Instant::now();
        match received {
            Ok(result) => match SessionGrant::from_result_meta(result.get("_meta")) {
                Some(grant) => {
                    self.install(Lease::new(grant.clone(), now), conn);
                    events.emit(SessionEvent::Renewed);
                    Ok(grant)
                }
                None => Err(CallError::MalformedResponse(format!("{RENEW} result carries no session grant"))),
            },
            Err(CallError::Protocol(e)) if e.code() == ErrorCode::METHOD_NOT_FOUND => {
                tracing::info!(server = %events.server, "server cannot renew sessions; starting a new one");
                self.mark_dead();
                Err(CallError::Protocol(e))
            }
            Err(CallError::Protocol(e)) if ext::is_session_not_found(&e) => {
                events.emit(SessionEvent::NotFound);
                self.mark_dead();
                Err(CallError::Protocol(e))
            }
            Err(e) => Err(e),
        }
    }

    /// [`SessionExt::renew`] in the background (the caller claimed it with [`SessionExt::start_renewal`]).
    pub async fn renew_in_background(&self, conn: &Connection, events: &SessionEvents) {
        if let Err(e) = self.renew(conn, events).await {
            tracing::debug!(server = %events.server, error = %e, "session renewal failed");
        }
        self.renewing.store(false, Ordering::Release);
    }
}
