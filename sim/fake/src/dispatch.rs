//! The MCP request handling every transport shares: a request is counted, routed by era, gated (sessions, auth),
//! turned into a [`Job`], entered into its scope's [`InFlight`] table and answered on its own task, which sends its
//! progress notifications and its answer to the `out` queue it was given (the NDJSON connection's outbox, or one
//! HTTP request's stream). A `notifications/cancelled` aborts it through the same table.

use std::borrow::Cow;
use std::sync::Arc;

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject, Message, Notification, Request, RequestId};
use mcpstorm_core::mcp::{CancelledParams, method};
use mcpstorm_core::session::{DISCOVER, RENEW};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::call::{self, CallEnd, Job};
use crate::call_frame::CallParams;
use crate::gate;
use crate::inflight::InFlight;
use crate::methods::{self, ConnEra, Route};
use crate::params::Params;
use crate::reply::Reply;
use crate::shared::Shared;
use crate::stats::Counters;

/// A request read, routed and gated: how it is to be answered.
#[derive(Debug)]
pub(crate) struct Prepared<'a> {
    pub id: RequestId,
    plan: Plan<'a>,
    /// `Some(cacheable)` for a modern-era request: its result gets the modern stamps.
    modern: Option<bool>,
    is_call: bool,
}

#[derive(Debug)]
enum Plan<'a> {
    /// Refused at once: an era, envelope or gate refusal.
    Refuse(ErrorObject),
    /// Served: the job is made (and a call's random draws taken) only once the request has its slot.
    Serve { method: Cow<'static, str>, params: Params<'a> },
}

impl Prepared<'_> {
    /// The error this request is refused with at once, if it is refused.
    pub fn refusal(&self) -> Option<&ErrorObject> {
        match &self.plan {
            Plan::Refuse(e) => Some(e),
            Plan::Serve { .. } => None,
        }
    }
}

/// Counts `request`, routes it by (and settles) `era`, and checks the gate. `None`: never answer it (a legacy server
/// that ignores `server/discover`).
pub(crate) fn prepare(shared: &Shared, era: &mut ConnEra, request: Request) -> Option<Prepared<'static>> {
    let Request { id, method, params } = request;
    prepare_parts(shared, era, id, Cow::Owned(method), Params::Value(params))
}

/// [`prepare`] for a `tools/call` the quick reader read.
pub(crate) fn prepare_call<'a>(
    shared: &Shared,
    era: &mut ConnEra,
    id: RequestId,
    params: CallParams<'a>,
) -> Option<Prepared<'a>> {
    prepare_parts(shared, era, id, Cow::Borrowed(method::TOOLS_CALL), Params::Call(params))
}

fn prepare_parts<'a>(
    shared: &Shared,
    era: &mut ConnEra,
    id: RequestId,
    method: Cow<'static, str>,
    params: Params<'a>,
) -> Option<Prepared<'a>> {
    let is_call = method == method::TOOLS_CALL;
    if is_call {
        Counters::bump(&shared.counters.received);
    }
    match &*method {
        method::INITIALIZE => Counters::bump(&shared.counters.initializes),
        DISCOVER => Counters::bump(&shared.counters.discovers),
        _ => {}
    }
    let mut route = methods::route(shared, era, &method, &params);
    if matches!(route, Route::Serve { .. })
        && let Err(refusal) = gate::check(shared, &method, &params)
    {
        route = Route::Refuse(refusal);
    }
    // Modern results carry `resultType` and the `serverInfo` stamp; the cacheable ones `ttlMs` and `cacheScope`.
    let modern = matches!(route, Route::Serve { modern: true }).then_some(method == method::TOOLS_LIST);
    let plan = match route {
        Route::Ignore => return None,
        Route::Refuse(error) => Plan::Refuse(error),
        Route::Serve { .. } => Plan::Serve { method, params },
    };
    Some(Prepared { id, plan, modern, is_call })
}

fn job(shared: &Arc<Shared>, plan: Plan<'_>, is_call: bool) -> Job {
    let (method, params) = match plan {
        // An era refusal (no envelope, a version we do not serve, the other era's lifecycle) is an answer like
        // any other: it waits out a hang and can be cancelled.
        Plan::Refuse(error) => return Job::Reply(Err(error), is_call.then_some(CallEnd::Errored)),
        Plan::Serve { method, params } => (method, params),
    };
    match &*method {
        method::TOOLS_CALL => call::prepare(shared, params),
        method::INITIALIZE => value_reply(methods::initialize(shared, params.value())),
        DISCOVER => value_reply(methods::discover(shared)),
        RENEW if gate::renews(shared, RENEW) => value_reply(gate::renew(shared, &params)),
        method::PING => value_reply(Ok(json!({}))),
        method::TOOLS_LIST => value_reply(methods::list_tools(shared, params.value())),
        other => {
            Job::Reply(Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {other}"))), None)
        }
    }
}

fn value_reply(result: Result<Value, ErrorObject>) -> Job {
    Job::Reply(result.map(Reply::Value), None)
}

/// Enters the request into `table` and answers it on its own task, to `out`. `Err` is the answer to send instead when
/// the table refuses it (the id is already in flight, or the scope is full).
pub(crate) fn spawn(
    shared: &Arc<Shared>,
    table: &Arc<InFlight>,
    prepared: Prepared<'_>,
    out: mpsc::Sender<Message>,
) -> Result<(), Message> {
    let Prepared { id, plan, modern, is_call } = prepared;
    if let Err(error) = table.enter(&id, is_call) {
        if is_call {
            Counters::bump(&shared.counters.errored);
        }
        return Err(Message::error(Some(id), error));
    }
    let job = job(shared, plan, is_call);
    // The slot exists before the task can look for it; the abort handle is filled in right after the spawn, before
    // the caller reads (and could act on) the next message.
    let task = tokio::spawn(answer(shared.clone(), table.clone(), id.clone(), job, modern, out));
    table.started(&id, task.abort_handle());
    Ok(())
}

/// Runs one request and sends its answer, unless it was cancelled first. While the server is hung the answer waits.
async fn answer(
    shared: Arc<Shared>,
    table: Arc<InFlight>,
    id: RequestId,
    job: Job,
    modern: Option<bool>,
    out: mpsc::Sender<Message>,
) {
    let (result, outcome, held) = match job {
        Job::Reply(result, outcome) => (result, outcome, None),
        Job::Call(call) => {
            let (result, outcome, held) = call.run(&shared, &out).await;
            (result, Some(outcome), Some(held))
        }
    };
    shared.unhung().await;
    if !table.claim(&id) {
        return;
    }
    match outcome {
        Some(CallEnd::Completed) => Counters::bump(&shared.counters.completed),
        Some(CallEnd::Errored) => Counters::bump(&shared.counters.errored),
        None => {}
    }
    let reply = match result {
        Ok(reply) => Message::result_payload(id, reply.into_payload(&shared, modern)),
        Err(error) => Message::error(Some(id), error),
    };
    let _ = out.send(reply).await;
    // The worker is returned only once the answer is queued.
    drop(held);
}

/// A client notification: `notifications/cancelled` aborts the request it names in `table`; anything else
/// (`notifications/initialized`, ...) needs nothing from us.
pub(crate) fn on_notification(shared: &Shared, table: &InFlight, note: Notification) {
    if note.method != method::CANCELLED {
        return;
    }
    // The spec: a cancellation that is malformed, or names a request already answered or unknown, is ignored.
    let Some(params) = note.params.and_then(|p| serde_json::from_value::<CancelledParams>(p).ok()) else {
        return;
    };
    table.cancel(&shared.counters, &params.request_id);
}
