//! What the client is wrapped in so the layers can be told apart: the dial's own timing, `tools/list` pages, and
//! the heads of HTTP responses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpstorm_core::mcp::method;
use mcpstorm_core::{DialFuture, Dialer};
use mcpstorm_core::{Event, Observer, TracingObserver};
use tokio::time::Instant;

use super::transport::ExchangeLog;

/// What the client is wrapped in so the layers can be told apart: the dial's own timing, and what the observer saw.
pub(super) struct Probe {
    pub(super) dialer: Arc<TimedDialer>,
    pub(super) seen: Arc<Watcher>,
}

/// Times each dial, so the connect layer is measured apart from the handshake that follows it in `session()`.
#[derive(Debug)]
pub(super) struct TimedDialer {
    pub(super) inner: Arc<dyn Dialer>,
    pub(super) last: Mutex<Option<Duration>>,
}

impl TimedDialer {
    pub(super) fn take_last(&self) -> Option<Duration> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl Dialer for TimedDialer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let started = Instant::now();
            let stream = self.inner.dial().await;
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(started.elapsed());
            stream
        })
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// Counts finished `tools/list` requests (the pages of a listing) and keeps the heads of HTTP responses; everything
/// goes on to the log as usual.
#[derive(Debug)]
pub(super) struct Watcher {
    pages: AtomicU64,
    pub(super) exchanges: ExchangeLog,
    log: TracingObserver,
}

impl Default for Watcher {
    fn default() -> Self {
        Watcher { pages: AtomicU64::new(0), exchanges: ExchangeLog::default(), log: TracingObserver::quiet_close() }
    }
}

impl Watcher {
    pub(super) fn pages(&self) -> u64 {
        self.pages.load(Ordering::Relaxed)
    }
}

impl Observer for Watcher {
    fn event(&self, event: &Event<'_>) {
        match event {
            Event::RequestFinished { method: method::TOOLS_LIST, .. } => {
                self.pages.fetch_add(1, Ordering::Relaxed);
            }
            Event::HttpResponse { head, .. } => self.exchanges.record(head),
            _ => {}
        }
        self.log.event(event);
    }
}
