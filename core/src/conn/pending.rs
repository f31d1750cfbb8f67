//! The pending table of one connection: request id → the caller waiting for it.
//!
//! Per connection, never global (a table shared across connections can deliver session A's response to session B).
//! Ids are this connection's own increasing integers and are never reused, so a late response can only find its own
//! (removed) entry, never another caller's. A `BTreeMap` so failing everything happens in id order: deterministic
//! wake-up order under a simulator.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};

use super::asked::AskSink;
use crate::error::{CallError, TransportError};
use crate::jsonrpc::Payload;
use crate::mcp::{CallToolResult, ProgressParams};

pub(crate) type Reply = Result<Answer, CallError>;

/// A response's result as its caller gets it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// Still raw: the caller parses it into the shape it expects.
    Raw(Payload),
    /// A `tools/call` result the reader parsed as it read the frame (see `mcp/call_frame.rs`), for an entry that is
    /// [`Entry::call`].
    Call(CallToolResult),
}

impl Answer {
    /// The result as raw text. A parsed one (which only a `tools/call` entry gets) is written back to text.
    pub fn into_payload(self) -> Result<Payload, CallError> {
        match self {
            Answer::Raw(payload) => Ok(payload),
            Answer::Call(result) => {
                Payload::serialize(&result).map_err(|e| CallError::MalformedResponse(e.to_string()))
            }
        }
    }
}

pub(crate) struct Entry {
    pub tx: oneshot::Sender<Reply>,
    /// A `tools/call` whose caller takes its result as a [`CallToolResult`]: the reader may parse it as it reads.
    pub call: bool,
    /// The writer has put the request on the wire; abandoning it now means telling the server.
    pub written: bool,
    pub progress: Option<mpsc::Sender<ProgressParams>>,
    /// Where the call's log messages go, when it asked for them.
    pub logs: Option<mpsc::Sender<Value>>,
    /// Where the server's requests during the call go, when the caller relays them.
    pub asks: Option<AskSink>,
    /// Shared with the waiting caller.
    pub signal: Arc<ProgressSignal>,
}

/// What the reader tells a waiting caller about its call's progress. One allocation per call for both halves.
#[derive(Default)]
pub(crate) struct ProgressSignal {
    /// Nanoseconds (connection clock) of the latest progress notification, 0 if none: the idle timer reads it.
    pub last: AtomicU64,
    /// Wakes the waiting caller on progress, so the idle phase starts from the first progress event.
    pub notify: Notify,
}

#[derive(Default)]
struct Inner {
    map: BTreeMap<i64, Entry>,
    /// Set once the connection failed; no new entry is accepted after it.
    closed: Option<TransportError>,
}

impl Inner {
    /// The call a server message belongs to: request `id`'s when the transport knows it, else the only call that
    /// wants such messages (two that do: neither may get another's).
    fn attributed<'a, T>(&'a self, id: Option<i64>, wants: impl Fn(&'a Entry) -> Option<&'a T>) -> Option<&'a T> {
        match id {
            Some(id) => self.map.get(&id).and_then(wants),
            None => {
                let mut wanting = self.map.values().filter_map(wants);
                match (wanting.next(), wanting.next()) {
                    (Some(one), None) => Some(one),
                    _ => None,
                }
            }
        }
    }
}

#[derive(Default)]
pub(crate) struct PendingTable {
    inner: Mutex<Inner>,
}

/// What happened to a response.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    Delivered,
    /// No entry: its caller already gave up (or the id was never ours).
    NotPending,
}

impl PendingTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Nothing in this module panics while holding the lock, so a poisoned lock still holds a valid table.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn register(&self, id: i64, entry: Entry) -> Result<(), TransportError> {
        let mut inner = self.lock();
        if let Some(e) = &inner.closed {
            return Err(e.clone());
        }
        inner.map.insert(id, entry);
        Ok(())
    }

    /// Whether `id` is a pending `tools/call` whose caller takes a [`CallToolResult`].
    pub fn wants_call_result(&self, id: i64) -> bool {
        self.lock().map.get(&id).is_some_and(|e| e.call)
    }

    /// Called by the writer just before writing: false means the caller already left, so skip the request.
    pub fn mark_written(&self, id: i64) -> bool {
        match self.lock().map.get_mut(&id) {
            Some(e) => {
                e.written = true;
                true
            }
            None => false,
        }
    }

    pub fn complete(&self, id: i64, reply: Reply) -> Delivery {
        let entry = self.lock().map.remove(&id);
        match entry {
            // The receiver may have been dropped in the instant since; the entry is gone either way.
            Some(e) => {
                let _ = e.tx.send(reply);
                Delivery::Delivered
            }
            None => Delivery::NotPending,
        }
    }

    /// Removes an abandoned call; returns whether its request had reached the wire.
    pub fn remove(&self, id: i64) -> Option<bool> {
        self.lock().map.remove(&id).map(|e| e.written)
    }

    /// Records progress for `id`; false if no such call is pending.
    pub fn progress(&self, id: i64, at_nanos: u64, params: ProgressParams) -> bool {
        let inner = self.lock();
        let Some(e) = inner.map.get(&id) else {
            return false;
        };
        e.signal.last.store(at_nanos.max(1), Ordering::Relaxed);
        e.signal.notify.notify_one();
        if let Some(tx) = &e.progress {
            // Lossy on purpose: a flood of progress must not grow memory, and only the latest matters.
            let _ = tx.try_send(params);
        }
        true
    }

    /// Hands a `notifications/message`'s params to the call it belongs to: `id` when the transport knows it (it
    /// came on that request's SSE stream), else the one pending call that asked for log messages. With several
    /// (a stdio upstream, whose one stream says nothing about which request a message is for) the message is not
    /// handed to any: given to the wrong call it would reach another agent. False when no call took it.
    pub fn log(&self, id: Option<i64>, params: Value) -> bool {
        let inner = self.lock();
        let tx = inner.attributed(id, |e| e.logs.as_ref());
        // Lossy, as progress is: the reader never waits for a consumer.
        tx.is_some_and(|tx| tx.try_send(params).is_ok())
    }

    /// Where a server request that came on request `id`'s stream goes (`None`: a transport that cannot tell, such as
    /// stdio: the one call that relays requests, if only one does).
    pub fn asks(&self, id: Option<i64>) -> Option<AskSink> {
        self.lock().attributed(id, |e| e.asks.as_ref()).cloned()
    }

    /// Fails every pending call at once with `err` and refuses new ones. Returns false if already closed.
    pub fn fail_all(&self, err: &TransportError) -> bool {
        let drained = {
            let mut inner = self.lock();
            if inner.closed.is_some() {
                return false;
            }
            inner.closed = Some(err.clone());
            std::mem::take(&mut inner.map)
        };
        for (_, e) in drained {
            let _ = e.tx.send(Err(CallError::Transport(err.clone())));
        }
        true
    }

    pub fn closed(&self) -> Option<TransportError> {
        self.lock().closed.clone()
    }

    pub fn len(&self) -> usize {
        self.lock().map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> (Entry, oneshot::Receiver<Reply>) {
        let (tx, rx) = oneshot::channel();
        (Entry { tx, call: false, written: false, progress: None, logs: None, asks: None, signal: Arc::default() }, rx)
    }

    #[test]
    fn a_log_message_goes_to_its_request_or_to_the_one_call_that_asked() {
        let t = PendingTable::default();
        let (quiet, _) = entry();
        t.register(1, quiet).unwrap();
        assert!(!t.log(None, serde_json::json!("nobody asked")));
        let asking = |id: i64| {
            let (mut e, _) = entry();
            let (tx, rx) = mpsc::channel(4);
            e.logs = Some(tx);
            t.register(id, e).unwrap();
            rx
        };
        let mut two = asking(2);
        assert!(t.log(None, serde_json::json!("one asked")));
        assert_eq!(two.try_recv().unwrap(), "one asked");
        let mut three = asking(3);
        assert!(!t.log(None, serde_json::json!("whose?")), "two calls asked: neither may get another's message");
        assert!(t.log(Some(3), serde_json::json!("on 3's stream")));
        assert_eq!(three.try_recv().unwrap(), "on 3's stream");
        assert!(!t.log(Some(1), serde_json::json!("1 did not ask")));
        assert!(two.try_recv().is_err());
    }

    #[test]
    fn complete_delivers_once_then_reports_not_pending() {
        let t = PendingTable::default();
        let (e, mut rx) = entry();
        t.register(1, e).unwrap();
        let null = || Answer::Raw(Payload::from(serde_json::Value::Null));
        assert_eq!(t.complete(1, Ok(null())), Delivery::Delivered);
        assert_eq!(rx.try_recv().unwrap(), Ok(null()));
        assert_eq!(t.complete(1, Ok(null())), Delivery::NotPending);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn removed_call_is_skipped_by_writer_and_reports_written() {
        let t = PendingTable::default();
        let (e, _rx) = entry();
        t.register(5, e).unwrap();
        assert_eq!(t.remove(5), Some(false));
        assert!(!t.mark_written(5));
        let (e, _rx2) = entry();
        t.register(6, e).unwrap();
        assert!(t.mark_written(6));
        assert_eq!(t.remove(6), Some(true));
    }

    #[test]
    fn fail_all_fails_everyone_and_refuses_new_entries() {
        let t = PendingTable::default();
        let mut rxs = Vec::new();
        for id in 0..3 {
            let (e, rx) = entry();
            t.register(id, e).unwrap();
            rxs.push(rx);
        }
        assert!(t.fail_all(&TransportError::Closed));
        assert!(!t.fail_all(&TransportError::Shutdown));
        for mut rx in rxs {
            assert_eq!(rx.try_recv().unwrap(), Err(CallError::Transport(TransportError::Closed)));
        }
        let (e, _rx) = entry();
        assert_eq!(t.register(9, e), Err(TransportError::Closed));
        assert_eq!(t.len(), 0);
    }
}
