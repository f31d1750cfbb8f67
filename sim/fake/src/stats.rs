//! What a fake server has done, for the simulator's reports and for tests. Plain atomics: read at any time without
//! stopping the server.
//!
//! Every `tools/call` received ends in exactly one of `completed`, `errored`, `cancelled` or `abandoned`; until it
//! does it is `queued` (waiting for a worker) or `in_progress` (holding one, including while hung).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Declares each counter once: its field in [`FakeStats`] (with its doc) and its atomic in `Counters`, and the
/// snapshot from one to the other.
macro_rules! counters {
    ($($(#[doc = $doc:literal])* $name:ident,)*) => {
        /// A point-in-time view of a fake server's counters.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct FakeStats {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        #[derive(Debug, Default)]
        pub(crate) struct Counters {
            $(pub $name: AtomicU64,)*
        }

        impl Counters {
            pub fn snapshot(&self) -> FakeStats {
                FakeStats { $($name: self.$name.load(Ordering::Relaxed),)* }
            }
        }
    };
}

counters! {
    /// `tools/call` requests received.
    received,
    /// Calls answered with a successful result.
    completed,
    /// Calls answered with an error: injected (either kind), unknown tool, invalid arguments.
    errored,
    /// Calls aborted by the client's cancellation before they were answered: `notifications/cancelled`, or (2026-07-28
    /// Streamable HTTP) closing the request's stream.
    cancelled,
    /// Calls aborted because their connection (or HTTP session, or the stream of a modern HTTP request the server
    /// reset) closed before they were answered.
    abandoned,
    /// Calls holding a worker right now.
    in_progress,
    /// Calls waiting for a worker right now.
    queued,
    /// Connections open right now.
    connections,
    /// Connections accepted since start.
    connections_total,
    /// Incoming frames rejected as malformed (each answered with a JSON-RPC error).
    rejected_frames,
    /// `initialize` requests received (legacy handshakes, and modern connections' refused ones).
    initializes,
    /// `server/discover` requests received (era probes, and the modern era's pings).
    discovers,
    /// Sessions granted (on `initialize` / `server/discover`).
    sessions_granted,
    /// `mcpstorm/session/renew` requests answered with a fresh grant.
    renewals,
    /// Requests refused with -32001: no live session.
    sessions_not_found,
    /// Requests refused with -32003: no credential of an accepted scheme.
    auth_mismatches,
    /// Calls refused because their arguments do not fit the tool's current input schema.
    schema_rejections,
    /// HTTP requests received (Streamable HTTP transport), whatever their method and fate.
    http_requests,
    /// HTTP requests refused before any JSON-RPC handling: 405 (method), 406 (`Accept`), 409 (a second GET stream),
    /// 413 (body too large), 415 (`Content-Type`), 400 (not one JSON-RPC message), 503 (session table full).
    http_refused,
    /// `Mcp-Session-Id`s issued (2025-11-25, on `initialize`).
    http_sessions_opened,
    /// Sessions ended by the client's DELETE.
    http_sessions_deleted,
    /// Requests refused with 400 for want of an `Mcp-Session-Id`.
    http_sessions_missing,
    /// Requests refused with 404: their `Mcp-Session-Id` is unknown, expired or forgotten.
    http_sessions_not_found,
    /// Requests refused with 400 for their protocol headers: an unsupported `MCP-Protocol-Version` (2025-11-25),
    /// -32020 header mismatch or -32022 unsupported version (2026-07-28).
    http_header_rejections,
    /// GET streams resumed from a `Last-Event-ID`.
    http_streams_resumed,
    /// Fault: requests answered with an injected error status (429, 503, 500...).
    http_status_injected,
    /// Fault: SSE streams reset (the connection cut) before their response.
    http_stream_resets,
    /// Fault: responses whose status line was held back by the slow-headers delay.
    http_slow_headers,
    /// Fault: sessions the session store forgot.
    http_sessions_forgotten,
    /// Requests refused with 401 `invalid_token` (a server that requires tokens): none, expired, or of a withdrawn
    /// key.
    http_unauthorized,
}

impl Counters {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn dec(counter: &AtomicU64) {
        counter.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Which gauge a call is counted in. Dropping the ticket (however the call ends, including an abort) takes it out.
#[derive(Debug)]
pub(crate) struct Ticket {
    counters: Arc<Counters>,
    stage: Stage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Idle,
    Queued,
    Running,
}

impl Ticket {
    pub fn new(counters: Arc<Counters>) -> Self {
        Ticket { counters, stage: Stage::Idle }
    }

    pub fn queued(&mut self) {
        self.enter(Stage::Queued);
    }

    pub fn running(&mut self) {
        self.enter(Stage::Running);
    }

    fn enter(&mut self, stage: Stage) {
        self.leave();
        self.stage = stage;
        if let Some(gauge) = self.gauge() {
            Counters::bump(gauge);
        }
    }

    fn leave(&mut self) {
        if let Some(gauge) = self.gauge() {
            Counters::dec(gauge);
        }
        self.stage = Stage::Idle;
    }

    fn gauge(&self) -> Option<&AtomicU64> {
        match self.stage {
            Stage::Idle => None,
            Stage::Queued => Some(&self.counters.queued),
            Stage::Running => Some(&self.counters.in_progress),
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.leave();
    }
}
