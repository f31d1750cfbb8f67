//! The lease on one granted session: when it is due for renewal and when it must be replaced, decided from local
//! monotonic time at receipt of the grant (see [`super::ext`] for why never from the server's wall clock), and the
//! session extension's state on one connection ([`SessionLease`]): that lease, the negotiated credential, the renewal.
//!
//! A server that grants nothing and declares no schemes gets an empty state that adds nothing to requests and never
//! expires, so real MCP servers see exactly plain MCP. The state lives beside its connection in the client's session:
//! a new session (re-handshake) is a new connection with a new state, never a mutation of the old one, so calls still
//! in flight on the old connection finish on it undisturbed.
//!
//! Timing, for a grant of `ttl` received at `t0` (all on tokio's monotonic clock):
//! - **renew** once `min(ttl × 0.7, 300 s)` has passed since `t0`;
//! - **re-handshake** (a new session, before sending) once less than the margin remains, the margin being
//!   `min(30 s, ttl / 5)`.
//!
//! The margin is 30 s for TTLs of 150 s and more. Below that it is proportional (a fifth of the
//! TTL), not only for TTLs of 30 s or less: a fixed 30 s margin would swallow the renewal point of any TTL under
//! 100 s (at 60 s, the re-handshake at 30 s would come before the renewal at 42 s, so the session would never be
//! renewed, only replaced). A fifth keeps the order renew (at 70%) → margin (at 80%) → expiry for every TTL, and
//! leaves a tenth of the TTL for a renewal to come back.
//!
//! The naive profile believes the server's `expiresAtMs` against the local wall clock instead, and never renews:
//! the naive first design, which a 3-minute skew breaks.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::auth::AuthChoice;
use super::ext::{self, GatewayProfile, META_SESSION, RENEW, SessionGrant};
use super::stats::SessionEvents;
use crate::conn::{CallOptions, Connection, Lane};
use crate::credential::Credential;
use crate::error::CallError;
use crate::jsonrpc::ErrorCode;
use crate::observe::SessionEvent;

/// Fraction of the TTL after which a renewal is sent.
const RENEW_FRACTION: f64 = 0.7;
/// Renew at the latest this long after a grant, however long the TTL.
const MAX_RENEW_AFTER: Duration = Duration::from_secs(300);
/// Re-handshake when less than this remains (for TTLs of 150 s and more; see the module docs).
const REHANDSHAKE_MARGIN: Duration = Duration::from_secs(30);
/// Below 150 s, the margin is this fraction of the TTL.
const MARGIN_DIVISOR: u32 = 5;

/// What a lease says about its session right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseState {
    /// Use it.
    Fresh,
    /// Use it, and renew it meanwhile.
    RenewDue,
    /// Do not send on it: replace the session first.
    Expiring,
}

/// A granted session and the monotonic instant its grant was received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lease {
    pub grant: SessionGrant,
    pub received: Instant,
}

impl Lease {
    pub fn new(grant: SessionGrant, received: Instant) -> Lease {
        Lease { grant, received }
    }

    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.grant.ttl_ms)
    }

    /// How long after the grant a renewal is due.
    pub fn renew_after(ttl: Duration) -> Duration {
        ttl.mul_f64(RENEW_FRACTION).min(MAX_RENEW_AFTER)
    }

    /// How much must remain for the session to still be used.
    pub fn margin(ttl: Duration) -> Duration {
        (ttl / MARGIN_DIVISOR).min(REHANDSHAKE_MARGIN)
    }

    /// Time left at `now` by our own monotonic reckoning.
    pub fn remaining(&self, now: Instant) -> Duration {
        self.ttl().saturating_sub(now.saturating_duration_since(self.received))
    }

    /// The lease's verdict at monotonic `now` (default profile) or wall `wall_ms` (naive profile).
    pub fn state(&self, profile: GatewayProfile, now: Instant, wall_ms: u64) -> LeaseState {
        match profile {
            GatewayProfile::Default => {
                let ttl = self.ttl();
                if self.remaining(now) < Self::margin(ttl) {
                    LeaseState::Expiring
                } else if now.saturating_duration_since(self.received) >= Self::renew_after(ttl) {
                    LeaseState::RenewDue
                } else {
                    LeaseState::Fresh
                }
            }
            // The naive design's mistake, kept on purpose: the server's clock and ours are compared as if they agreed.
            // A grant without `expiresAtMs` is believed to live forever.
            GatewayProfile::Naive => match self.grant.expires_at_ms {
                Some(at) if wall_ms >= at => LeaseState::Expiring,
                _ => LeaseState::Fresh,
            },
        }
    }
}

#[derive(Debug)]
pub(crate) struct SessionLease {
    lease: Mutex<Option<Lease>>,
    auth: AuthChoice,
    /// The server said this session is gone (or cannot be renewed): replace it before the next send.
    dead: AtomicBool,
    /// A renewal is in flight (single flight: at most one per session).
    renewing: AtomicBool,
}

impl SessionLease {
    /// The state a connect produced: the grant and declared schemes in the `_meta` of the initialize (legacy) or
    /// `server/discover` (modern) result, received at monotonic `now`.
    pub fn from_result_meta(meta: Option<&Value>, now: Instant, credentials: &[Credential]) -> SessionLease {
        let lease = SessionGrant::from_result_meta(meta).map(|g| Lease::new(g, now));
        let declared = ext::auth_schemes(meta);
        SessionLease {
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
    /// The lease's verdict; the clocks are read only when there is a lease to judge (most servers grant none, and
    /// this runs before every call).
    pub fn state(
        &self,
        profile: GatewayProfile,
        now: impl FnOnce() -> Instant,
        wall_ms: impl FnOnce() -> u64,
    ) -> LeaseState {
        if self.dead.load(Ordering::Acquire) {
            return LeaseState::Expiring;
        }
        self.lease().as_ref().map_or(LeaseState::Fresh, |l| l.state(profile, now(), wall_ms()))
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

    /// [`SessionLease::renew`] in the background (the caller claimed it with [`SessionLease::start_renewal`]).
    pub async fn renew_in_background(&self, conn: &Connection, events: &SessionEvents) {
        if let Err(e) = self.renew(conn, events).await {
            tracing::debug!(server = %events.server, error = %e, "session renewal failed");
        }
        self.renewing.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(ttl_s: u64, expires_at_ms: Option<u64>) -> Lease {
        let grant = SessionGrant { id: "s".into(), ttl_ms: ttl_s * 1000, expires_at_ms };
        Lease::new(grant, Instant::now())
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn renewal_and_margin_points() {
        assert_eq!(Lease::renew_after(secs(600.0)), secs(300.0));
        assert_eq!(Lease::renew_after(secs(100.0)), secs(70.0));
        assert_eq!(Lease::margin(secs(600.0)), secs(30.0));
        assert_eq!(Lease::margin(secs(150.0)), secs(30.0));
        assert_eq!(Lease::margin(secs(60.0)), secs(12.0));
        assert_eq!(Lease::margin(secs(10.0)), secs(2.0));
        // Renewal always comes before the margin.
        for ttl in [1.0, 10.0, 30.0, 60.0, 99.0, 150.0, 429.0, 600.0, 86_400.0] {
            let ttl = secs(ttl);
            assert!(Lease::renew_after(ttl) < ttl - Lease::margin(ttl), "{ttl:?}");
        }
    }

    #[test]
    fn default_profile_reads_monotonic_time_only() {
        let l = lease(600, Some(0)); // the server's wall clock says it expired at the epoch: ignored
        let at = |s: f64| l.received + secs(s);
        let state = |s: f64| l.state(GatewayProfile::Default, at(s), u64::MAX);
        assert_eq!(state(0.0), LeaseState::Fresh);
        assert_eq!(state(299.9), LeaseState::Fresh);
        assert_eq!(state(300.0), LeaseState::RenewDue);
        assert_eq!(state(570.0), LeaseState::RenewDue);
        assert_eq!(state(570.1), LeaseState::Expiring);
        assert_eq!(state(10_000.0), LeaseState::Expiring);
        assert_eq!(l.remaining(at(100.0)), secs(500.0));
    }

    #[test]
    fn naive_profile_believes_the_servers_wall_clock() {
        let l = lease(600, Some(1_000_000));
        let far = l.received + secs(10_000.0);
        assert_eq!(l.state(GatewayProfile::Naive, far, 999_999), LeaseState::Fresh, "never renews, never expires");
        assert_eq!(l.state(GatewayProfile::Naive, l.received, 1_000_000), LeaseState::Expiring);
        assert_eq!(lease(600, None).state(GatewayProfile::Naive, far, u64::MAX), LeaseState::Fresh);
    }
}
