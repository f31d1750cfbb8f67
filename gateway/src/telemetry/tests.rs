//! The exporter against hostile collectors: one that never answers, one that answers 500, and a full queue. Each
//! costs spans, counted, and never a caller's wait: `finish` is synchronous and the export runs in its own task.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use mcpstorm_core::TokioClock;
use opentelemetry_proto::tonic::trace::v1::Span;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;
use crate::config::{Dur, TelemetrySpec};

fn spec(port: u16, queue: usize, batch: usize) -> TelemetrySpec {
    TelemetrySpec {
        otlp: format!("http://127.0.0.1:{port}"),
        queue,
        batch,
        interval: Dur(Duration::from_millis(10)),
        timeout: Dur(Duration::from_millis(200)),
        record_content: false,
    }
}

/// A collector that accepts connections and reads, then does what `answer` says: `None`, never answer.
async fn collector(answer: Option<&'static [u8]>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("bound").port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0; 1 << 16];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    if let Some(answer) = answer {
                        let _ = stream.write_all(answer).await;
                    }
                }
            });
        }
    });
    port
}

/// Waits until `done` holds: the export is in another task, on real sockets.
async fn until(mut done: impl FnMut() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn start(spec: &TelemetrySpec, metrics: &Metrics) -> Arc<Telemetry> {
    Telemetry::start(spec, metrics, Arc::new(TokioClock::new(0))).expect("a valid spec")
}

#[tokio::test]
async fn a_collector_that_never_answers_costs_the_batch_and_nothing_else() {
    let metrics = Metrics::default();
    let telemetry = start(&spec(collector(None).await, 64, 8), &metrics);
    for _ in 0..5 {
        telemetry.finish(Span::default());
    }
    until(|| metrics.trace_spans_dropped.get() == 5).await;
    assert_eq!(metrics.trace_spans_exported.get(), 0);
    telemetry.flush(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_collector_answering_500_has_its_spans_counted_dropped() {
    let metrics = Metrics::default();
    let answer = b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\nnope";
    let telemetry = start(&spec(collector(Some(answer)).await, 64, 8), &metrics);
    for _ in 0..3 {
        telemetry.finish(Span::default());
    }
    until(|| metrics.trace_spans_dropped.get() == 3).await;
    assert_eq!(metrics.trace_spans_exported.get(), 0);
}

#[tokio::test]
async fn a_full_queue_drops_at_once_and_an_answering_collector_gets_the_rest() {
    let metrics = Metrics::default();
    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
    let telemetry = start(&spec(collector(Some(answer)).await, 2, 2), &metrics);
    // One thread, and the exporter has not run yet: the queue holds two, the other eight are dropped as they come.
    for _ in 0..10 {
        telemetry.finish(Span::default());
    }
    assert_eq!(metrics.trace_spans_dropped.get(), 8);
    until(|| metrics.trace_spans_exported.get() == 2).await;
    telemetry.finish(Span::default());
    // At stop, what is queued is still sent.
    telemetry.flush(Duration::from_secs(5)).await;
    assert_eq!(metrics.trace_spans_exported.get(), 3);
}

#[test]
fn ids_do_not_repeat_and_are_never_zero() {
    let ids = Ids { seed: 7, next: AtomicU64::new(0) };
    let drawn: std::collections::BTreeSet<u64> = (0..10_000).map(|_| ids.next()).collect();
    assert_eq!(drawn.len(), 10_000);
    assert!(!drawn.contains(&0));
}
