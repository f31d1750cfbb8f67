//! Answering one request over HTTP through the shared handling (`dispatch`): the request's task sends its progress
//! and answer to a queue of its own, drained here into one JSON body or an SSE stream.

use std::sync::Arc;

use hyper::StatusCode;
use hyper::header::HeaderMap;
use mcpstorm_core::jsonrpc::{Message, Request};
use mcpstorm_core::serve::headers::modern_status;
use tokio::sync::mpsc;

use super::accepts;
use super::body::{self, CancelOnDrop, Reply};
use crate::config::HttpResponse;
use crate::dispatch;
use crate::http_state::HttpSession;
use crate::inflight::InFlight;
use crate::methods::ConnEra;
use crate::shared::Shared;
use crate::sse::{RING, StreamLog};
use crate::stats::Counters;

/// Where a request belongs.
#[derive(Debug)]
pub(super) struct Scope {
    /// The in-flight table its cancellation goes through.
    pub table: Arc<InFlight>,
    /// Its 2025-11-25 session, which keeps its stream for resumption.
    pub session: Option<HttpSession>,
    pub era: ConnEra,
    /// 2026-07-28: errors have their own statuses, closing the stream cancels, streams are not resumable.
    pub modern: bool,
}

pub(super) async fn answer(shared: &Arc<Shared>, scope: Scope, request: Request, headers: &HeaderMap) -> Reply {
    let Scope { table, session, mut era, modern } = scope;
    let Some(prepared) = dispatch::prepare(shared, &mut era, request) else {
        // A server scripted never to answer (`legacy_discover = "silent"`): the client gives up by its timeout.
        return std::future::pending().await;
    };
    let id = prepared.id.clone();
    // A modern refusal with a status of its own goes as a JSON body whatever the mode: the status must be known
    // before the stream would start.
    let own_status = prepared.refusal().filter(|_| modern).map(modern_status).filter(|s| *s != StatusCode::OK);
    let (out, mut answers) = mpsc::channel(RING);
    if let Err(refusal) = dispatch::spawn(shared, &table, prepared, out) {
        return body::json(StatusCode::OK, &refusal);
    }
    let cancel = modern.then(|| CancelOnDrop { shared: shared.clone(), table, id });
    let sse = shared.config.http_response == HttpResponse::Sse && accepts(headers, "text/event-stream");
    if !sse || own_status.is_some() {
        // Notifications on the way have nowhere to go in a single JSON body: dropped, as real servers do.
        while let Some(msg) = answers.recv().await {
            if let Message::Response(response) = &msg {
                let status = match (&response.body, modern) {
                    (mcpstorm_core::jsonrpc::ResponseBody::Error(e), true) => modern_status(e),
                    _ => StatusCode::OK,
                };
                if status == StatusCode::BAD_REQUEST {
                    Counters::bump(&shared.counters.http_header_rejections);
                }
                drop(cancel);
                return body::json(status, &msg);
            }
        }
        // Cancelled by the client's `notifications/cancelled` before it was answered: nothing to say.
        drop(cancel);
        return body::empty(StatusCode::NO_CONTENT);
    }
    let log = StreamLog::new(shared.http.stream_id());
    let reader = log.attach(None);
    if let Some(session) = &session {
        session.keep(log.clone());
    }
    let cut = shared.http.chance(shared.faults.get().stream_reset);
    tokio::spawn(pump(shared.clone(), log, answers, cut, !modern));
    body::sse(reader, cancel)
}

/// Logs a request's messages on its stream until its response: a 2025-11-25 stream starts with a priming event (an
/// id to resume from); with `cut`, the reader's connection is reset instead of getting the response.
async fn pump(shared: Arc<Shared>, log: Arc<StreamLog>, mut answers: mpsc::Receiver<Message>, cut: bool, prime: bool) {
    if prime {
        log.push(b"", false, false).await;
    }
    while let Some(msg) = answers.recv().await {
        let last = matches!(msg, Message::Response(_));
        if last && cut {
            Counters::bump(&shared.counters.http_stream_resets);
        }
        log.push_message(&msg, last, cut && last).await;
        if last {
            return;
        }
    }
    log.finish();
}
