//! Forwarding to the gateway process a message belongs to: an agent's answer to what a call asked it (see
//! `serve::asks`; the owner's status comes back, 202 when delivered), and a 2026-07-28 retry of a call another process
//! parked (see `serve::parked`; the owner's whole answer comes back). One POST of the message as the agent sent it,
//! with the agent's session id, authorization and the 2026-07-28 mirrored headers, and a header that stops a second
//! hop.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderMap, HeaderName};
use hyper::{Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;

use crate::jsonrpc::Message;
use crate::serve::body::{self, Reply};
use crate::serve::headers::{METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, SESSION_HEADER};

/// Marks a forwarded answer: its receiver delivers it or drops it, never forwards it again (a fleet whose processes
/// disagree on their URLs cannot make it loop).
pub(crate) const FORWARDED_HEADER: &str = "x-mcpstorm-forwarded";

/// How long the owner may take to take an answer: it only hands it to a waiting call.
const WITHIN: Duration = Duration::from_secs(10);

/// The headers an agent's message keeps on its way to the owner.
const KEPT: [HeaderName; 5] = [SESSION_HEADER, PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER, AUTHORIZATION];

/// Forwards `msg` to the MCP endpoint `url` (plain HTTP: the fleet's own network). 502 when the owner cannot be
/// reached, which the agent's SDK reports as its answer failing.
pub(crate) async fn forward(url: &str, headers: &HeaderMap, msg: &Message) -> Reply {
    match tokio::time::timeout(WITHIN, post(url, headers, msg)).await {
        Ok(Ok(response)) => {
            tracing::info!(owner = url, status = %response.status(), "forwarded an agent's answer to the process that asked");
            body::empty(response.status())
        }
        Ok(Err(why)) => {
            tracing::warn!(owner = url, %why, "an agent's answer could not be forwarded to the process that asked");
            body::empty(StatusCode::BAD_GATEWAY)
        }
        Err(_) => {
            tracing::warn!(owner = url, "the process that asked did not take the agent's answer in time");
            body::empty(StatusCode::GATEWAY_TIMEOUT)
        }
    }
}

/// Forwards a request to the process that holds its parked call, and relays that process's answer (one JSON body:
/// the forwarded request accepts no stream), for as long as the call may take.
pub(crate) async fn relay(url: &str, headers: &HeaderMap, msg: &Message) -> Reply {
    let response = match post(url, headers, msg).await {
        Ok(response) => response,
        Err(why) => {
            tracing::warn!(owner = url, %why, "a retry could not be forwarded to the process that holds its call");
            return body::empty(StatusCode::BAD_GATEWAY);
        }
    };
    tracing::info!(owner = url, status = %response.status(), "forwarded a retry to the process that parked its call");
    let (parts, incoming) = response.into_parts();
    match incoming.collect().await {
        Ok(collected) => body::bytes(parts.status, "application/json", collected.to_bytes()),
        Err(_) => body::empty(StatusCode::BAD_GATEWAY),
    }
}

async fn post(url: &str, headers: &HeaderMap, msg: &Message) -> Result<hyper::Response<Incoming>, String> {
    let uri: Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let authority = uri.authority().ok_or_else(|| format!("{url}: no host"))?.clone();
    if uri.scheme_str() != Some("http") {
        return Err(format!("{url}: only http:// owners are forwarded to"));
    }
    let stream = tokio::net::TcpStream::connect(authority.as_str()).await.map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut request = Request::post(uri.path())
        .header(HOST, authority.as_str())
        .header(CONTENT_TYPE, "application/json")
        .header(hyper::header::ACCEPT, "application/json")
        .header(FORWARDED_HEADER, "1")
        .body(Full::new(Bytes::from(msg.encode())))
        .map_err(|e| e.to_string())?;
    for name in KEPT {
        if let Some(value) = headers.get(&name) {
            request.headers_mut().insert(name, value.clone());
        }
    }
    sender.send_request(request).await.map_err(|e| e.to_string())
}
