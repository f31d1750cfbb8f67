//! MCP over stdio, server side: newline-delimited JSON-RPC on any byte streams (the process's stdin and stdout
//! when an agent spawns the gateway), one implicit agent session. Requests are answered concurrently, each on its
//! own task; progress and broadcast notifications are written as they come; `notifications/cancelled` is honoured.
//! Frames are read by the core's line transport (`transport::line`): a bad frame costs an error reply, never the
//! session.

use std::sync::Arc;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{broadcast, mpsc};

use super::dispatch::{self, Agent};
use super::lifecycle;
use super::live::{Admit, LiveSession};
use super::shared::{Notice, Shared};
use crate::jsonrpc::{ErrorCode, ErrorObject, Message, Request};
use crate::mcp::{LATEST_PROTOCOL_VERSION, method};
use crate::session::{Era, envelope_version};
use crate::transport::{FrameError, MessageSink, MessageSource, line_transport};

/// The stdio peer's session name in [`super::RequestCtx::session`].
pub const STDIO_SESSION: &str = "stdio";
/// Messages queued for the writer.
const OUTBOX: usize = 256;

pub(crate) async fn serve<R, W>(front: Arc<Shared>, reader: R, writer: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sink, mut source) = line_transport(reader, writer, front.limits.max_body);
    let (out, outbox) = mpsc::channel::<Message>(OUTBOX);
    let writer = tokio::spawn(write(sink, outbox));
    let relay = tokio::spawn(relay(front.notices.subscribe(), out.clone()));
    let session = LiveSession::new(Arc::from(STDIO_SESSION), &front.root);
    // Until `initialize`, a legacy agent is served at our latest version (lenient, as most servers are).
    let mut agent = Agent {
        session: Some(session.key.clone()),
        era: Era::Legacy,
        version: LATEST_PROTOCOL_VERSION.to_owned(),
        client_info: None,
        client_capabilities: json!({}),
        principal: None,
        log_level: Some(session.log_level.clone()),
        asks: Some(front.asks.clone()),
        parks: None,
        closing: None,
    };
    loop {
        let frame = tokio::select! {
            biased;
            () = front.closing.cancelled() => break,
            frame = source.recv() => frame,
        };
        let reply = match frame {
            None | Some(Err(FrameError::Io(_))) => {
                // The agent closed its end: what it asked is abandoned.
                session.cancel.cancel("the stdio agent went away");
                break;
            }
            Some(Ok(Message::Request(request))) => on_request(&front, &session, &mut agent, request, &out),
            Some(Ok(Message::Notification(note))) => {
                session.notified(note);
                None
            }
            Some(Ok(Message::Response(response))) => {
                // The stdio peer's answer to what a call asked it: this process is the only one it talks to.
                front.asks.answer(&response);
                None
            }
            Some(Err(FrameError::Decode(e))) => {
                let code = if matches!(e, crate::jsonrpc::DecodeError::NotJson(_)) {
                    ErrorCode::PARSE_ERROR
                } else {
                    ErrorCode::INVALID_REQUEST
                };
                Some(Message::error(e.request_id().cloned(), ErrorObject::new(code, e.to_string())))
            }
            Some(Err(e)) => Some(Message::error(None, ErrorObject::new(ErrorCode::PARSE_ERROR, e.to_string()))),
        };
        if let Some(reply) = reply
            && out.send(reply).await.is_err()
        {
            break;
        }
    }
    // Stopping: what is in flight finishes (or is cancelled at the drain deadline) and is written, then the end.
    tokio::select! {
        biased;
        () = front.drain.idle() => {}
        () = session.cancel.cancelled() => {}
    }
    relay.abort();
    drop(out);
    let _ = writer.await;
    front.service.session_ended(STDIO_SESSION);
}

/// Answers lifecycle requests at once (in order: `initialize` settles the era before the next frame is read) and
/// starts every other request on its own task. What to write at once comes back.
fn on_request(
    front: &Arc<Shared>,
    session: &Arc<LiveSession>,
    agent: &mut Agent,
    request: Request,
    out: &mpsc::Sender<Message>,
) -> Option<Message> {
    let id = request.id.clone();
    let enveloped = envelope_version(request.params.as_ref()).is_some();
    if request.method == method::INITIALIZE && !enveloped {
        return Some(match lifecycle::initialize(&front.service.describe(), request.params.as_ref()) {
            Ok(init) => {
                agent.era = Era::Legacy;
                agent.version = init.version;
                agent.client_info = init.client_info;
                agent.client_capabilities = init.client_capabilities;
                Message::result(id, init.result)
            }
            Err(e) => Message::error(Some(id), e),
        });
    }
    let agent = if enveloped || request.method == method::INITIALIZE {
        match Agent::modern(&request) {
            Ok(modern) => Agent {
                session: agent.session.clone(),
                parks: Some(front.parks.clone()),
                closing: Some(front.closing.clone()),
                ..modern
            },
            Err(e) => return Some(Message::error(Some(id), e)),
        }
    } else {
        agent.clone()
    };
    let Ok(mut flight) = session.enter(&front.drain, &id) else {
        let e = ErrorObject::new(ErrorCode::INVALID_REQUEST, "a request with this id is already in flight");
        return Some(Message::error(Some(id), e));
    };
    let (front, out, key) = (front.clone(), out.clone(), session.key.clone());
    tokio::spawn(async move {
        match flight.admit(&front.admission, &key, front.limits.queue_wait).await {
            Ok(()) => {}
            Err(Admit::Refused(refused)) => {
                let mut e = ErrorObject::new(ErrorCode::INTERNAL_ERROR, refused.message());
                e.data = Some(serde_json::json!({ "retryAfterMs": refused.retry_after().as_millis() as u64 }));
                let _ = out.send(Message::error(Some(id), e)).await;
                return;
            }
            // A cancelled request is not answered (MCP: the cancellation notification).
            Err(Admit::Cancelled) => return,
        }
        let token = flight.token.clone();
        if let Some(msg) = dispatch::answer(&front, &agent, request, token, Some(out.clone())).await {
            let _ = out.send(msg).await;
        }
        drop(flight);
    });
    None
}

/// Writes what comes, flushing once the queue is momentarily empty (one syscall per burst).
async fn write<S: MessageSink>(mut sink: S, mut outbox: mpsc::Receiver<Message>) {
    while let Some(msg) = outbox.recv().await {
        if sink.feed(&msg).await.is_err() {
            return;
        }
        while let Ok(more) = outbox.try_recv() {
            if sink.feed(&more).await.is_err() {
                return;
            }
        }
        if sink.flush().await.is_err() {
            return;
        }
    }
    sink.close().await;
}

/// Server notifications for every agent (`list_changed`) or for this one (`resources/updated`) to the stdio peer.
async fn relay(mut notices: broadcast::Receiver<Notice>, out: mpsc::Sender<Message>) {
    loop {
        match notices.recv().await {
            Ok(notice) if notice.for_session(STDIO_SESSION) => {
                if out.send(notice.msg).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
