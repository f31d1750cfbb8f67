//! The single reader of a connection: completes callers by id, routes progress to its call, answers the few server
//! requests a client must answer, and hands other notifications to the bounded queue. It never awaits a consumer.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use super::Shared;
use super::asked::{AskSink, Asked, RELAYED};
use super::pending::{Answer, Delivery, Reply};
use super::stats::Counters;
use crate::error::{CallError, TransportError};
use crate::jsonrpc::{ErrorCode, ErrorObject, Message, Notification, Request, Response, ResponseBody};
use crate::mcp::{CallToolResult, ProgressParams, call_frame, logging, method};
use crate::observe::Event;
use crate::transport::take_stream_request;
use crate::transport::{DirectAnswers, FrameError, Incoming, MessageSource, QuickRead};

pub(crate) async fn run<R: MessageSource>(
    shared: Arc<Shared>,
    mut source: R,
    notifications: Option<mpsc::Sender<Notification>>,
) {
    // Kept across frames: it is polled on every wake-up of this task.
    let shutdown = shared.shutdown.watch();
    tokio::pin!(shutdown);
    let quick = CallResults(&shared);
    let reason = loop {
        let item = tokio::select! {
            biased;
            _ = &mut shutdown => break TransportError::Shutdown,
            item = source.recv_quick(&quick) => item,
        };
        let Some(item) = item else {
            break TransportError::Closed;
        };
        received(&shared);
        match item {
            Ok(Incoming::Quick((id, result))) => deliver(&shared, id, Ok(Answer::Call(result))),
            Ok(Incoming::Message(msg)) => dispatch(&shared, msg, notifications.as_ref()),
            Err(FrameError::Io(e)) => break e,
            Err(FrameError::Exchange { id, error }) => {
                shared.pending.complete(id, Err(*error));
            }
            Err(e) => {
                shared.emit(&Event::FrameRejected { conn: shared.id, error: &e });
                match &e {
                    // An oversize frame may have been a response we can never attribute: failing the connection
                    // tells every waiting caller now, rather than at their timeouts.
                    FrameError::TooLarge { max, .. } => {
                        break TransportError::FrameTooLarge { max: *max };
                    }
                    FrameError::Decode(d) => {
                        if let Some(id) = d.request_id().and_then(|id| id.as_number()) {
                            shared.pending.complete(id, Err(CallError::MalformedResponse(d.to_string())));
                        }
                    }
                    FrameError::NotUtf8 | FrameError::Io(_) | FrameError::Exchange { .. } => {}
                }
            }
        }
    };
    shared.fail(reason);
}

/// A frame arrived: evidence the stream is alive, and one more received.
fn received(shared: &Shared) {
    shared.last_rx.store(shared.nanos_since_epoch().max(1), Ordering::Relaxed);
    Counters::bump(&shared.counters.received);
}

/// What the reader does with a `tools/call` result its quick reader takes, done by the transport's exchange that
/// received it (see [`DirectAnswers`]): the caller is woken by the exchange, without a hop through this task. Any
/// other frame is left to the reader. Holds the connection weakly: the transport may outlive it.
pub(super) fn direct_answers(shared: &Arc<Shared>) -> DirectAnswers {
    let shared = Arc::downgrade(shared);
    Arc::new(move |_, frame| {
        let Some(shared) = shared.upgrade() else { return false };
        // As `decode_frame_with`: only a frame the general path would read at all is read quickly.
        if std::str::from_utf8(frame).is_err() {
            return false;
        }
        let Some((id, result)) = CallResults(&shared).read(frame) else { return false };
        received(&shared);
        deliver(&shared, id, Ok(Answer::Call(result)));
        true
    })
}

/// The quick reader of this connection's frames: responses to the `tools/call`s its callers take parsed.
struct CallResults<'a>(&'a Shared);

impl QuickRead for CallResults<'_> {
    type Read = (i64, CallToolResult);

    fn read(&self, frame: &[u8]) -> Option<Self::Read> {
        call_frame::read(frame, |id| self.0.pending.wants_call_result(id))
    }
}

fn dispatch(shared: &Arc<Shared>, msg: Message, notifications: Option<&mpsc::Sender<Notification>>) {
    match msg {
        Message::Response(r) => on_response(shared, r),
        Message::Notification(n) => on_notification(shared, n, notifications),
        Message::Request(r) => on_server_request(shared, r),
    }
}

fn on_response(shared: &Shared, response: Response) {
    let Some(id) = response.id.as_ref().and_then(|id| id.as_number()) else {
        // `id: null` (the server could not read one of our frames) or a string id we never issue.
        shared.emit(&Event::UnknownResponseDropped { conn: shared.id });
        return;
    };
    let reply = match response.body {
        ResponseBody::Result(v) => Ok(Answer::Raw(v)),
        ResponseBody::Error(e) => Err(CallError::Protocol(e)),
    };
    deliver(shared, id, reply);
}

/// Completes the caller waiting for `id`, or tells the observer why nobody was.
fn deliver(shared: &Shared, id: i64, reply: Reply) {
    if shared.pending.complete(id, reply) == Delivery::NotPending {
        if id > 0 && id < shared.next_id.load(Ordering::Relaxed) {
            shared.emit(&Event::LateResponseDropped { conn: shared.id });
        } else {
            shared.emit(&Event::UnknownResponseDropped { conn: shared.id });
        }
    }
}

fn on_notification(shared: &Shared, n: Notification, notifications: Option<&mpsc::Sender<Notification>>) {
    if n.method == method::PROGRESS {
        let params = n.params.and_then(|p| serde_json::from_value::<ProgressParams>(p).ok());
        let delivered = params.is_some_and(|p| {
            // We only ever issue integer progress tokens equal to the request id.
            let id = p.progress_token.as_i64();
            id.is_some_and(|id| shared.pending.progress(id, shared.nanos_since_epoch(), p))
        });
        if !delivered {
            Counters::bump(&shared.counters.stray_progress);
        }
        return;
    }
    if n.method == logging::MESSAGE
        && let Some(mut params) = n.params.clone()
    {
        let id = take_stream_request(&mut params);
        if shared.pending.log(id, params) {
            return;
        }
    }
    let Some(tx) = notifications else { return };
    if let Err(mpsc::error::TrySendError::Full(n) | mpsc::error::TrySendError::Closed(n)) = tx.try_send(n) {
        shared.emit(&Event::NotificationDropped { conn: shared.id, method: &n.method });
    }
}

/// A client must answer `ping`. A request the client relays (sampling, elicitation, roots) goes to the call it
/// belongs to, when that call relays them, and is answered once the call's relay answers; everything else, and a
/// relayed request no call takes, gets "method not found".
fn on_server_request(shared: &Arc<Shared>, mut request: Request) {
    Counters::bump(&shared.counters.server_requests);
    if request.method == method::PING {
        let _ = shared.try_send_priority(Message::result(request.id, json!({})));
        return;
    }
    if RELAYED.contains(&request.method.as_str()) {
        let call = request.params.as_mut().and_then(take_stream_request);
        if let Some(sink) = shared.pending.asks(call) {
            relay(shared, sink, request);
            return;
        }
    }
    let msg = format!("client does not support {:?}", request.method);
    let _ =
        shared.try_send_priority(Message::error(Some(request.id), ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, msg)));
}

/// Hands a server request to its call's relay and answers the server when the relay does. The reader never waits:
/// a full relay is an error now, and the wait for the answer is a task of its own.
fn relay(shared: &Arc<Shared>, sink: AskSink, request: Request) {
    let Request { id, method, params } = request;
    let (reply, answer) = oneshot::channel();
    if sink.take(Asked { method, params, reply }).is_err() {
        let e = ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the call's client is not taking requests now");
        let _ = shared.try_send_priority(Message::error(Some(id), e));
        return;
    }
    let shared = Arc::downgrade(shared);
    tokio::spawn(async move {
        let msg = match answer.await {
            Ok(Ok(result)) => Message::result(id, result),
            Ok(Err(e)) => Message::error(Some(id), e),
            Err(_) => {
                let why = "the call this request belongs to ended before it was answered";
                Message::error(Some(id), ErrorObject::new(ErrorCode::INTERNAL_ERROR, why))
            }
        };
        if let Some(shared) = shared.upgrade() {
            let _ = shared.try_send_priority(msg);
        }
    });
}
