//! One HTTP exchange: the request's headers (both eras' "request metadata"), and what a `POST` of a request or a
//! notification makes of the answer (sent through the pool by `send.rs`).

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, StatusCode};
use tokio::time::timeout;

use super::head::{Body, HttpResponseHead, PROTOCOL_VERSION, SESSION_ID};
use super::send::{read_body, send};
use super::stream::{self, StreamCtx};
use super::{Http, Inbound, status};
use crate::credential::Secret;
use crate::error::{AuthError, CallError, HttpError, TransportError};
use crate::jsonrpc::{Message, MetaRequest, Request};
use crate::mcp::{META_PROTOCOL_VERSION, MODERN_PROTOCOL_VERSIONS, envelope_version, method};
use crate::transport::FrameError;

const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
const ACCEPT_POST: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");

impl Http {
    /// Headers every request carries: the endpoint's own, then the session's (2025-11-25) unless `modern`.
    pub(super) fn base_headers(&self, modern: bool) -> HeaderMap {
        // Room for these and the request's own (accept, content type, the era's three, authorization): one
        // allocation rather than a growth per insert.
        let mut headers = HeaderMap::with_capacity(8 + self.endpoint.extra_headers().len());
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

    /// Adds the `Authorization` value of the endpoint's [`Authorizer`](super::Authorizer), if it has one; the value
    /// sent comes back, for telling the authorizer when the server refuses it.
    pub(super) async fn authorize(
        &self,
        headers: &mut HeaderMap,
        on_behalf_of: Option<&Secret>,
    ) -> Result<Option<Secret>, CallError> {
        let Some(authorizer) = self.endpoint.authorizer() else { return Ok(None) };
        let token = authorizer.authorization(on_behalf_of).await?;
        if let Some(value) = token.as_ref().and_then(|t| HeaderValue::from_str(t.expose()).ok()) {
            let mut value = value;
            value.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, value);
        }
        Ok(token)
    }

    /// Tells the authorizer that the server refused a request that carried `sent`: whether sending it again may
    /// succeed (`false` without an authorizer).
    pub(super) fn refused(&self, sent: Option<&Secret>, response: &HeaderMap) -> bool {
        let Some(authorizer) = self.endpoint.authorizer() else { return false };
        let challenge = response.get(header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok());
        authorizer.refused(sent, challenge)
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

/// A request as its exchange posts it: its bytes, and what its headers and the handling of its answer need. Built
/// by the sink, so the exchange neither clones the message nor merges its `_meta` to read them.
pub(super) struct Post {
    pub id: i64,
    pub body: Bytes,
    pub method: String,
    pub initialize: bool,
    /// Sent in the 2026-07-28 era: its `params._meta` names a protocol version.
    pub modern: bool,
    /// The 2026-07-28 "Request Metadata" headers: `MCP-Protocol-Version` equal to the body's `_meta` version,
    /// `Mcp-Method`, and `Mcp-Name` for the three methods that name something. Empty in the 2025-11-25 era.
    pub modern_headers: Vec<(HeaderName, HeaderValue)>,
    /// The agent the request is made for (see [`Authorizer`](super::Authorizer)).
    pub on_behalf_of: Option<Secret>,
}

impl Post {
    /// `None` for a request whose id is not an integer: its response could not be told from another's.
    fn new(request: &Request, envelope: Option<&serde_json::Value>, body: Vec<u8>) -> Option<Post> {
        let Some(id) = request.id.as_number() else {
            tracing::debug!(id = %request.id, "request with a non-integer id not sent over HTTP");
            return None;
        };
        let mut modern_headers = Vec::new();
        if let Some(version) = envelope {
            if let Some(v) = version.as_str().and_then(known_value) {
                modern_headers.push((PROTOCOL_VERSION, v));
            }
            if let Some(m) = known_value(&request.method) {
                modern_headers.push((MCP_METHOD, m));
            }
            let field = match request.method.as_str() {
                method::TOOLS_CALL | "prompts/get" => Some("name"),
                "resources/read" => Some("uri"),
                _ => None,
            };
            let name = field.and_then(|f| request.params.as_ref()?.get(f)?.as_str());
            if let Some(name) = name {
                modern_headers.push((MCP_NAME, name_value(name)));
            }
        }
        Some(Post {
            id,
            body: Bytes::from(body),
            method: request.method.clone(),
            initialize: request.method == method::INITIALIZE,
            modern: envelope.is_some(),
            modern_headers,
            on_behalf_of: None,
        })
    }

    /// A request fed whole (`None` for any other message).
    pub fn of_message(msg: &Message) -> Option<Post> {
        let Message::Request(request) = msg else { return None };
        Post::new(request, envelope_version(request.params.as_ref()), msg.encode())
    }

    /// A connection's request, encoded with its `_meta` spliced in rather than merged.
    pub fn of_request(request: &MetaRequest) -> Option<Post> {
        // Room for a tool call with its envelope: grown from empty, the body was reallocated at every doubling.
        let mut body = Vec::with_capacity(512);
        request.encode_into(&mut body);
        let post = Post::new(&request.request, request.meta_member(META_PROTOCOL_VERSION), body)?;
        Some(Post { on_behalf_of: request.on_behalf_of.clone(), ..post })
    }
}

/// A header value for a protocol version or a method name: a static one for the versions and methods we speak,
/// which costs no copy when made or cloned (each request's headers are cloned into the request sent); `None` when
/// `text` is not a valid header value.
fn known_value(text: &str) -> Option<HeaderValue> {
    const KNOWN: &[&str] = &[
        method::TOOLS_CALL,
        method::TOOLS_LIST,
        "prompts/get",
        "prompts/list",
        "resources/read",
        "resources/list",
        "resources/templates/list",
        "completion/complete",
        "server/discover",
        "subscriptions/listen",
    ];
    let known = MODERN_PROTOCOL_VERSIONS.iter().chain(KNOWN).find(|k| **k == text);
    match known {
        Some(k) => Some(HeaderValue::from_static(k)),
        None => HeaderValue::from_str(text).ok(),
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

/// One request's exchange, spawned by the sink. Bounded by the stream lifetime; a failure fails this call only.
pub(super) async fn request(http: Arc<Http>, post: Post) {
    let lifetime = http.limits().max_stream_lifetime;
    let id = post.id;
    let outcome = match timeout(lifetime, post_request(&http, post)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(TransportError::Http(HttpError::StreamLifetime(lifetime)).into()),
    };
    if let Err(error) = outcome {
        http.deliver(Err(FrameError::Exchange { id, error: Box::new(error) })).await;
    }
}

async fn post_request(http: &Arc<Http>, post: Post) -> Result<(), CallError> {
    let Post { id, body, method, initialize, modern, modern_headers, on_behalf_of } = post;
    if !modern && !initialize && http.session_lost() {
        http.deliver(Ok(Inbound::Message(status::session_not_found(id)))).await;
        return Ok(());
    }
    let mut headers = http.base_headers(modern);
    headers.insert(header::ACCEPT, ACCEPT_POST);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in modern_headers {
        headers.insert(name, value);
    }
    let sent_session = headers.get(SESSION_ID).cloned();
    let token = http.authorize(&mut headers, on_behalf_of.as_ref()).await?;
    let (mut response, mut lease) = send(http, Method::POST, &headers, body.clone(), false).await?;
    // A refused token is renewed, and the request sent once more: it was refused, not served. A second refusal is
    // an error of its own, never a loop.
    if refused_token(response.status(), response.headers()) && http.refused(token.as_ref(), response.headers()) {
        if let Some(hook) = &http.on_response {
            hook(&HttpResponseHead::new(&method, response.status().as_u16(), response.headers(), &headers));
        }
        drop((response, lease));
        let token = http.authorize(&mut headers, on_behalf_of.as_ref()).await?;
        (response, lease) = send(http, Method::POST, &headers, body, false).await?;
        if refused_token(response.status(), response.headers()) {
            http.refused(token.as_ref(), response.headers());
            let challenge = response.headers().get(header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok());
            return Err(AuthError::TokenRefused(challenge.unwrap_or("no challenge").to_owned()).into());
        }
    }
    let status = response.status();
    if let Some(hook) = &http.on_response {
        hook(&HttpResponseHead::new(&method, status.as_u16(), response.headers(), &headers));
    }
    if status == StatusCode::ACCEPTED {
        return Err(CallError::MalformedResponse("HTTP 202 Accepted for a request: no response can follow".into()));
    }
    if !status.is_success() {
        let reply = status::reply(http, response, id, sent_session.as_ref()).await?;
        http.deliver(Ok(Inbound::Message(reply))).await;
        return Ok(());
    }
    if initialize {
        http.adopt_session(response.headers()).map_err(TransportError::Http)?;
    }
    match Body::of_head(response.headers()) {
        Body::Json => {
            let bytes = read_body(response.into_body(), http.limits().max_body).await?;
            lease.release();
            if initialize {
                let reply = Message::decode(&bytes).map_err(|e| CallError::MalformedResponse(e.to_string()))?;
                http.adopt_version(&reply);
                http.deliver(Ok(Inbound::Message(reply))).await;
            } else {
                // Read by the connection's quick reader, without building a JSON tree of the result.
                http.answer(id, bytes, true).await;
            }
            Ok(())
        }
        Body::Sse => {
            let ctx = StreamCtx { request: Some(id), initialize, resumable: !modern };
            stream::follow(http, response.into_body(), lease, ctx).await
        }
        Body::Other(ct) => Err(TransportError::Http(HttpError::ContentType(ct)).into()),
    }
}

/// Whether an answer refuses the request's token: 401, or 403 `insufficient_scope` (step-up: a token with more
/// scopes may be had).
fn refused_token(status: StatusCode, headers: &HeaderMap) -> bool {
    let step_up = || {
        headers
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.contains("insufficient_scope"))
    };
    status == StatusCode::UNAUTHORIZED || (status == StatusCode::FORBIDDEN && step_up())
}

/// Posts a notification or a response; `true` when the server accepted it. Failures are logged: no call waits on
/// them.
pub(super) async fn notify(http: &Arc<Http>, msg: &Message) -> bool {
    let mut headers = http.base_headers(false);
    headers.insert(header::ACCEPT, ACCEPT_POST);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let token = match http.authorize(&mut headers, None).await {
        Ok(token) => token,
        Err(e) => {
            tracing::debug!(error = %e, "notification or response not sent: no access token");
            return false;
        }
    };
    match send(http, Method::POST, &headers, Bytes::from(msg.encode()), false).await {
        Ok((response, lease)) if response.status().is_success() => {
            if read_body(response.into_body(), http.limits().max_error_body).await.is_ok() {
                lease.release();
            }
            true
        }
        Ok((response, _)) => {
            if response.status() == StatusCode::UNAUTHORIZED {
                let _ = http.refused(token.as_ref(), response.headers());
            }
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
    if http.authorize(&mut headers, None).await.is_err() {
        return;
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
