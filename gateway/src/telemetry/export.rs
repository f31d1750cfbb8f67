//! The exporter: one task draining the span queue in batches and posting each to the collector as an OTLP/HTTP
//! protobuf `ExportTraceServiceRequest`. A batch is sent when it is full or when its first span has waited
//! `interval`. One request at a time, each bounded by `timeout`: while the collector is slow the queue fills and new
//! spans are dropped at the call (counted), which is the bound on what a hostile collector costs the process.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use mcpstorm_core::CancelToken;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prometheus_client::metrics::counter::Counter;
use prost::Message;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::telemetry::CollectorUrl;

/// The service the spans are the gateway's.
const SERVICE: &str = "mcpstorm-gateway";
/// How often a filling batch takes what the calls queued (see `run`): at most this late, and at most the spans
/// arriving in this time wait in the queue between looks.
const TICK: Duration = Duration::from_millis(5);
/// The most of a collector's answer read (its partial-success message); the rest is not needed.
const MAX_ANSWER: usize = 64 << 10;

/// See the module documentation.
#[derive(Debug)]
pub(super) struct Exporter {
    pub url: CollectorUrl,
    pub batch: usize,
    pub interval: Duration,
    pub timeout: Duration,
    pub exported: Counter,
    pub dropped: Counter,
}

impl Exporter {
    /// Until `stop` (then what is queued is sent once more) or the queue's senders are gone.
    pub async fn run(self, mut rx: mpsc::Receiver<Span>, stop: CancelToken) {
        let mut conn: Option<SendRequest<Full<Bytes>>> = None;
        let mut failing = false;
        loop {
            let first = tokio::select! {
                span = rx.recv() => span,
                () = stop.cancelled() => None,
            };
            let Some(first) = first else { break };
            let mut spans = vec![first];
            let until = Instant::now() + self.interval;
            loop {
                while spans.len() < self.batch {
                    let Ok(span) = rx.try_recv() else { break };
                    spans.push(span);
                }
                let now = Instant::now();
                if spans.len() >= self.batch || now >= until || stop.is_cancelled() || rx.is_closed() {
                    break;
                }
                // Polled every TICK while a batch fills, rather than woken by each span: a wake per span would cost
                // each call's thread a notification of this task.
                tokio::select! {
                    () = tokio::time::sleep(TICK.min(until - now)) => {}
                    () = stop.cancelled() => {}
                }
            }
            self.send(&mut conn, spans, &mut failing).await;
        }
        // The last batches: what the calls that ended before the stop queued.
        rx.close();
        let mut rest = Vec::new();
        while let Ok(span) = rx.try_recv() {
            rest.push(span);
            if rest.len() == self.batch {
                self.send(&mut conn, std::mem::take(&mut rest), &mut failing).await;
            }
        }
        if !rest.is_empty() {
            self.send(&mut conn, rest, &mut failing).await;
        }
    }

    /// Posts one batch and counts its spans exported or dropped. A failure is logged when it starts and when it
    /// ends, not per batch: a collector down for an hour is one warning.
    async fn send(&self, conn: &mut Option<SendRequest<Full<Bytes>>>, spans: Vec<Span>, failing: &mut bool) {
        let n = spans.len() as u64;
        let body = request(spans).encode_to_vec();
        let sent = tokio::time::timeout(self.timeout, self.post(conn, body)).await;
        let outcome = sent.unwrap_or_else(|_| Err(format!("no answer within {:?}", self.timeout)));
        match outcome {
            Ok(()) => {
                self.exported.inc_by(n);
                if std::mem::take(failing) {
                    tracing::info!(collector = %self.url.authority, "trace export works again");
                }
            }
            Err(why) => {
                // The connection may be mid-request: the next batch dials afresh.
                *conn = None;
                self.dropped.inc_by(n);
                if !std::mem::replace(failing, true) {
                    tracing::warn!(collector = %self.url.authority, "trace export failing, spans dropped: {why}");
                }
            }
        }
    }

    async fn post(&self, conn: &mut Option<SendRequest<Full<Bytes>>>, body: Vec<u8>) -> Result<(), String> {
        let sender = match conn.take().filter(|c| !c.is_closed()) {
            Some(sender) => sender,
            None => self.dial().await?,
        };
        let sender = conn.insert(sender);
        sender.ready().await.map_err(|e| e.to_string())?;
        let request = hyper::Request::post(&self.url.path)
            .header(hyper::header::HOST, &self.url.authority)
            .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        // Read to its end so the connection can carry the next batch.
        let answer = Limited::new(response.into_body(), MAX_ANSWER).collect().await.map_err(|e| e.to_string())?;
        if status.is_success() {
            return Ok(());
        }
        let answer = answer.to_bytes();
        let said = String::from_utf8_lossy(&answer[..answer.len().min(200)]).into_owned();
        Err(format!("the collector answered {status}: {said}"))
    }

    async fn dial(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let stream = tokio::net::TcpStream::connect(&self.url.authority).await.map_err(|e| e.to_string())?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
        // Ends with the connection; an error there shows as the next request's.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }
}

/// The spans as one request: one resource (this process), one scope.
fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    let text = |key: &str, value: &str| KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.to_owned())) }),
    };
    let resource = Resource {
        attributes: vec![text("service.name", SERVICE), text("service.version", env!("CARGO_PKG_VERSION"))],
        ..Resource::default()
    };
    let scope = InstrumentationScope {
        name: SERVICE.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        ..InstrumentationScope::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource),
            scope_spans: vec![ScopeSpans { scope: Some(scope), spans, ..ScopeSpans::default() }],
            ..ResourceSpans::default()
        }],
    }
}
