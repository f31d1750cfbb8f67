//! A connection's outgoing bytes: its own replies and the pub/sub messages other connections publish to it, in one
//! queue so that both reach the wire in the order Redis would write them.
//!
//! Bounded like Redis's `client-output-buffer-limit pubsub 32mb`, for every client: one that stops reading while
//! replies or messages pile up is disconnected at once, instead of growing the double without end. (Redis leaves
//! normal clients unlimited; the double is a test double and stays bounded.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

/// Redis's hard output limit for pub/sub clients.
pub(crate) const DEFAULT_OUTPUT_LIMIT: usize = 32 * 1024 * 1024;

/// Bytes to write no earlier than `due` (the reply latency a fault adds).
#[derive(Debug)]
pub(crate) struct Frame {
    pub bytes: Vec<u8>,
    pub due: Instant,
}

/// The sending side; cheap to clone (the pub/sub registry holds one per subscription).
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Frame>,
    counters: Arc<Counters>,
}

#[derive(Debug)]
struct Counters {
    limit: usize,
    queued: AtomicUsize,
    overflowed: AtomicBool,
    /// Wakes the connection to close it when the limit is passed.
    overflow: Notify,
}

/// The receiving side, read by the connection's writer.
#[derive(Debug)]
pub(crate) struct Inbox {
    rx: mpsc::UnboundedReceiver<Frame>,
    counters: Arc<Counters>,
}

/// A queue holding at most `limit` bytes not yet written.
pub(crate) fn outbox(limit: usize) -> (Outbox, Inbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    let counters = Arc::new(Counters {
        limit,
        queued: AtomicUsize::new(0),
        overflowed: AtomicBool::new(false),
        overflow: Notify::new(),
    });
    (Outbox { tx, counters: counters.clone() }, Inbox { rx, counters })
}

impl Outbox {
    /// Queues `bytes`. Over the limit the frame is dropped and the connection marked for closing.
    pub(crate) fn push(&self, bytes: Vec<u8>, due: Instant) {
        let len = bytes.len();
        if self.counters.queued.fetch_add(len, Ordering::Relaxed) + len > self.counters.limit {
            self.counters.overflowed.store(true, Ordering::Relaxed);
            // A permit is kept if nobody waits yet.
            self.counters.overflow.notify_one();
            return;
        }
        // A closed receiver means the connection is ending: nothing left to write to.
        let _ = self.tx.send(Frame { bytes, due });
    }

    /// Resolves once the limit has been passed.
    pub(crate) async fn overflowed(&self) {
        self.counters.overflow.notified().await;
    }
}

impl Inbox {
    /// The next frame; `None` when every sender is gone or the output limit was passed (close the connection).
    pub(crate) async fn next(&mut self) -> Option<Frame> {
        let frame = self.rx.recv().await?;
        self.took(frame)
    }

    /// A frame already queued, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<Frame> {
        let frame = self.rx.try_recv().ok()?;
        self.took(frame)
    }

    fn took(&self, frame: Frame) -> Option<Frame> {
        if self.counters.overflowed.load(Ordering::Relaxed) {
            return None;
        }
        self.counters.queued.fetch_sub(frame.bytes.len(), Ordering::Relaxed);
        Some(frame)
    }
}
