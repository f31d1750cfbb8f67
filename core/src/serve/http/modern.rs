//! 2026-07-28 Streamable HTTP: POST only, no sessions; the request-metadata headers must mirror the body.

use std::sync::Arc;

use hyper::StatusCode;
use hyper::header::HeaderMap;

use super::answer::answer;
use crate::jsonrpc::{ErrorCode, Message};
use crate::serve::body::{self, Reply};
use crate::serve::dispatch::Agent;
use crate::serve::headers::{check_mirrored, modern_status};
use crate::serve::live::Flight;
use crate::serve::shared::Shared;

pub(super) async fn post(front: &Arc<Shared>, headers: &HeaderMap, msg: Message) -> Reply {
    let request = match msg {
        Message::Request(request) => request,
        // This revision defines no client notifications over HTTP; one sent anyway is accepted and ignored.
        Message::Notification(_) => return body::empty(StatusCode::ACCEPTED),
        Message::Response(r) => {
            let message = "Bad Request: clients must not send JSON-RPC responses";
            return body::error(StatusCode::BAD_REQUEST, r.id, ErrorCode::INVALID_REQUEST, message);
        }
    };
    if let Err(message) = check_mirrored(headers, &request) {
        return body::error(StatusCode::BAD_REQUEST, Some(request.id), ErrorCode::HEADER_MISMATCH, message);
    }
    let agent = match Agent::modern(&request) {
        Ok(agent) => agent,
        Err(e) => return body::json(modern_status(&e), &Message::error(Some(request.id), e)),
    };
    // Every request is its own scope: its stream is its only channel, and closing it cancels it.
    let flight = Flight::alone(&front.drain, &front.root);
    answer(front, headers, agent, request, flight, None).await
}
