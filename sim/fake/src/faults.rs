//! The fault knobs layered over a server's configuration, and the cell its connections read them from.
//!
//! Faults are read when a call starts running (after it gets a worker), so a spike applies to calls that run during
//! it, as on a real server, and not to calls merely queued when it began.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Fault knobs layered over the configuration.
///
/// | field                | default | effect                                                       |
/// |----------------------|---------|--------------------------------------------------------------|
/// | `latency_multiplier` | 1.0     | each call's sampled latency is multiplied by this ...        |
/// | `extra_latency`      | 0       | ... and then this is added                                   |
/// | `error_rate`         | none    | replaces every tool's configured error rate                  |
/// | `http_status`        | none    | HTTP: a share of requests answered with an error status      |
/// | `stream_reset`       | 0       | HTTP: probability an SSE stream is cut before its response   |
/// | `slow_headers`       | 0       | HTTP: delay before every response's status line              |
///
/// The HTTP knobs act only on a server serving Streamable HTTP (`transport = "http"`); they are read when a request
/// arrives, so a burst applies to requests that arrive during it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Faults {
    pub latency_multiplier: f64,
    pub extra_latency: Duration,
    pub error_rate: Option<f64>,
    pub http_status: Option<StatusBurst>,
    pub stream_reset: f64,
    pub slow_headers: Duration,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            latency_multiplier: 1.0,
            extra_latency: Duration::ZERO,
            error_rate: None,
            http_status: None,
            stream_reset: 0.0,
            slow_headers: Duration::ZERO,
        }
    }
}

/// A status burst: each HTTP request is, with probability `share`, answered `status` (with `Retry-After` if given)
/// before the server reads its body, as an overloaded load balancer or a rate limiter answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatusBurst {
    /// In [0, 1].
    pub share: f64,
    /// An error status, 400 to 599 (429, 503 and 500 are the usual ones).
    pub status: u16,
    /// Sent as `Retry-After` in whole seconds (rounded up).
    pub retry_after: Option<Duration>,
}

/// A probability from a caller: NaN is 0, anything else clamped into [0, 1].
pub(crate) fn probability(p: f64) -> f64 {
    if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) }
}

impl Faults {
    /// The latency a call runs for, given its sampled base latency.
    pub fn apply(&self, base: Duration) -> Duration {
        // `Duration::mul_f64` panics on overflow: a product no duration holds is past the cap anyway.
        let max = crate::latency::MAX_LATENCY;
        let scaled = Duration::try_from_secs_f64(self.latency_multiplier * base.as_secs_f64()).unwrap_or(max);
        scaled.saturating_add(self.extra_latency).min(max)
    }
}

#[derive(Debug, Default)]
pub(crate) struct FaultCell(Mutex<Faults>);

impl FaultCell {
    pub fn get(&self) -> Faults {
        *self.lock()
    }

    pub fn lock(&self) -> MutexGuard<'_, Faults> {
        // Plain data, so a poisoned lock is still consistent.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
