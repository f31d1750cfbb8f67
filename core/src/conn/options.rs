//! What a caller says about one request besides the request itself: its deadline, cancellation, lane, progress
//! channel and first-response timeout; and the same once the deadline is resolved.
//!
//! A call has one deadline, resolved where the call enters: the gateway's entry for a gateway call, the client's
//! public call for a direct client call, the connection's public request for a request made straight on a
//! connection. Each layer below an entry takes a [`Bounded`], which has a deadline and no way to make one, so no
//! layer below can add a `call_deadline` of its own.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::cancel::CancelToken;
use crate::credential::Secret;
use crate::mcp::ProgressParams;
use crate::mcp::logging::LogSink;

use super::asked::AskSink;

/// Which writer lane a request takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lane {
    /// Lifecycle, ping, list calls: ahead of tool calls.
    Priority,
    #[default]
    Normal,
}

/// Per-call options. All optional; the connection's config supplies the phases.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Overall deadline covering every phase (and, for a gateway call, every attempt). Default: the entry's
    /// `call_deadline` from when the call entered (the gateway's, or the connection config's for a client or
    /// connection call).
    pub deadline: Option<Instant>,
    pub cancel: Option<CancelToken>,
    pub lane: Lane,
    /// Receives the call's progress notifications (lossy when full). Progress also resets the idle timer whether
    /// or not anyone listens.
    pub progress: Option<mpsc::Sender<ProgressParams>>,
    /// Overrides the connection's first-response timeout for this call.
    pub first_response: Option<Duration>,
    /// The agent the call is made for: its access token, which an HTTP transport's authorizer may exchange for a
    /// token of the upstream's (delegation). Never sent as it is.
    pub on_behalf_of: Option<Secret>,
    /// Asks the server for the call's log messages at this level (`_meta` `io.modelcontextprotocol/logLevel`) and
    /// receives the `notifications/message` params that belong to the call (see `conn::reader`).
    pub logs: Option<LogSink>,
    /// Receives the requests the server makes of its client during the call (see `conn::asked`); without it they
    /// get "method not found".
    pub asks: Option<AskSink>,
    /// Keys merged into the request's `params._meta` when it is sent (see [`AttemptMeta`]).
    pub meta: Option<AttemptMeta>,
    /// Members added to the request's `params` beside what the call sets (a 2026-07-28 retry's `inputResponses` and
    /// `requestState`, which a gateway passes on); a member the call sets itself is never replaced.
    pub params: Option<Arc<Map<String, Value>>>,
}

/// `params._meta` keys whose values change from one attempt of a call to the next (the gateway's `traceparent`, which
/// names the attempt's own span). The attempts of a gateway call share its options, so the value is a shared cell:
/// the embedder sets it just before each attempt is sent (`Gateway::call_prepared`'s hook, which runs once per
/// attempt, in order, attempts never overlapping), and the request takes what it holds as it is registered.
#[derive(Debug, Clone, Default)]
pub struct AttemptMeta(Arc<Mutex<Map<String, Value>>>);

impl AttemptMeta {
    /// What the next request sent under these options carries, replacing what the last one did.
    pub fn set(&self, keys: Map<String, Value>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = keys;
    }

    /// Writes the keys into `meta`, over what is there under their names.
    pub(crate) fn merge_into(&self, meta: &mut Map<String, Value>) {
        let keys = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        meta.extend(keys.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

impl CallOptions {
    /// The options of a call entering now: its deadline is the caller's own, else `limit` after `now()` (read only
    /// then, so an entry whose caller set a deadline reads no clock).
    pub(crate) fn bounded(self, now: impl FnOnce() -> Instant, limit: Duration) -> Bounded {
        let deadline = self.deadline.unwrap_or_else(|| now() + limit);
        self.until(deadline)
    }

    /// The options of a call whose deadline is already resolved (a layer's own request under a call, such as the
    /// tool listing a call needs, shares that call's deadline).
    pub(crate) fn until(self, deadline: Instant) -> Bounded {
        let CallOptions { deadline: _, cancel, lane, progress, first_response, on_behalf_of, logs, asks, meta, params } =
            self;
        Bounded { deadline, cancel, lane, progress, first_response, on_behalf_of, logs, asks, meta, params }
    }
}

/// A call's options below its entry: [`CallOptions`] with the deadline resolved.
#[derive(Debug, Clone)]
pub(crate) struct Bounded {
    pub deadline: Instant,
    pub cancel: Option<CancelToken>,
    pub lane: Lane,
    pub progress: Option<mpsc::Sender<ProgressParams>>,
    pub first_response: Option<Duration>,
    pub on_behalf_of: Option<Secret>,
    pub logs: Option<LogSink>,
    pub asks: Option<AskSink>,
    pub meta: Option<AttemptMeta>,
    pub params: Option<Arc<Map<String, Value>>>,
}
