//! A client's session state as a plain serde value, so a workflow can be saved and resumed in another process (its
//! `mcp_sessions` in the workflow state): [`McpClient::snapshot`] and [`McpClient::resume`].
//!
//! # Time across a save
//!
//! Monotonic time does not survive a process, so the lease is saved as the TTL *remaining* when the snapshot was
//! taken, with the wall time it was taken. On resume the remaining TTL is reduced by the wall time elapsed since
//! (and not reduced when the wall clock went backwards in between: the elapsed time is clamped at 0). That is the
//! conservative reading that does not need the two clocks to agree: a wall clock that jumped forward only makes us
//! replace the session sooner, and one that jumped back costs at most the renewal margin, which the server's
//! session-not-found and the one transparent re-handshake cover.
//!
//! On resume, the first new connection is established as usual (the server may grant a fresh session, which is
//! then left unused to expire), and the saved session id is sent on it first; if the server no longer knows it, the
//! call gets session-not-found and the client re-handshakes once, as it does for any lost session. Credentials are
//! not part of the snapshot: they come from the resuming client's configuration.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::{McpClient, Session};
use crate::history::CallHistory;
use crate::schema::ContentHash;
use crate::session::{CachedEra, Era, Lease, SessionGrant};

/// What [`McpClient::snapshot`] saves. Field names are the stable serialised form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionSnapshot {
    pub server: String,
    /// The era of the live connection (`None`: not connected when saved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub era: Option<Era>,
    /// The session id the server granted (`None`: it grants none, or not connected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The lease's remaining TTL by local monotonic time at `taken_at_wall_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_ttl_ms: Option<u64>,
    /// Wall time of the snapshot, from the client's [`Clock`](crate::rt::Clock).
    pub taken_at_wall_ms: u64,
    /// Content hash of the capability record (the tool list), if fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities_hash: Option<ContentHash>,
    /// The call history, when the client records one ([`McpClient::with_history`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<CallHistory>,
}

impl SessionSnapshot {
    /// The lease to try on resume at wall time `wall_now_ms`, received at monotonic `now`: the saved TTL less the
    /// wall time elapsed since the save (see the module docs). `None` when there is no session or nothing is left.
    pub(crate) fn resumed_lease(&self, wall_now_ms: u64, now: Instant) -> Option<Lease> {
        let id = self.session_id.clone()?;
        let elapsed = wall_now_ms.saturating_sub(self.taken_at_wall_ms);
        let ttl_ms = self.remaining_ttl_ms?.saturating_sub(elapsed);
        (ttl_ms > 0).then(|| Lease::new(SessionGrant { id, ttl_ms, expires_at_ms: None }, now))
    }
}

/// Why a snapshot cannot be resumed by a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    #[error("the snapshot is of server {saved:?}, this client talks to {ours:?}")]
    OtherServer { saved: String, ours: String },
}

impl McpClient {
    /// The client's session state now (see [`SessionSnapshot`]). Does not connect.
    pub async fn snapshot(&self) -> SessionSnapshot {
        let live: Option<Arc<Session>> = self.live.lock().await.get().cloned();
        let now = Instant::now();
        let grant = live.as_ref().and_then(|s| s.lease.grant());
        let capabilities_hash = match &live {
            Some(s) => s.tools.settled().await.map(|c| c.hash()),
            None => None,
        };
        SessionSnapshot {
            server: self.server.clone(),
            era: live.as_ref().map(|s| s.era),
            session_id: grant.map(|g| g.id),
            remaining_ttl_ms: live.as_ref().and_then(|s| s.lease.remaining(now)).map(millis),
            taken_at_wall_ms: self.clock.wall_ms(),
            capabilities_hash,
            history: self.history.as_ref().map(|h| h.lock().unwrap_or_else(|p| p.into_inner()).clone()),
        }
    }

    /// Continues from a saved snapshot: the saved session id is tried on the next connection, the history (if saved)
    /// replaces this client's, and a saved legacy era skips the era probe.
    pub fn resume(mut self, snapshot: SessionSnapshot) -> Result<Self, ResumeError> {
        if snapshot.server != self.server {
            return Err(ResumeError::OtherServer { saved: snapshot.server, ours: self.server });
        }
        if snapshot.era == Some(Era::Legacy) && self.eras.get(&self.server).is_none() {
            self.eras.put(&self.server, CachedEra::Legacy);
        }
        if let Some(history) = snapshot.history.clone() {
            self.history = Some(std::sync::Mutex::new(history));
        }
        self.resume = std::sync::Mutex::new(Some(snapshot));
        Ok(self)
    }

    /// The resumed lease for a new connection, once: only the first connection after [`McpClient::resume`] tries
    /// the saved session.
    pub(super) fn take_resumed_lease(&self) -> Option<Lease> {
        let snapshot = self.resume.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        let lease = snapshot.resumed_lease(self.clock.wall_ms(), Instant::now())?;
        // Not worth trying when it is already inside the re-handshake margin.
        (lease.remaining(lease.received) >= Lease::margin(lease.ttl())).then_some(lease)
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(remaining: Option<u64>, taken: u64) -> SessionSnapshot {
        SessionSnapshot {
            server: "s".into(),
            era: Some(Era::Legacy),
            session_id: Some("sid".into()),
            remaining_ttl_ms: remaining,
            taken_at_wall_ms: taken,
            capabilities_hash: None,
            history: None,
        }
    }

    #[test]
    fn remaining_ttl_shrinks_by_wall_time_elapsed_and_never_grows() {
        let now = Instant::now();
        let lease = |s: &SessionSnapshot, wall| s.resumed_lease(wall, now).map(|l| l.grant.ttl_ms);
        let s = snap(Some(600_000), 1_000_000);
        assert_eq!(lease(&s, 1_100_000), Some(500_000));
        assert_eq!(lease(&s, 900_000), Some(600_000), "clock went backwards: no credit");
        assert_eq!(lease(&s, 1_600_000), None, "used up");
        assert_eq!(lease(&snap(None, 0), 0), None);
    }

    #[test]
    fn round_trips_through_json() {
        let s = snap(Some(5), 7);
        let text = serde_json::to_string(&s).unwrap();
        let back: SessionSnapshot = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        assert!(text.contains("\"era\":\"legacy\""), "{text}");
    }
}
