//! Answering one request over HTTP: as one JSON body, or as an SSE stream when the request asked for progress
//! (a `progressToken`) or the client accepts only SSE. A 2025-11-25 stream starts with a priming event and is kept
//! by its session for `Last-Event-ID` resumption; closing it does not cancel the request. A 2026-07-28 stream is
//! not resumable, and closing it cancels the request.
//!
//! A request that may stream, from a client that also takes JSON, waits for its first message before the response
//! starts: when that message is the answer itself (most calls: no progress was sent), it goes as one JSON body,
//! which costs the gateway one write instead of a stream's three and spares a task. The stream starts at the first
//! notification, or after [`STREAM_AFTER`] with neither, so that a long call still gets its priming event (2025-11-25
//! resumption) and bytes that keep proxies from idling it out.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;
use hyper::header::{self, HeaderMap, HeaderValue};
use tokio::sync::mpsc;

use crate::jsonrpc::{ErrorCode, ErrorObject, Message, Request, RequestId, ResponseBody};
use crate::serve::body::{self, Held, Reply};
use crate::serve::dispatch::{self, Agent};
use crate::serve::headers::{accepted, modern_status};
use crate::serve::live::{Admit, Flight, LiveSession};
use crate::serve::service::progress_token;
use crate::serve::shared::Shared;
use crate::serve::sse::{RING, StreamLog};
use crate::serve::{Asker, LISTEN};
use crate::session::Era;

/// How long a request that may stream is held for a one-body answer before its stream starts.
pub const STREAM_AFTER: Duration = Duration::from_secs(1);

/// A request on its way to its answer (`None`: cancelled before it was answered).
type Answering = Pin<Box<dyn Future<Output = Option<Message>> + Send>>;

/// The answer, when the stream starts.
enum Rest {
    Answering(Answering),
    Answered(Option<Message>),
}

/// What came first while the response had not started.
enum First {
    Answer(Option<Message>),
    Note(Message),
    Nothing,
}

pub(super) async fn answer(
    front: &Arc<Shared>,
    headers: &HeaderMap,
    agent: Agent,
    request: Request,
    flight: Flight,
    session: Option<Arc<LiveSession>>,
) -> Reply {
    let era = agent.era;
    let accepted = accepted(headers);
    let (sse_ok, json_ok) = (accepted.sse, accepted.json);
    // A request that may bring notifications (progress it asked for, log messages at its agent's level) is
    // answered on a stream that can carry them.
    // So is one whose upstream may ask the agent something mid-call (sampling, elicitation, roots): the request goes
    // on the call's stream.
    // A subscription is a stream by nature.
    let notes = request.method == LISTEN
        || progress_token(request.params.as_ref()).is_some()
        || agent.log_level(request.params.as_ref()).is_some()
        || (agent.asks.is_some() && Asker::may_be_asked(&agent.client_capabilities));
    let sse = sse_ok && (notes || !json_ok);
    if !sse {
        let answered = dispatch::answer(front, &agent, request, flight.token.clone(), None).await;
        drop(flight);
        return single(era, answered);
    }
    let (out, mut notes) = mpsc::channel::<Message>(RING);
    let mut answering: Answering = Box::pin({
        let (front, token) = (front.clone(), flight.token.clone());
        async move { dispatch::answer(&front, &agent, request, token, Some(out)).await }
    });
    let first = if json_ok {
        tokio::select! {
            biased;
            // Progress the agent asked for is never dropped: a notification, even one sent just before the
            // answer, starts the stream.
            Some(note) = notes.recv() => First::Note(note),
            answered = &mut answering => First::Answer(answered),
            () = tokio::time::sleep(STREAM_AFTER) => First::Nothing,
        }
    } else {
        First::Nothing
    };
    // The service runs on this task: the answer can come in the same poll as the progress sent before it.
    let (first, rest) = match first {
        First::Answer(answered) => match notes.try_recv() {
            Ok(note) => (Some(note), Rest::Answered(answered)),
            Err(_) => {
                drop(flight);
                return single(era, answered);
            }
        },
        First::Note(note) => (Some(note), Rest::Answering(answering)),
        First::Nothing => (None, Rest::Answering(answering)),
    };
    let log = StreamLog::new(front.next_stream_id());
    let reader = log.attach(None);
    if let Some(session) = &session {
        session.keep(log.clone(), front.limits.max_streams_per_session);
    }
    // Who holds the request in flight: its task (2025-11-25, a reader may come back), or its stream (2026-07-28).
    let modern = era == Era::Modern;
    let (kept, held) = if modern { (None, Some(flight)) } else { (Some(flight), None) };
    tokio::spawn(pump(era, rest, notes, first, log, kept));
    body::sse(reader, held.map(Held::new))
}

/// The answer to a request the front's admission did not run: 429 with `Retry-After` (whole seconds) and a
/// JSON-RPC error whose data says why and when to come back, or 204 when it was cancelled while it waited.
pub(super) fn not_admitted(admit: Admit, id: RequestId) -> Reply {
    let Admit::Refused(refused) = admit else {
        return body::empty(StatusCode::NO_CONTENT);
    };
    let after = refused.retry_after();
    let mut error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, refused.message());
    error.data = Some(serde_json::json!({ "httpStatus": 429, "retryAfterMs": after.as_millis() as u64 }));
    let mut reply = body::json(StatusCode::TOO_MANY_REQUESTS, &Message::error(Some(id), error));
    reply.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(after.as_secs()));
    reply
}

/// One JSON body for the answer (a 2026-07-28 error with its own status), or 204 when the request was cancelled
/// (`notifications/cancelled`, DELETE, the drain deadline) before it was answered.
fn single(era: Era, answered: Option<Message>) -> Reply {
    let Some(msg) = answered else {
        return body::empty(StatusCode::NO_CONTENT);
    };
    let status = match &msg {
        Message::Response(r) if era == Era::Modern => match &r.body {
            ResponseBody::Error(e) => modern_status(e),
            ResponseBody::Result(_) => StatusCode::OK,
        },
        _ => StatusCode::OK,
    };
    body::json(status, &msg)
}

/// Logs the request's progress and response on its stream (a 2025-11-25 stream first gets a priming event: an id
/// to resume from), starting with the notification that started the stream, if one did.
async fn pump(
    era: Era,
    rest: Rest,
    mut notes: mpsc::Receiver<Message>,
    first: Option<Message>,
    log: Arc<StreamLog>,
    flight: Option<Flight>,
) {
    if era == Era::Legacy {
        log.push(b"", false, false).await;
    }
    if let Some(note) = first {
        log.push_message(&note, false, false).await;
    }
    let last = match rest {
        Rest::Answered(answered) => answered,
        Rest::Answering(mut answering) => loop {
            tokio::select! {
                biased;
                Some(note) = notes.recv() => log.push_message(&note, false, false).await,
                answered = &mut answering => break answered,
            }
        },
    };
    while let Ok(note) = notes.try_recv() {
        log.push_message(&note, false, false).await;
    }
    match last {
        Some(msg) => log.push_message(&msg, true, false).await,
        None => log.finish(),
    }
    drop(flight);
}
