//! One client connection.
//!
//! ```text
//! source ──► reader ──► request ──► own task (call: worker, latency, progress) ─┐
//!                   └─► notifications/cancelled ──► abort that task             ├─► bounded outbox ──► writer ──► sink
//!                   └─► malformed frame ──► JSON-RPC error ─────────────────────┘
//! ```
//!
//! Every request runs on its own task (see `dispatch`), so answers leave in completion order, not arrival order. The
//! connection is the scope of its in-flight table (`inflight`): when it ends, every task still in the table is
//! aborted (dropping its worker and gauge), so nothing outlives it.
//!
//! The end of the client's bytes (EOF) is not yet the end: a client may half-close, shutting its write side after its
//! last request and still reading, as HTTP/1.1 clients and JSON-RPC peers piping a batch do. So after EOF every
//! request already read is still answered, and the connection ends when the last is (or when the writer fails: the
//! client has gone entirely and nothing can reach it). A read error ends it at once.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::MessageSink;
use mcpstorm_core::jsonrpc::{DecodeError, ErrorCode, ErrorObject, Message, RequestId};
use mcpstorm_core::transport::{Burst, FrameError, Incoming, decode_frame_with, line_transport};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::call_frame::{self, CallParams};
use crate::dispatch;
use crate::inflight::InFlight;
use crate::methods::ConnEra;
use crate::shared::Shared;
use crate::stats::Counters;

/// Answers queued for the writer. When full, request tasks (and the reader, for frame errors) wait: a client that
/// stops reading slows the server down instead of growing its memory.
const OUTBOX: usize = 256;
/// How long answers already queued may take to drain after the client closed its side.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Aborts every request still in flight when the connection ends, however it ends (including the serving future
/// being dropped).
struct CloseGuard {
    table: Arc<InFlight>,
    shared: Arc<Shared>,
    registered: u64,
}

impl Drop for CloseGuard {
    fn drop(&mut self) {
        self.shared.conns.remove(self.registered);
        self.table.abandon_all(&self.shared.counters);
        Counters::dec(&self.shared.counters.connections);
    }
}

pub(crate) struct AbortOnDrop(pub JoinHandle<()>);

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
    let table = Arc::new(InFlight::new(shared.config.max_in_flight_per_connection));
    Counters::bump(&shared.counters.connections);
    Counters::bump(&shared.counters.connections_total);
    let registered = shared.conns.register(out.clone());
    let guard = CloseGuard { table: table.clone(), shared: shared.clone(), registered };
    // Only the reader decides and reads the era, so it lives here.
    let mut era = ConnEra::Undecided;
    let mut broken = false;
    // One frame buffer for the connection's life (two, taking turns with the source's).
    let mut frame = Vec::new();
    while let Some(next) = source.next_frame_into(&mut frame).await {
        let item = next.and_then(|()| read(&frame));
        match item {
            Ok(Incoming::Quick((id, params))) => {
                let Some(prepared) = dispatch::prepare_call(&shared, &mut era, id, params) else { continue };
                start(&shared, &table, prepared, &out).await;
            }
            Ok(Incoming::Message(Message::Request(request))) => {
                let Some(prepared) = dispatch::prepare(&shared, &mut era, request) else { continue };
                start(&shared, &table, prepared, &out).await;
            }
            Ok(Incoming::Message(Message::Notification(note))) => dispatch::on_notification(&shared, &table, note),
            // We never send requests, so a response answers nothing of ours: ignore it, as servers do.
            Ok(Incoming::Message(Message::Response(_))) => {}
            Err(FrameError::Io(e)) => {
                tracing::debug!(server = %shared.config.name, error = %e, "fake server connection failed");
                broken = true;
                break;
            }
            Err(e) => {
                Counters::bump(&shared.counters.rejected_frames);
                let _ = out.send(frame_error_reply(&e)).await;
            }
        }
    }
    // EOF: the client may only have half-closed. It cannot cancel any more, and a client that closed entirely looks
    // the same until a write fails, so its calls run to their end and hold their workers meanwhile, as on a real
    // server (MCP: a disconnection is not a cancellation).
    let mut writer_done = false;
    if !broken && !table.is_empty() {
        tokio::select! {
            biased;
            _ = &mut writer.0 => writer_done = true,
            () = table.drained() => {}
        }
    }
    drop(guard);
    // The writer ends once every sender is gone: ours now, the aborted tasks' as the runtime drops them.
    drop(out);
    if !writer_done {
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, &mut writer.0).await;
    }
}

/// Plain `tools/call` frames, nearly all of a busy server's, are read without building the envelope they carry;
/// every other frame as [`LineSource::recv`](mcpstorm_core::MessageSource::recv) reads it. The rule is the core's
/// own (`decode_frame_with`), so the client's quick reader and this one cannot drift apart.
fn read(frame: &[u8]) -> Result<Incoming<(RequestId, CallParams<'_>)>, FrameError> {
    decode_frame_with(frame, call_frame::read)
}

/// Answers a prepared request on its own task, or at once with the refusal of a full or duplicate slot.
async fn start(
    shared: &Arc<Shared>,
    table: &Arc<InFlight>,
    prepared: dispatch::Prepared<'_>,
    out: &mpsc::Sender<Message>,
) {
    if let Err(refusal) = dispatch::spawn(shared, table, prepared, out.clone()) {
        let _ = out.send(refusal).await;
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

/// The only writer: flushes once per burst, so many concurrent answers cost one syscall.
async fn write_loop<S: MessageSink>(mut sink: S, mut outbox: mpsc::Receiver<Message>) {
    while let Some(first) = outbox.recv().await {
        let (mut next, mut burst) = (Some(first), Burst::default());
        while let Some(msg) = next.take() {
            if sink.feed(&msg).await.is_err() {
                return;
            }
            next = burst.after_write(|| outbox.try_recv().ok());
        }
        if sink.flush().await.is_err() {
            return;
        }
    }
    sink.close().await;
}
