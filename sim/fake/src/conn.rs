//! One client connection.
//!
//! ```text
//! source ──► reader ──► request ──► own task (call: worker, latency, progress) ─┐
//!                   └─► notifications/cancelled ──► abort that task             ├─► bounded outbox ──► writer ──► sink
//!                   └─► malformed frame ──► JSON-RPC error ─────────────────────┘
//! ```
//!
//! Every request runs on its own task, so answers leave in completion order, not arrival order. A task claims its
//! request's slot in the in-flight table before it answers; a cancellation removes the slot and aborts the task, so
//! exactly one of them wins and a cancelled request is never answered. When the connection ends, every task still
//! in the table is aborted (dropping its worker and gauge), so nothing outlives it.
//!
//! The end of the client's bytes (EOF) is not yet the end: a client may half-close, shutting its write side after its
//! last request and still reading, as HTTP/1.1 clients and JSON-RPC peers piping a batch do. So after EOF every
//! request already read is still answered, and the connection ends when the last is (or when the writer fails: the
//! client has gone entirely and nothing can reach it). A read error ends it at once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcpstorm_core::jsonrpc::{DecodeError, ErrorCode, ErrorObject, Message, Notification, Request, RequestId};
use mcpstorm_core::mcp::{CancelledParams, method};
use mcpstorm_core::session::DISCOVER;
use mcpstorm_core::session::RENEW;
use mcpstorm_core::{FrameError, MessageSink, MessageSource, line_transport};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, mpsc};
use tokio::task::{AbortHandle, JoinHandle};

use crate::call::{self, CallEnd, Job};
use crate::gate;
use crate::methods::{self, ConnEra, Route};
use crate::shared::Shared;
use crate::stats::Counters;

/// Answers queued for the writer. When full, request tasks (and the reader, for frame errors) wait: a client that
/// stops reading slows the server down instead of growing its memory.
const OUTBOX: usize = 256;
/// Most messages written between two flushes.
const MAX_BATCH: usize = 128;
/// How long answers already queued may take to drain after the client closed its side.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

struct Conn {
    out: mpsc::Sender<Message>,
    inflight: Mutex<BTreeMap<RequestId, Slot>>,
    /// Signalled when a request leaves the table, for [`Conn::drained`].
    left: Notify,
}

struct Slot {
    /// `None` only between the spawn and the line after it, both on the reader.
    task: Option<AbortHandle>,
    /// A `tools/call` (counted in the stats), not a ping or list.
    call: bool,
}

impl Conn {
    fn inflight(&self) -> MutexGuard<'_, BTreeMap<RequestId, Slot>> {
        // Held for single map operations only; a panic inside one cannot tear the map.
        self.inflight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims the right to answer `id`. False when the request was cancelled (or its connection closed).
    fn claim(&self, id: &RequestId) -> bool {
        let claimed = self.inflight().remove(id).is_some();
        // `notify_one` keeps a permit when no one waits yet, so `drained` cannot miss the last departure.
        self.left.notify_one();
        claimed
    }

    /// Resolves once no request is in flight.
    async fn drained(&self) {
        while !self.inflight().is_empty() {
            self.left.notified().await;
        }
    }
}

/// Aborts every request still in flight when the connection ends, however it ends (including the serving future
/// being dropped).
struct CloseGuard {
    conn: Arc<Conn>,
    shared: Arc<Shared>,
    registered: u64,
}

impl Drop for CloseGuard {
    fn drop(&mut self) {
        self.shared.conns.remove(self.registered);
        let slots = std::mem::take(&mut *self.conn.inflight());
        let mut abandoned = 0;
        for slot in slots.into_values() {
            if let Some(task) = slot.task {
                task.abort();
            }
            abandoned += u64::from(slot.call);
        }
        Counters::add(&self.shared.counters.abandoned, abandoned);
        Counters::dec(&self.shared.counters.connections);
    }
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(super) async fn serve<R, W>(shared: Arc<Shared>, max_frame: usize, reader: R, writer: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sink, mut source) = line_transport(reader, writer, max_frame);
    let (out, outbox) = mpsc::channel(OUTBOX);
    let mut writer = AbortOnDrop(tokio::spawn(write_loop(sink, outbox)));
    let conn = Arc::new(Conn { out, inflight: Mutex::default(), left: Notify::new() });
    Counters::bump(&shared.counters.connections);
    Counters::bump(&shared.counters.connections_total);
    let registered = shared.conns.register(conn.out.clone());
    let guard = CloseGuard { conn: conn.clone(), shared: shared.clone(), registered };
    // Only the reader decides and reads the era, so it lives here.
    let mut era = ConnEra::Undecided;
    let mut broken = false;
    while let Some(item) = source.recv().await {
        match item {
            Ok(Message::Request(request)) => on_request(&shared, &conn, &mut era, request).await,
            Ok(Message::Notification(note)) => on_notification(&shared, &conn, note),
            // We never send requests, so a response answers nothing of ours: ignore it, as servers do.
            Ok(Message::Response(_)) => {}
            Err(FrameError::Io(e)) => {
                tracing::debug!(server = %shared.config.name, error = %e, "fake server connection failed");
                broken = true;
                break;
            }
            Err(e) => {
                Counters::bump(&shared.counters.rejected_frames);
                let _ = conn.out.send(frame_error_reply(&e)).await;
            }
        }
    }
    // EOF: the client may only have half-closed. It cannot cancel any more, and a client that closed entirely looks
    // the same until a write fails, so its calls run to their end and hold their workers meanwhile, as on a real
    // server (MCP: a disconnection is not a cancellation).
    let mut writer_done = false;
    if !broken && !conn.inflight().is_empty() {
        tokio::select! {
            biased;
            _ = &mut writer.0 => writer_done = true,
            () = conn.drained() => {}
        }
    }
    drop(guard);
    // The writer ends once every sender is gone: ours now, the aborted tasks' as the runtime drops them.
    drop(conn);
    if !writer_done {
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, &mut writer.0).await;
    }
}

/// The JSON-RPC answer to a frame that is not a valid message: -32700 for unparsable bytes, -32600 for anything
/// else, with the request's id when it could be read.
fn frame_error_reply(e: &FrameError) -> Message {
    let (id, code) = match e {
        FrameError::NotUtf8 | FrameError::Decode(DecodeError::NotJson(_)) => (None, ErrorCode::PARSE_ERROR),
        FrameError::Decode(d) => (d.request_id().cloned(), ErrorCode::INVALID_REQUEST),
        FrameError::TooLarge { .. } | FrameError::Io(_) | FrameError::Exchange { .. } => {
            (None, ErrorCode::INVALID_REQUEST)
        }
    };
    Message::error(id, ErrorObject::new(code, e.to_string()))
}

async fn on_request(shared: &Arc<Shared>, conn: &Arc<Conn>, era: &mut ConnEra, request: Request) {
    let Request { id, method, params } = request;
    let is_call = method == method::TOOLS_CALL;
    if is_call {
        Counters::bump(&shared.counters.received);
    }
    match method.as_str() {
        method::INITIALIZE => Counters::bump(&shared.counters.initializes),
        DISCOVER => Counters::bump(&shared.counters.discovers),
        _ => {}
    }
    let mut route = methods::route(shared, era, &method, params.as_ref());
    if matches!(route, Route::Serve { .. })
        && let Err(refusal) = gate::check(shared, &method, params.as_ref())
    {
        route = Route::Refuse(refusal);
    }
    if matches!(route, Route::Ignore) {
        // Never answered, never in the table: a later cancellation of it is ignored as unknown.
        return;
    }
    // Modern results carry `resultType` and the `serverInfo` stamp; the cacheable ones `ttlMs` and `cacheScope`.
    let modern = matches!(route, Route::Serve { modern: true }).then_some(method == method::TOOLS_LIST);
    let refusal = {
        let inflight = conn.inflight();
        if inflight.contains_key(&id) {
            Some(ErrorObject::new(ErrorCode::INVALID_REQUEST, format!("request id {id} is already in flight")))
        } else if inflight.len() >= shared.config.max_in_flight_per_connection {
            let max = shared.config.max_in_flight_per_connection;
            let msg = format!("server busy: {max} requests already in flight on this connection");
            Some(ErrorObject::new(ErrorCode(-32000), msg))
        } else {
            None
        }
    };
    if let Some(error) = refusal {
        if is_call {
            Counters::bump(&shared.counters.errored);
        }
        let _ = conn.out.send(Message::error(Some(id), error)).await;
        return;
    }
    let job = match (route, method.as_str()) {
        // An era refusal (no envelope, a version we do not serve, the other era's lifecycle) is an answer like
        // any other: it waits out a hang and can be cancelled.
        (Route::Refuse(error), _) => Job::Reply(Err(error), is_call.then_some(CallEnd::Errored)),
        (Route::Ignore, _) => return,
        (Route::Serve { .. }, method) => match method {
            method::TOOLS_CALL => call::prepare(shared, params),
            method::INITIALIZE => Job::Reply(methods::initialize(shared, params.as_ref()), None),
            DISCOVER => Job::Reply(methods::discover(shared), None),
            RENEW if gate::renews(shared, RENEW) => Job::Reply(gate::renew(shared, params.as_ref()), None),
            method::PING => Job::Reply(Ok(json!({})), None),
            method::TOOLS_LIST => Job::Reply(methods::list_tools(shared, params.as_ref()), None),
            other => Job::Reply(
                Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {other}"))),
                None,
            ),
        },
    };
    // The slot exists before the task can look for it; the abort handle is filled in right after the spawn, before
    // the reader reads (and could act on) the next message.
    conn.inflight().insert(id.clone(), Slot { task: None, call: is_call });
    let task = tokio::spawn(answer(shared.clone(), conn.clone(), id.clone(), job, modern));
    if let Some(slot) = conn.inflight().get_mut(&id) {
        slot.task = Some(task.abort_handle());
    }
}

/// Runs one request and sends its answer, unless it was cancelled first. While the server is hung the answer waits.
/// `modern` is `Some(cacheable)` for a modern-era request: its result gets the modern stamps.
async fn answer(shared: Arc<Shared>, conn: Arc<Conn>, id: RequestId, job: Job, modern: Option<bool>) {
    let (result, outcome, held) = match job {
        Job::Reply(result, outcome) => (result, outcome, None),
        Job::Call(call) => {
            let (result, outcome, held) = call.run(&shared, &conn.out).await;
            (result, Some(outcome), Some(held))
        }
    };
    shared.unhung().await;
    if !conn.claim(&id) {
        return;
    }
    match outcome {
        Some(CallEnd::Completed) => Counters::bump(&shared.counters.completed),
        Some(CallEnd::Errored) => Counters::bump(&shared.counters.errored),
        None => {}
    }
    let reply = match result {
        Ok(mut value) => {
            if let Some(cacheable) = modern {
                methods::stamp_modern(&shared, &mut value, cacheable);
            }
            Message::result(id, value)
        }
        Err(error) => Message::error(Some(id), error),
    };
    let _ = conn.out.send(reply).await;
    // The worker is returned only once the answer is queued.
    drop(held);
}

fn on_notification(shared: &Shared, conn: &Conn, note: Notification) {
    // `notifications/initialized` and anything else need nothing from us.
    if note.method != method::CANCELLED {
        return;
    }
    // The spec: a cancellation that is malformed, or names a request already answered or unknown, is ignored.
    let Some(params) = note.params.and_then(|p| serde_json::from_value::<CancelledParams>(p).ok()) else {
        return;
    };
    let Some(slot) = conn.inflight().remove(&params.request_id) else {
        return;
    };
    if let Some(task) = slot.task {
        task.abort();
    }
    if slot.call {
        Counters::bump(&shared.counters.cancelled);
    }
}

/// The only writer: flushes once per burst, so many concurrent answers cost one syscall.
async fn write_loop<S: MessageSink>(mut sink: S, mut outbox: mpsc::Receiver<Message>) {
    while let Some(first) = outbox.recv().await {
        let mut next = Some(first);
        let mut written = 0;
        while let Some(msg) = next.take() {
            if sink.feed(&msg).await.is_err() {
                return;
            }
            written += 1;
            if written < MAX_BATCH {
                next = outbox.try_recv().ok();
            }
        }
        if sink.flush().await.is_err() {
            return;
        }
    }
    sink.close().await;
}
