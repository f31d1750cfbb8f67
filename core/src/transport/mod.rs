//! The message-level transport seam: send one JSON-RPC message, receive the next.
//!
//! `Connection` only sees [`MessageSink`] and [`MessageSource`], so a Streamable HTTP transport can slot in beside the
//! newline-delimited one ([`line`]) without touching the pending table or the writer lanes.

mod burst;
mod http;
mod line;
mod tag;

use std::future::Future;

pub use burst::{Burst, MAX_BATCH};
pub use http::{
    AuthorizationFuture, Authorizer, Fetched, Fetcher, HttpConfigError, HttpContext, HttpEndpoint, HttpLimits,
    HttpResponseHead, HttpSink, HttpSource, PoolConfig, PoolGauge, PoolState, ResponseHook, http_transport,
};
pub use line::{DEFAULT_MAX_FRAME, LineSink, LineSource, decode_frame, decode_frame_with, line_transport};
pub(crate) use tag::{tag_stream_request, take_stream_request};

use crate::error::{CallError, TransportError};
use crate::jsonrpc::{DecodeError, Message, MetaRequest};

/// Why one incoming frame was rejected. Only [`FrameError::Io`] ends the stream; the others cost one frame.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrameError {
    #[error("frame of at least {len} bytes exceeds the {max}-byte limit")]
    TooLarge { len: usize, max: usize },
    #[error("frame is not UTF-8")]
    NotUtf8,
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("{0}")]
    Io(TransportError),
    /// One request's exchange failed on a transport that carries each request separately (Streamable HTTP): that
    /// call fails with `error` and the transport stays up.
    #[error("request {id}: {error}")]
    Exchange { id: i64, error: Box<CallError> },
}

/// The sending half. Messages are buffered by `feed` and pushed to the peer by `flush`, so a writer draining a busy
/// queue pays one syscall per burst rather than per message.
pub trait MessageSink: Send + 'static {
    fn feed(&mut self, msg: &Message) -> impl Future<Output = Result<(), TransportError>> + Send;
    /// A request of a connection, its `_meta` members not yet merged. A sink that writes bytes encodes it with
    /// [`MetaRequest::encode_into`] (the same bytes, without building the merged params); by default it is merged
    /// and fed as a message.
    fn feed_request(&mut self, req: MetaRequest) -> impl Future<Output = Result<(), TransportError>> + Send {
        async move { self.feed(&req.into_message()).await }
    }
    fn flush(&mut self) -> impl Future<Output = Result<(), TransportError>> + Send;
    /// Offers each response to `answers` as it arrives, before the source would yield it, where a transport gets
    /// the response to each request on its own (Streamable HTTP: the request's own exchange) rather than in one
    /// stream that a single reader must keep in order. A transport of one stream ignores it (the default).
    fn answer_with(&mut self, answers: DirectAnswers) {
        let _ = answers;
    }
    /// Where the connection's callers may send some of their requests themselves, without the writer's hop: a
    /// transport that sends each request on its own (Streamable HTTP) and whose order with other messages does not
    /// matter for it. None by default: every message goes through the writer.
    fn direct_requests(&self) -> Option<DirectRequests> {
        None
    }
    /// Best-effort orderly close (flush, then shut the write side).
    fn close(&mut self) -> impl Future<Output = ()> + Send;
}

/// See [`MessageSink::direct_requests`].
pub trait DirectSend: Send + Sync {
    /// Whether `request` may be sent by [`DirectSend::send`] (asked first, so that the caller can record the request
    /// as written before it goes).
    fn takes(&self, request: &MetaRequest) -> bool;
    /// Sends `request`, one that [`DirectSend::takes`]; it does not wait for the exchange.
    fn send(&self, request: &MetaRequest);
}

/// See [`MessageSink::direct_requests`].
pub type DirectRequests = std::sync::Arc<dyn DirectSend>;

/// Takes the response to request `id` (its frame as it came) straight to its caller, skipping the reader's queue:
/// `true` when it did. One it leaves (it cannot read it quickly, or nobody waits for it) goes through the source.
pub type DirectAnswers = std::sync::Arc<dyn Fn(i64, &[u8]) -> bool + Send + Sync>;

/// The receiving half. `None` is a clean end of stream. Must be cancel-safe: no message is lost if the future is
/// dropped before it completes.
pub trait MessageSource: Send + 'static {
    fn recv(&mut self) -> impl Future<Output = Option<Result<Message, FrameError>>> + Send;

    /// [`MessageSource::recv`], offering each frame to `quick` first: a frame it takes comes back as what it read,
    /// one it leaves is decoded as `recv` decodes it. By default (a transport that does not hand out frames as they
    /// came) nothing is offered.
    fn recv_quick<Q: QuickRead>(
        &mut self,
        quick: &Q,
    ) -> impl Future<Output = Option<Result<Incoming<Q::Read>, FrameError>>> + Send {
        let _ = quick;
        async move { self.recv().await.map(|r| r.map(Incoming::Message)) }
    }
}

/// A reader for the frames a receiver gets most, faster than the general decoder because it knows their shape. It
/// takes a frame only when it reads it exactly as the general decoder (and the receiver's own parse after it) would.
pub trait QuickRead: Sync {
    type Read: Send;
    fn read(&self, frame: &[u8]) -> Option<Self::Read>;
}

/// A frame from [`MessageSource::recv_quick`].
#[derive(Debug)]
pub enum Incoming<T> {
    Message(Message),
    /// Taken by the quick reader.
    Quick(T),
}
