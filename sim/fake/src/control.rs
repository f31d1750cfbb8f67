//! The runtime control handle: what the scenario's fault timeline turns while the server runs (latency spike, error
//! burst, hang, overload, schema drift, session loss, auth rotation, and the HTTP transport's status bursts,
//! stream resets, slow headers and forgotten sessions). Cheap to clone; every clone steers the same server, across all its connections.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::AuthScheme;

use crate::drift::Drift;
use crate::faults::{Faults, StatusBurst, probability};
use crate::shared::Shared;
use crate::stats::FakeStats;

/// Steers one running fake server. See the module docs.
#[derive(Debug, Clone)]
pub struct FakeControl {
    shared: Arc<Shared>,
}

impl FakeControl {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        FakeControl { shared }
    }

    /// Adds `extra` to every call's latency (a latency spike). `Duration::ZERO` ends it.
    pub fn set_extra_latency(&self, extra: Duration) {
        self.shared.faults.lock().extra_latency = extra;
    }

    /// Multiplies every call's sampled latency. Negative or NaN factors are treated as 0 and 1 respectively.
    pub fn set_latency_multiplier(&self, factor: f64) {
        let factor = if factor.is_nan() { 1.0 } else { factor.clamp(0.0, 1e6) };
        self.shared.faults.lock().latency_multiplier = factor;
    }

    /// Overrides every tool's error rate (an error burst), clamped into [0, 1]; `None` restores the configured rates.
    pub fn set_error_rate(&self, rate: Option<f64>) {
        self.shared.faults.lock().error_rate = rate.map(probability);
    }

    /// Hangs the server: it keeps reading (so it still sees cancellations) but answers nothing, not even `ping`,
    /// until un-hung. Answers held back meanwhile are then sent, unless their call was cancelled.
    pub fn set_hung(&self, hung: bool) {
        self.shared.hang.set(hung);
    }

    pub fn is_hung(&self) -> bool {
        self.shared.hang.get()
    }

    /// Resizes the worker pool (`None`: unlimited; 0 stalls every new call until it grows). Shrinking never
    /// interrupts a running call: busy workers are taken back as they finish.
    pub fn set_workers(&self, workers: Option<usize>) {
        self.shared.pool.resize(workers);
    }

    pub fn workers(&self) -> Option<usize> {
        self.shared.pool.size()
    }

    /// The current fault knobs.
    pub fn faults(&self) -> Faults {
        self.shared.faults.get()
    }

    /// Ends every fault: knobs back to their defaults, un-hung, the configured worker count.
    pub fn reset(&self) {
        *self.shared.faults.lock() = Faults::default();
        self.set_hung(false);
        self.set_workers(self.shared.config.workers);
    }

    /// Applies a schema drift (see [`Drift`]); with `notify`, then sends `notifications/tools/list_changed` on every
    /// open connection. Returns how many connections were notified, or why the drift cannot apply (nothing changes).
    pub fn drift(&self, drift: &Drift, notify: bool) -> Result<usize, String> {
        let after = drift.apply(&self.shared.catalog())?;
        self.shared.set_catalog(after);
        Ok(if notify { self.shared.conns.broadcast(&crate::drift::list_changed()) } else { 0 })
    }

    /// The server's tools as listed now (after any drift).
    pub fn listed_tools(&self) -> Vec<mcpstorm_core::mcp::Tool> {
        self.shared.catalog().listing.clone()
    }

    /// Forgets every session at once (the server restarted its session store): the next request on each is -32001.
    pub fn expire_sessions(&self) {
        self.shared.sessions.drop_all();
    }

    /// HTTP: answers a share of requests with an error status (a 429/503 burst with `Retry-After`, or 500s) until
    /// called with `None`. The share is clamped into [0, 1]; a status outside 400..=599 is taken as 503.
    pub fn set_http_status(&self, burst: Option<StatusBurst>) {
        let burst = burst.map(|b| StatusBurst {
            share: probability(b.share),
            status: if (400..=599).contains(&b.status) { b.status } else { 503 },
            ..b
        });
        self.shared.faults.lock().http_status = burst;
    }

    /// HTTP: cuts each SSE response stream with this probability (clamped into [0, 1]) right before its response, by
    /// resetting the connection; 0 ends it. A 2025-11-25 client can resume the stream by `Last-Event-ID`.
    pub fn set_stream_reset(&self, probability_of_reset: f64) {
        self.shared.faults.lock().stream_reset = probability(probability_of_reset);
    }

    /// HTTP: holds every response's status line back this long (capped at a day); `Duration::ZERO` ends it.
    pub fn set_slow_headers(&self, delay: Duration) {
        self.shared.faults.lock().slow_headers = delay.min(crate::latency::MAX_LATENCY);
    }

    /// HTTP: the session store forgets every `Mcp-Session-Id` at once; requests naming one get 404 from now on, and
    /// their calls in flight are abandoned. Returns how many sessions were forgotten.
    pub fn forget_http_sessions(&self) -> usize {
        self.shared.http.forget_sessions(&self.shared.counters)
    }

    /// Replaces the accepted auth schemes (`None`: no auth). Requests with another scheme get -32003 from now on.
    pub fn set_auth_schemes(&self, schemes: Option<Vec<AuthScheme>>) {
        self.shared.set_auth(schemes);
    }

    pub fn stats(&self) -> FakeStats {
        self.shared.counters.snapshot()
    }
}
