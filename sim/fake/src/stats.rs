//! What a fake server has done, for the simulator's reports and for tests. Plain atomics: read at any time without
//! stopping the server.
//!
//! Every `tools/call` received ends in exactly one of `completed`, `errored`, `cancelled` or `abandoned`; until it
//! does it is `queued` (waiting for a worker) or `in_progress` (holding one, including while hung).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A point-in-time view of a fake server's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FakeStats {
    /// `tools/call` requests received.
    pub received: u64,
    /// Calls answered with a successful result.
    pub completed: u64,
    /// Calls answered with an error: injected (either kind), unknown tool, invalid arguments.
    pub errored: u64,
    /// Calls aborted by the client's `notifications/cancelled` before they were answered.
    pub cancelled: u64,
    /// Calls aborted because their connection closed before they were answered.
    pub abandoned: u64,
    /// Calls holding a worker right now.
    pub in_progress: u64,
    /// Calls waiting for a worker right now.
    pub queued: u64,
    /// Connections open right now.
    pub connections: u64,
    /// Connections accepted since start.
    pub connections_total: u64,
    /// Incoming frames rejected as malformed (each answered with a JSON-RPC error).
    pub rejected_frames: u64,
    /// `initialize` requests received (legacy handshakes, and modern connections' refused ones).
    pub initializes: u64,
    /// `server/discover` requests received (era probes, and the modern era's pings).
    pub discovers: u64,
    /// Sessions granted (on `initialize` / `server/discover`).
    pub sessions_granted: u64,
    /// `mcpstorm/session/renew` requests answered with a fresh grant.
    pub renewals: u64,
    /// Requests refused with -32001: no live session.
    pub sessions_not_found: u64,
    /// Requests refused with -32003: no credential of an accepted scheme.
    pub auth_mismatches: u64,
    /// Calls refused because their arguments do not fit the tool's current input schema.
    pub schema_rejections: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub received: AtomicU64,
    pub completed: AtomicU64,
    pub errored: AtomicU64,
    pub cancelled: AtomicU64,
    pub abandoned: AtomicU64,
    pub in_progress: AtomicU64,
    pub queued: AtomicU64,
    pub connections: AtomicU64,
    pub connections_total: AtomicU64,
    pub rejected_frames: AtomicU64,
    pub initializes: AtomicU64,
    pub discovers: AtomicU64,
    pub sessions_granted: AtomicU64,
    pub renewals: AtomicU64,
    pub sessions_not_found: AtomicU64,
    pub auth_mismatches: AtomicU64,
    pub schema_rejections: AtomicU64,
}

impl Counters {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn dec(counter: &AtomicU64) {
        counter.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> FakeStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        FakeStats {
            received: get(&self.received),
            completed: get(&self.completed),
            errored: get(&self.errored),
            cancelled: get(&self.cancelled),
            abandoned: get(&self.abandoned),
            in_progress: get(&self.in_progress),
            queued: get(&self.queued),
            connections: get(&self.connections),
            connections_total: get(&self.connections_total),
            rejected_frames: get(&self.rejected_frames),
            initializes: get(&self.initializes),
            discovers: get(&self.discovers),
            sessions_granted: get(&self.sessions_granted),
            renewals: get(&self.renewals),
            sessions_not_found: get(&self.sessions_not_found),
            auth_mismatches: get(&self.auth_mismatches),
            schema_rejections: get(&self.schema_rejections),
        }
    }
}

/// Which gauge a call is counted in. Dropping the ticket (however the call ends, including an abort) takes it out.
#[derive(Debug)]
pub(crate) struct Ticket {
    counters: Arc<Counters>,
    stage: Stage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Idle,
    Queued,
    Running,
}

impl Ticket {
    pub fn new(counters: Arc<Counters>) -> Self {
        Ticket { counters, stage: Stage::Idle }
    }

    pub fn queued(&mut self) {
        self.enter(Stage::Queued);
    }

    pub fn running(&mut self) {
        self.enter(Stage::Running);
    }

    fn enter(&mut self, stage: Stage) {
        self.leave();
        self.stage = stage;
        if let Some(gauge) = self.gauge() {
            Counters::bump(gauge);
        }
    }

    fn leave(&mut self) {
        if let Some(gauge) = self.gauge() {
            Counters::dec(gauge);
        }
        self.stage = Stage::Idle;
    }

    fn gauge(&self) -> Option<&AtomicU64> {
        match self.stage {
            Stage::Idle => None,
            Stage::Queued => Some(&self.counters.queued),
            Stage::Running => Some(&self.counters.in_progress),
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.leave();
    }
}
