//! A loopback TCP relay between one caller (a load host's gateway) and one replica: the scenario's network in a
//! live run. It adds the one-way latency (`network.latency`, with jitter up to `network.max_latency`) to every
//! chunk in each direction, and it is where partitions and crashes happen:
//!
//! - a partition in [`PartitionMode::Drop`] (turmoil's semantics, the default) discards every byte sent while it
//!   lasts, and refuses new connections: the relay stops listening until the heal, so a caller's connect fails at
//!   once as turmoil's does (accepted and then closed, it would first count as connected and fail later);
//! - in [`PartitionMode::Hold`] (TCP's, whose retransmissions deliver what was sent once the link heals) bytes wait
//!   and are delivered after the heal; a connection opened meanwhile waits for the heal before it reaches the
//!   replica. A held direction stops reading once its queue is full, so the sender feels TCP's back-pressure;
//! - a process crash ([`Relay::set_upstream`] to `None`, then [`Relay::sever`]) drops every open connection and
//!   refuses new ones (the relay stops listening) until the replica serves again;
//! - a host crash ([`Relay::vanish`], turmoil's crash) answers nothing: open connections stay open and silent (what
//!   the caller sends is lost, what the dead replica's side did is not passed on), and a new connection's connect
//!   hangs, as a connect to a powered-off machine does (and turmoil's does, until the caller's connect timeout),
//!   until the host is back ([`Relay::sever`] then drops the held ones, as a rebooted host resets them). The relay
//!   makes a connect hang by listening with a full accept queue: the kernel drops the SYNs it cannot queue;
//! - a resetting process ([`Relay::reset`]) accepts each connection and resets it once its request has arrived,
//!   unread (the kernel answers a close with unread data by a reset), as the simulator's `reset` crash does.
//!
//! Order within a direction is kept: chunks are delivered one after another, each no earlier than its due time.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tokio::time::{Instant, sleep_until};

use crate::scenario::PartitionMode;

/// Chunks a direction holds (each up to [`CHUNK`] bytes) before it stops reading.
const QUEUE: usize = 64;
/// The largest read.
const CHUNK: usize = 16 * 1024;
/// How often (1 ms apart) a relay tries to listen again on its port after refusing connections.
const REBIND_TRIES: u32 = 1000;
/// The accept queue of a relay that listens (the system's usual default).
const ACCEPT_QUEUE: u32 = 1024;
/// The most connects a hanging relay makes to fill its own accept queue.
const MAX_FILLERS: usize = 8;

/// The one-way latency of each chunk: uniform in `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delay {
    pub min: Duration,
    pub max: Duration,
    /// How much earlier than its latency each chunk's timer is set: the runtime's timer overshoot (see
    /// `RunTime::aim`), so that chunks arrive after the scenario's latency on average, not a millisecond later.
    pub lead: Duration,
}

/// A running relay; dropping it stops it and drops every connection through it.
#[derive(Debug)]
pub struct Relay {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: AbortHandle,
}

#[derive(Debug)]
struct Shared {
    upstream: Mutex<Option<SocketAddr>>,
    /// Whether the link is partitioned now.
    cut: watch::Sender<bool>,
    mode: PartitionMode,
    delay: Delay,
    rng: Mutex<ChaCha8Rng>,
    /// The open connections' tasks (finished ones pruned as new ones come).
    conns: Mutex<Vec<AbortHandle>>,
    /// The replica's host has vanished (a host crash): nothing is passed on, nothing is closed.
    vanished: AtomicBool,
    /// The replica resets each connection once its request arrives (a `reset` crash).
    resetting: AtomicBool,
    /// How the relay's port answers a connect now.
    listening: watch::Sender<Listening>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain values, consistent after any panic.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Listens, refuses or holds connects, as the link's state now says.
    fn refresh(&self) {
        let cut = self.mode == PartitionMode::Drop && *self.cut.borrow();
        let now = if self.vanished.load(Ordering::SeqCst) {
            Listening::Hang
        } else if cut || (lock(&self.upstream).is_none() && !self.resetting.load(Ordering::SeqCst)) {
            Listening::Refuse
        } else {
            Listening::Accept
        };
        self.listening.send_if_modified(|listening| std::mem::replace(listening, now) != now);
    }

    fn latency(&self) -> Duration {
        let Delay { min, max, .. } = self.delay;
        if max <= min {
            return min;
        }
        lock(&self.rng).random_range(min..=max)
    }
}

impl Relay {
    /// Listens on a fresh loopback port and relays each connection to `upstream`. Inside a tokio runtime.
    pub fn start(upstream: SocketAddr, mode: PartitionMode, delay: Delay, seed: u64) -> io::Result<Relay> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream: Mutex::new(Some(upstream)),
            cut: watch::Sender::new(false),
            mode,
            delay,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            conns: Mutex::default(),
            vanished: AtomicBool::new(false),
            resetting: AtomicBool::new(false),
            listening: watch::Sender::new(Listening::Accept),
        });
        let accept = tokio::spawn(accept(addr, listener, shared.clone())).abort_handle();
        Ok(Relay { addr, shared, accept })
    }

    /// Where callers connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where new connections go; `None` refuses them (the replica is down).
    pub fn set_upstream(&self, upstream: Option<SocketAddr>) {
        *lock(&self.shared.upstream) = upstream;
        self.shared.refresh();
    }

    /// Cuts the link (`true`) or heals it.
    pub fn partition(&self, cut: bool) {
        self.shared.cut.send_replace(cut);
        self.shared.refresh();
    }

    /// The replica's host vanishes (`true`) or is back: see the module's docs.
    pub fn vanish(&self, vanished: bool) {
        self.shared.vanished.store(vanished, Ordering::SeqCst);
        self.shared.refresh();
    }

    /// The replica resets each new connection once its request arrives (`true`), or no longer does.
    pub fn reset(&self, resetting: bool) {
        self.shared.resetting.store(resetting, Ordering::SeqCst);
        self.shared.refresh();
    }

    /// Drops every open connection, at both ends.
    pub fn sever(&self) {
        for conn in lock(&self.shared.conns).drain(..) {
            conn.abort();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
        self.sever();
    }
}

/// How the relay's port answers a connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listening {
    /// Accepts, and relays.
    Accept,
    /// Refuses at once: nothing listens (a dropping partition, a crashed process).
    Refuse,
    /// Hangs: a listener whose accept queue is full, so the kernel drops each SYN (a vanished host).
    Hang,
}

/// Serves `addr` as the relay's state says: accepts while it listens, closes the listening socket while it refuses
/// (the caller's connect is refused at once), and holds a full one while it hangs; binds it again after.
async fn accept(addr: SocketAddr, listener: TcpListener, shared: Arc<Shared>) {
    let mut listener = Some(listener);
    let mut state = shared.listening.subscribe();
    loop {
        let now = *state.borrow_and_update();
        match now {
            Listening::Accept => {
                let Some(open) = listener.as_ref() else {
                    listener = listen(addr, ACCEPT_QUEUE).await;
                    continue;
                };
                let client = tokio::select! {
                    accepted = open.accept() => match accepted {
                        Ok((client, _)) => client,
                        // Out of descriptors and the like: transient; try again shortly rather than spin.
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    },
                    changed = state.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        listener = None;
                        continue;
                    }
                };
                let conn = tokio::spawn(connection(client, shared.clone())).abort_handle();
                let mut conns = lock(&shared.conns);
                conns.retain(|c| !c.is_finished());
                conns.push(conn);
            }
            Listening::Refuse => {
                listener = None;
                if state.changed().await.is_err() {
                    return;
                }
            }
            Listening::Hang => {
                listener = None;
                let hole = hang(addr).await;
                if state.changed().await.is_err() {
                    return;
                }
                drop(hole);
            }
        }
    }
}

/// A listener on `addr` whose accept queue is full (a backlog of 0, filled by the relay's own connects), and those
/// connects: while both live, a caller's connect to `addr` hangs. Nothing when `addr` cannot be bound again.
async fn hang(addr: SocketAddr) -> Option<(TcpListener, Vec<TcpStream>)> {
    let listener = listen(addr, 0).await?;
    let mut fillers = Vec::new();
    // Each connect the queue takes completes at once; the first it cannot take hangs: the queue is full.
    while fillers.len() < MAX_FILLERS {
        match tokio::time::timeout(Duration::from_millis(20), TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => fillers.push(stream),
            _ => break,
        }
    }
    Some((listener, fillers))
}

/// Listens on `addr` again (the port the callers know) with an accept queue of `backlog`, retrying while the system
/// still holds the port.
async fn listen(addr: SocketAddr, backlog: u32) -> Option<TcpListener> {
    for _ in 0..REBIND_TRIES {
        let bound = tokio::net::TcpSocket::new_v4().and_then(|socket| {
            socket.set_reuseaddr(true)?;
            socket.bind(addr)?;
            socket.listen(backlog)
        });
        match bound {
            Ok(listener) => return Some(listener),
            Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
    tracing::warn!(%addr, "a live relay could not listen again on its port: its link stays down");
    None
}

async fn connection(client: TcpStream, shared: Arc<Shared>) {
    if shared.vanished.load(Ordering::SeqCst) {
        // Accepted (the kernel completes the handshake), then never answered: held until severed.
        let _held = client;
        return std::future::pending::<()>().await;
    }
    let mut cut = shared.cut.subscribe();
    if *cut.borrow_and_update() {
        match shared.mode {
            PartitionMode::Drop => return,
            PartitionMode::Hold => {
                if cut.wait_for(|c| !*c).await.is_err() {
                    return;
                }
            }
        }
    }
    if shared.resetting.load(Ordering::SeqCst) {
        // Closed with the request unread, so the kernel resets the connection rather than ending it.
        let _ = client.peek(&mut [0u8; 1]).await;
        return;
    }
    let Some(upstream) = *lock(&shared.upstream) else { return };
    let Ok(server) = TcpStream::connect(upstream).await else { return };
    // Latency is what a run measures: no Nagle delays on either leg.
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    tokio::join!(pump(client_read, server_write, &shared), pump(server_read, client_write, &shared));
}

/// Bytes read at one end, due at the other at `at`.
struct Chunk {
    at: Instant,
    bytes: Vec<u8>,
    /// Read while a dropping partition was on: lost whenever it is due.
    lost: bool,
}

/// One direction: reads chunks as they come and delivers each after its latency, unless a partition drops or
/// holds it. Ends when the source ends (then shuts the destination's write side) or the destination fails.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, shared: &Shared) {
    let (tx, mut rx) = mpsc::channel::<Chunk>(QUEUE);
    let read = async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let lost = shared.mode == PartitionMode::Drop && *shared.cut.borrow();
            let now = Instant::now();
            let at = (now + shared.latency()).checked_sub(shared.delay.lead).map_or(now, |at| at.max(now));
            let chunk = Chunk { at, bytes: buf[..n].to_vec(), lost };
            if tx.send(chunk).await.is_err() {
                break;
            }
        }
    };
    let mut cut = shared.cut.subscribe();
    let write = async move {
        while let Some(chunk) = rx.recv().await {
            sleep_until(chunk.at).await;
            if *cut.borrow_and_update() {
                match shared.mode {
                    PartitionMode::Drop => continue,
                    PartitionMode::Hold => {
                        if cut.wait_for(|c| !*c).await.is_err() {
                            return;
                        }
                    }
                }
            }
            if chunk.lost || shared.vanished.load(Ordering::SeqCst) {
                continue;
            }
            if to.write_all(&chunk.bytes).await.is_err() {
                return;
            }
        }
        if shared.vanished.load(Ordering::SeqCst) {
            // The dead replica's end closed; a vanished host says nothing, so the caller's end stays open.
            std::future::pending::<()>().await;
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(read, write);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo-less sink: accepts one connection and returns everything it reads until the peer closes.
    async fn sink() -> (SocketAddr, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.expect("accept");
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got).await;
            got
        });
        (addr, task)
    }

    const NONE: Delay = Delay { min: Duration::ZERO, max: Duration::ZERO, lead: Duration::ZERO };

    /// Sends `before`, cuts the link, sends `during`, heals, sends `after`, closes; returns what the replica got.
    async fn through_a_partition(mode: PartitionMode) -> String {
        let (addr, received) = sink().await;
        let relay = Relay::start(addr, mode, NONE, 1).expect("relay");
        let mut client = TcpStream::connect(relay.addr()).await.expect("connect");
        let settle = || tokio::time::sleep(Duration::from_millis(100));
        client.write_all(b"before;").await.expect("write");
        settle().await;
        relay.partition(true);
        client.write_all(b"during;").await.expect("write");
        settle().await;
        relay.partition(false);
        client.write_all(b"after").await.expect("write");
        client.shutdown().await.expect("shutdown");
        String::from_utf8(received.await.expect("sink")).expect("utf-8")
    }

    #[tokio::test]
    async fn a_dropping_partition_loses_what_was_sent_during_it() {
        assert_eq!(through_a_partition(PartitionMode::Drop).await, "before;after");
    }

    #[tokio::test]
    async fn a_holding_partition_delivers_what_was_sent_during_it_after_the_heal() {
        assert_eq!(through_a_partition(PartitionMode::Hold).await, "before;during;after");
    }

    /// Whether connecting to the relay is refused (as turmoil refuses a connect across a partition), retrying
    /// briefly while the relay closes its listening socket (it reacts on its own task).
    async fn refused(relay: &Relay) -> bool {
        for _ in 0..100 {
            match TcpStream::connect(relay.addr()).await {
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return true,
                _ => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
        false
    }

    /// Whether a connection through the relay reaches the replica, retrying while the relay listens again.
    async fn connects(relay: &Relay) -> bool {
        for _ in 0..100 {
            if TcpStream::connect(relay.addr()).await.is_ok() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        false
    }

    #[tokio::test]
    async fn a_dropping_partition_refuses_new_connections_and_a_down_replica_too_on_the_same_port_after() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let relay = Relay::start(listener.local_addr().expect("addr"), PartitionMode::Drop, NONE, 1).expect("relay");
        relay.partition(true);
        assert!(refused(&relay).await, "a connect across a dropping partition is refused");
        relay.partition(false);
        assert!(connects(&relay).await, "the heal listens again on the port the callers know");
        relay.set_upstream(None);
        assert!(refused(&relay).await, "a crashed process refuses");
        relay.set_upstream(Some(listener.local_addr().expect("addr")));
        assert!(connects(&relay).await);
    }

    #[tokio::test]
    async fn severing_drops_open_connections() {
        let (addr, received) = sink().await;
        let relay = Relay::start(addr, PartitionMode::Drop, NONE, 1).expect("relay");
        let mut client = TcpStream::connect(relay.addr()).await.expect("connect");
        client.write_all(b"x").await.expect("write");
        tokio::time::sleep(Duration::from_millis(100)).await;
        relay.sever();
        // Both ends see the connection end: the replica's read ends, and so does the client's.
        assert_eq!(received.await.expect("sink"), b"x");
        let mut buf = [0u8; 1];
        assert!(matches!(client.read(&mut buf).await, Ok(0) | Err(_)));
    }

    #[tokio::test]
    async fn a_resetting_replica_accepts_and_resets_each_connection_once_its_request_arrives() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let relay = Relay::start(listener.local_addr().expect("addr"), PartitionMode::Drop, NONE, 1).expect("relay");
        relay.reset(true);
        relay.set_upstream(None);
        assert!(connects(&relay).await, "a resetting replica still accepts");
        let mut client = TcpStream::connect(relay.addr()).await.expect("connect");
        client.write_all(b"{\"jsonrpc\":\"2.0\"}\n").await.expect("the request is sent");
        let mut buf = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut buf)).await.expect("an answer");
        assert!(
            matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
            "reset, not an answer or a clean end: {read:?}"
        );
        relay.reset(false);
        assert!(refused(&relay).await, "no longer resetting and still down: refused");
    }

    /// Whether `c` stays silent and open for a while: no byte, no end of stream.
    async fn silent(c: &mut TcpStream) -> bool {
        let mut buf = [0u8; 1];
        tokio::time::timeout(Duration::from_millis(200), c.read(&mut buf)).await.is_err()
    }

    #[tokio::test]
    async fn a_vanished_host_keeps_connections_open_and_silent_until_it_is_back() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let relay = Relay::start(listener.local_addr().expect("addr"), PartitionMode::Drop, NONE, 1).expect("relay");
        let mut open = TcpStream::connect(relay.addr()).await.expect("connect");
        let (replica_side, _) = listener.accept().await.expect("the relay dials the replica");
        // The host vanishes: its process is gone (its end of the connection closes) but nothing tells the caller.
        relay.set_upstream(None);
        relay.vanish(true);
        drop(replica_side);
        open.write_all(b"anyone?").await.expect("what the caller sends is taken, and lost");
        assert!(silent(&mut open).await, "an open connection says nothing, not even its end");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let connect = tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(relay.addr())).await;
        assert!(connect.is_err(), "a new connect hangs, as to a powered-off machine: {connect:?}");
        // The host is back: what it held is reset, and connects are accepted again on the same port.
        relay.set_upstream(Some(listener.local_addr().expect("addr")));
        relay.sever();
        relay.vanish(false);
        let mut buf = [0u8; 1];
        assert!(matches!(open.read(&mut buf).await, Ok(0) | Err(_)));
        assert!(connects(&relay).await, "back: connects complete again");
    }
}
