//! What the client is wrapped in so the layers can be told apart: the dial's own timing, and `tools/list` pages.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpstorm_core::mcp::method;
use mcpstorm_core::{DialFuture, Dialer};
use mcpstorm_core::{Event, Observer, TracingObserver};
use tokio::time::Instant;

/// What the client is wrapped in so the layers can be told apart: the dial's own timing, and `tools/list` pages.
pub(super) struct Probe {
    pub(super) dialer: Arc<TimedDialer>,
    pub(super) pages: Arc<PageCounter>,
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

/// Counts finished `tools/list` requests (the pages of a listing); everything goes on to the log as usual.
#[derive(Debug)]
pub(super) struct PageCounter(AtomicU64, TracingObserver);

impl Default for PageCounter {
    fn default() -> Self {
        PageCounter(AtomicU64::new(0), TracingObserver::quiet_close())
    }
}

impl PageCounter {
    pub(super) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Observer for PageCounter {
    fn event(&self, event: &Event<'_>) {
        if let Event::RequestFinished { method: method::TOOLS_LIST, .. } = event {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        self.1.event(event);
    }
}
