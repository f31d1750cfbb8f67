//! MCP Streamable HTTP, server side, on the same listener seam (and the same request handling, `dispatch`) as the
//! NDJSON transport: HTTP/1.1 by hyper, both revisions.
//!
//! - 2025-11-25 (`legacy`): POST one JSON-RPC message; a request is answered with one JSON body or an SSE stream
//!   (priming event, progress, response; every event with an id), notifications and responses with 202.
//!   `Mcp-Session-Id` is issued on `initialize` and required afterwards (400 without, 404 unknown or expired by the
//!   server's clock); DELETE ends a session; GET opens the session's server-message stream (or 405), or with
//!   `Last-Event-ID` resumes a request's stream that was cut. `notifications/cancelled` cancels, within a session.
//! - 2026-07-28 (`modern`): POST only, no sessions, no resumption; `MCP-Protocol-Version`, `Mcp-Method` and
//!   `Mcp-Name` must mirror the body (400 with -32020), an unsupported version is 400 with -32022, an unknown
//!   method 404 with -32601; closing a request's stream cancels it.
//!
//! Every path is the MCP endpoint. HTTP faults (`Faults`): a slow status line, status bursts (before the body is
//! read), a stream cut right before its response. Bounds: the request body (`http_max_body`, 413), header count
//! and size (431, by hyper), each stream's queue (`sse::RING`), the sessions (`http_max_sessions`, 503) and the
//! streams each keeps.

mod answer;
mod body;
mod legacy;
mod modern;
mod request;

use std::convert::Infallible;
use std::sync::Arc;

use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use mcpstorm_core::session::MODERN_PROTOCOL_VERSIONS;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::config::ProtocolEra;
use crate::faults::StatusBurst;
use crate::idp::Refusal;
use crate::shared::Shared;
use crate::stats::Counters;
use body::Reply;

/// Most request headers; beyond it hyper answers 431.
const MAX_HEADERS: usize = 64;
/// Largest request head (request line and headers); beyond it hyper answers 431.
const MAX_HEADER_BYTES: usize = 16 * 1024;
/// hyper's read buffer: a request head must fit, bodies stream through it.
const MAX_BUF: usize = 64 * 1024;

pub(crate) use mcpstorm_core::serve::headers::{PROTOCOL_VERSION_HEADER, accepts, header};

/// Serves one HTTP/1.1 connection (keep-alive: many requests, one at a time) until the client closes it.
pub(crate) async fn serve_connection<R, W>(shared: Arc<Shared>, reader: R, writer: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    Counters::bump(&shared.counters.connections);
    Counters::bump(&shared.counters.connections_total);
    let _open = ConnectionGauge(shared.clone());
    let io = TokioIo::new(tokio::io::join(reader, writer));
    let service = service_fn(|request| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(&shared, request).await) }
    });
    // No `Date` header: hyper would read the system clock for it, which the simulator must not depend on.
    let connection = http1::Builder::new()
        .auto_date_header(false)
        .max_headers(MAX_HEADERS)
        .max_header_size(MAX_HEADER_BYTES)
        .max_buf_size(MAX_BUF)
        .serve_connection(io, service);
    if let Err(e) = connection.await {
        tracing::debug!(server = %shared.config.name, error = %e, "fake HTTP connection ended with an error");
    }
}

struct ConnectionGauge(Arc<Shared>);

impl Drop for ConnectionGauge {
    fn drop(&mut self) {
        Counters::dec(&self.0.counters.connections);
    }
}

async fn handle(shared: &Arc<Shared>, request: Request<hyper::body::Incoming>) -> Reply {
    Counters::bump(&shared.counters.http_requests);
    let faults = shared.faults.get();
    if !faults.slow_headers.is_zero() {
        Counters::bump(&shared.counters.http_slow_headers);
        tokio::time::sleep(faults.slow_headers).await;
    }
    if let Some(burst) = faults.http_status
        && shared.http.chance(burst.share)
    {
        Counters::bump(&shared.counters.http_status_injected);
        return injected(burst);
    }
    if let Some(authority) = &shared.tokens
        && let Err(refusal) = bearer(request.headers()).ok_or(Refusal::Malformed).and_then(|t| authority.check(t))
    {
        return unauthorized(shared, refusal);
    }
    let modern_header =
        header(request.headers(), PROTOCOL_VERSION_HEADER).is_some_and(|v| MODERN_PROTOCOL_VERSIONS.contains(&v));
    // 2026-07-28 has no GET or DELETE: a server (or request) of that revision answers them 405.
    let legacy = shared.config.serves(ProtocolEra::Legacy) && !modern_header;
    match *request.method() {
        Method::POST => request::post(shared, request).await,
        Method::GET if legacy => legacy::get(shared, request.headers()),
        Method::DELETE if legacy => legacy::delete(shared, request.headers()),
        _ => {
            let allow = if legacy { "GET, POST, DELETE" } else { "POST" };
            let mut reply = refused(shared, StatusCode::METHOD_NOT_ALLOWED);
            reply.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
            reply
        }
    }
}

/// The bearer token of an `Authorization` header.
fn bearer(headers: &hyper::HeaderMap) -> Option<&str> {
    let value = header(headers, header::AUTHORIZATION.as_str())?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
}

/// 401 `invalid_token` (RFC 6750 §3.1), saying why; the client's OAuth layer renews its token and resends once.
fn unauthorized(shared: &Shared, refusal: Refusal) -> Reply {
    Counters::bump(&shared.counters.http_unauthorized);
    let mut reply = body::empty(StatusCode::UNAUTHORIZED);
    let challenge = format!(r#"Bearer error="invalid_token", error_description="{}""#, refusal.describe());
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        reply.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    reply
}

/// An HTTP-level refusal with no body, counted.
pub(crate) fn refused(shared: &Shared, status: StatusCode) -> Reply {
    Counters::bump(&shared.counters.http_refused);
    body::empty(status)
}

fn injected(burst: StatusBurst) -> Reply {
    let status = StatusCode::from_u16(burst.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut reply = body::empty(status);
    if let Some(after) = burst.retry_after {
        // Whole seconds, rounded up: "Retry-After: 0" would invite an immediate retry storm.
        let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        reply.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    reply
}
