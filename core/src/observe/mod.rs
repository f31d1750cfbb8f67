//! The metrics seam: the core reports what happened; the embedder decides where it goes (tracing in production,
//! time series in the simulator).

use std::fmt::Debug;
use std::time::Duration;

use crate::error::{CallError, TransportError};
use crate::resilience::breaker::BreakerTransition;
use crate::resilience::degraded::DegradedReason;
use crate::transport::{FrameError, HttpResponseHead, PoolState};
pub use anomalies::{Anomaly, AnomalyLog, AnomalyReport};
pub use refetch::RefetchReason;

mod anomalies;
mod refetch;
pub mod trace;

/// Identifies a connection in events: the server it talks to and a per-client sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

/// Something the core did or saw. Borrowed, so emitting an event allocates nothing.
#[derive(Debug)]
pub enum Event<'a> {
    ConnectionOpened {
        conn: ConnId,
        server: &'a str,
    },
    ConnectionClosed {
        conn: ConnId,
        server: &'a str,
        reason: &'a TransportError,
    },
    /// A request finished (successfully, or with the error given).
    RequestFinished {
        conn: ConnId,
        method: &'a str,
        latency: Duration,
        error: Option<&'a CallError>,
    },
    /// A response arrived for a call that had already been cancelled or had timed out; it was dropped.
    LateResponseDropped {
        conn: ConnId,
    },
    /// A response named an id this connection never issued.
    UnknownResponseDropped {
        conn: ConnId,
    },
    /// An incoming frame was rejected.
    FrameRejected {
        conn: ConnId,
        error: &'a FrameError,
    },
    /// A server notification was dropped because its queue was full.
    NotificationDropped {
        conn: ConnId,
        method: &'a str,
    },
    CancelSent {
        conn: ConnId,
    },
    /// Something happened to the session (the mcpstorm session extension, see [`crate::session`]) a client
    /// holds with `server`. Counted as well in [`crate::session::SessionStats`].
    Session {
        server: &'a str,
        what: SessionEvent,
    },
    /// The circuit breaker of (`replica`, `tool`) changed state; `replica` is an endpoint of `server`.
    Breaker {
        server: &'a str,
        replica: &'a str,
        tool: &'a str,
        transition: &'a BreakerTransition,
    },
    /// The gateway's router chose a replica (or found none) for a call to `tool`, in `elapsed` (with the wait for
    /// the router).
    RouteDecided {
        tool: &'a str,
        elapsed: Duration,
    },
    /// A new connection could not establish a session with `server`: no era worked (a `server/discover` probe
    /// answered with an error and then an `initialize` that worked is no failure: that is the era fallback).
    HandshakeFailed {
        server: &'a str,
        error: &'a CallError,
    },
    /// A replica left the rotation because its address refused a connection (`ejected`), or a probe readmitted it
    /// (see the router's `ejection.rs`); `replica` is an endpoint of `server`.
    Ejection {
        server: &'a str,
        replica: &'a str,
        ejected: bool,
    },
    /// The gateway declined a call and answered with a degraded result.
    Degraded {
        tool: &'a str,
        reason: DegradedReason,
    },
    /// The Streamable HTTP pool of a connection changed: connections open (busy or idle), idle, and requests
    /// waiting for one (a gauge, reported on every change).
    HttpPool {
        conn: ConnId,
        server: &'a str,
        pool: PoolState,
    },
    /// A Streamable HTTP request was answered: the response's head (status, content type, session id, version).
    HttpResponse {
        conn: ConnId,
        server: &'a str,
        head: &'a HttpResponseHead<'a>,
    },
    /// The tool list was fetched again because something said the cached one may be stale (schema drift).
    SchemaRefetched {
        server: &'a str,
        reason: RefetchReason,
    },
}

/// What happened to a session. Emitted by [`crate::client::McpClient`]; a server that grants no session (plain MCP)
/// produces none of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum SessionEvent {
    /// A server granted a session (at connect, or a new one after a re-handshake).
    Granted,
    /// A renewal extended the session.
    Renewed,
    /// The client replaced its session with a new one: the lease ran into its margin, a renewal was refused, the
    /// server said session-not-found, or it rotated its auth schemes.
    Rehandshake,
    /// A server answered a request with session-not-found.
    NotFound,
    /// A call refused before it ran (session-not-found, auth mismatch) was sent again on a new session.
    Resent,
    /// No configured credential matched the server's schemes, or the server answered `MCP_AUTH_MISMATCH`.
    AuthMismatch,
}

/// The stable snake_case label for metrics and event logs.
impl std::fmt::Display for SessionEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.into())
    }
}

pub trait Observer: Send + Sync + Debug + 'static {
    fn event(&self, event: &Event<'_>);
}

/// Discards everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopObserver;

impl Observer for NoopObserver {
    fn event(&self, _: &Event<'_>) {}
}

/// Sends events to `tracing`: anomalies at warn, per-request events at trace (logging every request costs a share of
/// the CPU that grows with the call rate, where an anomaly is rare; docs/benchmarks.md, "Figures behind constants in
/// the code"). Anomalies a peer controls go through an [`AnomalyLog`], so a flood of them writes
/// O(log n) lines, not n.
#[derive(Debug, Default)]
pub struct TracingObserver {
    anomalies: AnomalyLog,
    /// Log a closed connection at debug, not warn: for a command-line tool that reports the failure it causes in its
    /// own words (a warning beside it would say the same thing twice).
    quiet_close: bool,
}

impl TracingObserver {
    /// As the default, but a connection closing is logged at debug level (see the field).
    pub fn quiet_close() -> Self {
        TracingObserver { quiet_close: true, ..TracingObserver::default() }
    }

    fn anomaly(&self, conn: ConnId, anomaly: Anomaly, detail: impl FnOnce() -> String) {
        if let Some(r) = self.anomalies.count(conn, anomaly, detail) {
            tracing::warn!(conn = conn.0, count = r.count, first = %r.first, "{} so far: {}", r.anomaly.what(), r.count);
        }
    }
}

impl Observer for TracingObserver {
    fn event(&self, event: &Event<'_>) {
        match event {
            Event::RequestFinished { error: None, .. }
            | Event::CancelSent { .. }
            | Event::HttpPool { .. }
            | Event::RouteDecided { .. }
            | Event::HttpResponse { .. } => tracing::trace!(?event),
            Event::Session { what: SessionEvent::NotFound | SessionEvent::AuthMismatch, .. } => tracing::info!(?event),
            Event::RequestFinished { error: Some(_), .. }
            | Event::Session { .. }
            | Event::ConnectionOpened { .. }
            | Event::SchemaRefetched { .. }
            | Event::Breaker { .. }
            | Event::Degraded { .. }
            | Event::HandshakeFailed { .. }
            | Event::LateResponseDropped { .. } => tracing::debug!(?event),
            Event::Ejection { server, replica, ejected: true } => {
                tracing::warn!(server, replica, "replica ejected: its address refused a connection; probing it back")
            }
            Event::Ejection { server, replica, ejected: false } => {
                tracing::info!(server, replica, "replica readmitted: a probe answered")
            }
            Event::ConnectionClosed { conn, server, reason } => {
                for r in self.anomalies.close(*conn) {
                    tracing::warn!(conn = conn.0, server, count = r.count, first = %r.first, "{} in all: {}", r.anomaly.what(), r.count);
                }
                if self.quiet_close || matches!(reason, TransportError::Shutdown) {
                    tracing::debug!(?event)
                } else {
                    tracing::warn!(?event)
                }
            }
            Event::UnknownResponseDropped { conn } => self.anomaly(*conn, Anomaly::UnknownResponse, String::new),
            Event::FrameRejected { conn, error } => self.anomaly(*conn, Anomaly::FrameRejected, || error.to_string()),
            Event::NotificationDropped { conn, method } => {
                self.anomaly(*conn, Anomaly::NotificationDropped, || format!("method {method}"))
            }
        }
    }
}
