//! Streamable HTTP, server side, both eras, on one path (`/mcp`; `/healthz` and `/readyz` beside it, anything else
//! 404), as the fake servers (`sim/fake/src/http/`) do it on the wire:
//!
//! - 2025-11-25 (`legacy`): POST one message; a request is answered as one JSON body or an SSE stream (a priming
//!   event, progress, the response; every event with an id), notifications and responses with 202. `Mcp-Session-Id`
//!   (a signed token, `token.rs`) is issued on `initialize` and required afterwards (400 without, 404 when not
//!   ours, expired or DELETEd here); DELETE ends a session; GET opens the session's stream of server notifications,
//!   or with `Last-Event-ID` resumes a request stream that was cut.
//! - 2026-07-28 (`modern`): POST only, no sessions; `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` must
//!   mirror the body (400, -32020), an unsupported version is 400 (-32022); closing a request's stream cancels it.
//!
//! Before any of it: `Origin` (403), agent bearer tokens (401), and once stopping, 503. Bounds: `FrontLimits`.

mod answer;
mod forward;
mod legacy;
mod modern;
mod post;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use super::auth::{self, Denied, ResourceMetadata};
use super::body::{self, Reply};
use super::headers::{PROTOCOL_VERSION_HEADER, header};
use super::limits::origin_allowed;
use super::shared::Shared;
use crate::session::MODERN_PROTOCOL_VERSIONS;

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// Seconds an agent is asked to wait when its token could not be checked: long enough for a key refresh to be
/// retried, short enough that an agent does not give up.
const UNVERIFIABLE_RETRY_AFTER: &str = "2";
/// hyper's read buffer: a request head must fit, bodies stream through it.
const MAX_BUF: usize = 64 * 1024;

/// Serves one HTTP/1.1 connection (keep-alive: many requests, one at a time) until the client closes it, a 503 of
/// the drain closes it, or the drain ends.
pub(crate) async fn serve_connection<IO>(front: Arc<Shared>, io: IO)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    front.connections.fetch_add(1, Ordering::SeqCst);
    let _open = ConnectionGauge(front.clone());
    let service = service_fn(|request| {
        let front = front.clone();
        async move { Ok::<_, Infallible>(route(&front, request).await) }
    });
    let limits = &front.limits;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(limits.max_headers)
        .max_buf_size(MAX_BUF.max(limits.max_header_bytes + 1024));
    let connection = builder.serve_connection(TokioIo::new(io), service);
    // Through the drain the connection stays open: its session may still send its stream's GET or its DELETE here;
    // new work is answered 503 with `Connection: close`, which closes it. The drain's end closes them all.
    tokio::select! {
        biased;
        () = front.root.cancelled() => {}
        ended = connection => {
            if let Err(e) = ended {
                tracing::debug!(error = %e, "agent HTTP connection ended with an error");
            }
        }
    }
}

/// A refused request: its status, the challenge, and a JSON body saying the same for agents that read bodies. A
/// token that could not be checked (the identity provider unreachable) is 503 with `Retry-After`: the agent should
/// wait, not fetch a new token.
pub(crate) fn refused(front: &Shared, denied: &Denied) -> Reply {
    let status = StatusCode::from_u16(denied.status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let document = serde_json::json!({
        "error": denied.error_code().unwrap_or("unauthorized"),
        "error_description": denied.detail,
    });
    let mut reply = body::bytes(status, "application/json", document.to_string().into());
    let metadata = front.limits.auth.as_ref().and_then(|a| a.metadata());
    if let Ok(value) = HeaderValue::from_str(&auth::challenge(denied, metadata)) {
        reply.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        reply.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(UNVERIFIABLE_RETRY_AFTER));
    }
    reply
}

/// `/readyz`: 200 when the service is ready, else 503, with the service's account of why when it gives one. Not
/// ready while stopping: a load balancer stops sending new agents here during the drain.
fn readyz(front: &Shared) -> Reply {
    let (ready, detail) = front.service.readiness();
    let stopping = front.closing.is_cancelled();
    let status = if ready && !stopping { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    match detail {
        Some(mut detail) => {
            detail["ready"] = Value::Bool(ready && !stopping);
            detail["stopping"] = Value::Bool(stopping);
            body::bytes(status, "application/json", detail.to_string().into())
        }
        None if status == StatusCode::OK => body::text(status, "ready\n"),
        None => body::text(status, "not ready\n"),
    }
}

/// The resource's metadata document (RFC 9728): public, so any origin may read it.
fn metadata(meta: &ResourceMetadata) -> Reply {
    let mut reply = body::bytes(StatusCode::OK, "application/json", meta.document.to_string().into());
    reply.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    reply
}

struct ConnectionGauge(Arc<Shared>);

impl Drop for ConnectionGauge {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn route(front: &Arc<Shared>, request: Request<hyper::body::Incoming>) -> Reply {
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/healthz") => return body::text(StatusCode::OK, "ok\n"),
        (&Method::GET, "/readyz") => return readyz(front),
        (&Method::GET, path) if let Some(meta) = front.metadata_at(path) => return metadata(meta),
        (_, MCP_PATH) => {}
        _ => return body::empty(StatusCode::NOT_FOUND),
    }
    let headers = request.headers();
    // DNS rebinding: a browser page on another origin must not reach a local gateway.
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin.to_str().is_ok_and(|o| origin_allowed(&front.limits, o))
    {
        return body::empty(StatusCode::FORBIDDEN);
    }
    let principal = match front.authenticate(headers.get(header::AUTHORIZATION).map(HeaderValue::as_bytes)).await {
        Ok(principal) => principal,
        Err(denied) => return refused(front, &denied),
    };
    if front.closing.is_cancelled() && !legacy::drain_admits(front, request.method(), headers) {
        // New work goes elsewhere: 503 with Retry-After, and this connection closes after the answer.
        let mut reply = body::empty(StatusCode::SERVICE_UNAVAILABLE);
        reply.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        reply.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        return reply;
    }
    let modern_header = header(headers, PROTOCOL_VERSION_HEADER).is_some_and(|v| MODERN_PROTOCOL_VERSIONS.contains(&v));
    // 2026-07-28 has no GET or DELETE.
    match *request.method() {
        Method::POST => post::post(front, request, &principal).await,
        Method::GET if !modern_header => legacy::get(front, request.headers()),
        Method::DELETE if !modern_header => legacy::delete(front, request.headers()),
        _ => {
            let allow = if modern_header { "POST" } else { "GET, POST, DELETE" };
            let mut reply = body::empty(StatusCode::METHOD_NOT_ALLOWED);
            reply.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
            reply
        }
    }
}
