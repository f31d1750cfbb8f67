//! The gateway's traces (`[telemetry]`): every `tools/call` through the process as OpenTelemetry spans in the MCP
//! semantic conventions (the keys and the W3C trace context are `mcpstorm_core::observe::trace`'s, the simulator's
//! too), exported to an OTLP/HTTP collector.
//!
//! - **A call** ([`CallTrace`]) is a SERVER span, the child of the agent's span when the request's `params._meta`
//!   carries a valid `traceparent`, with a CLIENT span per attempt the gateway sent. Each attempt's upstream request
//!   carries the attempt's own `traceparent` in its `_meta` (with the agent's `tracestate` and `baggage`), so a server
//!   that traces puts its span under the attempt. An agent's unsampled `traceparent` is passed on unsampled and its
//!   call is not exported (the parent decides, as OpenTelemetry's default sampler does); without one, every call is.
//! - **Export** never waits on the collector: a finished span goes into a bounded queue with `try_send`, and a full
//!   queue drops it and counts it (`mcpstorm_gateway_trace_spans_dropped_total`). One task ([`export`]) drains the
//!   queue in batches and posts them; a collector that is slow, down or answers errors costs that task's time and
//!   the batch, never a call's.
//! - **Time** is the `Clock` seam's: wall time read once when tracing starts, every timestamp after it that reading
//!   plus the seam's monotonic time since (nanosecond steps within a call, no std clock read on the call path).
//! - **Ids** are a per-process random seed (the OS's, once: trace ids must differ between gateway nodes whatever their
//!   `--seed`) mixed with a counter through SplitMix64, a bijection, so no two ids of the process repeat and no call
//!   takes a lock for one.

mod call;
mod export;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcpstorm_core::Clock;
use mcpstorm_core::observe::trace::{SpanId, TraceId};
use opentelemetry_proto::tonic::trace::v1::Span;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::TelemetrySpec;
use crate::config::telemetry::collector_url;
use crate::metrics::Metrics;
use crate::seed::splitmix64;

pub use call::CallTrace;

/// See the module documentation. One per process, shared by every federation a reload builds.
#[derive(Debug)]
pub struct Telemetry {
    queue: mpsc::Sender<Span>,
    dropped: Counter,
    ids: Ids,
    clock: Arc<dyn Clock>,
    /// The wall time of `anchor`, in nanoseconds since the Unix epoch.
    anchor_wall_ns: u64,
    anchor: Instant,
    record_content: bool,
    /// The exporter; taken by [`Telemetry::flush`].
    task: std::sync::Mutex<Option<(tokio::task::JoinHandle<()>, mcpstorm_core::CancelToken)>>,
}

impl Telemetry {
    /// Starts the exporter of `spec` (on the current tokio runtime). The URL was checked with the file; the error is
    /// for a spec that was not.
    pub fn start(spec: &TelemetrySpec, metrics: &Metrics, clock: Arc<dyn Clock>) -> Result<Arc<Telemetry>, String> {
        let url = collector_url(&spec.otlp).map_err(|e| format!("telemetry.otlp: {e}"))?;
        let (queue, rx) = mpsc::channel(spec.queue.max(1));
        let stop = mcpstorm_core::CancelToken::new();
        let exporter = export::Exporter {
            url,
            batch: spec.batch.max(1),
            interval: spec.interval.0,
            timeout: spec.timeout.0,
            exported: metrics.trace_spans_exported.clone(),
            dropped: metrics.trace_spans_dropped.clone(),
        };
        let task = tokio::spawn(exporter.run(rx, stop.clone()));
        // The one OS entropy read of tracing (see the module documentation); the process id if the OS has none.
        let seed = getrandom::u64().unwrap_or_else(|_| u64::from(std::process::id()));
        let anchor = clock.now();
        let anchor_wall_ns = clock.wall_ms().saturating_mul(1_000_000);
        Ok(Arc::new(Telemetry {
            queue,
            dropped: metrics.trace_spans_dropped.clone(),
            ids: Ids { seed, next: AtomicU64::new(0) },
            clock,
            anchor_wall_ns,
            anchor,
            record_content: spec.record_content,
            task: std::sync::Mutex::new(Some((task, stop))),
        }))
    }

    /// Sends what is queued, for at most `within`, and stops the exporter: the process's last spans reach the
    /// collector when it answers in time.
    pub async fn flush(&self, within: Duration) {
        let task = self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some((task, stop)) = task {
            stop.cancel("the gateway stopped");
            let _ = tokio::time::timeout(within, task).await;
        }
    }

    /// Now, as a span's timestamp.
    fn now_ns(&self) -> u64 {
        let since = self.clock.now().saturating_duration_since(self.anchor);
        self.anchor_wall_ns.saturating_add(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Queues a finished span, or counts it dropped when the queue is full (or the exporter gone).
    fn finish(&self, span: Span) {
        if self.queue.try_send(span).is_err() {
            self.dropped.inc();
        }
    }

    fn trace_id(&self) -> TraceId {
        let (a, b) = (self.ids.next(), self.ids.next());
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&a.to_be_bytes());
        id[8..].copy_from_slice(&b.to_be_bytes());
        TraceId(id)
    }

    fn span_id(&self) -> SpanId {
        SpanId(self.ids.next().to_be_bytes())
    }
}

/// Unique non-zero ids from a seed and a counter (see the module documentation).
#[derive(Debug)]
struct Ids {
    seed: u64,
    next: AtomicU64,
}

impl Ids {
    fn next(&self) -> u64 {
        loop {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let id = splitmix64(self.seed.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
            // Zero is the one invalid id: skipped (once in 2^64 draws).
            if id != 0 {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests;
