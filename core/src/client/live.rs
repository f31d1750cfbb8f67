//! The client's current session: a slot held only while (re)connecting, so concurrent callers share one new
//! connection instead of racing to dial, and beside it a copy every call reads without waiting on that lock.
//!
//! Why a copy: taking and releasing an async mutex costs a semaphore round trip (its release locks the wait list)
//! on every call, although the session changes only on a connect. The copy is written only through [`LiveGuard`],
//! with the slot held, so it always equals the slot whenever nobody holds the slot across an await: a connect
//! empties both before it dials.

use std::sync::{Arc, Mutex, PoisonError};

use super::Session;

#[derive(Debug, Default)]
pub(super) struct Live {
    slot: tokio::sync::Mutex<Option<Arc<Session>>>,
    copy: Mutex<Option<Arc<Session>>>,
}

impl Live {
    /// The session as last set, without waiting (`None` while there is none, e.g. during a connect).
    pub fn current(&self) -> Option<Arc<Session>> {
        self.copy.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub fn try_lock(&self) -> Option<LiveGuard<'_>> {
        let slot = self.slot.try_lock().ok()?;
        Some(LiveGuard { slot, copy: &self.copy })
    }

    pub async fn lock(&self) -> LiveGuard<'_> {
        LiveGuard { slot: self.slot.lock().await, copy: &self.copy }
    }
}

/// The slot, held: every change also updates the copy.
pub(super) struct LiveGuard<'a> {
    slot: tokio::sync::MutexGuard<'a, Option<Arc<Session>>>,
    copy: &'a Mutex<Option<Arc<Session>>>,
}

impl LiveGuard<'_> {
    pub fn get(&self) -> Option<&Arc<Session>> {
        self.slot.as_ref()
    }

    pub fn take(&mut self) -> Option<Arc<Session>> {
        *self.copy() = None;
        self.slot.take()
    }

    pub fn set(&mut self, session: Arc<Session>) {
        *self.copy() = Some(session.clone());
        *self.slot = Some(session);
    }

    fn copy(&self) -> std::sync::MutexGuard<'_, Option<Arc<Session>>> {
        self.copy.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
