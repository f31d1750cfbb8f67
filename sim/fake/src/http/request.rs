//! A POST: its body read (bounded) and decoded into one JSON-RPC message, and the revision that handles it.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderMap};
use hyper::{Request, StatusCode};
use mcpstorm_core::jsonrpc::{DecodeError, ErrorCode, Message};
use mcpstorm_core::mcp::{SUPPORTED_PROTOCOL_VERSIONS, method};
use mcpstorm_core::session::{MODERN_PROTOCOL_VERSIONS, envelope_version};

use super::body::{self, Reply, SESSION_HEADER};
use super::{PROTOCOL_VERSION_HEADER, accepts, header, legacy, modern, refused};
use crate::config::ProtocolEra;
use crate::shared::Shared;
use crate::stats::Counters;

pub(super) async fn post(shared: &Arc<Shared>, request: Request<Incoming>) -> Reply {
    let (parts, incoming) = request.into_parts();
    let headers = &parts.headers;
    if !accepts(headers, "application/json") && !accepts(headers, "text/event-stream") {
        return refused(shared, StatusCode::NOT_ACCEPTABLE);
    }
    if header(headers, CONTENT_TYPE.as_str())
        .is_some_and(|ct| !ct.trim_start().to_ascii_lowercase().starts_with("application/json"))
    {
        return refused(shared, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }
    let bytes = match body::read(incoming, shared.config.http_max_body).await {
        Ok(bytes) => bytes,
        Err(status) => return refused(shared, status),
    };
    let msg = match Message::decode(&bytes) {
        Ok(msg) => msg,
        Err(e) => {
            Counters::bump(&shared.counters.http_refused);
            Counters::bump(&shared.counters.rejected_frames);
            let code = match e {
                DecodeError::NotJson(_) => ErrorCode::PARSE_ERROR,
                _ => ErrorCode::INVALID_REQUEST,
            };
            return body::error(StatusCode::BAD_REQUEST, e.request_id().cloned(), code, e.to_string());
        }
    };
    if is_modern(shared, headers, &msg) {
        modern::post(shared, headers, msg).await
    } else {
        legacy::post(shared, headers, msg).await
    }
}

/// Which revision handles a message: a server of one revision has no choice; a both-era server goes by the
/// `MCP-Protocol-Version` header, then by a live session (2025-11-25), then by the body (also for a version neither knows), as the NDJSON transport
/// settles a connection's era (the modern `_meta` envelope on anything but `initialize`).
fn is_modern(shared: &Shared, headers: &HeaderMap, msg: &Message) -> bool {
    let config = &shared.config;
    if !config.serves(ProtocolEra::Modern) {
        return false;
    }
    if !config.serves(ProtocolEra::Legacy) {
        return true;
    }
    if let Some(version) = header(headers, PROTOCOL_VERSION_HEADER) {
        if MODERN_PROTOCOL_VERSIONS.contains(&version) {
            return true;
        }
        if SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            return false;
        }
        // A version neither revision knows: the body tells which revision's refusal the client understands.
    }
    if header(headers, SESSION_HEADER).is_some_and(|id| shared.http.sessions.is_live(id)) {
        return false;
    }
    match msg {
        Message::Request(r) => r.method != method::INITIALIZE && envelope_version(r.params.as_ref()).is_some(),
        Message::Notification(_) | Message::Response(_) => false,
    }
}
