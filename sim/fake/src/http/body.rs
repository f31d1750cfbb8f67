//! The response side: the body type (one JSON object, or an SSE stream fed by a channel) and the responses the
//! handlers build from it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject, Message, RequestId};
use tokio::sync::mpsc;

use crate::inflight::InFlight;
use crate::shared::Shared;
use crate::sse::{Chunk, StreamCut};

pub(crate) use mcpstorm_core::serve::headers::SESSION_HEADER;

/// A response body: a whole JSON object (or nothing), or an SSE stream. A stream may carry a [`CancelOnDrop`]: when
/// hyper drops the body (the client closed the stream), the request it answers is cancelled.
#[derive(Debug)]
pub(crate) enum Body {
    Full(Option<Bytes>),
    Stream { rx: mpsc::Receiver<Chunk>, _cancel: Option<CancelOnDrop> },
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

/// 2026-07-28: closing a request's SSE stream cancels the request. Held by the stream's body (or, for a JSON answer,
/// by the handler awaiting it); dropping it before the answer is claimed cancels through the request's in-flight
/// table, exactly as `notifications/cancelled` does on NDJSON. After the answer it does nothing.
#[derive(Debug)]
pub(crate) struct CancelOnDrop {
    pub shared: Arc<Shared>,
    pub table: Arc<InFlight>,
    pub id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.table.cancel(&self.shared.counters, &self.id);
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

/// A status with no body (202 Accepted, 405, 413...).
pub(crate) fn empty(status: StatusCode) -> Reply {
    build(status, None, Body::Full(None))
}

/// One JSON-RPC message as an `application/json` body.
pub(crate) fn json(status: StatusCode, msg: &Message) -> Reply {
    build(status, Some("application/json"), Body::Full(Some(Bytes::from(msg.encode()))))
}

/// A JSON-RPC error as the body of an HTTP error status (the id when the request's could be read).
pub(crate) fn error(status: StatusCode, id: Option<RequestId>, code: ErrorCode, message: impl Into<String>) -> Reply {
    json(status, &Message::error(id, ErrorObject::new(code, message)))
}

/// An SSE stream fed by `rx`.
pub(crate) fn sse(rx: mpsc::Receiver<Chunk>, cancel: Option<CancelOnDrop>) -> Reply {
    let mut response = build(StatusCode::OK, Some("text/event-stream"), Body::Stream { rx, _cancel: cancel });
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Both revisions: tell reverse proxies not to buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Adds `Mcp-Session-Id` (an id we made: visible ASCII) to a response.
pub(crate) fn with_session(mut response: Reply, session: Option<&str>) -> Reply {
    if let Some(value) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}
