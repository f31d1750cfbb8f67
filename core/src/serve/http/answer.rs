//! Answering one request over HTTP: as one JSON body, or as an SSE stream when the request asked for progress
//! (a `progressToken`) or the client accepts only SSE. A 2025-11-25 stream starts with a priming event and is kept
//! by its session for `Last-Event-ID` resumption; closing it does not cancel the request. A 2026-07-28 stream is
//! not resumable, and closing it cancels the request.

use std::sync::Arc;

use hyper::StatusCode;
use hyper::header::HeaderMap;
use tokio::sync::mpsc;

use crate::cancel::CancelToken;
use crate::jsonrpc::{Message, Request, ResponseBody};
use crate::serve::body::{self, Held, Reply};
use crate::serve::dispatch::{self, Agent};
use crate::serve::headers::{accepts, modern_status};
use crate::serve::live::{Flight, LiveSession};
use crate::serve::service::progress_token;
use crate::serve::shared::Shared;
use crate::serve::sse::{RING, StreamLog};
use crate::session::Era;

pub(super) async fn answer(
    front: &Arc<Shared>,
    headers: &HeaderMap,
    agent: Agent,
    request: Request,
    flight: Flight,
    session: Option<Arc<LiveSession>>,
) -> Reply {
    let modern = agent.era == Era::Modern;
    let sse_ok = accepts(headers, "text/event-stream");
    let sse = sse_ok && (progress_token(request.params.as_ref()).is_some() || !accepts(headers, "application/json"));
    if !sse {
        let answered = dispatch::answer(&front.service, &agent, request, flight.token.clone(), None).await;
        drop(flight);
        return match answered {
            Some(msg) => {
                let status = match &msg {
                    Message::Response(r) if modern => match &r.body {
                        ResponseBody::Error(e) => modern_status(e),
                        ResponseBody::Result(_) => StatusCode::OK,
                    },
                    _ => StatusCode::OK,
                };
                body::json(status, &msg)
            }
            // Cancelled (`notifications/cancelled`, DELETE, the drain deadline) before it was answered.
            None => body::empty(StatusCode::NO_CONTENT),
        };
    }
    let log = StreamLog::new(front.next_stream_id());
    let reader = log.attach(None);
    if let Some(session) = &session {
        session.keep(log.clone(), front.limits.max_streams_per_session);
    }
    // Who holds the request in flight: its task (2025-11-25, a reader may come back), or its stream (2026-07-28).
    let token = flight.token.clone();
    let (kept, held) = if modern { (None, Some(flight)) } else { (Some(flight), None) };
    tokio::spawn(pump(front.clone(), agent, request, token, log, kept));
    body::sse(reader, held.map(Held::new))
}

/// Runs the request and logs its progress and response on its stream (a 2025-11-25 stream first gets a priming
/// event: an id to resume from).
async fn pump(
    front: Arc<Shared>,
    agent: Agent,
    request: Request,
    token: CancelToken,
    log: Arc<StreamLog>,
    flight: Option<Flight>,
) {
    if agent.era == Era::Legacy {
        log.push(b"", false, false).await;
    }
    let (out, mut notes) = mpsc::channel::<Message>(RING);
    let answered = dispatch::answer(&front.service, &agent, request, token, Some(out));
    tokio::pin!(answered);
    let last = loop {
        tokio::select! {
            biased;
            Some(note) = notes.recv() => log.push_message(&note, false, false).await,
            answered = &mut answered => break answered,
        }
    };
    while let Ok(note) = notes.try_recv() {
        log.push_message(&note, false, false).await;
    }
    match last {
        Some(msg) => log.push_message(&msg, true, false).await,
        None => log.finish(),
    }
    drop(flight);
}
