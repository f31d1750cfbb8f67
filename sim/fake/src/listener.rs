//! The listener seam: the fake server accepts byte streams from tokio TCP here and from turmoil's simulated TCP in
//! the simulator, without knowing which.

use std::future::Future;

use tokio::io::{AsyncRead, AsyncWrite};

/// Accepts connections as (read half, write half, peer description).
pub trait Listener: Send + 'static {
    type Reader: AsyncRead + Unpin + Send + 'static;
    type Writer: AsyncWrite + Unpin + Send + 'static;

    /// The next connection. An error is treated as transient: the server logs it, waits briefly and accepts again.
    fn accept(&mut self) -> impl Future<Output = std::io::Result<(Self::Reader, Self::Writer, String)>> + Send;
}

impl Listener for tokio::net::TcpListener {
    type Reader = tokio::net::tcp::OwnedReadHalf;
    type Writer = tokio::net::tcp::OwnedWriteHalf;

    async fn accept(&mut self) -> std::io::Result<(Self::Reader, Self::Writer, String)> {
        let (stream, peer) = tokio::net::TcpListener::accept(self).await?;
        // Responses are small and latency is what we measure: do not let Nagle hold them back.
        let _ = stream.set_nodelay(true);
        let (reader, writer) = stream.into_split();
        Ok((reader, writer, peer.to_string()))
    }
}
