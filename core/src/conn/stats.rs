use std::sync::atomic::{AtomicU64, Ordering};

use crate::observe::Event;

/// Counters a connection keeps about itself; read with `Connection::stats`. What the observer also hears of is
/// counted from its event ([`Counters::count`], called by `Shared::emit`), so the two cannot disagree; the rest is
/// bumped where it happens.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub sent: AtomicU64,
    pub skipped: AtomicU64,
    pub received: AtomicU64,
    pub late_responses: AtomicU64,
    pub unknown_responses: AtomicU64,
    pub rejected_frames: AtomicU64,
    pub notifications_dropped: AtomicU64,
    pub cancels_sent: AtomicU64,
    pub cancels_dropped: AtomicU64,
    pub stray_progress: AtomicU64,
    pub server_requests: AtomicU64,
}

impl Counters {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts the occurrence `event` reports, if a connection counts it.
    pub fn count(&self, event: &Event<'_>) {
        let counter = match event {
            Event::FrameRejected { .. } => &self.rejected_frames,
            Event::UnknownResponseDropped { .. } => &self.unknown_responses,
            Event::LateResponseDropped { .. } => &self.late_responses,
            Event::NotificationDropped { .. } => &self.notifications_dropped,
            Event::CancelSent { .. } => &self.cancels_sent,
            Event::ConnectionOpened { .. }
            | Event::ConnectionClosed { .. }
            | Event::RequestFinished { .. }
            | Event::Session { .. }
            | Event::Breaker { .. }
            | Event::Degraded { .. }
            | Event::RouteDecided { .. }
            | Event::SchemaRefetched { .. }
            | Event::HttpPool { .. }
            | Event::HttpResponse { .. }
            | Event::HandshakeFailed { .. }
            | Event::Ejection { .. } => return,
        };
        Self::bump(counter);
    }

    pub fn snapshot(&self, pending: usize, in_flight: usize) -> ConnectionStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ConnectionStats {
            sent: get(&self.sent),
            skipped: get(&self.skipped),
            received: get(&self.received),
            late_responses: get(&self.late_responses),
            unknown_responses: get(&self.unknown_responses),
            rejected_frames: get(&self.rejected_frames),
            notifications_dropped: get(&self.notifications_dropped),
            cancels_sent: get(&self.cancels_sent),
            cancels_dropped: get(&self.cancels_dropped),
            stray_progress: get(&self.stray_progress),
            server_requests: get(&self.server_requests),
            pending,
            in_flight,
        }
    }
}

/// A point-in-time view of one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Messages written.
    pub sent: u64,
    /// Requests not written because their caller had already left.
    pub skipped: u64,
    /// Frames received (including rejected ones).
    pub received: u64,
    /// Responses for calls that were cancelled or timed out: dropped.
    pub late_responses: u64,
    /// Responses naming an id this connection never issued: dropped.
    pub unknown_responses: u64,
    pub rejected_frames: u64,
    pub notifications_dropped: u64,
    pub cancels_sent: u64,
    /// Cancellations not sent because the priority lane was full (best effort, as the spec allows).
    pub cancels_dropped: u64,
    /// Progress for calls no longer pending (servers keep sending after a cancel).
    pub stray_progress: u64,
    /// Requests the server sent us.
    pub server_requests: u64,
    pub pending: usize,
    /// Connection permits held (queued to write, written, or awaiting a response).
    pub in_flight: usize,
}
