//! One HTTP exchange: the request's headers (both eras' "request metadata"), the pooled send with same-origin
//! redirects, and what a `POST` of a request or a notification makes of the answer.

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tokio::time::timeout;

use super::head::{Body, HttpResponseHead};
use super::pool::Lease;
use super::stream::{self, StreamCtx};
use super::{Http, HttpLimits, status};
use crate::error::{CallError, HttpError, TransportError};
use crate::jsonrpc::Message;
use crate::mcp::envelope_version;
use crate::mcp::method;
use crate::transport::FrameError;

pub(super) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(super) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
pub(super) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const ACCEPT_POST: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
pub(super) const ACCEPT_SSE: HeaderValue = HeaderValue::from_static("text/event-stream");

/// What a response's `Content-Type` says it carries.
pub(super) fn body_kind(headers: &HeaderMap) -> Body {
    Body::of(headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or(""))
}

impl Http {
    /// Headers every request carries: the endpoint's own, then the session's (2025-11-25) unless `modern`.
    pub(super) fn base_headers(&self, modern: bool) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in self.endpoint.extra_headers() {
            if let Ok(mut value) = HeaderValue::from_str(value.expose()) {
                value.set_sensitive(true);
                headers.append(name.clone(), value);
            }
        }
        if !modern {
            let state = self.state();
            if let Some(session) = &state.session {
                headers.insert(SESSION_ID, session.clone());
            }
            if let Some(version) = &state.version {
                headers.insert(PROTOCOL_VERSION, version.clone());
            }
        }
        headers
    }

    /// Keeps the `Mcp-Session-Id` of an `initialize` response ("Session Management"): visible ASCII only, and
    /// bounded, or the response is refused.
    fn adopt_session(&self, headers: &HeaderMap) -> Result<(), HttpError> {
        let Some(id) = headers.get(SESSION_ID) else { return Ok(()) };
        let max = self.limits().max_header_value;
        if id.len() > max || id.is_empty() || !id.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)) {
            return Err(HttpError::Head(format!("Mcp-Session-Id must be 1 to {max} visible ASCII characters")));
        }
        self.state().session = Some(id.clone());
        Ok(())
    }

    /// Keeps the version an `initialize` result negotiated, for `MCP-Protocol-Version` from now on.
    pub(super) fn adopt_version(&self, msg: &Message) {
        let Message::Response(r) = msg else { return };
        let crate::jsonrpc::ResponseBody::Result(result) = &r.body else { return };
        let Ok(result) = result.to_value() else { return };
        if let Some(v) = result.get("protocolVersion").and_then(|v| v.as_str()).and_then(|v| v.parse().ok()) {
            self.state().version = Some(v);
        }
    }

    /// Forgets a session the server no longer knows: the next connection starts a new one.
    pub(super) fn drop_session(&self, sent: &HeaderValue) {
        let mut state = self.state();
        if state.session.as_ref() == Some(sent) {
            state.session = None;
            state.session_lost = true;
        }
    }

    fn session_lost(&self) -> bool {
        self.state().session_lost
    }
}

/// The 2026-07-28 "Request Metadata" headers of `msg`: `MCP-Protocol-Version` equal to the body's `_meta` version,
/// `Mcp-Method`, and `Mcp-Name` for the three methods that name something.
fn modern_headers(msg: &Message, headers: &mut HeaderMap) {
    let Message::Request(r) = msg else { return };
    if let Some(v) = envelope_version(r.params.as_ref()).and_then(|v| v.as_str()).and_then(|v| v.parse().ok()) {
        headers.insert(PROTOCOL_VERSION, v);
    }
    if let Ok(m) = HeaderValue::from_str(&r.method) {
        headers.insert(MCP_METHOD, m);
    }
    let field = match r.method.as_str() {
        method::TOOLS_CALL | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return,
    };
    if let Some(name) = r.params.as_ref().and_then(|p| p.get(field)).and_then(|v| v.as_str()) {
        headers.insert(MCP_NAME, name_value(name));
    }
}

/// "Value Encoding": plain when the value is header-safe ASCII without surrounding whitespace and does not look
/// like the sentinel, else `=?base64?…?=` of its UTF-8.
fn name_value(name: &str) -> HeaderValue {
    let plain = name.bytes().all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
        && name.trim_matches([' ', '\t']) == name
        && !(name.starts_with("=?base64?") && name.ends_with("?="));
    if plain && let Ok(v) = HeaderValue::from_str(name) {
        return v;
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(name.as_bytes());
    HeaderValue::from_str(&format!("=?base64?{encoded}?=")).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A hyper failure as a transport error: a cut connection is [`TransportError::Closed`] (whether hyper noticed it
/// itself or its IO reported it), a refused head [`HttpError::Head`].
pub(super) fn hyper_error(e: &hyper::Error) -> CallError {
    if let Some(io) = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>()) {
        return TransportError::io("read", io).into();
    }
    if e.is_parse() {
        return TransportError::Http(HttpError::Head(e.to_string())).into();
    }
    if e.is_incomplete_message() || e.is_closed() || e.is_canceled() {
        return TransportError::Closed.into();
    }
    TransportError::Http(HttpError::Exchange(e.to_string())).into()
}

/// Sends one request through the pool, following same-origin 307/308 redirects (they keep the method and body)
/// up to `max_redirects`. A reused connection that turns out closed before the request was written is replaced
/// once by a fresh one. `dedicated` takes a connection outside the pool's bounds (the `GET` stream).
pub(super) async fn send(
    http: &Http,
    method: Method,
    headers: &HeaderMap,
    body: Bytes,
    dedicated: bool,
) -> Result<(Response<Incoming>, Lease), CallError> {
    let url = http.endpoint.parts();
    let limits = http.limits();
    let mut target = url.target.clone();
    let (mut redirects, mut fresh) = (0, false);
    loop {
        let mut lease = if dedicated || fresh { http.pool.dedicated().await? } else { http.pool.acquire().await? };
        let mut builder = Request::builder().method(method.clone()).uri(target.as_str());
        if let Some(h) = builder.headers_mut() {
            h.clone_from(headers);
            h.insert(header::HOST, url.authority.clone());
        }
        let request = builder
            .body(Full::new(body.clone()))
            .map_err(|e| TransportError::Http(HttpError::Exchange(e.to_string())))?;
        let Some(sender) = lease.sender() else { return Err(TransportError::Closed.into()) };
        let response = match sender.try_send_request(request).await {
            Ok(r) => r,
            Err(e) if lease.reused && !fresh && e.message().is_some() => {
                fresh = true;
                continue;
            }
            Err(e) => return Err(hyper_error(e.error())),
        };
        check_head(response.headers(), limits)?;
        let status = response.status();
        if !status.is_redirection() {
            return Ok((response, lease));
        }
        if !matches!(status, StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT) {
            return Err(TransportError::Http(HttpError::Redirect(format!("HTTP {status}"))).into());
        }
        redirects += 1;
        if redirects > limits.max_redirects {
            return Err(TransportError::Http(HttpError::TooManyRedirects { max: limits.max_redirects }).into());
        }
        let location = response.headers().get(header::LOCATION).and_then(|l| l.to_str().ok()).unwrap_or("");
        target = same_origin_target(location, url)
            .ok_or_else(|| TransportError::Http(HttpError::Redirect(format!("to {location:?}"))))?;
    }
}

/// The origin-form target of a redirect that stays on our origin (a path, or an absolute URL with our scheme and
/// authority): the dialer reaches one host only.
fn same_origin_target(location: &str, url: &super::endpoint::Url) -> Option<String> {
    if location.starts_with('/') && !location.starts_with("//") {
        return Some(location.to_owned());
    }
    let uri: hyper::Uri = location.parse().ok()?;
    let scheme = if url.tls { "https" } else { "http" };
    let same = uri.scheme_str() == Some(scheme) && uri.authority().map(|a| a.as_str()) == url.authority.to_str().ok();
    same.then(|| uri.path_and_query().map_or("/", |p| p.as_str()).to_owned())
}

/// Bounds every header value (the count and the head's size are hyper's, configured on the pool's connections).
fn check_head(headers: &HeaderMap, limits: &HttpLimits) -> Result<(), CallError> {
    match headers.iter().find(|(_, v)| v.len() > limits.max_header_value) {
        Some((name, v)) => Err(TransportError::Http(HttpError::Head(format!(
            "header {name} has {} bytes, over the {}-byte limit",
            v.len(),
            limits.max_header_value
        )))
        .into()),
        None => Ok(()),
    }
}

/// Reads a whole body of at most `max` bytes.
pub(super) async fn read_body(body: Incoming, max: usize) -> Result<Bytes, CallError> {
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => match e.downcast::<hyper::Error>() {
            Ok(e) => Err(hyper_error(&e)),
            Err(_) => Err(TransportError::FrameTooLarge { max }.into()),
        },
    }
}

/// One request's exchange, spawned by the sink. Bounded by the stream lifetime; a failure fails this call only.
pub(super) async fn request(http: Arc<Http>, msg: Message, id: i64, modern: bool) {
    let lifetime = http.limits().max_stream_lifetime;
    let outcome = match timeout(lifetime, post_request(&http, &msg, id, modern)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(TransportError::Http(HttpError::StreamLifetime(lifetime)).into()),
    };
    if let Err(error) = outcome {
        http.deliver(Err(FrameError::Exchange { id, error: Box::new(error) })).await;
    }
}

async fn post_request(http: &Arc<Http>, msg: &Message, id: i64, modern: bool) -> Result<(), CallError> {
    let initialize = matches!(msg, Message::Request(r) if r.method == method::INITIALIZE);
    if !modern && !initialize && http.session_lost() {
        http.deliver(Ok(status::session_not_found(id))).await;
        return Ok(());
    }
    let mut headers = http.base_headers(modern);
    headers.insert(header::ACCEPT, ACCEPT_POST);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if modern {
        modern_headers(msg, &mut headers);
    }
    let sent_session = headers.get(SESSION_ID).cloned();
    let (response, lease) = send(http, Method::POST, &headers, Bytes::from(msg.encode()), false).await?;
    let status = response.status();
    if let (Some(hook), Message::Request(r)) = (&http.on_response, msg) {
        hook(&HttpResponseHead::new(&r.method, status.as_u16(), response.headers(), &headers));
    }
    if status == StatusCode::ACCEPTED {
        return Err(CallError::MalformedResponse("HTTP 202 Accepted for a request: no response can follow".into()));
    }
    if !status.is_success() {
        let reply = status::reply(http, response, id, sent_session.as_ref()).await?;
        http.deliver(Ok(reply)).await;
        return Ok(());
    }
    if initialize {
        http.adopt_session(response.headers()).map_err(TransportError::Http)?;
    }
    match body_kind(response.headers()) {
        Body::Json => {
            let bytes = read_body(response.into_body(), http.limits().max_body).await?;
            lease.release();
            let reply = Message::decode(&bytes).map_err(|e| CallError::MalformedResponse(e.to_string()))?;
            if initialize {
                http.adopt_version(&reply);
            }
            http.deliver(Ok(reply)).await;
            Ok(())
        }
        Body::Sse => {
            let ctx = StreamCtx { request: Some(id), initialize, resumable: !modern };
            stream::follow(http, response.into_body(), lease, ctx).await
        }
        Body::Other(ct) => Err(TransportError::Http(HttpError::ContentType(ct)).into()),
    }
}

/// Posts a notification or a response; `true` when the server accepted it. Failures are logged: no call waits on
/// them.
pub(super) async fn notify(http: &Arc<Http>, msg: &Message) -> bool {
    let mut headers = http.base_headers(false);
    headers.insert(header::ACCEPT, ACCEPT_POST);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    match send(http, Method::POST, &headers, Bytes::from(msg.encode()), false).await {
        Ok((response, lease)) if response.status().is_success() => {
            if read_body(response.into_body(), http.limits().max_error_body).await.is_ok() {
                lease.release();
            }
            true
        }
        Ok((response, _)) => {
            tracing::debug!(status = %response.status(), "notification or response refused");
            false
        }
        Err(e) => {
            tracing::debug!(error = %e, "notification or response not delivered");
            false
        }
    }
}

/// `DELETE` of the session ("Session Management"); the answer does not matter (405: the server keeps it).
pub(super) async fn delete(http: &Http, session: HeaderValue) {
    let mut headers = http.base_headers(true);
    headers.insert(SESSION_ID, session);
    if let Some(version) = http.state().version.clone() {
        headers.insert(PROTOCOL_VERSION, version);
    }
    if let Ok((response, lease)) = send(http, Method::DELETE, &headers, Bytes::new(), false).await {
        tracing::debug!(status = %response.status(), "session deleted");
        if read_body(response.into_body(), http.limits().max_error_body).await.is_ok() {
            lease.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_or_base64_per_value_encoding() {
        assert_eq!(name_value("get_weather"), "get_weather");
        assert_eq!(name_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(name_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(name_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(name_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    }
}
