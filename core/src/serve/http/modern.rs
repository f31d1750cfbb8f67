//! 2026-07-28 Streamable HTTP: POST only, no sessions; the request-metadata headers must mirror the body.

use std::sync::Arc;

use hyper::StatusCode;
use hyper::header::HeaderMap;

use super::answer::answer;
use super::forward::{FORWARDED_HEADER, relay};
use crate::jsonrpc::{ErrorCode, Message};
use crate::serve::auth::Principal;
use crate::serve::body::{self, Reply};
use crate::serve::dispatch::Agent;
use crate::serve::headers::header;
use crate::serve::headers::{check_mirrored, modern_status};
use crate::serve::live::Flight;
use crate::serve::parked::Retry;
use crate::serve::shared::Shared;

/// The admission key of a request with no session: the agent's own name for itself.
fn agent_key(agent: &Agent) -> Arc<str> {
    let name = agent.client_info.as_ref().map_or("", |c| c.name.as_str());
    Arc::from(format!("agent:{name}"))
}

pub(super) async fn post(front: &Arc<Shared>, headers: &HeaderMap, msg: Message, principal: &Principal) -> Reply {
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
    // A retry of a call another process of the fleet parked (`parked`): that process answers it.
    if let Retry::Owner(url) = front.parks.retry_of(request.params.as_ref())
        && header(headers, FORWARDED_HEADER).is_none()
    {
        return relay(&url, headers, &Message::Request(request)).await;
    }
    let agent = match Agent::modern(&request) {
        Ok(agent) => Agent {
            principal: Some(principal.clone()),
            parks: Some(front.parks.clone()),
            closing: Some(front.closing.clone()),
            ..agent
        },
        Err(e) => return body::json(modern_status(&e), &Message::error(Some(request.id), e)),
    };
    // Every request is its own scope: its stream is its only channel, and closing it cancels it.
    let mut flight = Flight::alone(&front.drain, &front.root);
    // No session to share slots fairly between: the agent as it names itself stands in for one.
    let key = agent_key(&agent);
    if let Err(refused) = flight.admit(&front.admission, &key, front.limits.queue_wait).await {
        return super::answer::not_admitted(refused, request.id);
    }
    answer(front, headers, agent, request, flight, None).await
}
