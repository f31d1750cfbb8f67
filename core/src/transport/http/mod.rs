//! The Streamable HTTP client transport, for both MCP eras, behind the same [`MessageSink`]/[`MessageSource`] seam
//! as the newline-delimited one.
//!
//! Every message the connection writes becomes its own HTTP POST ("Sending Messages to the Server"); what the
//! server answers (a JSON body, or an SSE stream of notifications and requests before the response) comes out of the
//! source in arrival order. The era is read off each request: one whose `params._meta` carries
//! `io.modelcontextprotocol/protocolVersion` is a 2026-07-28 request (no session; `MCP-Protocol-Version` from that
//! field, `Mcp-Method`, `Mcp-Name`; cancellation closes its stream), any other a 2025-11-25 one (the
//! `Mcp-Session-Id` and the `MCP-Protocol-Version` negotiated by `initialize`; the optional `GET` stream;
//! resumption with `Last-Event-ID`).
//!
//! Each exchange fails on its own ([`FrameError::Exchange`]): a refused connection or a 5xx fails that call, not
//! the others, and the connection stays up, as HTTP has no connection of its own to lose. HTTP answers with a
//! JSON-RPC meaning become JSON-RPC error responses (see `status.rs`), so the session and era layers react to them
//! as they do on any transport.
//!
//! ```text
//! writer ─► HttpSink::feed ─► one task per message ─► pool (bounded) ─► dialer (+TLS) ─► server
//! caller (2026-07-28) ─┘            └─► JSON body / SSE events ─► channel ─► HttpSource::recv ─► reader
//! ```
//!
//! A 2026-07-28 request skips the writer: its caller posts it (`ModernPosts`), since no message of a session has to
//! go before it.

mod authorize;
mod endpoint;
mod exchange;
mod fetch;
mod head;
mod listen;
mod pool;
mod send;
mod sse;
mod status;
mod stream;
mod tls;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use hyper::header::HeaderValue;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

pub use authorize::{AuthorizationFuture, Authorizer};
pub use endpoint::{HttpConfigError, HttpEndpoint, HttpLimits, PoolConfig};
pub use fetch::{Fetched, Fetcher};
pub use head::{HttpResponseHead, ResponseHook};

use super::{DirectAnswers, DirectRequests, DirectSend, FrameError, Incoming, MessageSink, MessageSource, QuickRead};
use crate::error::{CallError, TransportError};
use crate::jsonrpc::{Message, MetaRequest};
use crate::mcp::{META_PROTOCOL_VERSION, method};
use crate::rt::{Clock, Dialer};
use bytes::Bytes;
use exchange::Post;
use pool::Pool;
pub use pool::{PoolGauge, PoolState};

/// Messages received and not yet read by the connection's reader. Exchanges wait when it is full, so a slow
/// reader slows the server's streams instead of growing memory.
const INBOX: usize = 64;
/// The longest the first message after `notifications/initialized` waits for the `GET` stream to be answered.
const LISTEN_WAIT: Duration = Duration::from_secs(1);
/// How long dropping the transport waits for the `DELETE` that ends its session.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

/// What an HTTP transport needs besides the endpoint: how to reach it, and who to tell.
#[derive(Clone)]
pub struct HttpContext {
    /// Opens each pooled connection (TCP in production, the simulator's network in a simulation).
    pub dialer: Arc<dyn Dialer>,
    pub connect_timeout: Duration,
    /// Wall time for TLS certificate validity and `Retry-After` dates.
    pub clock: Arc<dyn Clock>,
    /// Told the pool's state on every change.
    pub gauge: Option<PoolGauge>,
    /// Told the head of every response to a request.
    pub on_response: Option<ResponseHook>,
}

impl std::fmt::Debug for HttpContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpContext").field("dialer", &self.dialer).finish_non_exhaustive()
    }
}

/// A Streamable HTTP transport to `endpoint`: the sink posts, the source yields what the server sends.
pub fn http_transport(endpoint: Arc<HttpEndpoint>, cx: HttpContext) -> Result<(HttpSink, HttpSource), HttpConfigError> {
    let tls = tls::for_endpoint(&endpoint, cx.clock.clone())?;
    let pool = Pool::new(cx.dialer, tls, cx.connect_timeout, endpoint.pool.clone(), endpoint.limits.clone(), cx.gauge);
    let (tx, rx) = mpsc::channel(INBOX);
    let http = Arc::new(Http {
        endpoint,
        pool: Arc::new(pool),
        state: Mutex::default(),
        tasks: Mutex::default(),
        tx,
        direct: OnceLock::new(),
        clock: cx.clock,
        on_response: cx.on_response,
    });
    Ok((HttpSink { http }, HttpSource { rx }))
}

/// State shared by the sink and every exchange task.
pub(crate) struct Http {
    endpoint: Arc<HttpEndpoint>,
    pool: Arc<Pool>,
    state: Mutex<State>,
    tasks: Mutex<Tasks>,
    tx: mpsc::Sender<Result<Inbound, FrameError>>,
    /// The connection's own way to a caller, for the answers that need not go through `tx`.
    direct: OnceLock<DirectAnswers>,
    clock: Arc<dyn Clock>,
    on_response: Option<ResponseHook>,
}

/// The 2025-11-25 session as this transport knows it.
#[derive(Debug, Default)]
struct State {
    /// `Mcp-Session-Id` from the `initialize` response, sent on every later request.
    session: Option<HeaderValue>,
    /// The server answered 404 for our session: every later request of this connection is answered "session not
    /// found" here rather than sent without an id (which a server refuses with a bare 400), so whatever caller it
    /// belongs to (a call, a listing, a ping) reacts as to a server that forgot the session, as over NDJSON.
    session_lost: bool,
    /// The version `initialize` negotiated, sent as `MCP-Protocol-Version` on every later request.
    version: Option<HeaderValue>,
    /// A request of the 2026-07-28 era was sent: cancellations are stream closes.
    modern: bool,
    /// The `GET` stream was started (at most once).
    listening: bool,
}

/// The exchange tasks, so cancellation can close one and dropping the transport closes all.
#[derive(Debug, Default)]
struct Tasks {
    next: u64,
    running: BTreeMap<u64, AbortHandle>,
    /// Request id → (task, sent in the 2026-07-28 era).
    requests: BTreeMap<i64, (u64, bool)>,
    closed: bool,
}

impl Http {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn tasks(&self) -> MutexGuard<'_, Tasks> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn limits(&self) -> &HttpLimits {
        &self.endpoint.limits
    }

    /// Hands the response to request `request` to its caller: straight, when the connection takes it that way
    /// (`in_order`: nothing of this exchange went to the reader before it, which must then see it first), else
    /// through the reader.
    async fn answer(&self, request: i64, bytes: Bytes, in_order: bool) {
        if in_order && self.direct.get().is_some_and(|direct| direct(request, &bytes)) {
            return;
        }
        self.deliver(Ok(Inbound::Answer { request, bytes })).await;
    }

    /// Hands a received message (or one request's failure) to the connection's reader.
    async fn deliver(&self, item: Result<Inbound, FrameError>) {
        // The reader is gone only when the connection is: nothing is waiting for this.
        let _ = self.tx.send(item).await;
    }

    fn spawn(self: &Arc<Self>, request: Option<(i64, bool)>, work: impl Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks();
        if tasks.closed {
            return;
        }
        let key = tasks.next;
        tasks.next += 1;
        let http = self.clone();
        // Boxed, so the task holds a pointer: an async block keeps what it awaits twice (as its capture and as the
        // awaited future), and tokio moves a task's future several times on spawn and again when it completes.
        // Unboxed, an exchange's task was twice its exchange's size, and those moves were the largest memory copies
        // of a proxied call (docs/benchmarks.md, "Moved, not copied").
        let work = Box::pin(work);
        let handle = tokio::spawn(async move {
            work.await;
            let mut tasks = http.tasks();
            tasks.running.remove(&key);
            if let Some((id, _)) = request
                && tasks.requests.get(&id).is_some_and(|(k, _)| *k == key)
            {
                tasks.requests.remove(&id);
            }
        });
        tasks.running.insert(key, handle.abort_handle());
        if let Some((id, modern)) = request {
            tasks.requests.insert(id, (key, modern));
        }
    }

    /// Closes every exchange (each open stream's connection closes with it) and refuses new ones.
    fn abort_all(&self) {
        let mut tasks = self.tasks();
        tasks.closed = true;
        for (_, task) in std::mem::take(&mut tasks.running) {
            task.abort();
        }
        tasks.requests.clear();
    }

    /// Streamable HTTP 2026-07-28, "Cancellation": closing a request's stream is its cancellation. `true` when
    /// `cancelled` was such a cancellation (and is therefore not posted).
    fn cancel_by_close(&self, cancelled: &Message) -> bool {
        let Message::Notification(n) = cancelled else { return false };
        let id = n.params.as_ref().and_then(|p| p.get("requestId")).and_then(serde_json::Value::as_i64);
        let mut tasks = self.tasks();
        match id.and_then(|id| tasks.requests.get(&id).copied().map(|entry| (id, entry))) {
            Some((id, (key, true))) => {
                tasks.requests.remove(&id);
                if let Some(task) = tasks.running.remove(&key) {
                    task.abort();
                }
                true
            }
            Some((_, (_, false))) => false,
            // Finished already: nothing to close, and in the modern era nothing to post either.
            None => self.state().modern,
        }
    }

    /// Posts a request in its own task.
    fn post(self: &Arc<Self>, post: Post) {
        if post.modern {
            self.state().modern = true;
        }
        let key = (post.id, post.modern);
        self.spawn(Some(key), exchange::request(self.clone(), post));
    }

    /// Posts one message: requests and most notifications in their own task; `notifications/initialized` before
    /// anything else is sent, since a server may refuse requests that overtake it.
    async fn send(self: &Arc<Self>, msg: &Message) {
        match msg {
            Message::Request(_) => {
                if let Some(post) = Post::of_message(msg) {
                    self.post(post);
                }
            }
            Message::Notification(n) if n.method == method::CANCELLED && self.cancel_by_close(msg) => {}
            Message::Notification(n) if n.method == method::INITIALIZED => {
                let accepted = exchange::notify(self, msg).await;
                let start = accepted && !std::mem::replace(&mut self.state().listening, true);
                if start {
                    // Requests sent while the GET is on its way race it: the server may answer or notify on a
                    // stream that does not exist yet, and lose it. So the next message waits for the GET's answer
                    // (the sink is the writer's), bounded for a server that holds the head back.
                    let (opened, answered) = oneshot::channel();
                    self.spawn(None, listen::run(self.clone(), opened));
                    let _ = tokio::time::timeout(LISTEN_WAIT, answered).await;
                }
            }
            _ => {
                let http = self.clone();
                let msg = msg.clone();
                self.spawn(None, async move {
                    exchange::notify(&http, &msg).await;
                });
            }
        }
    }

    /// Ends the session: `DELETE` with its id ("Session Management"), best effort; 405 means the server keeps it.
    async fn delete_session(self: Arc<Self>) {
        let Some(session) = self.state().session.take() else { return };
        let _ = tokio::time::timeout(DELETE_TIMEOUT, exchange::delete(&self, session)).await;
    }
}

/// The sending half of [`http_transport`]. Dropping it closes every open exchange and ends the session.
pub struct HttpSink {
    http: Arc<Http>,
}

impl std::fmt::Debug for HttpSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSink").field("url", &self.http.endpoint.url()).finish()
    }
}

impl MessageSink for HttpSink {
    async fn feed(&mut self, msg: &Message) -> Result<(), TransportError> {
        self.http.send(msg).await;
        Ok(())
    }

    async fn feed_request(&mut self, req: MetaRequest) -> Result<(), TransportError> {
        if let Some(post) = Post::of_request(&req) {
            self.http.post(post);
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }

    fn answer_with(&mut self, answers: DirectAnswers) {
        let _ = self.http.direct.set(answers);
    }

    fn direct_requests(&self) -> Option<DirectRequests> {
        Some(Arc::new(ModernPosts(Arc::downgrade(&self.http))))
    }

    async fn close(&mut self) {
        self.http.abort_all();
        self.http.clone().delete_session().await;
    }
}

/// 2026-07-28 requests, posted by their callers: each is an exchange of its own with no session, so no message of
/// the writer's (`notifications/initialized` first of all) has to go before it. A 2025-11-25 request keeps the
/// writer's order. Holds the transport weakly, as the connection's callers may outlive it.
struct ModernPosts(Weak<Http>);

impl DirectSend for ModernPosts {
    fn takes(&self, request: &MetaRequest) -> bool {
        request.meta_member(META_PROTOCOL_VERSION).is_some() && self.0.strong_count() > 0
    }

    fn send(&self, request: &MetaRequest) {
        if let (Some(http), Some(post)) = (self.0.upgrade(), Post::of_request(request)) {
            http.post(post);
        }
    }
}

impl Drop for HttpSink {
    fn drop(&mut self) {
        self.http.abort_all();
        if self.http.state().session.is_some()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(self.http.clone().delete_session());
        }
    }
}

/// What an exchange hands the reader.
#[derive(Debug)]
pub(crate) enum Inbound {
    Message(Message),
    /// The response to request `request` as it came, undecoded: the reader decodes it, or its quick reader takes
    /// it. A body that is not a response fails that request, as a malformed answer to it.
    Answer {
        request: i64,
        bytes: Bytes,
    },
}

/// The receiving half of [`http_transport`]. Cancel-safe: a channel receive.
#[derive(Debug)]
pub struct HttpSource {
    rx: mpsc::Receiver<Result<Inbound, FrameError>>,
}

impl MessageSource for HttpSource {
    async fn recv(&mut self) -> Option<Result<Message, FrameError>> {
        Some(self.rx.recv().await?.and_then(|item| match item {
            Inbound::Message(msg) => Ok(msg),
            Inbound::Answer { request, bytes } => decode_answer(request, &bytes),
        }))
    }

    async fn recv_quick<Q: QuickRead>(&mut self, quick: &Q) -> Option<Result<Incoming<Q::Read>, FrameError>> {
        Some(self.rx.recv().await?.and_then(|item| match item {
            Inbound::Message(msg) => Ok(Incoming::Message(msg)),
            Inbound::Answer { request, bytes } => {
                match std::str::from_utf8(&bytes).ok().and_then(|_| quick.read(&bytes)) {
                    Some(read) => Ok(Incoming::Quick(read)),
                    None => decode_answer(request, &bytes).map(Incoming::Message),
                }
            }
        }))
    }
}

/// The answer to `request` as a message; one that is not JSON-RPC fails that request.
fn decode_answer(request: i64, bytes: &[u8]) -> Result<Message, FrameError> {
    Message::decode(bytes)
        .map_err(|e| FrameError::Exchange { id: request, error: Box::new(CallError::MalformedResponse(e.to_string())) })
}
