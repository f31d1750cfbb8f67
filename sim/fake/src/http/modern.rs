//! 2026-07-28 Streamable HTTP: POST only, no sessions; the request-metadata headers must mirror the body.

use std::sync::Arc;

use base64::Engine;
use hyper::StatusCode;
use hyper::header::HeaderMap;
use mcpstorm_core::jsonrpc::{ErrorCode, Message, Request};
use mcpstorm_core::session::envelope_version;
use serde_json::Value;

use super::answer::{self, Scope};
use super::body::{self, Reply};
use super::{PROTOCOL_VERSION_HEADER, header};
use crate::inflight::InFlight;
use crate::methods::ConnEra;
use crate::shared::Shared;
use crate::stats::Counters;

const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

pub(super) async fn post(shared: &Arc<Shared>, headers: &HeaderMap, msg: Message) -> Reply {
    let request = match msg {
        Message::Request(request) => request,
        // This revision defines no client notifications over HTTP; one sent anyway is accepted and ignored.
        Message::Notification(_) => return body::empty(StatusCode::ACCEPTED),
        Message::Response(r) => {
            Counters::bump(&shared.counters.http_refused);
            let message = "Bad Request: clients must not send JSON-RPC responses";
            return body::error(StatusCode::BAD_REQUEST, r.id, ErrorCode::INVALID_REQUEST, message);
        }
    };
    if let Err(message) = check_headers(headers, &request) {
        Counters::bump(&shared.counters.http_header_rejections);
        return body::error(StatusCode::BAD_REQUEST, Some(request.id), ErrorCode::HEADER_MISMATCH, message);
    }
    // Every request is its own scope: its stream is its only channel, and closing it cancels it.
    let scope = Scope { table: Arc::new(InFlight::new(1)), session: None, era: ConnEra::Modern, modern: true };
    answer::answer(shared, scope, request, headers).await
}

/// The `HeaderMismatch` checks: `MCP-Protocol-Version` present and equal to the envelope's version (a body without
/// the envelope is refused by the envelope check, -32602, as on NDJSON), `Mcp-Method` equal to the method, `Mcp-Name`
/// equal to `params.name` (`tools/call`, `prompts/get`) or `params.uri` (`resources/read`). `Err` is the message.
fn check_headers(headers: &HeaderMap, request: &Request) -> Result<(), String> {
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
fn decode_sentinel(value: &str) -> Result<String, String> {
    let Some(encoded) = value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) else {
        return Ok(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
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
}
