//! One service of a live run behind its relays: a fake server replica, the Redis double of `[gateway.sync]`, the
//! identity provider double of `[identity_provider]`, or a gateway node (an `mcpstorm gateway` process, see `node`). Its callers reach it only through their relays (one per
//! caller, so a partition can cut one link), which is where crashes and partitions happen:
//!
//! - a crash stops the service at once and its relays end every connection (turmoil closes a crashed host's
//!   sockets: the peer reads their end); by the crash's `mode`, a new connect is then refused at once (`refuse`: the
//!   process died), hangs until the caller's connect timeout (`hang`: the host vanished), or is accepted and reset
//!   once its request arrives (`reset`), as the simulator's are;
//! - the restart serves it afresh (a fake with no sessions, as the simulator's `bounce`; the Redis double with its
//!   data, as a Redis with persistence; a new gateway process with no breaker or router state), and the relays are
//!   told where it now listens.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use mcpstorm_fake::idp::IdentityProvider;
use mcpstorm_fake::{FakeServer, RedisDouble};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::relay::Relay;
use crate::scenario::CrashMode;

/// What an endpoint runs: started (again) by a restart, stopped by a crash.
pub trait Service: Send + std::fmt::Debug {
    /// Starts serving; returns where. Called again after [`Service::stop`] (a restart).
    fn start(&mut self) -> io::Result<SocketAddr>;
    /// Stops at once, as a crash does: every connection drops.
    fn stop(&mut self);
    fn is_up(&self) -> bool;
    /// Why it stopped on its own (a process that exited while it was meant to serve), once; `None` while it serves.
    fn died(&mut self) -> Option<String> {
        None
    }
}

type Serve = dyn Fn(TcpListener) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync;

/// A service run in this process, on a fresh loopback port at each start: a fake server or the Redis double.
pub struct InProcess {
    serve: Arc<Serve>,
    serving: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcess").field("up", &self.serving.is_some()).finish()
    }
}

impl InProcess {
    /// A fake server replica (`serve` starts it with no sessions).
    pub fn fake(server: FakeServer) -> InProcess {
        InProcess::new(move |listener| {
            let server = server.clone();
            Box::pin(async move { server.serve(listener).await })
        })
    }

    /// The Redis double (its data outlives a restart).
    pub fn redis(double: RedisDouble) -> InProcess {
        InProcess::new(move |listener| {
            let double = double.clone();
            Box::pin(async move { double.serve(listener).await })
        })
    }

    /// The identity provider double (the tokens it issued outlive a restart).
    pub fn idp(idp: IdentityProvider) -> InProcess {
        InProcess::new(move |listener| {
            let idp = idp.clone();
            Box::pin(async move { idp.serve(listener).await })
        })
    }

    fn new(serve: impl Fn(TcpListener) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static) -> Self {
        InProcess { serve: Arc::new(serve), serving: None }
    }
}

impl Service for InProcess {
    fn start(&mut self) -> io::Result<SocketAddr> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        self.serving = Some(tokio::spawn((self.serve)(listener)));
        Ok(addr)
    }

    fn stop(&mut self) {
        if let Some(serving) = self.serving.take() {
            // Dropping the serving future closes the listener and aborts every connection.
            serving.abort();
        }
    }

    fn is_up(&self) -> bool {
        self.serving.is_some()
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

#[derive(Debug)]
pub struct Endpoint {
    service: Box<dyn Service>,
    /// Each caller's relay to this endpoint, by the caller's host name.
    pub relays: Vec<(String, Relay)>,
}

impl Endpoint {
    /// `service`, serving (inside a tokio runtime) if it is not yet. Its relays are added by the caller.
    pub fn start(mut service: Box<dyn Service>) -> io::Result<(Endpoint, SocketAddr)> {
        let addr = service.start()?;
        Ok((Endpoint { service, relays: Vec::new() }, addr))
    }

    /// An endpoint whose service already serves at `addr` (a gateway process, started and awaited by its caller).
    pub fn serving(service: Box<dyn Service>) -> Endpoint {
        Endpoint { service, relays: Vec::new() }
    }

    /// A crash: the service stops and every connection through its relays ends. Of the process: the relays refuse
    /// new connects. Of the host: a new connect hangs (see `Relay::vanish`).
    pub fn crash(&mut self, mode: CrashMode) {
        self.service.stop();
        for (_, relay) in &self.relays {
            // Whatever the mode its connections end (turmoil closes a crashed host's sockets: the peer reads their
            // end).
            relay.sever();
            // Set before it has no upstream: a host that vanishes, or a process that resets, never refuses a connect.
            match mode {
                CrashMode::Hang => relay.vanish(true),
                CrashMode::Reset => relay.reset(true),
                CrashMode::Refuse => {}
            }
            relay.set_upstream(None);
        }
    }

    /// The service starts again (if it was down).
    pub fn restart(&mut self) -> io::Result<()> {
        if self.service.is_up() {
            return Ok(());
        }
        let addr = self.service.start()?;
        for (_, relay) in &self.relays {
            // A host that comes back resets the connections it had: they were held open while it was gone.
            relay.set_upstream(Some(addr));
            relay.sever();
            relay.vanish(false);
            relay.reset(false);
        }
        Ok(())
    }

    /// Why its service stopped on its own, if it did (see [`Service::died`]).
    pub fn died(&mut self) -> Option<String> {
        self.service.died()
    }

    /// Cuts (or heals) the links from `from`, or from every caller.
    pub fn partition(&self, from: Option<&str>, cut: bool) {
        for (caller, relay) in &self.relays {
            if from.is_none_or(|f| f == caller) {
                relay.partition(cut);
            }
        }
    }
}
