//! The synchronous fast paths of [`McpClient::session`] and [`McpClient::capabilities`]: the usual call finds a live
//! session whose lease needs nothing and a tool record that is neither stale nor expired, and gets both without a
//! timer, an async lock or a second clock read. Each answers exactly what its slow path would at the same instant,
//! and `None` wherever the slow path would connect, fetch or wait, which then runs as before.

use std::sync::Arc;

use tokio::time::Instant;

use super::{McpClient, Session};
use crate::capabilities::Capabilities;
use crate::error::CallError;
use crate::session::{GatewayProfile, LeaseState};

impl McpClient {
    /// What [`McpClient::session`] returns without waiting, when it would: the live, open session whose lease is
    /// fresh or merely due for renewal (which starts in the background). `None` when it would connect, or while a
    /// connect holds the session. `now` is read only for a lease to judge.
    pub(super) fn ready_session(&self, now: impl FnOnce() -> Instant) -> Option<Arc<Session>> {
        self.usable(self.live.current()?, now).ok()
    }

    /// `s` as it can be used now (a renewal that is due starts in the background), or why it must be replaced.
    pub(super) fn usable(&self, s: Arc<Session>, now: impl FnOnce() -> Instant) -> Result<Arc<Session>, Unusable> {
        if !s.conn.is_open() || s.conn.request_meta_rejected() {
            return Err(Unusable::Closed);
        }
        match s.lease.state(self.config.profile, now, || self.clock.wall_ms()) {
            LeaseState::Fresh => Ok(s),
            LeaseState::RenewDue => {
                self.spawn_renewal(&s);
                Ok(s)
            }
            LeaseState::Expiring => Err(Unusable::Expiring),
        }
    }

    /// What [`McpClient::capabilities_of`] returns without waiting, when it would: the auth refusal, or a record
    /// that is neither stale nor expired (`now` is read only for a record with an expiry). `Ok(None)`: it would
    /// fetch or wait.
    pub(super) fn ready_capabilities(
        &self,
        session: &Session,
        now: impl FnOnce() -> Instant,
    ) -> Result<Option<Arc<Capabilities>>, CallError> {
        // Nothing is sent to a server that would refuse our credential (or lack of one).
        session.lease.auth().check()?;
        if self.config.profile == GatewayProfile::Naive {
            return Ok(self.pinned.try_lock().ok().and_then(|p| p.clone()));
        }
        Ok(session.tools.ready(now))
    }
}

/// Why a session cannot be used as it is.
pub(super) enum Unusable {
    /// Its connection failed, or the server refused its protocol envelope.
    Closed,
    /// Its lease is inside the re-handshake margin, or the server said it is gone.
    Expiring,
}

/// The monotonic clock read at most once, when first asked: the fast paths judge a lease and a record's expiry at
/// the same instant, as the slow path would.
#[derive(Default)]
pub(super) struct LazyNow(Option<Instant>);

impl LazyNow {
    pub(super) fn get(&mut self) -> Instant {
        *self.0.get_or_insert_with(Instant::now)
    }
}
