//! The Streamable HTTP transport against a scripted peer: the 2025-11-25 era with its session (`legacy`), the
//! 2026-07-28 era (`modern`), hostile answers (`hostile`) and HTTPS (`tls`).

mod hostile;
mod legacy;
mod modern;
mod peer;
mod tls;

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::{ClientConfig, HttpEndpoint, McpClient, SeededRng, TcpDialer};

/// A client of `endpoint`, no reconnect retries, short era probe.
pub fn client_of(endpoint: HttpEndpoint, addr: &str) -> McpClient {
    let mut config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
    config.discover_timeout = Duration::from_secs(5);
    config.connection.call_deadline = Duration::from_secs(20);
    config.connection.first_response = Duration::from_secs(20);
    McpClient::new("peer", Arc::new(TcpDialer { addr: addr.to_owned() }), config, SeededRng::new(7)).with_http(endpoint)
}

pub fn client(peer: &peer::Peer) -> McpClient {
    client_of(HttpEndpoint::new(&peer.url()).expect("endpoint"), &peer.addr)
}
