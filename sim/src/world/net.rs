//! turmoil's simulated TCP behind the core's `Dialer` seam and the fake server's `Listener` seam. This is all the
//! simulator swaps in: the core and the fake servers run unchanged on top of it.
//!
//! [`Links`] is where a host's dialers come from: turmoil's here ([`TurmoilLinks`]), real loopback sockets through
//! relays in a live run (`crate::live`).

use std::sync::Arc;

use mcpstorm_core::{ByteStream, DialFuture, Dialer, TransportError};

use mcpstorm_fake::Listener;

/// The port a fake server listens on when it has a host of its own; replicas sharing a host take the ports after it,
/// one per slot (see [`Placement`](crate::scenario::Placement)).
pub const SERVER_PORT: u16 = 9000;

/// The port a gateway node serves agents on (`[nodes] count`; the process's default `[listen] http` port).
pub const NODE_PORT: u16 = 8848;

/// The port of the replica in `slot` on its host. Validation bounds replicas at 1,000, far below the last port.
pub fn port(slot: u16) -> u16 {
    SERVER_PORT.saturating_add(slot)
}

/// How host `caller` reaches `host:port` (a replica, or the Redis host): the world's network.
pub trait Links: Send + Sync + std::fmt::Debug {
    fn dialer(&self, caller: &str, host: &str, port: u16) -> Arc<dyn Dialer>;

    /// Where the gateway nodes serve MCP to the agents: one federated path (the gateway's `/mcp`, the default), or
    /// a path per server (a live run's middle that does not federate, such as a plain reverse proxy).
    fn node_paths(&self) -> NodePaths {
        NodePaths::default()
    }

    /// Whether a gateway node answers every call by the scenario's `[client] deadline`, as mcpstorm's gateway does:
    /// the agents then wait a little longer for the node's answer. A live run's middle that does not (a plain
    /// proxy waits as long as the server takes) is waited for that long and no longer: the deadline an agent gives
    /// each attempt, as it does through an in-process gateway.
    fn nodes_keep_the_deadline(&self) -> bool {
        true
    }
}

/// Where a gateway node serves MCP to the agents (see [`Links::node_paths`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodePaths {
    /// Every server at this one path: the node federates them (an agent calls a tool by its federated name).
    Federated(String),
    /// Each server at its own path, by the server's name (an agent calls the tool's own name there).
    PerServer(std::collections::BTreeMap<String, String>),
}

impl Default for NodePaths {
    fn default() -> Self {
        NodePaths::Federated("/mcp".to_owned())
    }
}

/// turmoil's network: every host dials every other by name.
#[derive(Debug, Clone, Copy, Default)]
pub struct TurmoilLinks;

impl Links for TurmoilLinks {
    fn dialer(&self, _caller: &str, host: &str, port: u16) -> Arc<dyn Dialer> {
        Arc::new(TurmoilDialer { host: host.to_owned(), port })
    }
}

/// Dials a fake server's host over turmoil TCP. Connecting across a partition is refused at once; connecting to a
/// crashed host hangs until the core's connect timeout.
#[derive(Debug, Clone)]
pub struct TurmoilDialer {
    pub host: String,
    pub port: u16,
}

impl Dialer for TurmoilDialer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let stream = turmoil::net::TcpStream::connect((self.host.as_str(), self.port))
                .await
                .map_err(|e| TransportError::ConnectFailed(format!("{}:{}: {e}", self.host, self.port)))?;
            let (reader, writer) = stream.into_split();
            Ok(ByteStream { reader: Box::new(reader), writer: Box::new(writer), guard: None })
        })
    }

    fn describe(&self) -> String {
        format!("turmoil {}:{}", self.host, self.port)
    }
}

/// turmoil's listener for the fake server.
pub struct TurmoilListener(pub turmoil::net::TcpListener);

impl std::fmt::Debug for TurmoilListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TurmoilListener")
    }
}

impl Listener for TurmoilListener {
    type Reader = turmoil::net::tcp::OwnedReadHalf;
    type Writer = turmoil::net::tcp::OwnedWriteHalf;

    async fn accept(&mut self) -> std::io::Result<(Self::Reader, Self::Writer, String)> {
        let (stream, peer) = self.0.accept().await?;
        let (reader, writer) = stream.into_split();
        Ok((reader, writer, peer.to_string()))
    }
}
