//! Binding a TCP listener with an accept queue deep enough for a burst of agents.
//!
//! `tokio::net::TcpListener::bind` listens with a backlog of 128, as the standard library does. A burst of new
//! connections larger than that (1,000 agents' calls in flight open 1,000 connections at once, and a gateway's
//! upstream pool does the same to its servers) overflows the accept queue before the accept loop drains it. Linux
//! then drops the SYNs it cannot queue, and each of those clients waits out its initial retransmission timeout,
//! one second, before its call even starts: a burst of agents pays a second per dropped SYN in its tail latency
//! (docs/benchmarks.md, "A deep accept queue").

use std::io;
use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket, ToSocketAddrs, lookup_host};

/// The accept queue asked for. Linux caps it at `net.core.somaxconn` (4096 by default since 5.4).
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds the first of `addr`'s addresses that binds (as `TcpListener::bind` does, with `SO_REUSEADDR`), listening
/// with a [`LISTEN_BACKLOG`]-deep accept queue. The error is the last address's, or "no address" when `addr`
/// resolves to none.
pub async fn bind_listener(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
    let mut last = None;
    for addr in lookup_host(addr).await? {
        match listen_on(addr) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the address resolves to no address")))
}

fn listen_on(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_burst_of_connects_larger_than_the_default_backlog_is_queued_before_the_first_accept() {
        let listener = bind_listener("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        // Nobody accepts while 300 connects are made: with the default backlog of 128 the rest would hang for the
        // SYN retransmission (a second and more); with the deep queue every handshake completes at once.
        let mut streams = Vec::new();
        for _ in 0..300 {
            let connect = tokio::net::TcpStream::connect(addr);
            let stream = tokio::time::timeout(std::time::Duration::from_millis(500), connect).await;
            streams.push(stream.expect("connected without a SYN retry").expect("connect"));
        }
        for _ in 0..300 {
            listener.accept().await.expect("accept");
        }
    }

    #[tokio::test]
    async fn an_address_that_cannot_be_bound_is_an_error_not_a_panic() {
        let taken = bind_listener("127.0.0.1:0").await.expect("bind");
        let addr = taken.local_addr().expect("addr");
        // A second listener on the same port: SO_REUSEADDR does not allow two listeners.
        assert!(bind_listener(addr).await.is_err());
        // An address of no interface here (TEST-NET-1).
        assert!(bind_listener("192.0.2.1:0").await.is_err());
    }
}
