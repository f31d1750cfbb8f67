//! One fake server replica of a live run: the scenario's [`FakeServer`] on a loopback port of its own, reached only
//! through its relays (one per load host, so a partition can cut one link). A crash stops its listener and drops
//! its connections; the restart serves it again on a new port with no sessions, as the simulator's `bounce` does
//! (the callers keep dialing their relays, which are told where it now listens).

use std::io;
use std::net::SocketAddr;

use mcpstorm_fake::FakeServer;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::relay::Relay;
use crate::scenario::CrashMode;

#[derive(Debug)]
pub struct Replica {
    server: FakeServer,
    serving: Option<JoinHandle<()>>,
    /// Each load host's relay to this replica, by the load host's name.
    pub relays: Vec<(String, Relay)>,
}

impl Replica {
    /// The replica, serving (inside a tokio runtime). Its relays are added by the caller.
    pub fn start(server: FakeServer) -> io::Result<(Replica, SocketAddr)> {
        let mut replica = Replica { server, serving: None, relays: Vec::new() };
        let addr = replica.serve()?;
        Ok((replica, addr))
    }

    /// Listens on a fresh loopback port and serves there (a restart: `serve` starts with no sessions).
    fn serve(&mut self) -> io::Result<SocketAddr> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        let server = self.server.clone();
        self.serving = Some(tokio::spawn(async move { server.serve(listener).await }));
        Ok(addr)
    }

    /// A crash. Of the process: its listener closes, every connection drops, and its relays refuse new ones. Of the
    /// host: the process is gone too, but its relays pass nothing on and close nothing (see `Relay::vanish`).
    pub fn crash(&mut self, mode: CrashMode) {
        if let Some(serving) = self.serving.take() {
            // Dropping `serve`'s future closes the listener and aborts every connection.
            serving.abort();
        }
        for (_, relay) in &self.relays {
            relay.set_upstream(None);
            match mode {
                CrashMode::Process => relay.sever(),
                CrashMode::Host => relay.vanish(true),
            }
        }
    }

    /// The process starts again (if it was down).
    pub fn restart(&mut self) -> io::Result<()> {
        if self.serving.is_some() {
            return Ok(());
        }
        let addr = self.serve()?;
        for (_, relay) in &self.relays {
            // A host that comes back resets the connections it had: they were held open while it was gone.
            relay.sever();
            relay.vanish(false);
            relay.set_upstream(Some(addr));
        }
        Ok(())
    }

    /// Cuts (or heals) the links from `from`, or from every load host.
    pub fn partition(&self, from: Option<&str>, cut: bool) {
        for (caller, relay) in &self.relays {
            if from.is_none_or(|f| f == caller) {
                relay.partition(cut);
            }
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(serving) = self.serving.take() {
            serving.abort();
        }
    }
}
