//! Streamable HTTP request headers, server side (the front's and the fake servers'): reading a header, content
//! negotiation (`Accept`), the 2026-07-28 request-metadata headers that must mirror the body, and the HTTP status
//! each era-level JSON-RPC error takes in that revision.

use base64::Engine;
use hyper::StatusCode;
use hyper::header::{self, AsHeaderName, HeaderMap, HeaderName};
use serde_json::Value;

use crate::jsonrpc::{ErrorCode, ErrorObject, Request};
use crate::session::envelope_version;

// Names rather than text: a lookup by `&str` parses and lowercases the name on every request first.
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
pub const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
pub const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// A header's value as text (`None` when absent or not visible ASCII).
pub fn header(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether the client's `Accept` allows `media` (a missing `Accept` allows anything, as HTTP says).
pub fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let family = media.split('/').next().unwrap_or_default();
    ranges(headers).is_none_or(|mut ranges| ranges.any(|range| allows(range, media, family)))
}

/// What the client's `Accept` allows of the two media types an MCP answer comes in.
#[derive(Debug, Clone, Copy)]
pub struct Accepted {
    pub json: bool,
    pub sse: bool,
}

/// [`accepts`] for both of an answer's media types, in one pass over the header: every request asks both.
pub fn accepted(headers: &HeaderMap) -> Accepted {
    let Some(ranges) = ranges(headers) else { return Accepted { json: true, sse: true } };
    let mut accepted = Accepted { json: false, sse: false };
    for range in ranges {
        accepted.json |= allows(range, "application/json", "application");
        accepted.sse |= allows(range, "text/event-stream", "text");
    }
    accepted
}

/// The media ranges of `Accept`, parameters dropped; `None` without the header.
fn ranges(headers: &HeaderMap) -> Option<impl Iterator<Item = &str>> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok())?;
    Some(accept.split(',').map(|part| part.split(';').next().unwrap_or_default().trim()))
}

fn allows(range: &str, media: &str, family: &str) -> bool {
    range == media || range == "*/*" || range.strip_suffix("/*").is_some_and(|f| f.eq_ignore_ascii_case(family))
}

/// The `HeaderMismatch` checks: `MCP-Protocol-Version` present and equal to the envelope's version (a body without
/// the envelope is refused by the envelope check, -32602, as on NDJSON), `Mcp-Method` equal to the method, `Mcp-Name`
/// equal to `params.name` (`tools/call`, `prompts/get`) or `params.uri` (`resources/read`). `Err` is the message.
pub fn check_mirrored(headers: &HeaderMap, request: &Request) -> Result<(), String> {
    let Some(version) = header(headers, PROTOCOL_VERSION_HEADER) else {
        return Err("Header mismatch: required header MCP-Protocol-Version is missing".into());
    };
    let params = request.params.as_ref();
    if let Some(body_version) = envelope_version(params)
        && body_version.as_str() != Some(version)
    {
        return Err(format!(
            "Header mismatch: MCP-Protocol-Version header value '{version}' does not match body value {body_version}"
        ));
    }
    matches("Mcp-Method", header(headers, METHOD_HEADER), Some(&request.method))?;
    let name_field = match request.method.as_str() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    let body_name = params.and_then(|p| p.get(name_field)).and_then(Value::as_str);
    let header_name = match header(headers, NAME_HEADER).map(decode_sentinel) {
        Some(Err(e)) => return Err(format!("Header mismatch: Mcp-Name header value is malformed: {e}")),
        Some(Ok(name)) => Some(name),
        None => None,
    };
    matches("Mcp-Name", header_name.as_deref(), body_name)
}

fn matches(name: &str, header: Option<&str>, body: Option<&str>) -> Result<(), String> {
    match (header, body) {
        (None, _) => Err(format!("Header mismatch: required header {name} is missing")),
        (Some(h), Some(b)) if h == b => Ok(()),
        (Some(h), b) => {
            Err(format!("Header mismatch: {name} header value '{h}' does not match body value '{}'", b.unwrap_or("")))
        }
    }
}

/// A header value as sent: plain, or `=?base64?<base64 of UTF-8>?=` for values that are not safe header text.
pub fn decode_sentinel(value: &str) -> Result<String, String> {
    let Some(encoded) = value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) else {
        return Ok(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// 2026-07-28's statuses for errors: 404 for an unknown method, 400 for a bad request, a header mismatch or an
/// unsupported version; every other JSON-RPC error is a 200 carrying it.
pub fn modern_status(e: &ErrorObject) -> StatusCode {
    match e.code() {
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        ErrorCode::HEADER_MISMATCH
        | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::INVALID_REQUEST
        | ErrorCode::PARSE_ERROR => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_values_decode() {
        assert_eq!(decode_sentinel("get_weather"), Ok("get_weather".to_owned()));
        assert_eq!(decode_sentinel("=?base64?SGVsbG8sIOS4lueVjA==?="), Ok("Hello, 世界".to_owned()));
        assert!(decode_sentinel("=?base64?!!?=").is_err());
    }

    #[test]
    fn one_pass_over_accept_says_what_two_lookups_say() {
        for accept in [
            None,
            Some("application/json, text/event-stream"),
            Some("text/event-stream"),
            Some("application/json;q=0.9"),
            Some("APPLICATION/*"),
            Some("text/*, image/png"),
            Some("*/*"),
            Some("image/png"),
            Some("Application/JSON"),
            Some(""),
        ] {
            let mut headers = HeaderMap::new();
            if let Some(a) = accept {
                headers.insert(header::ACCEPT, a.parse().unwrap());
            }
            let both = accepted(&headers);
            assert_eq!(both.json, accepts(&headers, "application/json"), "{accept:?}");
            assert_eq!(both.sse, accepts(&headers, "text/event-stream"), "{accept:?}");
        }
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, "text/*".parse().unwrap());
        assert!(!accepted(&headers).json && accepted(&headers).sse);
    }
}
