//! The HTTP/1.1 keep-alive pool of one upstream: bounded in open connections and in requests waiting for one.
//!
//! Written here rather than taken from hyper-util's legacy client: that pool reads std time for idle expiry (which
//! the core must not: a simulator drives its clock) and wants a tower connector, where ours dials through the
//! core's `Dialer` seam. A connection the server closed while idle is noticed by hyper and skipped.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;
use tokio::time::timeout;

use super::endpoint::{HttpLimits, PoolConfig};
use super::tls::Tls;
use crate::error::{CallError, HttpError, LocalError, TransportError};
use crate::rt::Dialer;

trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// One HTTP/1.1 connection. Dropping it closes it: its connection task is aborted, which drops the socket.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    task: AbortHandle,
    _guard: Option<Box<dyn Send + Sync>>,
    pool: Arc<Counts>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.task.abort();
        self.pool.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The pool's gauges at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolState {
    /// Connections open, busy or idle.
    pub open: usize,
    pub idle: usize,
    /// Requests waiting for a connection.
    pub waiting: usize,
}

/// Told the pool's state on every change (the client turns it into an `Observer` event).
pub type PoolGauge = Arc<dyn Fn(PoolState) + Send + Sync>;

#[derive(Debug, Default)]
struct Counts {
    open: AtomicUsize,
    waiting: AtomicUsize,
}

pub(crate) struct Pool {
    dialer: Arc<dyn Dialer>,
    tls: Option<Tls>,
    connect_timeout: Duration,
    config: PoolConfig,
    limits: HttpLimits,
    /// Most recently returned at the back.
    idle: Mutex<VecDeque<Conn>>,
    slots: Arc<Semaphore>,
    counts: Arc<Counts>,
    gauge: Option<PoolGauge>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("dialer", &self.dialer).field("config", &self.config).finish_non_exhaustive()
    }
}

/// A connection lent to one exchange, with its slot. Returned to the pool by [`Lease::release`] once its response
/// is read to the end; dropped otherwise (closing it, as it may hold unread bytes).
pub(crate) struct Lease {
    conn: Option<Conn>,
    pool: Arc<Pool>,
    /// Whether the connection served an earlier exchange (it may have been closed by the server meanwhile).
    pub reused: bool,
    _slot: OwnedSemaphorePermit,
}

impl Lease {
    pub fn sender(&mut self) -> Option<&mut SendRequest<Full<Bytes>>> {
        self.conn.as_mut().map(|c| &mut c.sender)
    }

    /// Back to the idle list, if the connection can take another request.
    pub fn release(mut self) {
        if let Some(conn) = self.conn.take().filter(|c| !c.sender.is_closed() && c.sender.is_ready()) {
            let mut idle = self.pool.idle();
            if idle.len() < self.pool.config.max_connections {
                idle.push_back(conn);
            }
        }
        self.pool.report();
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.conn.take().is_some() {
            self.pool.report();
        }
    }
}

/// Decrements the waiting count however the wait ends.
struct Waiting<'a>(&'a Counts);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Pool {
    pub fn new(
        dialer: Arc<dyn Dialer>,
        tls: Option<Tls>,
        connect_timeout: Duration,
        config: PoolConfig,
        limits: HttpLimits,
        gauge: Option<PoolGauge>,
    ) -> Pool {
        Pool {
            dialer,
            tls,
            connect_timeout,
            slots: Arc::new(Semaphore::new(config.max_connections.max(1))),
            config,
            limits,
            idle: Mutex::default(),
            counts: Arc::default(),
            gauge,
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, VecDeque<Conn>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn report(&self) {
        if let Some(gauge) = &self.gauge {
            gauge(PoolState {
                open: self.counts.open.load(Ordering::Relaxed),
                idle: self.idle().len(),
                waiting: self.counts.waiting.load(Ordering::Relaxed),
            });
        }
    }

    /// A connection for one exchange: an idle one if there is one, else a new one, within the pool's bounds.
    pub async fn acquire(self: &Arc<Self>) -> Result<Lease, CallError> {
        let slot = match self.slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if self.counts.waiting.fetch_add(1, Ordering::Relaxed) >= self.config.max_waiting {
                    self.counts.waiting.fetch_sub(1, Ordering::Relaxed);
                    self.report();
                    return Err(LocalError::QueueFull.into());
                }
                let waiting = Waiting(&self.counts);
                self.report();
                let wait = self.config.max_wait;
                let slot = timeout(wait, self.slots.clone().acquire_owned()).await;
                drop(waiting);
                match slot {
                    Ok(Ok(slot)) => slot,
                    Ok(Err(_)) => return Err(TransportError::Shutdown.into()),
                    Err(_) => return Err(LocalError::QueueTimeout(wait).into()),
                }
            }
        };
        let idle = {
            let mut idle = self.idle();
            // Connections the server closed while idle are dropped from both ends: the oldest are the likeliest to
            // have been closed (a server's idle timeout), the newest is the one lent. Never a sweep of the whole
            // list: with a thousand idle connections, that was a thousand checks per request.
            while idle.front().is_some_and(|c| c.sender.is_closed()) {
                idle.pop_front();
            }
            std::iter::from_fn(|| idle.pop_back()).find(|c| !c.sender.is_closed())
        };
        if let Some(conn) = idle {
            return Ok(Lease { conn: Some(conn), pool: self.clone(), reused: true, _slot: slot });
        }
        let conn = self.dial().await;
        self.report();
        Ok(Lease { conn: Some(conn?), pool: self.clone(), reused: false, _slot: slot })
    }

    /// Opens a new connection; its slot is the caller's.
    async fn dial(&self) -> Result<Conn, CallError> {
        let limit = self.connect_timeout;
        let open = async {
            let stream = self.dialer.dial().await?;
            let io = tokio::io::join(stream.reader, stream.writer);
            let io: Box<dyn Io> = match &self.tls {
                None => Box::new(io),
                Some(tls) => Box::new(
                    tls.connector
                        .connect(tls.name.clone(), io)
                        .await
                        .map_err(|e| TransportError::Http(HttpError::Tls(e.to_string())))?,
                ),
            };
            let mut builder = http1::Builder::new();
            // hyper panics on a buffer below its 8 KiB minimum.
            builder.max_headers(self.limits.max_headers).max_header_size(self.limits.max_head);
            builder.max_buf_size(self.limits.max_head.max(8192).max(64 * 1024));
            let (sender, conn) = builder
                .handshake(TokioIo::new(io))
                .await
                .map_err(|e| TransportError::Http(HttpError::Exchange(e.to_string())))?;
            let task = tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::trace!(error = %e, "HTTP connection ended");
                }
            })
            .abort_handle();
            self.counts.open.fetch_add(1, Ordering::Relaxed);
            Ok::<_, TransportError>(Conn { sender, task, _guard: stream.guard, pool: self.counts.clone() })
        };
        match timeout(limit, open).await {
            Ok(conn) => Ok(conn?),
            Err(_) => Err(TransportError::ConnectTimeout(limit).into()),
        }
    }

    /// A connection outside the pool's bounds, for the one long-lived `GET` stream of a session: it must not hold
    /// a slot that requests queue for.
    pub async fn dedicated(self: &Arc<Self>) -> Result<Lease, CallError> {
        let conn = self.dial().await?;
        // A slot of its own, so `Lease` stays one type.
        let slot = Arc::new(Semaphore::new(1)).try_acquire_owned().map_err(|_| TransportError::Shutdown)?;
        Ok(Lease { conn: Some(conn), pool: self.clone(), reused: false, _slot: slot })
    }
}
