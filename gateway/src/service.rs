//! The front's [`Service`]: what agents' requests reach once the front has answered the lifecycle ones. Tools are
//! federated ([`Federation`]), and prompts and resources with them (`proxied`); what is not proxied gets a JSON-RPC
//! error that says so ([`NOT_PROXIED`]).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcpstorm_core::CancelToken;
use mcpstorm_core::conn::{AskRelay, AskSink, Asked};
use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject, Payload};
use mcpstorm_core::mcp::logging::{self, LogLevel, LogSink};
use mcpstorm_core::mcp::{CallToolResult, Implementation, ProgressParams, method};
use mcpstorm_core::serve::{
    Asker, Front, LISTEN, RequestCtx, ServerDescription, Service, ServiceAnswer, ServiceFuture, call_result_stamped,
};
use mcpstorm_core::session::{Era, META_SERVER_INFO};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::federation::{Current, Federation, current};
use super::input_required::{self, MAX_ROUNDS};
use super::proxied::{self, Kind};
use crate::config::ReadyRule;

/// Requests of agents a gateway does not proxy, and why; each gets -32601 with this reason. (Sampling and
/// elicitation are requests a server makes of its client.) docs/gateway.md lists them.
pub const NOT_PROXIED: &[(&str, &str)] = &[];

/// See the module documentation.
#[derive(Debug)]
pub struct GatewayService {
    pub current: Current,
    pub draining: Arc<AtomicBool>,
    /// `[listen] ready`.
    pub ready: ReadyRule,
}

/// Tells every connected agent when the names it sees change, and each subscribed agent session when a resource it
/// subscribed to was updated (until `stop`, when a reload replaced this federation or the node stopped): the
/// process's and a simulated node's.
pub async fn tell_agents(current: Current, front: Front, stop: CancelToken) {
    let federation = self::current(&current);
    let mut changes = federation.changes();
    let mut updates = federation.resource_updates();
    drop(federation);
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                let told = front.notify_all(method::TOOLS_LIST_CHANGED, None);
                tracing::info!(agents = told, "tool list changed");
            }
            update = updates.recv() => match update {
                Ok(update) => {
                    front.notify_session(&update.session, method::RESOURCES_UPDATED, Some(json!({ "uri": update.uri })));
                }
                Err(broadcast::error::RecvError::Lagged(skipped)) => {
                    tracing::warn!(skipped, "resource updates skipped: the front fell behind");
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}

impl Service for GatewayService {
    fn request(&self, ctx: RequestCtx, method: String, params: Option<Value>) -> ServiceFuture {
        let federation = current(&self.current);
        Box::pin(async move {
            if method == method::TOOLS_CALL {
                return call(&federation, ctx, params).await;
            }
            let answered = match method.as_str() {
                method::TOOLS_LIST => Ok(federation.list_tools()),
                "prompts/list" => Ok(federation.list(Kind::Prompts)),
                "resources/list" => Ok(federation.list(Kind::Resources)),
                "resources/templates/list" => Ok(federation.list(Kind::Templates)),
                "prompts/get" => federation.forward(&method, Kind::Prompts, "name", params).await,
                "resources/read" => federation.forward(&method, Kind::Resources, "uri", params).await,
                "completion/complete" => federation.complete(params).await,
                logging::SET_LEVEL => set_level(&federation, &ctx, params.as_ref()).await,
                method::RESOURCES_SUBSCRIBE => match subscriber(&ctx, &method) {
                    Ok(agent) => federation.subscribe(&agent, params).await,
                    Err(e) => Err(e),
                },
                LISTEN => crate::listen::listen(&federation, ctx, params).await,
                method::RESOURCES_UNSUBSCRIBE => match subscriber(&ctx, &method) {
                    Ok(agent) => federation.unsubscribe(&agent, params).await,
                    Err(e) => Err(e),
                },
                other => Err(not_served(other)),
            };
            answered.map(ServiceAnswer::Tree)
        })
    }

    fn describe(&self) -> ServerDescription {
        ServerDescription {
            // `listChanged`: an upstream's change reaches every connected agent. `completions`: routed to the
            // server of the prompt or resource template asked about. `logging`: a tool call's upstream log messages
            // reach its agent. `subscribe`: relayed to the resource's server (see `subscriptions`).
            capabilities: json!({
                "tools": { "listChanged": true }, "prompts": {}, "resources": { "subscribe": true }, "completions": {},
                "logging": {}
            }),
            server_info: Implementation::new("mcpstorm-gateway", env!("CARGO_PKG_VERSION")),
            instructions: None,
        }
    }

    fn session_ended(&self, session: &str) {
        current(&self.current).session_ended(session);
    }

    fn ready(&self) -> bool {
        self.readiness().0
    }

    fn readiness(&self) -> (bool, Option<Value>) {
        let draining = self.draining.load(Ordering::Relaxed);
        let (listed, mut detail) = current(&self.current).readiness(self.ready);
        detail["draining"] = Value::Bool(draining);
        (listed && !draining, Some(detail))
    }
}

/// A result relayed from a 2026-07-28 upstream to a 2025-11-25 agent, without the later revision's members (its
/// `resultType` and the upstream's `serverInfo` stamp): the agent's revision has no use for them.
fn for_legacy_agent(result: &mut CallToolResult) {
    result.extra.remove("resultType");
    if let Some(meta) = &result.meta {
        result.meta = meta.without_member(META_SERVER_INFO);
    }
    if let Some(meta) = result.extra.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove(META_SERVER_INFO);
        if meta.is_empty() {
            result.extra.remove("_meta");
        }
    }
}

fn not_served(method: &str) -> ErrorObject {
    match NOT_PROXIED.iter().find(|(prefix, _)| method.starts_with(prefix)) {
        Some((_, why)) => ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("{method}: {why}")),
        None => ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {method}")),
    }
}

/// The agent session a `resources/subscribe` or `resources/unsubscribe` is for: a 2025-11-25 one (its HTTP session
/// or the stdio peer). 2026-07-28 has neither request (`subscriptions/listen` replaces them, which the gateway does
/// not serve).
fn subscriber(ctx: &RequestCtx, method: &str) -> Result<Arc<str>, ErrorObject> {
    match (&ctx.session, ctx.era) {
        (Some(session), Era::Legacy) => Ok(session.clone()),
        _ => {
            let why = format!("{method} is not part of 2026-07-28: subscriptions/listen replaces it");
            Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, why))
        }
    }
}

/// A 2025-11-25 agent's `logging/setLevel` (the front has checked the level and keeps it for the session once this
/// answers): 2025-11-25 upstream sessions are asked for it if it is the most verbose yet. 2026-07-28 has no such
/// request: each request carries its level in `_meta`.
async fn set_level(federation: &Federation, ctx: &RequestCtx, params: Option<&Value>) -> Result<Value, ErrorObject> {
    if ctx.era == Era::Modern {
        let why = "logging/setLevel is not part of 2026-07-28: a request asks for its log messages in `_meta`";
        return Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, why));
    }
    let level = LogLevel::of(params.and_then(|p| p.get("level")));
    let level = level.ok_or_else(|| ErrorObject::new(ErrorCode::INVALID_PARAMS, "`level` must be a log level"))?;
    federation.set_log_level(level).await;
    Ok(json!({}))
}

/// Relays a call's upstream log messages to its agent, `logger` naming `server`, each if the agent's level admits it
/// (a 2025-11-25 upstream session may send more: its level is the most verbose any agent set). The sink for the
/// call, none when the agent asked for no log messages, and the relay (see [`relay_progress`] for how it runs).
fn relay_logs(
    ctx: &RequestCtx,
    server: impl FnOnce() -> Option<String>,
) -> (Option<LogSink>, impl Future<Output = ()> + Send + 'static) {
    // The server's name is looked up only for an agent that asked for log messages.
    let wanted = ctx.logs.level().and_then(|level| server().map(|server| (level, server)));
    let (sink, relay) = match wanted {
        Some((level, server)) => {
            let (tx, rx) = mpsc::channel::<Value>(64);
            (Some(LogSink { level, tx }), Some((rx, ctx.logs.clone(), server)))
        }
        None => (None, None),
    };
    let relay = async move {
        let Some((mut rx, logs, server)) = relay else { return };
        while let Some(mut params) = rx.recv().await {
            proxied::name_logger(&mut params, &server);
            logs.send(params).await;
        }
    };
    (sink, relay)
}

/// Relays a call's upstream progress to its agent under the agent's own token: the sender for the call, none when
/// the agent asked for no progress, and the relay. The relay runs beside the call on the call's own task, polled
/// with it (`tokio::join!`), rather than on a task of its own: an agent's progress token then costs its call no
/// spawn. It ends once the call has dropped its sender and what is queued has been passed on.
fn relay_progress(
    ctx: &RequestCtx,
) -> (Option<mpsc::Sender<ProgressParams>>, impl Future<Output = ()> + Send + 'static) {
    let (tx, relay) = match ctx.progress.token() {
        Some(_) => {
            let (tx, rx) = mpsc::channel::<ProgressParams>(16);
            (Some(tx), Some((rx, ctx.progress.clone())))
        }
        None => (None, None),
    };
    let relay = async move {
        let Some((mut rx, sink)) = relay else { return };
        while let Some(p) = rx.recv().await {
            if !sink.send(p.progress, p.total, p.message).await {
                break;
            }
        }
    };
    (tx, relay)
}

/// Relays what a call's upstream asks of its client (sampling, elicitation, roots) to the call's agent. A request the
/// agent cannot take (it did not declare the capability, or has no stream) is refused at once, with the reason
/// `Asker` gives; any other gets a task of its own that answers with the agent's answer. Nothing runs until a server
/// asks, so the calls of agents that are never asked (nearly all) cost no task. At most [`MAX_OPEN_ASKS`] are open
/// at a time per call; when the call ends, the open ones are moot (their upstream request went with the call).
#[derive(Debug)]
struct AgentAsks {
    asker: Asker,
    open: std::sync::Mutex<Vec<tokio::task::AbortHandle>>,
}

/// Requests of one call's server waiting for its agent at once; more are refused until one is answered.
const MAX_OPEN_ASKS: usize = 8;

impl AskRelay for AgentAsks {
    fn take(&self, asked: Asked) -> Result<(), Asked> {
        let Asked { method, params, reply } = asked;
        if let Some(refused) = self.asker.refusal(&method, params.as_ref()) {
            let _ = reply.send(Err(refused));
            return Ok(());
        }
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.retain(|task| !task.is_finished());
        if open.len() >= MAX_OPEN_ASKS {
            return Err(Asked { method, params, reply });
        }
        let asker = self.asker.clone();
        let task = tokio::spawn(async move {
            let _ = reply.send(asker.ask(&method, params).await);
        });
        open.push(task.abort_handle());
        Ok(())
    }

    fn may_ask(&self) -> bool {
        self.asker.can_ask()
    }
}

impl Drop for AgentAsks {
    fn drop(&mut self) {
        for task in self.open.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).drain(..) {
            task.abort();
        }
    }
}

/// One agent tool call: the upstream's progress relayed to the agent under the agent's token, and its log messages
/// at the agent's level.
async fn call(federation: &Federation, ctx: RequestCtx, params: Option<Value>) -> Result<ServiceAnswer, ErrorObject> {
    let (progress, progress_relay) = relay_progress(&ctx);
    let tool = params.as_ref().and_then(|p| p.get("name")).and_then(Value::as_str);
    let (logs, log_relay) = relay_logs(&ctx, || tool.and_then(|t| federation.tool_server(t)));
    let work = async move {
        let on_behalf_of = ctx.principal.as_ref().and_then(|p| p.token.clone());
        let asks: AskSink = Arc::new(AgentAsks { asker: ctx.asker.clone(), open: Default::default() });
        // A 2026-07-28 server asks by answering input-required; a 2025-11-25 agent that could be asked is asked for
        // it, and the call made again with its answers (the server's own protocol), up to `MAX_ROUNDS` times. Only
        // then is a copy of the call's params kept.
        let mut again =
            (ctx.era == Era::Legacy && Asker::may_be_asked(&ctx.client_capabilities)).then(|| params.clone());
        let mut outcome = federation
            .call_tool(params, progress.clone(), ctx.cancel.clone(), on_behalf_of.clone(), logs.clone(), asks.clone())
            .await;
        for _ in 0..MAX_ROUNDS {
            let (Some(sent), Ok(result)) = (again.as_mut(), &outcome) else { break };
            if !input_required::asks(result) {
                break;
            }
            outcome = match input_required::answer(&ctx.asker, &tree(result)).await {
                Ok(resumed) => {
                    let params = input_required::resume(sent.take(), resumed);
                    *sent = params.clone();
                    let (progress, logs) = (progress.clone(), logs.clone());
                    federation
                        .call_tool(params, progress, ctx.cancel.clone(), on_behalf_of.clone(), logs, asks.clone())
                        .await
                }
                Err(e) => Err(e),
            };
        }
        // The last holder of `asks` is this call (the core drops its copies with the call), so its open asks end
        // here; and with the call's senders gone, each relay ends once it has passed on what is queued.
        drop((progress, logs, asks));
        outcome.and_then(|result| for_agent(&ctx, result))
    };
    let (answer, (), ()) = tokio::join!(work, progress_relay, log_relay);
    answer
}

/// A tool's result as the agent's era reads it. Nearly every one is written out as text, with no tree in between;
/// one that still asks for input (rare) is adapted as a tree.
fn for_agent(ctx: &RequestCtx, mut result: CallToolResult) -> Result<ServiceAnswer, ErrorObject> {
    if input_required::asks(&result) {
        let mut asking = tree(&result);
        return match ctx.era {
            Era::Legacy => match input_required::for_legacy_agent(&ctx.asker, &asking) {
                Some(e) => Err(e),
                None => Ok(asking.into()),
            },
            Era::Modern => input_required::for_modern_agent(&ctx.asker, &mut asking).map(|()| asking.into()),
        };
    }
    if ctx.era == Era::Legacy {
        for_legacy_agent(&mut result);
    }
    // A result relayed from a 2026-07-28 server carries its own stamps: the front need not read its text for them.
    let stamped = ctx.era == Era::Modern && call_result_stamped(&result);
    Payload::serialize(&result)
        .map(|text| if stamped { ServiceAnswer::Stamped(text) } else { ServiceAnswer::Text(text) })
        .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("the tool's result cannot be written: {e}")))
}

/// A tool's result as a tree.
fn tree(result: &CallToolResult) -> Value {
    serde_json::to_value(result).unwrap_or_else(|_| json!({ "content": [], "isError": true }))
}
