//! Streamable HTTP bodies, server side (the front's and the fake servers'): a request body read within a bound,
//! the response body type (one whole body, or an SSE stream fed by a channel) and the responses built from it.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use crate::jsonrpc::{ErrorCode, ErrorObject, Message, RequestId};
use crate::serve::headers::SESSION_HEADER;
use crate::serve::sse::{Chunk, StreamCut};

/// The request body, at most `max` bytes: 413 beyond (by `Content-Length` at once, else as it streams in), 400 if
/// the client stops sending half-way.
pub async fn read(incoming: Incoming, max: usize) -> Result<Bytes, StatusCode> {
    match Limited::new(incoming, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(StatusCode::PAYLOAD_TOO_LARGE),
        Err(_) => Err(StatusCode::BAD_REQUEST),
    }
}

/// Whatever a stream keeps alive until hyper drops its body. A 2026-07-28 stream holds its request's in-flight
/// entry here: the client closing the stream drops it, which cancels the request.
pub struct Held {
    _held: Box<dyn Send + Sync>,
}

impl Held {
    pub fn new(held: impl Send + Sync + 'static) -> Held {
        Held { _held: Box::new(held) }
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Held")
    }
}

/// A response body.
#[derive(Debug)]
pub enum Body {
    Full(Option<Bytes>),
    Stream { rx: mpsc::Receiver<Chunk>, held: Option<Held> },
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = StreamCut;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, StreamCut>>> {
        match self.get_mut() {
            Body::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream { rx, .. } => rx.poll_recv(cx).map(|chunk| chunk.map(|c| c.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Body::Stream { .. } => SizeHint::default(),
        }
    }
}

pub type Reply = Response<Body>;

fn build(status: StatusCode, content_type: Option<&'static str>, body: Body) -> Reply {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    if let Some(ct) = content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    response
}

/// A status with no body.
pub fn empty(status: StatusCode) -> Reply {
    build(status, None, Body::Full(None))
}

/// A short plain-text body (the health routes).
pub fn text(status: StatusCode, text: &'static str) -> Reply {
    build(status, Some("text/plain"), Body::Full(Some(Bytes::from_static(text.as_bytes()))))
}

/// A whole body of the given type.
pub fn bytes(status: StatusCode, content_type: &'static str, body: Bytes) -> Reply {
    build(status, Some(content_type), Body::Full(Some(body)))
}

/// One JSON-RPC message as an `application/json` body.
pub fn json(status: StatusCode, msg: &Message) -> Reply {
    build(status, Some("application/json"), Body::Full(Some(Bytes::from(msg.encode()))))
}

/// A JSON-RPC error as the body of an HTTP status (the id when the request's could be read).
pub fn error(status: StatusCode, id: Option<RequestId>, code: ErrorCode, message: impl Into<String>) -> Reply {
    json(status, &Message::error(id, ErrorObject::new(code, message)))
}

/// An SSE stream fed by `rx`, keeping `held` alive while it is read.
pub fn sse(rx: mpsc::Receiver<Chunk>, held: Option<Held>) -> Reply {
    let mut response = build(StatusCode::OK, Some("text/event-stream"), Body::Stream { rx, held });
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Tell reverse proxies not to buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Adds `Mcp-Session-Id` (when there is one and it is header text) to a response.
pub fn with_session(mut response: Reply, session: Option<&str>) -> Reply {
    if let Some(value) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}
