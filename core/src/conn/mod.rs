//! One connection to one MCP server: its own id sequence and pending table, one writer with two priority lanes,
//! one reader that completes callers by id, and a bounded queue for server notifications.
//!
//! ```text
//! callers ──► priority lane (lifecycle, ping, cancellations) ─┐
//!         └─► normal lane (tool calls) ───────────────────────┴─► writer ──► sink
//! source ──► reader ──► pending table (responses, progress) ──► callers
//!                   └─► notification queue (bounded, lossy) ──► handler (bounded concurrency)
//! ```
//!
//! The reader never blocks on a consumer: a full notification queue or progress channel drops and counts, so a
//! flooding server cannot stall responses or exhaust memory. Any transport failure fails every pending call at once.

mod asked;
mod call;
mod config;
mod layers;
mod notify;
mod options;
mod pending;
mod reader;
mod stats;
mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};

use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

pub use asked::{AskRelay, AskSink, Asked, RELAYED};
pub use config::ConnectionConfig;
pub use notify::NotificationHandler;
pub(crate) use options::Bounded;
pub use options::{AttemptMeta, CallOptions, Lane};
pub use stats::ConnectionStats;

use crate::cancel::CancelToken;
use crate::error::TransportError;
use crate::jsonrpc::{Message, MetaRequest};
use crate::observe::{ConnId, Event, Observer};
use crate::resilience::inflight::InFlightLimit;
use crate::transport::{DirectRequests, MessageSink, MessageSource};
use pending::PendingTable;
use stats::Counters;

/// What `Connection::start` needs besides the transport.
pub struct ConnectionParts {
    pub id: ConnId,
    /// Server name for events and errors.
    pub server: String,
    pub config: ConnectionConfig,
    pub observer: Arc<dyn Observer>,
    /// The client-wide in-flight limit, if any.
    pub global: Option<InFlightLimit>,
    pub on_notification: Option<NotificationHandler>,
    /// Kept alive as long as the connection's tasks run (e.g. the child process of a stdio server).
    pub guard: Option<Box<dyn Send + Sync>>,
}

impl std::fmt::Debug for ConnectionParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionParts").field("id", &self.id).field("server", &self.server).finish_non_exhaustive()
    }
}

/// A message for the writer. `call` names the pending entry a request belongs to, so the writer can skip requests
/// whose caller already left.
pub(crate) struct Outgoing {
    msg: Outbound,
    call: Option<i64>,
}

/// Requests keep their `_meta` layers apart for the sink to splice in as it encodes (see [`MetaRequest`]).
enum Outbound {
    Message(Message),
    Request(MetaRequest),
}

pub(crate) struct Shared {
    id: ConnId,
    server: String,
    config: ConnectionConfig,
    observer: Arc<dyn Observer>,
    global: Option<InFlightLimit>,
    permits: Arc<Semaphore>,
    next_id: AtomicI64,
    pending: PendingTable,
    priority: mpsc::Sender<Outgoing>,
    normal: mpsc::Sender<Outgoing>,
    /// Where callers send the requests the transport takes without the writer (see `MessageSink::direct_requests`).
    direct: Option<DirectRequests>,
    /// Stops the reader, writer and notification dispatcher.
    shutdown: CancelToken,
    epoch: Instant,
    /// Nanoseconds since `epoch` of the last frame received (any frame): evidence the stream is alive.
    last_rx: AtomicU64,
    probing: AtomicBool,
    /// Merged into every request's `params._meta`: first the modern era's per-request envelope (see
    /// `set_request_meta`), then the session extension's keys (session id, authorization), which change on renewal
    /// independently of the era's envelope (see `set_session_meta`); and the same with a 2026-07-28 envelope for a
    /// call made outside a 2025-11-25 session (see `set_stateless_meta`). One lock and one clone per request.
    meta: layers::Layers,
    /// The server refused that envelope (-32020 / -32022) on some request.
    meta_rejected: AtomicBool,
    counters: Counters,
    _guard: Option<Box<dyn Send + Sync>>,
}

impl Shared {
    fn nanos_since_epoch(&self) -> u64 {
        Instant::now().saturating_duration_since(self.epoch).as_nanos() as u64
    }

    /// Tells the observer, and counts what the connection's stats count of it.
    fn emit(&self, event: &Event<'_>) {
        self.counters.count(event);
        self.observer.event(event);
    }

    /// The connection is finished: fail every pending call now and stop the tasks.
    pub(crate) fn fail(&self, err: TransportError) {
        if self.pending.fail_all(&err) {
            self.emit(&Event::ConnectionClosed { conn: self.id, server: &self.server, reason: &err });
        }
        self.shutdown.cancel(err.to_string());
    }

    /// Queues a message on the priority lane without waiting. Best effort by design: used from the reader and from
    /// drop paths, which must never block.
    fn try_send_priority(&self, msg: Message) -> bool {
        self.priority.try_send(Outgoing { msg: Outbound::Message(msg), call: None }).is_ok()
    }
}

/// A handle to a running connection. Cheap to clone; when the last handle drops, the connection shuts down.
#[derive(Clone)]
pub struct Connection {
    handle: Arc<Handle>,
}

struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.fail(TransportError::Shutdown);
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("id", &self.id()).field("server", &self.shared().server).finish()
    }
}

impl Connection {
    /// Starts the reader, writer (and notification dispatcher) tasks on the current tokio runtime.
    pub fn start<S: MessageSink, R: MessageSource>(mut sink: S, source: R, parts: ConnectionParts) -> Connection {
        let config = parts.config;
        let (priority, priority_rx) = mpsc::channel(config.priority_lane_capacity);
        let (normal, normal_rx) = mpsc::channel(config.max_in_flight.max(1));
        let shutdown = CancelToken::new();
        let notifications = parts.on_notification.map(|h| notify::spawn_dispatcher(h, &config, shutdown.clone()));
        let shared = Arc::new(Shared {
            id: parts.id,
            server: parts.server,
            permits: Arc::new(Semaphore::new(config.max_in_flight)),
            config,
            observer: parts.observer,
            global: parts.global,
            next_id: AtomicI64::new(1),
            pending: PendingTable::default(),
            priority,
            normal,
            direct: sink.direct_requests(),
            shutdown,
            epoch: Instant::now(),
            last_rx: AtomicU64::new(0),
            probing: AtomicBool::new(false),
            meta: layers::Layers::default(),
            meta_rejected: AtomicBool::new(false),
            counters: Counters::default(),
            _guard: parts.guard,
        });
        shared.emit(&Event::ConnectionOpened { conn: shared.id, server: &shared.server });
        sink.answer_with(reader::direct_answers(&shared));
        tokio::spawn(writer::run(shared.clone(), sink, priority_rx, normal_rx));
        tokio::spawn(reader::run(shared.clone(), source, notifications));
        Connection { handle: Arc::new(Handle { shared }) }
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    pub fn id(&self) -> ConnId {
        self.shared().id
    }

    /// `Some(reason)` once the connection has failed or was shut down.
    pub fn closed(&self) -> Option<TransportError> {
        self.shared().pending.closed()
    }

    pub fn is_open(&self) -> bool {
        self.closed().is_none()
    }

    /// Closes the connection: pending calls fail at once with `Shutdown`.
    pub fn shutdown(&self) {
        self.shared().fail(TransportError::Shutdown);
    }

    /// Calls waiting for a response right now.
    pub fn pending(&self) -> usize {
        self.shared().pending.len()
    }

    pub fn stats(&self) -> ConnectionStats {
        let s = self.shared();
        s.counters.snapshot(s.pending.len(), s.config.max_in_flight - s.permits.available_permits())
    }

    /// Sends a notification (e.g. `notifications/initialized`) on the priority lane.
    pub async fn notify(&self, method: &str, params: Option<serde_json::Value>) -> Result<(), TransportError> {
        let s = self.shared();
        if let Some(e) = s.pending.closed() {
            return Err(e);
        }
        let out = Outgoing { msg: Outbound::Message(Message::notification(method, params)), call: None };
        s.priority.send(out).await.map_err(|_| TransportError::Shutdown)
    }
}
