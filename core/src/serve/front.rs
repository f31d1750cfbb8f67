//! [`Front`]: one MCP server front, its shared state, the accept loop, the broadcast of server notifications and
//! the graceful stop.

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ring::hmac;
use ring::rand::SystemRandom;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::broadcast;

use super::keys::{KeyError, Keys};
use super::limits::FrontLimits;
use super::live::{Drain, SessionTable};
use super::service::Service;
use super::token::Revoked;
use crate::cancel::CancelToken;
use crate::jsonrpc::Message;

/// Server notifications queued per listener (GET stream, stdio); a listener further behind skips the oldest, which
/// costs nothing for `list_changed` (the agent re-lists once either way).
const NOTICES: usize = 64;

/// An MCP server front: agents connect over Streamable HTTP ([`Front::listen`]) or stdio ([`Front::serve_stdio`]),
/// and every request other than the lifecycle ones goes to the [`Service`]. Cheap to clone: clones share it.
#[derive(Clone, Debug)]
pub struct Front {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub service: Arc<dyn Service>,
    pub keys: Keys,
    pub limits: FrontLimits,
    revoked: Mutex<Revoked>,
    pub sessions: SessionTable,
    pub drain: Arc<Drain>,
    pub notices: broadcast::Sender<Message>,
    /// Stop accepting connections and requests.
    pub closing: CancelToken,
    /// The drain deadline passed: every request, stream and connection ends. Parent of every session's token.
    pub root: CancelToken,
    streams: AtomicU64,
    pub connections: AtomicUsize,
    bearer: Bearer,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front")
            .field("limits", &self.limits)
            .field("sessions", &self.sessions.len())
            .field("in_flight", &self.drain.count())
            .finish_non_exhaustive()
    }
}

impl Inner {
    pub fn revoked(&self) -> MutexGuard<'_, Revoked> {
        self.revoked.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn next_stream_id(&self) -> u64 {
        self.streams.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether an `Authorization` header value is one of the agent tokens (or none are configured).
    pub fn authorized(&self, authorization: Option<&[u8]>) -> bool {
        self.bearer.check(authorization)
    }
}

/// The agent tokens, kept as HMAC tags under a random key of this process: checking one is a constant-time tag
/// comparison whatever the lengths, and the tokens themselves are not kept.
struct Bearer {
    key: hmac::Key,
    tags: Vec<hmac::Tag>,
}

impl Bearer {
    fn new(limits: &FrontLimits) -> Result<Bearer, KeyError> {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &SystemRandom::new()).map_err(|_| KeyError::Random)?;
        let tags = limits.agent_tokens.iter().map(|t| hmac::sign(&key, t.expose().as_bytes())).collect();
        Ok(Bearer { key, tags })
    }

    fn check(&self, authorization: Option<&[u8]>) -> bool {
        if self.tags.is_empty() {
            return true;
        }
        // The scheme is case-insensitive (RFC 9110); the token is not.
        let token = authorization
            .and_then(|v| v.split_at_checked(7))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(b"bearer "));
        let Some((_, token)) = token else {
            return false;
        };
        // Every tag is tried: the time taken does not say which token matched.
        self.tags.iter().fold(false, |found, tag| hmac::verify(&self.key, token, tag.as_ref()).is_ok() | found)
    }
}

impl Front {
    /// A front for `service`, signing session ids with `keys`.
    pub fn new(service: Arc<dyn Service>, keys: Keys, limits: FrontLimits) -> Result<Front, KeyError> {
        let root = CancelToken::new();
        let inner = Inner {
            service,
            keys,
            revoked: Mutex::new(Revoked::new(limits.max_revoked)),
            sessions: SessionTable::new(limits.max_sessions),
            drain: Arc::default(),
            notices: broadcast::channel(NOTICES).0,
            closing: CancelToken::new(),
            root,
            streams: AtomicU64::new(1),
            connections: AtomicUsize::new(0),
            bearer: Bearer::new(&limits)?,
            limits,
        };
        Ok(Front { inner: Arc::new(inner) })
    }

    /// A front whose keys come from `MCPSTORM_SESSION_KEY`, or a random key of this process when it is unset (its
    /// sessions then do not survive a second replica or a restart; a warning says so).
    pub fn from_env(service: Arc<dyn Service>, limits: FrontLimits) -> Result<Front, KeyError> {
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
        Front::new(service, keys, limits)
    }

    /// Serves Streamable HTTP on `listener` until [`Front::shutdown`]: one task per connection (a panic there ends
    /// that connection only), at most `max_connections` open.
    pub async fn listen(&self, listener: TcpListener) {
        loop {
            let accepted = tokio::select! {
                biased;
                () = self.inner.closing.cancelled() => return,
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

    /// Binds `addr` and serves it on a task of its own; the bound address comes back (for port 0).
    pub async fn bind(&self, addr: &str) -> io::Result<std::net::SocketAddr> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let front = self.clone();
        tokio::spawn(async move { front.listen(listener).await });
        Ok(local)
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
        self.inner.notices.send(Message::notification(method, params)).unwrap_or(0)
    }

    /// Stops accepting connections and requests (503), lets the requests in flight finish for up to `drain`, then
    /// cancels what is left and closes every connection and stream.
    pub async fn shutdown(&self, drain: Duration) {
        self.inner.closing.cancel("the gateway is shutting down");
        let _ = tokio::time::timeout(drain, self.inner.drain.idle()).await;
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
