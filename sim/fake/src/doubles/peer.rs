//! A scripted peer: the test plays the server by hand, frame by frame, against a real `Connection`.

use std::sync::Arc;

use mcpstorm_core::jsonrpc::{Message, Notification, Request, RequestId};
use mcpstorm_core::{Connection, ConnectionConfig, conn::ConnectionParts, conn::NotificationHandler};
use mcpstorm_core::{
    MessageSink, MessageSource, transport::DEFAULT_MAX_FRAME, transport::FrameError, transport::LineSink,
    transport::LineSource,
};
use mcpstorm_core::{NoopObserver, observe::ConnId};
use serde_json::Value;
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};

#[derive(Debug)]
pub struct Peer {
    source: LineSource<ReadHalf<DuplexStream>>,
    sink: LineSink<WriteHalf<DuplexStream>>,
}

/// A connection wired to a scripted peer through an in-memory pipe of `pipe_bytes` capacity each way.
pub fn connect(config: ConnectionConfig, pipe_bytes: usize) -> (Connection, Peer) {
    connect_with(config, pipe_bytes, None, DEFAULT_MAX_FRAME)
}

pub fn connect_with(
    config: ConnectionConfig,
    pipe_bytes: usize,
    on_notification: Option<NotificationHandler>,
    max_frame: usize,
) -> (Connection, Peer) {
    let (ours, theirs) = tokio::io::duplex(pipe_bytes);
    let (our_read, our_write) = tokio::io::split(ours);
    let (sink, source) = mcpstorm_core::transport::line_transport(our_read, our_write, max_frame);
    let conn = Connection::start(
        sink,
        source,
        ConnectionParts {
            id: ConnId(0),
            server: "peer".into(),
            config,
            observer: Arc::new(NoopObserver),
            global: None,
            on_notification,
            guard: None,
        },
    );
    (conn, Peer::new(theirs))
}

impl Peer {
    /// A peer on the server side of an in-memory pipe (e.g. one a test dialer handed out).
    pub fn new(theirs: DuplexStream) -> Peer {
        let (their_read, their_write) = tokio::io::split(theirs);
        Peer { source: LineSource::new(their_read, DEFAULT_MAX_FRAME), sink: LineSink::new(their_write) }
    }

    /// The next message from the client; `None` once it closed.
    pub async fn recv(&mut self) -> Option<Result<Message, FrameError>> {
        self.source.recv().await
    }

    /// The next request, panicking (this is a test) on anything else.
    pub async fn request(&mut self) -> Request {
        match self.recv().await {
            Some(Ok(Message::Request(r))) => r,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    pub async fn notification(&mut self) -> Notification {
        match self.recv().await {
            Some(Ok(Message::Notification(n))) => n,
            other => panic!("expected a notification, got {other:?}"),
        }
    }

    pub async fn send(&mut self, msg: Message) {
        self.sink.feed(&msg).await.expect("peer write");
        self.sink.flush().await.expect("peer flush");
    }

    /// Sends `msg`; `false` once the client has gone (for servers that outlive their client).
    pub async fn try_send(&mut self, msg: Message) -> bool {
        self.sink.feed(&msg).await.is_ok() && self.sink.flush().await.is_ok()
    }

    pub async fn respond(&mut self, id: RequestId, result: Value) {
        self.send(Message::result(id, result)).await;
    }

    /// Writes raw bytes (malformed frames and the like).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.sink.flush().await.expect("peer flush");
        let inner = self.sink_inner();
        inner.write_all(bytes).await.expect("peer raw write");
        inner.flush().await.expect("peer raw flush");
    }

    fn sink_inner(&mut self) -> &mut WriteHalf<DuplexStream> {
        self.sink.get_mut()
    }

    /// Drops the peer: the client sees end of stream.
    pub fn hang_up(self) {}
}
