//! In-memory pipes in place of a network: a client reaches a server through the core's `Dialer` seam and no byte
//! leaves the process, so tokio's paused time governs every wait and a test's timings are exact.

use std::future::Future;

use mcpstorm_core::{ByteStream, DialFuture, Dialer};
use tokio::io::DuplexStream;

use crate::FakeServer;

/// Each way's buffer of a pipe to a fake server.
const FAKE_PIPE_BYTES: usize = 64 * 1024;

/// Opens a pipe of `capacity` bytes each way, hands the server's end to `serve` on a new task and returns the
/// client's end.
pub fn spawn_server<F, Fut>(capacity: usize, serve: F) -> DuplexStream
where
    F: FnOnce(DuplexStream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(capacity);
    tokio::spawn(serve(theirs));
    ours
}

/// The client's end of a pipe as the byte stream a `Dialer` returns.
pub fn byte_stream(stream: DuplexStream) -> ByteStream {
    let (reader, writer) = tokio::io::split(stream);
    ByteStream { reader: Box::new(reader), writer: Box::new(writer), guard: None }
}

impl FakeServer {
    /// A new connection to this server over an in-memory pipe: the client's end.
    pub fn connect_pipe(&self) -> DuplexStream {
        let server = self.clone();
        spawn_server(FAKE_PIPE_BYTES, move |theirs| async move {
            let (reader, writer) = tokio::io::split(theirs);
            server.serve_connection(reader, writer).await;
        })
    }
}

/// Dials a fake server through in-memory pipes: each dial is one new server connection.
#[derive(Debug, Clone)]
pub struct PipeDialer(pub FakeServer);

impl Dialer for PipeDialer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move { Ok(byte_stream(self.0.connect_pipe())) })
    }

    fn describe(&self) -> String {
        "pipe to a fake".into()
    }
}
