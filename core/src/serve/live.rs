//! What this process holds of the agent sessions it serves: the requests in flight (for cancellation, the
//! admission and the drain on shutdown), the request streams kept for resumption and the open GET stream.
//! The session's identity and negotiated state travel in its id (`token.rs`); this is only the local part, made on
//! first sight and dropped when idle and the table is full.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use super::admission::{Admission, Refused, Ticket};
use super::logs::LevelCell;
use super::sse::StreamLog;
use crate::cancel::CancelToken;
use crate::jsonrpc::{Notification, RequestId};
use crate::mcp::{CancelledParams, method};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data, consistent after any panic.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The requests in flight in the whole front: the drain on shutdown waits for this to reach zero.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    count: AtomicUsize,
    idle: Notify,
}

impl Drain {
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Resolves once nothing is in flight.
    pub async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.count() == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// One agent session's local state.
#[derive(Debug)]
pub(crate) struct LiveSession {
    /// The session's nonce (stdio: `"stdio"`).
    pub key: Arc<str>,
    /// Fired by DELETE and at the drain deadline; every request's token is its child.
    pub cancel: CancelToken,
    flights: Mutex<HashMap<RequestId, CancelToken>>,
    streams: Mutex<VecDeque<Arc<StreamLog>>>,
    get_generation: AtomicU64,
    gets_open: AtomicUsize,
    last_used: AtomicU64,
    /// The session's log level (`logging/setLevel`).
    pub log_level: Arc<LevelCell>,
}

/// A request with this id is already in flight in the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DuplicateId;

impl LiveSession {
    pub fn new(key: Arc<str>, parent: &CancelToken) -> Arc<LiveSession> {
        Arc::new(LiveSession {
            key,
            cancel: parent.child(),
            flights: Mutex::default(),
            streams: Mutex::default(),
            get_generation: AtomicU64::new(0),
            gets_open: AtomicUsize::new(0),
            last_used: AtomicU64::new(0),
            log_level: Arc::default(),
        })
    }

    /// Enters request `id`: its flight holds its cancel token until dropped. How many may run at once is the
    /// front's admission's to say, not the session's.
    pub fn enter(self: &Arc<Self>, drain: &Arc<Drain>, id: &RequestId) -> Result<Flight, DuplicateId> {
        let mut flights = lock(&self.flights);
        if flights.contains_key(id) {
            return Err(DuplicateId);
        }
        let token = self.cancel.child();
        flights.insert(id.clone(), token.clone());
        drain.count.fetch_add(1, Ordering::SeqCst);
        Ok(Flight { session: Some(self.clone()), id: Some(id.clone()), token, drain: drain.clone(), ticket: None })
    }

    /// `notifications/cancelled`: cancels the request if it is still in flight.
    pub fn cancel(&self, id: &RequestId, reason: &str) {
        if let Some(token) = lock(&self.flights).get(id) {
            token.cancel(reason);
        }
    }

    /// `notifications/cancelled` cancels within the session; `notifications/initialized` and the rest need nothing.
    pub fn notified(&self, note: Notification) {
        if note.method != method::CANCELLED {
            return;
        }
        if let Some(params) = note.params.and_then(|p| serde_json::from_value::<CancelledParams>(p).ok()) {
            let reason = params.reason.unwrap_or_else(|| "cancelled by the agent".to_owned());
            self.cancel(&params.request_id, &reason);
        }
    }

    pub fn in_flight(&self) -> usize {
        lock(&self.flights).len()
    }

    /// Keeps a request stream for resumption, forgetting the oldest beyond `cap`.
    pub fn keep(&self, log: Arc<StreamLog>, cap: usize) {
        let mut streams = lock(&self.streams);
        streams.push_back(log);
        while streams.len() > cap.max(1) {
            streams.pop_front();
        }
    }

    pub fn stream(&self, id: u64) -> Option<Arc<StreamLog>> {
        lock(&self.streams).iter().find(|s| s.id == id).cloned()
    }

    /// A new GET stream: it supersedes the previous one, which ends at its next event.
    pub fn open_get(self: &Arc<Self>) -> GetGuard {
        self.gets_open.fetch_add(1, Ordering::SeqCst);
        let generation = self.get_generation.fetch_add(1, Ordering::SeqCst) + 1;
        GetGuard { session: self.clone(), generation }
    }

    fn idle(&self) -> bool {
        self.in_flight() == 0 && self.gets_open.load(Ordering::SeqCst) == 0
    }
}

/// An open GET stream of a session.
#[derive(Debug)]
pub(crate) struct GetGuard {
    session: Arc<LiveSession>,
    generation: u64,
}

impl GetGuard {
    /// The session's nonce.
    pub fn session(&self) -> &str {
        &self.session.key
    }

    /// Whether this is still the session's newest GET stream and the session has not ended.
    pub fn current(&self) -> bool {
        !self.session.cancel.is_cancelled() && self.session.get_generation.load(Ordering::SeqCst) == self.generation
    }

    /// Resolves when the session ends (DELETE, the drain deadline).
    pub async fn ended(&self) {
        self.session.cancel.cancelled().await
    }
}

impl Drop for GetGuard {
    fn drop(&mut self) {
        self.session.gets_open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A request in flight: counted in the drain and (with a session) in its session's table, until dropped.
#[derive(Debug)]
pub(crate) struct Flight {
    session: Option<Arc<LiveSession>>,
    id: Option<RequestId>,
    pub token: CancelToken,
    drain: Arc<Drain>,
    /// Its admission slot, once admitted: given back when the flight ends.
    ticket: Option<Ticket>,
}

impl Flight {
    /// A request of no session (2026-07-28): counted in the drain only.
    pub fn alone(drain: &Arc<Drain>, parent: &CancelToken) -> Flight {
        drain.count.fetch_add(1, Ordering::SeqCst);
        Flight { session: None, id: None, token: parent.child(), drain: drain.clone(), ticket: None }
    }

    /// Waits for an admission slot under `key` (at most `wait`, and not past the request's cancellation), and holds
    /// it for the rest of the flight.
    pub async fn admit(&mut self, admission: &Arc<Admission>, key: &Arc<str>, wait: Duration) -> Result<(), Admit> {
        let admitted = tokio::select! {
            biased;
            () = self.token.cancelled() => return Err(Admit::Cancelled),
            admitted = admission.enter(key, wait) => admitted,
        };
        self.ticket = Some(admitted.map_err(Admit::Refused)?);
        Ok(())
    }
}

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    Refused(Refused),
    /// Cancelled (by the agent, DELETE or the drain deadline) while it waited.
    Cancelled,
}

impl Drop for Flight {
    fn drop(&mut self) {
        // A request dropped before its answer (its HTTP connection closed) is cancelled: the service hears it.
        self.token.cancel("the request's stream closed");
        if let (Some(session), Some(id)) = (&self.session, &self.id) {
            lock(&session.flights).remove(id);
        }
        if self.drain.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.drain.idle.notify_waiters();
        }
    }
}

/// The sessions with local state, bounded: when full, the least recently used idle one is dropped.
#[derive(Debug)]
pub(crate) struct SessionTable {
    map: Mutex<HashMap<Arc<str>, Arc<LiveSession>>>,
    clock: AtomicU64,
    cap: usize,
}

impl SessionTable {
    pub fn new(cap: usize) -> SessionTable {
        SessionTable { map: Mutex::default(), clock: AtomicU64::new(0), cap: cap.max(1) }
    }

    /// The session's state, made if new. `None`: the table is full of sessions that are not idle.
    pub fn get_or_make(&self, key: &str, parent: &CancelToken) -> Option<Arc<LiveSession>> {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut map = lock(&self.map);
        if let Some(found) = map.get(key) {
            found.last_used.store(now, Ordering::Relaxed);
            return Some(found.clone());
        }
        if map.len() >= self.cap {
            let victim = map
                .values()
                .filter(|s| s.idle())
                .min_by_key(|s| s.last_used.load(Ordering::Relaxed))
                .map(|s| s.key.clone())?;
            map.remove(&victim);
        }
        let session = LiveSession::new(Arc::from(key), parent);
        session.last_used.store(now, Ordering::Relaxed);
        map.insert(session.key.clone(), session.clone());
        Some(session)
    }

    /// Ends a session here (DELETE): its requests are cancelled.
    pub fn remove(&self, key: &str) {
        if let Some(session) = lock(&self.map).remove(key) {
            session.cancel.cancel("session deleted");
        }
    }

    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// Whether the session has requests in flight here.
    pub fn busy(&self, key: &str) -> bool {
        lock(&self.map).get(key).is_some_and(|s| s.in_flight() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_evicts_the_oldest_idle_session_and_refuses_when_none_is_idle() {
        let root = CancelToken::new();
        let drain = Arc::new(Drain::default());
        let table = SessionTable::new(2);
        let a = table.get_or_make("a", &root).unwrap();
        let _b = table.get_or_make("b", &root).unwrap();
        let flight = a.enter(&drain, &RequestId::Number(1)).unwrap();
        assert_eq!(a.enter(&drain, &RequestId::Number(1)).unwrap_err(), DuplicateId);
        // "b" is idle and older than nothing else idle: it goes.
        let c = table.get_or_make("c", &root).unwrap();
        assert_eq!(table.len(), 2);
        let _get = c.open_get();
        assert!(table.get_or_make("d", &root).is_none(), "a busy and c streaming: nothing to evict");
        a.cancel(&RequestId::Number(1), "agent");
        assert!(flight.token.is_cancelled());
        assert_eq!(drain.count(), 1);
        drop(flight);
        assert_eq!((drain.count(), a.in_flight()), (0, 0));
        assert!(table.get_or_make("d", &root).is_some(), "a is idle now");
        table.remove("d");
        assert_eq!(table.len(), 1);
    }
}
