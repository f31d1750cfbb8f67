//! 2025-11-25 Streamable HTTP: the protocol-version header, `Mcp-Session-Id` (issued on `initialize`, required
//! after), DELETE, and GET (the session's server-message stream, or the resumption of a cut request stream).

use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;
use hyper::header::HeaderMap;
use mcpstorm_core::jsonrpc::{ErrorCode, Message};
use mcpstorm_core::mcp::{SUPPORTED_PROTOCOL_VERSIONS, method};
use tokio::sync::mpsc;
use tokio::time::sleep;

use super::answer::{self, Scope};
use super::body::{self, Reply, SESSION_HEADER};
use super::{PROTOCOL_VERSION_HEADER, accepts, header, refused};
use crate::config::HttpGet;
use crate::http_state::HttpSession;
use crate::inflight::InFlight;
use crate::methods::ConnEra;
use crate::shared::Shared;
use crate::sse::{self, RING, parse_event_id};
use crate::stats::Counters;

/// How often an idle GET stream sends a comment: a write is how the server learns its client has gone.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub(super) async fn post(shared: &Arc<Shared>, headers: &HeaderMap, msg: Message) -> Reply {
    if let Some(version) = header(headers, PROTOCOL_VERSION_HEADER)
        && !SUPPORTED_PROTOCOL_VERSIONS.contains(&version)
    {
        Counters::bump(&shared.counters.http_header_rejections);
        let message = format!("Bad Request: Unsupported protocol version: {version}");
        return body::error(StatusCode::BAD_REQUEST, None, ErrorCode::INVALID_REQUEST, message);
    }
    let initialize = matches!(&msg, Message::Request(r) if r.method == method::INITIALIZE);
    let (session, issued) = if !shared.http.sessions.enabled() {
        (None, None)
    } else if initialize {
        let max = shared.config.max_in_flight_per_connection;
        let Some(grant) = shared.http.sessions.grant_with(|| HttpSession::new(max)) else {
            // The table is full of live sessions.
            return refused(shared, StatusCode::SERVICE_UNAVAILABLE);
        };
        Counters::bump(&shared.counters.http_sessions_opened);
        (shared.http.sessions.get(&grant.id), Some(grant.id))
    } else {
        match session(shared, headers) {
            Ok(found) => (Some(found), None),
            Err(no) => return no.reply(),
        }
    };
    // A session's requests share its table (so `notifications/cancelled` finds them); a session-less request is
    // alone in its own.
    let table = session.as_ref().map_or_else(|| Arc::new(InFlight::new(1)), |s| s.table().clone());
    let era = if session.is_some() { ConnEra::Legacy } else { ConnEra::Undecided };
    let reply = match msg {
        Message::Request(request) => {
            let scope = Scope { table, session, era, modern: false };
            answer::answer(shared, scope, request, headers).await
        }
        Message::Notification(note) => {
            crate::dispatch::on_notification(shared, &table, note);
            body::empty(StatusCode::ACCEPTED)
        }
        // We never send requests on a stream, so a response answers nothing of ours: accepted and ignored.
        Message::Response(_) => body::empty(StatusCode::ACCEPTED),
    };
    body::with_session(reply, issued.as_deref())
}

/// The live session a request names: 400 when it names none, 404 when it is unknown, expired or forgotten.
fn session(shared: &Shared, headers: &HeaderMap) -> Result<HttpSession, NoSession> {
    let Some(id) = header(headers, SESSION_HEADER) else {
        Counters::bump(&shared.counters.http_sessions_missing);
        return Err(NoSession::Missing);
    };
    shared.http.sessions.get(id).ok_or_else(|| {
        Counters::bump(&shared.counters.http_sessions_not_found);
        NoSession::Unknown
    })
}

#[derive(Debug, Clone, Copy)]
enum NoSession {
    Missing,
    Unknown,
}

impl NoSession {
    fn reply(self) -> Reply {
        match self {
            NoSession::Missing => body::error(
                StatusCode::BAD_REQUEST,
                None,
                ErrorCode::INVALID_REQUEST,
                "Bad Request: Missing session ID",
            ),
            NoSession::Unknown => {
                body::error(StatusCode::NOT_FOUND, None, ErrorCode::SESSION_NOT_FOUND, "Session not found")
            }
        }
    }
}

/// DELETE: ends the session; its requests still running are abandoned.
pub(super) fn delete(shared: &Arc<Shared>, headers: &HeaderMap) -> Reply {
    if !shared.http.sessions.enabled() {
        return refused(shared, StatusCode::METHOD_NOT_ALLOWED);
    }
    let session = match session(shared, headers) {
        Ok(session) => session,
        Err(no) => return no.reply(),
    };
    if let Some(id) = header(headers, SESSION_HEADER) {
        shared.http.sessions.remove(id);
    }
    session.table().abandon_all(&shared.counters);
    Counters::bump(&shared.counters.http_sessions_deleted);
    body::empty(StatusCode::OK)
}

/// GET: with `Last-Event-ID`, the rest of a request stream of this session; without, the session's stream of server
/// messages (a later GET supersedes it).
pub(super) fn get(shared: &Arc<Shared>, headers: &HeaderMap) -> Reply {
    if shared.config.http_get == HttpGet::MethodNotAllowed {
        return refused(shared, StatusCode::METHOD_NOT_ALLOWED);
    }
    if !accepts(headers, "text/event-stream") {
        return refused(shared, StatusCode::NOT_ACCEPTABLE);
    }
    let session = if shared.http.sessions.enabled() {
        match session(shared, headers) {
            Ok(session) => Some(session),
            Err(no) => return no.reply(),
        }
    } else {
        None
    };
    if let Some(last) = header(headers, "last-event-id") {
        return resume(shared, session.as_ref(), last);
    }
    let (tx, rx) = mpsc::channel(RING);
    let owner = session.map(|s| {
        let generation = s.open_get();
        (header(headers, SESSION_HEADER).unwrap_or_default().to_owned(), s, generation)
    });
    tokio::spawn(server_messages(shared.clone(), owner, tx));
    body::sse(rx, None)
}

/// Resumes a cut request stream after event `last`: 400 for an id this session never gave (or streams it forgot).
fn resume(shared: &Shared, session: Option<&HttpSession>, last: &str) -> Reply {
    let found = parse_event_id(last).and_then(|(stream, seq)| Some((session?.stream(stream)?, seq)));
    let Some((log, seq)) = found else {
        Counters::bump(&shared.counters.http_refused);
        let message = format!("Bad Request: no stream to resume from event {last:?}");
        return body::error(StatusCode::BAD_REQUEST, None, ErrorCode::INVALID_REQUEST, message);
    };
    Counters::bump(&shared.counters.http_streams_resumed);
    body::sse(log.attach(Some(seq)), None)
}

/// Feeds a GET stream: a priming event, then every message the server broadcasts (`list_changed` after a drift),
/// with comments while idle. Ends when the client has gone, a newer GET superseded it, or its session ended.
async fn server_messages(shared: Arc<Shared>, owner: Option<(String, HttpSession, u64)>, tx: mpsc::Sender<sse::Chunk>) {
    let (out, mut messages) = mpsc::channel(RING);
    let registered = shared.conns.register(out);
    let stream = shared.http.stream_id();
    let mut seq = 0;
    let mut next = Some(sse::event(&sse::event_id(stream, seq), b""));
    loop {
        let alive = owner.as_ref().is_none_or(|(id, session, generation)| {
            session.is_current_get(*generation) && shared.http.sessions.is_live(id)
        });
        let Some(chunk) = next.take() else { break };
        if !alive || tx.send(Ok(chunk)).await.is_err() {
            break;
        }
        next = tokio::select! {
            biased;
            msg = messages.recv() => msg.map(|m| {
                seq += 1;
                sse::event(&sse::event_id(stream, seq), &m.encode())
            }),
            () = sleep(KEEP_ALIVE) => Some(sse::keep_alive()),
        };
    }
    shared.conns.remove(registered);
}
