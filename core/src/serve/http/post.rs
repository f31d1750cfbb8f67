//! A POST: its body read (bounded) and decoded into one JSON-RPC message, and the revision that handles it.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap};
use hyper::{Request, StatusCode};

use super::{legacy, modern};
use crate::jsonrpc::{DecodeError, ErrorCode, Message};
use crate::mcp::{SUPPORTED_PROTOCOL_VERSIONS, method};
use crate::serve::auth::{Denied, DenyReason, Principal};
use crate::serve::body::{self, Reply};
use crate::serve::headers::{PROTOCOL_VERSION_HEADER, SESSION_HEADER, accepted, header};
use crate::serve::shared::Shared;
use crate::session::{MODERN_PROTOCOL_VERSIONS, envelope_version};

pub(super) async fn post(front: &Arc<Shared>, request: Request<Incoming>, principal: &Principal) -> Reply {
    let (parts, incoming) = request.into_parts();
    let headers = &parts.headers;
    let accepted = accepted(headers);
    if !accepted.json && !accepted.sse {
        return body::empty(StatusCode::NOT_ACCEPTABLE);
    }
    if header(headers, CONTENT_TYPE)
        .is_some_and(|ct| !ct.trim_start().to_ascii_lowercase().starts_with("application/json"))
    {
        return body::empty(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }
    let limits = &front.limits;
    // A body announced larger than the bound is refused at once, before a byte of it is read.
    let announced = header(headers, CONTENT_LENGTH).and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > limits.max_body as u64) {
        return body::empty(StatusCode::PAYLOAD_TOO_LARGE);
    }
    let bytes = match tokio::time::timeout(limits.body_read_timeout, body::read(incoming, limits.max_body)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(status)) => return body::empty(status),
        Err(_) => return body::empty(StatusCode::REQUEST_TIMEOUT),
    };
    let msg = match Message::decode(&bytes) {
        Ok(msg) => msg,
        Err(e) => {
            let code = match e {
                DecodeError::NotJson(_) => ErrorCode::PARSE_ERROR,
                _ => ErrorCode::INVALID_REQUEST,
            };
            return body::error(StatusCode::BAD_REQUEST, e.request_id().cloned(), code, e.to_string());
        }
    };
    if let Some(denied) = missing_scopes(front, principal, &msg) {
        front.limits.auth.as_ref().inspect(|a| a.refused(&denied));
        return super::refused(front, &denied);
    }
    if is_modern(headers, &msg) {
        modern::post(front, headers, msg, principal).await
    } else {
        legacy::post(front, headers, msg, principal).await
    }
}

/// The refusal of a `tools/call` whose tool needs scopes the principal was not granted (403 `insufficient_scope`,
/// naming every scope the call needs so the agent can ask for them at once).
fn missing_scopes(front: &Shared, principal: &Principal, msg: &Message) -> Option<Denied> {
    let auth = front.limits.auth.as_ref()?;
    let Message::Request(request) = msg else { return None };
    if request.method != method::TOOLS_CALL {
        return None;
    }
    let tool = request.params.as_ref()?.get("name")?.as_str()?;
    let needed = auth.tool_scopes(tool);
    let missing = principal.missing(needed);
    if missing.is_empty() {
        return None;
    }
    let mut denied =
        Denied::new(DenyReason::InsufficientScope, format!("{tool} needs the scope {}", missing.join(" ")));
    let base = auth.metadata().map(|m| m.scopes.clone()).unwrap_or_default();
    for scope in base.iter().chain(needed) {
        if !denied.scopes.contains(scope) {
            denied.scopes.push(scope.clone());
        }
    }
    Some(denied)
}

/// Which revision handles a message: the `MCP-Protocol-Version` header when it names a version we know, then a
/// session id (2025-11-25), then the body (the modern envelope on anything but `initialize`), as the NDJSON
/// transport settles a connection's era.
fn is_modern(headers: &HeaderMap, msg: &Message) -> bool {
    if let Some(version) = header(headers, PROTOCOL_VERSION_HEADER) {
        if MODERN_PROTOCOL_VERSIONS.contains(&version) {
            return true;
        }
        if SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            return false;
        }
    }
    if header(headers, SESSION_HEADER).is_some() {
        return false;
    }
    match msg {
        Message::Request(r) => r.method != method::INITIALIZE && envelope_version(r.params.as_ref()).is_some(),
        Message::Notification(_) | Message::Response(_) => false,
    }
}
