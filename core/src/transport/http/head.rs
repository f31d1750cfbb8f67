//! What the head of one response said, for an embedder that reports on the transport itself (`diagnose`-style
//! tools): told through [`HttpContext::on_response`](super::HttpContext), borrowed so that telling it allocates
//! nothing.

use std::sync::Arc;

use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};

/// The session a 2025-11-25 server grants in an `initialize` response's head, sent back on every request after it.
pub(super) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The protocol version a request speaks, and the one a response names.
pub(super) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// The head of the response to one `POST`ed request (after any redirects were followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpResponseHead<'a> {
    /// The JSON-RPC method of the request it answers.
    pub method: &'a str,
    pub status: u16,
    /// `Content-Type` as sent; empty when absent or not visible ASCII.
    pub content_type: &'a str,
    /// `Mcp-Session-Id` as sent. It may work as a bearer token: show at most a prefix of it.
    pub session_id: Option<&'a str>,
    /// `MCP-Protocol-Version` of the response, if the server sent one.
    pub protocol_version: Option<&'a str>,
    /// `MCP-Protocol-Version` of the request this answers, if we sent one (not before `initialize` settled it).
    pub sent_version: Option<&'a str>,
}

/// Told the head of every response to a request.
pub type ResponseHook = Arc<dyn Fn(&HttpResponseHead<'_>) + Send + Sync>;

/// How a response's body is framed, by its `Content-Type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Body {
    Json,
    Sse,
    Other(String),
}

impl Body {
    /// What a response's `Content-Type` says it carries.
    pub(super) fn of_head(headers: &HeaderMap) -> Body {
        Body::of(text(headers.get(header::CONTENT_TYPE)).unwrap_or(""))
    }

    pub(super) fn of(content_type: &str) -> Body {
        let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match essence.as_str() {
            "application/json" => Body::Json,
            "text/event-stream" => Body::Sse,
            _ => Body::Other(content_type.chars().take(100).collect()),
        }
    }
}

impl<'a> HttpResponseHead<'a> {
    pub(super) fn new(method: &'a str, status: u16, response: &'a HeaderMap, request: &'a HeaderMap) -> Self {
        HttpResponseHead {
            method,
            status,
            content_type: text(response.get(header::CONTENT_TYPE)).unwrap_or(""),
            session_id: text(response.get(SESSION_ID)),
            protocol_version: text(response.get(PROTOCOL_VERSION)),
            sent_version: text(request.get(PROTOCOL_VERSION)),
        }
    }

    /// Whether the body is a JSON document (`Some(false)`: an SSE stream; `None`: neither).
    pub fn json(&self) -> Option<bool> {
        match Body::of(self.content_type) {
            Body::Json => Some(true),
            Body::Sse => Some(false),
            Body::Other(_) => None,
        }
    }
}

fn text(value: Option<&HeaderValue>) -> Option<&str> {
    value.and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_head_and_tells_json_from_sse() {
        let mut response = HeaderMap::new();
        response.insert(header::CONTENT_TYPE, HeaderValue::from_static("Text/Event-Stream; charset=utf-8"));
        response.insert(SESSION_ID, HeaderValue::from_static("abc"));
        let mut request = HeaderMap::new();
        request.insert(PROTOCOL_VERSION, HeaderValue::from_static("2025-11-25"));
        let head = HttpResponseHead::new("tools/list", 200, &response, &request);
        assert_eq!(
            (head.session_id, head.protocol_version, head.sent_version),
            (Some("abc"), None, Some("2025-11-25"))
        );
        assert_eq!(head.json(), Some(false));
        let none = HeaderMap::new();
        let head = HttpResponseHead::new("initialize", 404, &none, &none);
        assert_eq!((head.content_type, head.json()), ("", None));
        assert_eq!(Body::of("application/json"), Body::Json);
    }
}
