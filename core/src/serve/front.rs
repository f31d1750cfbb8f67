//! [`Front`]: one MCP server front, the accept loop, the broadcast of server notifications and the graceful stop.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

use super::keys::{KeyError, Keys};
use super::limits::FrontLimits;
use super::service::Service;
use super::shared::{Notice, Shared};
use crate::jsonrpc::Message;
use crate::rt::Clock;

/// How long a drained front stays up after its last call finished: an agent closes its session (DELETE) right after
/// its call's answer, and a closed listener would fail that close on the agent's side.
const LINGER: Duration = Duration::from_millis(500);

/// An MCP server front: agents connect over Streamable HTTP ([`Front::listen`]) or stdio ([`Front::serve_stdio`]),
/// and every request other than the lifecycle ones goes to the [`Service`]. Cheap to clone: clones share it.
#[derive(Clone, Debug)]
pub struct Front {
    pub(crate) inner: Arc<Shared>,
}

impl Front {
    /// A front for `service`, signing session ids with `keys`. `clock` gives wall time for the ids' issue times
    /// (the binary's `TokioClock` anchored on the system clock; the core never reads the system clock itself).
    pub fn new(
        service: Arc<dyn Service>,
        keys: Keys,
        limits: FrontLimits,
        clock: Arc<dyn Clock>,
    ) -> Result<Front, KeyError> {
        Ok(Front { inner: Arc::new(Shared::new(service, keys, limits, clock)?) })
    }

    /// A front whose keys come from `MCPSTORM_SESSION_KEY`, or a random key of this process when it is unset (its
    /// sessions then do not survive a second replica or a restart; a warning says so).
    pub fn from_env(service: Arc<dyn Service>, limits: FrontLimits, clock: Arc<dyn Clock>) -> Result<Front, KeyError> {
        let keys = match Keys::from_env()? {
            Some(keys) => keys,
            None => {
                tracing::warn!(
                    "{} is not set: agent sessions are signed with a random key of this process and will not \
                     survive a second replica or a restart",
                    super::keys::SESSION_KEY_ENV
                );
                Keys::random()?
            }
        };
        Front::new(service, keys, limits, clock)
    }

    /// Serves Streamable HTTP on `listener` until [`Front::shutdown`]: one task per connection (a panic there ends
    /// that connection only), at most `max_connections` open.
    pub async fn listen(&self, listener: TcpListener) {
        // Where the fleet's other processes forward this process's agents' answers (see `asks`): the bound address,
        // unless it is a wildcard (then only `serving_at` can say).
        if let Ok(addr) = listener.local_addr()
            && !addr.ip().is_unspecified()
        {
            self.inner.asks.serving_at(format!("http://{addr}{}", super::MCP_PATH));
        }
        loop {
            // Accepting goes on through the drain (new work is answered 503 there), until the drain ends: an agent
            // with a call in flight may open another connection for its stream or its DELETE.
            let accepted = tokio::select! {
                biased;
                () = self.inner.root.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, _)) => {
                    if self.inner.connections.load(Ordering::SeqCst) >= self.inner.limits.max_connections {
                        // Closed at once: the client sees a reset, the others are served.
                        drop(stream);
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(super::http::serve_connection(self.inner.clone(), stream));
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    /// Binds `addr` (with a deep accept queue: [`super::bind_listener`]) and serves it on a task of its own; the
    /// bound address comes back (for port 0).
    pub async fn bind(&self, addr: &str) -> io::Result<std::net::SocketAddr> {
        let listener = super::listener::bind_listener(addr).await?;
        let local = listener.local_addr()?;
        let front = self.clone();
        tokio::spawn(async move { front.listen(listener).await });
        Ok(local)
    }

    /// Says where this process serves MCP for the other processes of its fleet (its address as they reach it, e.g.
    /// behind a wildcard bind): the answers its agents owe it that reach another process are forwarded there. Call
    /// before [`Front::listen`]; the first URL set stays.
    pub fn serving_at(&self, url: String) {
        self.inner.asks.serving_at(url);
    }

    /// Serves one HTTP/1.1 connection (any byte stream) until it closes.
    pub async fn serve_connection<IO>(&self, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        super::http::serve_connection(self.inner.clone(), io).await;
    }

    /// Serves one agent over newline-delimited JSON-RPC (see [`super::serve_stdio`]).
    pub async fn serve_stdio<R, W>(&self, reader: R, writer: W)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        super::stdio::serve(self.inner.clone(), reader, writer).await;
    }

    /// Sends a notification (e.g. `notifications/tools/list_changed`) to every connected agent session: on each
    /// 2025-11-25 GET stream and to the stdio peer. 2026-07-28 has no channel for it. Returns how many listeners
    /// it was queued for.
    pub fn notify_all(&self, method: &str, params: Option<Value>) -> usize {
        self.inner.notices.send(Notice { to: None, msg: Message::notification(method, params) }).unwrap_or(0)
    }

    /// Sends a notification (e.g. `notifications/resources/updated`) to one agent session, by the id the service
    /// knows it by ([`RequestCtx::session`](super::RequestCtx)): on its 2025-11-25 GET stream, or to the stdio
    /// peer. Lossy as [`Front::notify_all`] is: a session with no stream open in this process gets nothing.
    pub fn notify_session(&self, session: &str, method: &str, params: Option<Value>) {
        let notice = Notice { to: Some(Arc::from(session)), msg: Message::notification(method, params) };
        let _ = self.inner.notices.send(notice);
    }

    /// Answers new work 503 (with `Retry-After`), lets the requests in flight finish for up to `drain` (their
    /// sessions' other requests and DELETEs are still served), lingers [`LINGER`] for the DELETEs of sessions whose
    /// calls just finished, then cancels what is left and closes every connection and stream.
    pub async fn shutdown(&self, drain: Duration) {
        self.inner.closing.cancel("the gateway is shutting down");
        let deadline = tokio::time::Instant::now() + drain;
        let _ = tokio::time::timeout_at(deadline, self.inner.drain.idle()).await;
        tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + LINGER)).await;
        self.inner.root.cancel("the gateway stopped");
    }

    /// Requests being answered now.
    pub fn in_flight(&self) -> usize {
        self.inner.drain.count()
    }

    /// 2025-11-25 sessions with state in this process.
    pub fn live_sessions(&self) -> usize {
        self.inner.sessions.len()
    }
}
