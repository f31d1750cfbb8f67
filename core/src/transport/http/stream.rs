//! Reading an SSE response stream into messages, and resuming a cut one.
//!
//! 2025-11-25 "Resumability and Redelivery": a stream cut before its response is resumed with an HTTP `GET`
//! carrying `Last-Event-ID`, after the stream's `retry:` wait (capped), at most `max_resumes` times. A stream that
//! set no event id cannot be resumed; neither can a 2026-07-28 one ("Resumable SSE streams via `Last-Event-ID` are
//! not supported").

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body as _, Incoming};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, StatusCode};
use std::pin::Pin;
use std::task::Poll;
use tokio::time::{sleep, timeout};

use super::head::Body;
use super::pool::Lease;
use super::send::{hyper_error, send};
use super::sse::SseParser;
use super::{Http, Inbound};
use crate::error::{CallError, HttpError, TransportError};
use crate::jsonrpc::Message;
use crate::transport::FrameError;

/// The last event a resumed stream saw ("Resumability and Redelivery").
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const ACCEPT_SSE: HeaderValue = HeaderValue::from_static("text/event-stream");

/// The wait before resuming when the stream named none.
pub(super) const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// How long a stream whose response arrived may take to end, so its connection can serve another request.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// What one stream is for.
#[derive(Debug, Clone, Copy)]
pub(super) struct StreamCtx {
    /// The request whose response ends the stream (`None`: the `GET` stream, which has none).
    pub request: Option<i64>,
    /// That request is `initialize`: its result sets the version sent from now on.
    pub initialize: bool,
    /// A cut may be resumed with `Last-Event-ID` (2025-11-25).
    pub resumable: bool,
}

/// How reading a stream ended.
pub(super) enum Pumped {
    /// The response to our request arrived.
    Answered,
    /// The server ended the stream.
    Ended,
    /// The connection broke.
    Cut(CallError),
    /// The stream broke a bound or carried garbage for our request: not resumable.
    Failed(CallError),
}

/// Delivers the stream's messages until our response, the end, or a failure. Returns whether any event arrived.
///
/// `delivered` is set once a message of the stream went to the reader (over the stream's resumptions).
pub(super) async fn pump(
    http: &Http,
    body: &mut Incoming,
    parser: &mut SseParser,
    ctx: StreamCtx,
    delivered: &mut bool,
) -> (Pumped, bool) {
    let mut events = false;
    loop {
        while let Some(event) = parser.next_event() {
            events = true;
            // Only `message` events carry JSON-RPC; empty data primes a resumable stream with an id.
            if !(event.event.is_empty() || event.event == "message") || event.data.is_empty() {
                continue;
            }
            let request = ctx.request.filter(|id| !ctx.initialize && answers(&event.data, *id));
            if let Some(request) = request {
                // Read by the connection's quick reader (see `Inbound::Answer`); straight to its caller unless
                // messages of this stream (progress) went to the reader before it.
                http.answer(request, Bytes::from(event.data), !*delivered).await;
                return (Pumped::Answered, true);
            }
            *delivered = true;
            match Message::decode(&event.data) {
                Ok(mut msg) => {
                    crate::transport::tag_stream_request(&mut msg, ctx.request);
                    let ours = matches!(&msg, Message::Response(r)
                        if ctx.request.is_some() && r.id.as_ref().and_then(|id| id.as_number()) == ctx.request);
                    if ours && ctx.initialize {
                        http.adopt_version(&msg);
                    }
                    http.deliver(Ok(Inbound::Message(msg))).await;
                    if ours {
                        return (Pumped::Answered, true);
                    }
                }
                Err(e) if ctx.request.is_some() => {
                    return (Pumped::Failed(CallError::MalformedResponse(format!("SSE event: {e}"))), true);
                }
                Err(e) => http.deliver(Err(FrameError::Decode(e))).await,
            }
        }
        match body.frame().await {
            None => return (Pumped::Ended, events),
            Some(Err(e)) => return (Pumped::Cut(hyper_error(&e)), events),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data()
                    && let Err(e) = parser.push(&data)
                {
                    return (Pumped::Failed(TransportError::FrameTooLarge { max: e.max }.into()), events);
                }
            }
        }
    }
}

/// Whether an event's data is, at a glance, the response to request `id`: an object with that integer `id` and no
/// `method`. A glance reads the members without building them, so the answer to a call is decoded once, by the
/// reader; anything it cannot tell (not JSON, a duplicate member) takes the general decoder here.
fn answers(data: &[u8], id: i64) -> bool {
    /// `id` is the only member read; any other is skipped unbuilt.
    #[derive(serde::Deserialize)]
    struct Glance {
        method: Option<serde::de::IgnoredAny>,
        id: Option<GlanceId>,
    }
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum GlanceId {
        Number(i64),
        Other(serde::de::IgnoredAny),
    }
    match serde_json::from_slice::<Glance>(data) {
        Ok(Glance { method: None, id: Some(GlanceId::Number(n)) }) => n == id,
        _ => false,
    }
}

/// Follows a request's SSE stream to its response, resuming it when it is cut and resumable.
pub(super) async fn follow(http: &Arc<Http>, body: Incoming, lease: Lease, ctx: StreamCtx) -> Result<(), CallError> {
    let limits = http.limits();
    let mut parser = SseParser::new(limits.max_event);
    let mut open = Some((body, lease));
    let mut attempts = 0;
    let mut delivered = false;
    loop {
        let cut = match open.take() {
            Some((mut body, lease)) => match pump(http, &mut body, &mut parser, ctx, &mut delivered).await.0 {
                Pumped::Answered => {
                    finish(body, lease).await;
                    return Ok(());
                }
                Pumped::Failed(e) => return Err(e),
                Pumped::Ended => CallError::Transport(TransportError::Closed),
                Pumped::Cut(e) => e,
            },
            None => CallError::Transport(TransportError::Closed),
        };
        let Some(last) = parser.last_id().filter(|_| ctx.resumable).map(str::to_owned) else {
            return Err(cut);
        };
        if attempts == limits.max_resumes {
            return Err(
                TransportError::Http(HttpError::Resume(format!("gave up after {attempts} attempts: {cut}"))).into()
            );
        }
        attempts += 1;
        sleep(parser.retry().unwrap_or(DEFAULT_RETRY).min(limits.max_retry_wait)).await;
        match open_get(http, Some(&last), false).await {
            Ok(Some(stream)) => {
                parser.restart();
                open = Some(stream);
            }
            Ok(None) => return Err(TransportError::Http(HttpError::Resume("GET answered 405".into())).into()),
            Err(e) => tracing::debug!(error = %e, attempts, "resuming the SSE stream failed"),
        }
    }
}

/// Lets a finished stream end so its connection can be reused; closes it if it does not end soon.
async fn finish(mut body: Incoming, lease: Lease) {
    // Most servers end the stream right after the response (often in the same read): then there is nothing to
    // wait for, and no timer to arm.
    loop {
        match std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut body).poll_frame(cx))).await {
            Poll::Ready(None) => {
                lease.release();
                return;
            }
            Poll::Ready(Some(Err(_))) => return,
            Poll::Ready(Some(Ok(_))) => {}
            Poll::Pending => break,
        }
    }
    let ended = timeout(DRAIN_GRACE, async {
        loop {
            match body.frame().await {
                None => return true,
                Some(Err(_)) => return false,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    if ended == Ok(true) {
        lease.release();
    }
}

/// Opens an SSE stream with `GET` ("Listening for Messages from the Server"; with `last` also "Resumability"):
/// `None` when the server answers 405 (it offers none).
pub(super) async fn open_get(
    http: &Http,
    last: Option<&str>,
    dedicated: bool,
) -> Result<Option<(Incoming, Lease)>, CallError> {
    let mut headers = http.base_headers(false);
    headers.insert(header::ACCEPT, ACCEPT_SSE);
    if let Some(last) = last.and_then(|l| HeaderValue::from_str(l).ok()) {
        headers.insert(LAST_EVENT_ID, last);
    }
    let token = http.authorize(&mut headers, None).await?;
    let (response, lease) = send(http, Method::GET, &headers, Bytes::new(), dedicated).await?;
    if response.status() == StatusCode::UNAUTHORIZED {
        let _ = http.refused(token.as_ref(), response.headers());
    }
    match response.status() {
        StatusCode::METHOD_NOT_ALLOWED => Ok(None),
        StatusCode::OK => match Body::of_head(response.headers()) {
            Body::Sse => Ok(Some((response.into_body(), lease))),
            Body::Json => Err(TransportError::Http(HttpError::ContentType("application/json".into())).into()),
            Body::Other(ct) => Err(TransportError::Http(HttpError::ContentType(ct)).into()),
        },
        status => Err(TransportError::Http(HttpError::Status { status: status.as_u16() }).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::answers;

    #[test]
    fn a_glance_takes_only_a_response_to_the_request_and_leaves_the_rest_to_the_decoder() {
        assert!(answers(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#, 7));
        assert!(answers(br#"{"result":{"x":[1,{"id":8}]},"id":7,"jsonrpc":"2.0"}"#, 7));
        assert!(answers(br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"m"}}"#, 7));
        // Another request's, a request or notification of the server's, ids we never issue.
        assert!(!answers(br#"{"jsonrpc":"2.0","id":8,"result":{}}"#, 7));
        assert!(!answers(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, 7));
        assert!(!answers(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":7}}"#, 7));
        assert!(!answers(br#"{"jsonrpc":"2.0","id":"7","result":{}}"#, 7));
        assert!(!answers(br#"{"jsonrpc":"2.0","id":7.5,"result":{}}"#, 7));
        assert!(!answers(br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#, 7));
        // What the general decoder must judge: not JSON, not an object, a duplicate member.
        assert!(!answers(b"{\"id\":7,", 7));
        assert!(!answers(b"[7]", 7));
        assert!(!answers(br#"{"id":7,"id":8,"result":{}}"#, 7));
    }
}
