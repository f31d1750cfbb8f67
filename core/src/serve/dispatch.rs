//! Answering one request in either era: the lifecycle requests the front answers itself, everything else handed
//! to the [`Service`] (a panic there costs that request an error, never the connection), raced against the
//! request's cancellation.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::asks::{Asker, Asks, Event};
use super::auth::Principal;
use super::lifecycle::{self, discover, method_not_found, stamp_modern, stamp_modern_text};
use super::listen::{LISTEN, ListenStream};
use super::logs::{LevelCell, Logs, requested_level};
use super::parked::{PARKABLE, Parks, Retry};
use super::running::{Panicked, Running};
use super::service::{Progress, RequestCtx, Service, ServiceAnswer, progress_token};
use super::shared::Shared;
use crate::cancel::CancelToken;
use crate::jsonrpc::{ErrorCode, ErrorObject, Message, Request};
use crate::mcp::logging::{self, LogLevel};
use crate::mcp::{Implementation, method};
use crate::session::{DISCOVER, Era};

/// Who is asking: what the session id (2025-11-25, stdio) or the request's envelope (2026-07-28) says.
#[derive(Debug, Clone)]
pub(crate) struct Agent {
    pub session: Option<Arc<str>>,
    pub era: Era,
    pub version: String,
    pub client_info: Option<Implementation>,
    pub client_capabilities: Value,
    /// Who the agent is, when the front authenticates agents.
    pub principal: Option<Principal>,
    /// A 2025-11-25 session's log level (`None`: a 2026-07-28 request, whose level is in its `_meta`).
    pub log_level: Option<Arc<LevelCell>>,
    /// Where this process waits for the answers to what it asks the agent on a call's stream (2025-11-25).
    pub asks: Option<Arc<Asks>>,
    /// Where this process parks a call whose upstream asks the agent something (2026-07-28: see `parked`).
    pub parks: Option<Arc<Parks>>,
    /// Fired when the front starts stopping: ends a 2026-07-28 agent's `subscriptions/listen`.
    pub closing: Option<CancelToken>,
}

impl Agent {
    /// A 2026-07-28 request's agent, from its envelope: `initialize` is refused with -32022, a missing or
    /// unsupported envelope with -32602 / -32022.
    pub fn modern(request: &Request) -> Result<Agent, ErrorObject> {
        if request.method == method::INITIALIZE {
            let requested = request.params.as_ref().and_then(|p| p.get("protocolVersion")).cloned();
            return Err(lifecycle::unsupported(requested.unwrap_or(Value::Null)));
        }
        let envelope = lifecycle::envelope(request.params.as_ref())?;
        Ok(Agent {
            session: None,
            era: Era::Modern,
            version: envelope.version,
            client_info: envelope.client_info,
            client_capabilities: envelope.client_capabilities,
            principal: None,
            log_level: None,
            asks: None,
            parks: None,
            closing: None,
        })
    }
}

/// Answers `request` (anything but a legacy `initialize`, which makes a session and is its transport's to answer).
/// Progress goes to `out` when the request asked for it. `None`: cancelled before it was answered, and MCP sends
/// no response then.
pub(crate) async fn answer(
    front: &Shared,
    agent: &Agent,
    request: Request,
    token: CancelToken,
    out: Option<mpsc::Sender<Message>>,
) -> Option<Message> {
    let Request { id, method, params } = request;
    let service = &front.service;
    let modern = agent.era == Era::Modern;
    let result = match (method.as_str(), modern) {
        (method::PING, false) => Ok(json!({}).into()),
        // 2026-07-28 removed ping; a legacy session has no discover.
        (method::PING, true) | (DISCOVER, false) => Err(method_not_found(&method)),
        (DISCOVER, true) => Ok(discover(&service.describe()).into()),
        (method::INITIALIZE, false) => {
            Err(ErrorObject::new(ErrorCode::INVALID_REQUEST, "this session is already initialized"))
        }
        (logging::SET_LEVEL, false) => set_level(service, agent, params, token, out).await?,
        (LISTEN, true) => {
            let closing = agent.closing.clone().unwrap_or_default();
            let stream = ListenStream::new(id.clone(), out.clone(), closing);
            call(service, agent, &method, params, token, out, Some(stream)).await?
        }
        _ => call(service, agent, &method, params, token, out, None).await?,
    };
    Some(match result {
        Ok(ServiceAnswer::Tree(mut value)) => {
            if modern {
                stamp_modern(&mut value, &method, &front.server_info);
            }
            Message::result(id, value)
        }
        Ok(ServiceAnswer::Text(text)) if modern => {
            Message::result_payload(id, stamp_modern_text(text, &method, &front.server_info))
        }
        Ok(ServiceAnswer::Text(text) | ServiceAnswer::Stamped(text)) => Message::result_payload(id, text),
        Err(error) => Message::error(Some(id), error),
    })
}

impl Agent {
    /// The level a request of this agent asks its log messages at: its session's, or its own `_meta`'s.
    pub fn log_level(&self, params: Option<&Value>) -> Option<LogLevel> {
        match &self.log_level {
            Some(cell) => cell.get(),
            None => requested_level(params),
        }
    }
}

/// A 2025-11-25 session's `logging/setLevel`: a level that is not one of the eight is refused here; the service
/// hears a valid one (it may pass it on), and once it agrees the session keeps it.
async fn set_level(
    service: &Arc<dyn Service>,
    agent: &Agent,
    params: Option<Value>,
    token: CancelToken,
    out: Option<mpsc::Sender<Message>>,
) -> Option<Result<ServiceAnswer, ErrorObject>> {
    let Some(level) = LogLevel::of(params.as_ref().and_then(|p| p.get("level"))) else {
        let levels = LogLevel::ALL.map(LogLevel::as_str).join(", ");
        return Some(Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("`level` must be one of {levels}"))));
    };
    let answered = call(service, agent, logging::SET_LEVEL, params, token, out, None).await?;
    if answered.is_ok()
        && let Some(cell) = &agent.log_level
    {
        cell.set(level);
    }
    Some(answered)
}

async fn call(
    service: &Arc<dyn Service>,
    agent: &Agent,
    method: &str,
    params: Option<Value>,
    token: CancelToken,
    out: Option<mpsc::Sender<Message>>,
    listen: Option<ListenStream>,
) -> Option<Result<ServiceAnswer, ErrorObject>> {
    if let Some(parks) = &agent.parks
        && PARKABLE.contains(&method)
        && Asker::may_be_asked(&agent.client_capabilities)
    {
        return parkable(parks, service, agent, method, params, token, out).await;
    }
    let asker = Asker::new(agent.asks.clone(), out.clone(), agent.client_capabilities.clone(), token.clone());
    let mut ctx = request_ctx(agent, params.as_ref(), token.clone(), asker, out);
    ctx.listen = listen;
    // Polled here rather than on a task of its own; see `running.rs` for what that keeps.
    let mut running = Running::new(service.request(ctx, method.to_owned(), params));
    tokio::select! {
        biased;
        () = token.cancelled() => None,
        answered = &mut running => Some(flatten(answered)),
    }
}

fn request_ctx(
    agent: &Agent,
    params: Option<&Value>,
    cancel: CancelToken,
    asker: Asker,
    out: Option<mpsc::Sender<Message>>,
) -> RequestCtx {
    RequestCtx {
        session: agent.session.clone(),
        era: agent.era,
        protocol_version: agent.version.clone(),
        client_info: agent.client_info.clone(),
        client_capabilities: agent.client_capabilities.clone(),
        logs: Logs::new(agent.log_level(params), out.clone()),
        asker,
        progress: Progress::new(progress_token(params), out),
        cancel,
        principal: agent.principal.clone(),
        listen: None,
    }
}

fn flatten(answered: Result<Result<ServiceAnswer, ErrorObject>, Panicked>) -> Result<ServiceAnswer, ErrorObject> {
    answered.unwrap_or_else(|Panicked| {
        tracing::warn!("a service request panicked");
        Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the gateway failed while answering this request"))
    })
}

/// A 2026-07-28 call that may ask its agent something: a retry resumes its parked call; a new call runs here until
/// it answers (as any call) or asks, when it is parked and the agent gets the input-required result. Its token is
/// its own from the start (a child of the front's root), since the call outlives the request that parks it; the
/// request's cancellation before then cancels it.
async fn parkable(
    parks: &Arc<Parks>,
    service: &Arc<dyn Service>,
    agent: &Agent,
    method: &str,
    params: Option<Value>,
    token: CancelToken,
    out: Option<mpsc::Sender<Message>>,
) -> Option<Result<ServiceAnswer, ErrorObject>> {
    match parks.retry_of(params.as_ref()) {
        Retry::Fresh => {}
        Retry::Here(n) => return parks.resume(n, params.as_ref(), &token).await.map(|r| r.map(ServiceAnswer::Tree)),
        Retry::Owner(_) => {
            // The HTTP front forwards these before they get here; no other transport reaches another process.
            let why = "requestState names a call another gateway process holds, which this transport cannot reach";
            return Some(Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, why)));
        }
    }
    let call = parks.root.child();
    let (events_tx, mut events) = mpsc::channel(4);
    let asker = Asker::interim(events_tx.clone(), agent.client_capabilities.clone(), call.clone());
    let ctx = request_ctx(agent, params.as_ref(), call.clone(), asker, out);
    let mut running = Running::new(service.request(ctx, method.to_owned(), params));
    let first = tokio::select! {
        biased;
        () = token.cancelled() => {
            call.cancel("the agent cancelled the request");
            return None;
        }
        answered = &mut running => return Some(flatten(answered)),
        Some(Event::Ask(asked)) = events.recv() => asked,
    };
    let (n, interim) = parks.park(first, events, call);
    let parks = parks.clone();
    tokio::spawn(async move {
        let answer = flatten(running.await).map(ServiceAnswer::into_value);
        let _ = events_tx.send(Event::Done(answer)).await;
        parks.expire(n).await;
    });
    Some(Ok(ServiceAnswer::Tree(interim)))
}
