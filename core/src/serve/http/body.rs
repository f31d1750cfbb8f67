//! The response side: the body type (one whole body, or an SSE stream fed by a channel) and the responses the
//! handlers build from it.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;

use crate::jsonrpc::{ErrorCode, ErrorObject, Message, RequestId};
use crate::serve::headers::SESSION_HEADER;
use crate::serve::live::Flight;
use crate::serve::sse::{Chunk, StreamCut};

/// A response body. A 2026-07-28 stream holds its request's [`Flight`]: when hyper drops the body (the client
/// closed the stream) the request is cancelled.
#[derive(Debug)]
pub(crate) enum Body {
    Full(Option<Bytes>),
    Stream { rx: mpsc::Receiver<Chunk>, _flight: Option<Flight> },
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

pub(crate) type Reply = Response<Body>;

fn build(status: StatusCode, content_type: Option<&'static str>, body: Body) -> Reply {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    if let Some(ct) = content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    response
}

/// A status with no body.
pub(crate) fn empty(status: StatusCode) -> Reply {
    build(status, None, Body::Full(None))
}

/// A short plain-text body (the health routes).
pub(crate) fn text(status: StatusCode, text: &'static str) -> Reply {
    build(status, Some("text/plain"), Body::Full(Some(Bytes::from_static(text.as_bytes()))))
}

/// One JSON-RPC message as an `application/json` body.
pub(crate) fn json(status: StatusCode, msg: &Message) -> Reply {
    build(status, Some("application/json"), Body::Full(Some(Bytes::from(msg.encode()))))
}

/// A JSON-RPC error as the body of an HTTP status (the id when the request's could be read).
pub(crate) fn error(status: StatusCode, id: Option<RequestId>, code: ErrorCode, message: impl Into<String>) -> Reply {
    json(status, &Message::error(id, ErrorObject::new(code, message)))
}

/// An SSE stream fed by `rx`.
pub(crate) fn sse(rx: mpsc::Receiver<Chunk>, flight: Option<Flight>) -> Reply {
    let mut response = build(StatusCode::OK, Some("text/event-stream"), Body::Stream { rx, _flight: flight });
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Tell reverse proxies not to buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Adds `Mcp-Session-Id` to a response.
pub(crate) fn with_session(mut response: Reply, session: &str) -> Reply {
    if let Ok(value) = HeaderValue::from_str(session) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}
