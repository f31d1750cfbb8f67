//! Counters of session events per client, cheap to read at any time (the simulator samples them; `diagnose` prints
//! them). Every [`SessionEvent`] the client emits is counted here too, so the two never disagree.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use strum::VariantArray;

use crate::observe::{Event, Observer, SessionEvent};

/// How often each [`SessionEvent`] happened on one client, since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionStats {
    pub granted: u64,
    pub renewed: u64,
    pub rehandshakes: u64,
    pub not_found: u64,
    pub resent: u64,
    pub auth_mismatches: u64,
}

impl SessionStats {
    /// The count of one kind of event.
    pub fn count(&self, what: SessionEvent) -> u64 {
        match what {
            SessionEvent::Granted => self.granted,
            SessionEvent::Renewed => self.renewed,
            SessionEvent::Rehandshake => self.rehandshakes,
            SessionEvent::NotFound => self.not_found,
            SessionEvent::Resent => self.resent,
            SessionEvent::AuthMismatch => self.auth_mismatches,
        }
    }
}

/// The live counters, one atomic per event kind, indexed like [`SessionEvent::VARIANTS`].
#[derive(Debug, Default)]
pub(crate) struct SessionCounters([AtomicU64; SessionEvent::VARIANTS.len()]);

impl SessionCounters {
    pub fn bump(&self, what: SessionEvent) {
        self.0[what as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> SessionStats {
        let get = |what: SessionEvent| self.0[what as usize].load(Ordering::Relaxed);
        SessionStats {
            granted: get(SessionEvent::Granted),
            renewed: get(SessionEvent::Renewed),
            rehandshakes: get(SessionEvent::Rehandshake),
            not_found: get(SessionEvent::NotFound),
            resent: get(SessionEvent::Resent),
            auth_mismatches: get(SessionEvent::AuthMismatch),
        }
    }
}

/// Where a client's session events go: its counters and its observer. Cloned into background renewals.
#[derive(Debug, Clone)]
pub(crate) struct SessionEvents {
    pub server: String,
    pub observer: Arc<dyn Observer>,
    pub counters: Arc<SessionCounters>,
}

impl SessionEvents {
    pub fn emit(&self, what: SessionEvent) {
        self.counters.bump(what);
        self.observer.event(&Event::Session { server: &self.server, what });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_lands_in_its_own_counter() {
        let c = SessionCounters::default();
        for (i, what) in SessionEvent::VARIANTS.iter().copied().enumerate() {
            for _ in 0..=i {
                c.bump(what);
            }
        }
        let stats = c.snapshot();
        for (i, what) in SessionEvent::VARIANTS.iter().copied().enumerate() {
            assert_eq!(stats.count(what), i as u64 + 1, "{what}");
        }
    }
}
