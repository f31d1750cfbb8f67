//! Server-Sent Events, server side (the front's and the fake servers'): the encoding (written by hand: an event is three short lines, and no SSE crate
//! lets us keep the bounded, resumable log below), and one stream's log.
//!
//! A [`StreamLog`] is the record of one SSE stream: every event gets the id `<stream>-<seq>` and is kept in a ring of
//! the last [`RING`] events, so a 2025-11-25 client whose connection was cut can resume with `Last-Event-ID` and get
//! what followed. The stream's current reader (an HTTP response body) is fed through a bounded channel; a reader that
//! stops reading slows the request's task down (the channel fills), as a full NDJSON outbox does, and a reader that
//! goes away only detaches: the log carries on for a later resumption.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::jsonrpc::Message;
use bytes::Bytes;
use tokio::sync::mpsc;

/// Events kept per stream for resumption, and the depth of a reader's queue. A call's progress beyond this many
/// events back is gone for a resuming client; its response, the last event, never is.
pub const RING: usize = 64;

/// What a reader gets: an event's bytes, or the order to cut the connection (the stream-reset fault).
pub type Chunk = Result<Bytes, StreamCut>;

/// The stream is cut here: the response body fails, and hyper drops the connection mid-stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stream reset by the fake server (fault injection)")]
pub struct StreamCut;

/// One SSE event: `id`, then the message as one `data` line (JSON has no raw newlines). An empty `data` is the
/// priming event a 2025-11-25 server sends first, so the client holds an id to resume from.
pub fn event(id: &str, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(id.len() + data.len() + 24);
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b"\nevent: message\ndata: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// A comment line: ignored by every SSE client, it only proves the connection is alive.
pub fn keep_alive() -> Bytes {
    Bytes::from_static(b":\n\n")
}

/// The id of a stream's event: `<stream>-<seq>`.
pub fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// Reads an event id back into (stream, seq).
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

#[derive(Debug)]
pub struct StreamLog {
    pub id: u64,
    inner: Mutex<LogInner>,
}

#[derive(Debug)]
struct LogInner {
    /// (seq, encoded event), oldest first, at most [`RING`].
    ring: VecDeque<(u64, Bytes)>,
    next: u64,
    /// The last event (the response) is logged, or the request ended without one: nothing more will come.
    done: bool,
    /// The current reader's queue.
    live: Option<mpsc::Sender<Chunk>>,
}

impl StreamLog {
    pub fn new(id: u64) -> Arc<StreamLog> {
        let inner = LogInner { ring: VecDeque::new(), next: 0, done: false, live: None };
        Arc::new(StreamLog { id, inner: Mutex::new(inner) })
    }

    fn lock(&self) -> MutexGuard<'_, LogInner> {
        // Plain data, consistent after any panic.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new reader: the events after seq `after` (all kept, for `None`), then the live ones. A previous reader is
    /// detached (its body ends). A reader of a finished stream gets the replay and the end.
    pub fn attach(&self, after: Option<u64>) -> mpsc::Receiver<Chunk> {
        let (tx, rx) = mpsc::channel(RING + 1);
        let mut inner = self.lock();
        for (seq, bytes) in &inner.ring {
            if after.is_none_or(|a| *seq > a) {
                // The channel holds a whole ring: this cannot be full.
                let _ = tx.try_send(Ok(bytes.clone()));
            }
        }
        inner.live = (!inner.done).then_some(tx);
        rx
    }

    /// Logs `data` as the next event and hands it to the reader, waiting while the reader's queue is full. `last`
    /// ends the stream; with `cut`, the reader gets the cut instead of this event (which stays logged for a resume).
    pub async fn push(&self, data: &[u8], last: bool, cut: bool) {
        let (bytes, live) = {
            let mut inner = self.lock();
            let seq = inner.next;
            inner.next += 1;
            let bytes = event(&event_id(self.id, seq), data);
            if inner.ring.len() == RING {
                inner.ring.pop_front();
            }
            inner.ring.push_back((seq, bytes.clone()));
            inner.done |= last;
            let live = if last || cut { inner.live.take() } else { inner.live.clone() };
            (bytes, live)
        };
        let Some(live) = live else { return };
        let chunk = if cut { Err(StreamCut) } else { Ok(bytes) };
        if live.send(chunk).await.is_err() {
            // The reader went away: detach it (unless another already replaced it).
            let mut inner = self.lock();
            if inner.live.as_ref().is_some_and(|l| l.same_channel(&live)) {
                inner.live = None;
            }
        }
    }

    /// Logs a message (see [`StreamLog::push`]).
    pub async fn push_message(&self, msg: &Message, last: bool, cut: bool) {
        self.push(&msg.encode(), last, cut).await;
    }

    /// The request ended without an answer (cancelled): readers get the end of the stream.
    pub fn finish(&self) {
        let mut inner = self.lock();
        inner.done = true;
        inner.live = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn drain(mut rx: mpsc::Receiver<Chunk>) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(chunk) = rx.recv().await {
            out.push(match chunk {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(StreamCut) => "CUT".to_owned(),
            });
        }
        out
    }

    #[test]
    fn encodes_events_and_ids() {
        assert_eq!(&event("3-0", b"")[..], b"id: 3-0\nevent: message\ndata: \n\n");
        assert_eq!(&event("3-1", b"{}")[..], b"id: 3-1\nevent: message\ndata: {}\n\n");
        assert_eq!(parse_event_id(&event_id(12, 7)), Some((12, 7)));
        for bad in ["", "12", "a-1", "1-b", "-1", "1-"] {
            assert_eq!(parse_event_id(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_cut_reader_resumes_after_its_last_event_and_the_ring_is_bounded() {
        let log = StreamLog::new(5);
        let first = log.attach(None);
        log.push(b"", false, false).await;
        log.push(b"a", false, false).await;
        log.push(b"z", true, true).await;
        assert_eq!(
            drain(first).await,
            ["id: 5-0\nevent: message\ndata: \n\n", "id: 5-1\nevent: message\ndata: a\n\n", "CUT"]
        );
        // Resumed after 5-1: the response alone, then the end.
        assert_eq!(drain(log.attach(Some(1))).await, ["id: 5-2\nevent: message\ndata: z\n\n"]);
        let long = StreamLog::new(1);
        for _ in 0..RING + 10 {
            long.push(b"p", false, false).await;
        }
        long.finish();
        let replay = drain(long.attach(None)).await;
        assert_eq!(replay.len(), RING);
        assert!(replay[0].starts_with("id: 1-10\n"), "{}", replay[0]);
    }
}
