//! 2026-07-28 Streamable HTTP: POST only, no sessions; the request-metadata headers must mirror the body.

use std::sync::Arc;

use hyper::StatusCode;
use hyper::header::HeaderMap;
use mcpstorm_core::jsonrpc::{ErrorCode, Message};
use mcpstorm_core::serve::headers::check_mirrored;

use super::answer::{self, Scope};
use super::body::{self, Reply};
use crate::inflight::InFlight;
use crate::methods::ConnEra;
use crate::shared::Shared;
use crate::stats::Counters;

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
    if let Err(message) = check_mirrored(headers, &request) {
        Counters::bump(&shared.counters.http_header_rejections);
        return body::error(StatusCode::BAD_REQUEST, Some(request.id), ErrorCode::HEADER_MISMATCH, message);
    }
    // Every request is its own scope: its stream is its only channel, and closing it cancels it.
    let scope = Scope { table: Arc::new(InFlight::new(1)), session: None, era: ConnEra::Modern, modern: true };
    answer::answer(shared, scope, request, headers).await
}
