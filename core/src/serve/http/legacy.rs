//! 2025-11-25 Streamable HTTP: `initialize` issues the session id (a signed token), every later message names it;
//! DELETE ends it here; GET opens its stream of server notifications, or resumes a cut request stream.

use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;
use hyper::header::HeaderMap;
use tokio::sync::{broadcast, mpsc};
use tokio::time::sleep_until;

use super::answer::answer;
use super::forward::{FORWARDED_HEADER, forward};
use crate::jsonrpc::{ErrorCode, Message, Request};
use crate::mcp::{SUPPORTED_PROTOCOL_VERSIONS, method};
use crate::serve::asks::Route;
use crate::serve::auth::Principal;
use crate::serve::body::{self, Reply};
use crate::serve::dispatch::Agent;
use crate::serve::headers::{PROTOCOL_VERSION_HEADER, SESSION_HEADER, accepts, header};
use crate::serve::lifecycle;
use crate::serve::live::{GetGuard, LiveSession};
use crate::serve::shared::{Notice, Shared};
use crate::serve::sse::{self, RING, parse_event_id};
use crate::serve::token::{self, SessionClaims};
use crate::session::Era;

/// How often an idle GET stream sends a comment: a write is how the server learns its client has gone.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub(super) async fn post(front: &Arc<Shared>, headers: &HeaderMap, msg: Message, principal: &Principal) -> Reply {
    if let Some(version) = header(headers, PROTOCOL_VERSION_HEADER)
        && !SUPPORTED_PROTOCOL_VERSIONS.contains(&version)
    {
        let message = format!("Bad Request: Unsupported protocol version: {version}");
        return body::error(StatusCode::BAD_REQUEST, None, ErrorCode::INVALID_REQUEST, message);
    }
    if let Message::Request(request) = &msg
        && request.method == method::INITIALIZE
        && header(headers, SESSION_HEADER).is_none()
    {
        return initialize(front, request);
    }
    let (claims, session) = match session(front, headers) {
        Ok(found) => found,
        Err(no) => return no.reply(),
    };
    match msg {
        Message::Request(request) => call(front, headers, claims, session, request, principal).await,
        Message::Notification(note) => {
            session.notified(note);
            body::empty(StatusCode::ACCEPTED)
        }
        // The answer to a request a call of this fleet made of the agent: delivered here, or forwarded to the
        // process that waits for it; an answer to nothing of ours is accepted and ignored.
        Message::Response(response) => match front.asks.answer(&response) {
            Route::Owner(url) if header(headers, FORWARDED_HEADER).is_none() => {
                forward(&url, headers, &Message::Response(response)).await
            }
            _ => body::empty(StatusCode::ACCEPTED),
        },
    }
}

/// `initialize`: negotiates, signs the session's state into its id, and makes its local state (503 when the table
/// is full of busy sessions).
fn initialize(front: &Arc<Shared>, request: &Request) -> Reply {
    let id = Some(request.id.clone());
    let init = match lifecycle::initialize(&front.service.describe(), request.params.as_ref()) {
        Ok(init) => init,
        Err(e) => return body::json(StatusCode::OK, &Message::error(id, e)),
    };
    let token = SessionClaims::issue(init.version, init.client_info, init.client_capabilities, front.now_secs())
        .ok()
        .and_then(|claims| Some((token::sign(&front.keys, &claims)?, claims.nonce)));
    let Some((token, nonce)) = token else {
        let message = "clientInfo and capabilities are too large to carry in a session id";
        return body::error(StatusCode::OK, id, ErrorCode::INVALID_PARAMS, message);
    };
    if front.sessions.get_or_make(&nonce, &front.root).is_none() {
        return body::empty(StatusCode::SERVICE_UNAVAILABLE);
    }
    let reply = body::json(StatusCode::OK, &Message::result(request.id.clone(), init.result));
    body::with_session(reply, Some(&token))
}

async fn call(
    front: &Arc<Shared>,
    headers: &HeaderMap,
    claims: SessionClaims,
    session: Arc<LiveSession>,
    request: Request,
    principal: &Principal,
) -> Reply {
    let Ok(mut flight) = session.enter(&front.drain, &request.id) else {
        let message = "a request with this id is already in flight on this session";
        return body::error(StatusCode::OK, Some(request.id), ErrorCode::INVALID_REQUEST, message);
    };
    if let Err(refused) = flight.admit(&front.admission, &session.key, front.limits.queue_wait).await {
        return super::answer::not_admitted(refused, request.id);
    }
    let agent = Agent {
        session: Some(session.key.clone()),
        era: Era::Legacy,
        version: claims.protocol_version,
        client_info: claims.client_info,
        client_capabilities: claims.client_capabilities,
        principal: Some(principal.clone()),
        log_level: Some(session.log_level.clone()),
        asks: Some(front.asks.clone()),
        parks: None,
        closing: None,
    };
    answer(front, headers, agent, request, flight, Some(session)).await
}

/// The session a message names, verified.
/// While the front drains: whether a request still belongs here. A session's own requests are served while it has
/// calls in flight (an SDK opens its stream or posts its notifications on another connection meanwhile), and its
/// DELETE always is, so an agent whose call finished during the drain closes its session cleanly.
pub(super) fn drain_admits(front: &Shared, method: &hyper::Method, headers: &HeaderMap) -> bool {
    let Some(id) = header(headers, SESSION_HEADER) else { return false };
    let max_age = front.limits.session_max_age.as_secs();
    let Ok(claims) = token::verify(&front.keys, &front.revoked(), id, front.now_secs(), max_age) else { return false };
    *method == hyper::Method::DELETE || front.sessions.busy(&claims.nonce)
}

fn session(front: &Shared, headers: &HeaderMap) -> Result<(SessionClaims, Arc<LiveSession>), NoSession> {
    let id = header(headers, SESSION_HEADER).ok_or(NoSession::Missing)?;
    let max_age = front.limits.session_max_age.as_secs();
    let claims = token::verify(&front.keys, &front.revoked(), id, front.now_secs(), max_age).map_err(|refusal| {
        tracing::debug!(?refusal, "agent session id refused");
        NoSession::Refused
    })?;
    let live = front.sessions.get_or_make(&claims.nonce, &front.root).ok_or(NoSession::NoRoom)?;
    Ok((claims, live))
}

#[derive(Debug, Clone, Copy)]
enum NoSession {
    /// 400: the message names no session.
    Missing,
    /// 404: not our id, expired, or DELETEd here.
    Refused,
    /// 503: this process has no room for the session's state.
    NoRoom,
}

impl NoSession {
    fn reply(self) -> Reply {
        match self {
            NoSession::Missing => {
                let message = "Bad Request: Missing session ID";
                body::error(StatusCode::BAD_REQUEST, None, ErrorCode::INVALID_REQUEST, message)
            }
            NoSession::Refused => {
                body::error(StatusCode::NOT_FOUND, None, ErrorCode::SESSION_NOT_FOUND, "Session not found")
            }
            NoSession::NoRoom => body::empty(StatusCode::SERVICE_UNAVAILABLE),
        }
    }
}

/// DELETE: ends the session in this process (its requests are cancelled, its id refused here from now on).
pub(super) fn delete(front: &Arc<Shared>, headers: &HeaderMap) -> Reply {
    let (claims, _) = match session(front, headers) {
        Ok(found) => found,
        Err(no) => return no.reply(),
    };
    front.revoked().insert(&claims.nonce);
    front.sessions.remove(&claims.nonce);
    front.service.session_ended(&claims.nonce);
    body::empty(StatusCode::OK)
}

/// GET: with `Last-Event-ID`, the rest of a request stream of this session; without, the session's stream of server
/// notifications (a later GET supersedes it).
pub(super) fn get(front: &Arc<Shared>, headers: &HeaderMap) -> Reply {
    if !accepts(headers, "text/event-stream") {
        return body::empty(StatusCode::NOT_ACCEPTABLE);
    }
    let session = match session(front, headers) {
        Ok((_, session)) => session,
        Err(no) => return no.reply(),
    };
    if let Some(last) = header(headers, "last-event-id") {
        let found = parse_event_id(last).and_then(|(stream, seq)| Some((session.stream(stream)?, seq)));
        let Some((log, seq)) = found else {
            let message = format!("Bad Request: no stream to resume from event {last:?}");
            return body::error(StatusCode::BAD_REQUEST, None, ErrorCode::INVALID_REQUEST, message);
        };
        return body::sse(log.attach(Some(seq)), None);
    }
    let (tx, rx) = mpsc::channel(RING);
    let notices = front.notices.subscribe();
    tokio::spawn(server_messages(front.clone(), session.open_get(), notices, tx));
    body::sse(rx, None)
}

/// Feeds a GET stream: a priming event, then every notification the service broadcasts, with comments while idle.
/// Ends when the client has gone, a newer GET superseded it, its session ended or the front is stopping.
async fn server_messages(
    front: Arc<Shared>,
    get: GetGuard,
    mut notices: broadcast::Receiver<Notice>,
    tx: mpsc::Sender<sse::Chunk>,
) {
    let stream = front.next_stream_id();
    let mut seq = 0;
    let mut next = Some(sse::event(&sse::event_id(stream, seq), b""));
    while let Some(chunk) = next.take() {
        if !get.current() || tx.send(Ok(chunk)).await.is_err() {
            return;
        }
        let quiet_until = tokio::time::Instant::now() + KEEP_ALIVE;
        while next.is_none() {
            next = tokio::select! {
                biased;
                () = front.closing.cancelled() => return,
                () = get.ended() => return,
                received = notices.recv() => match received {
                    Ok(notice) if notice.for_session(get.session()) => {
                        seq += 1;
                        Some(sse::event(&sse::event_id(stream, seq), &notice.msg.encode()))
                    }
                    // Another session's: nothing to write.
                    Ok(_) => None,
                    // Too far behind: the oldest were skipped; carry on with what is next.
                    Err(broadcast::error::RecvError::Lagged(_)) => Some(sse::keep_alive()),
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                () = sleep_until(quiet_until) => Some(sse::keep_alive()),
            };
        }
    }
}
