//! The seam between the front and the gateway behind it: [`Service`], and what each request brings it
//! ([`RequestCtx`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::cancel::CancelToken;
use crate::jsonrpc::{ErrorObject, Message, Payload};
use crate::mcp::{Implementation, method};
use crate::serve::auth::Principal;
use crate::session::Era;

/// A service's answer to one request.
pub type ServiceFuture = Pin<Box<dyn Future<Output = Result<ServiceAnswer, ErrorObject>> + Send>>;

/// A request's result, as the service has it: a tree it built, or JSON text it already wrote. A proxy's relayed
/// `tools/call` result is the text: building a tree only to write it out again cost every call a tree's
/// allocations. The front adds what the agent's era needs to either (see `lifecycle::stamp_modern`).
#[derive(Debug, Clone, PartialEq)]
pub enum ServiceAnswer {
    Tree(Value),
    Text(Payload),
    /// Text that already carries every stamp the front adds to a 2026-07-28 result (see
    /// [`call_result_stamped`](super::call_result_stamped)): written as it is, never read again.
    Stamped(Payload),
}

impl ServiceAnswer {
    /// The result as a tree: the text parsed (a service's text that does not parse, which it never writes, is
    /// `null`).
    pub fn into_value(self) -> Value {
        match self {
            ServiceAnswer::Tree(value) => value,
            ServiceAnswer::Text(text) | ServiceAnswer::Stamped(text) => text.to_value().unwrap_or(Value::Null),
        }
    }
}

impl From<Value> for ServiceAnswer {
    fn from(value: Value) -> Self {
        ServiceAnswer::Tree(value)
    }
}

/// What the front asks of the gateway behind it. One instance shared by every agent session.
pub trait Service: Send + Sync + 'static {
    /// A request other than the lifecycle ones the front answers itself (initialize, ping, server/discover). A
    /// 2025-11-25 session's `logging/setLevel` comes here too (the level is valid): when the service answers it
    /// without an error, the front keeps the level for the session's later requests (`RequestCtx::logs`).
    /// `ctx` carries the agent session's id, the negotiated era/version, a progress sink (send
    /// `notifications/progress` to the agent, if the request had a progressToken) and a CancelToken fired when
    /// the agent cancels (notifications/cancelled, closed stream, DELETE) or the front stops.
    fn request(&self, ctx: RequestCtx, method: String, params: Option<Value>) -> ServiceFuture;

    /// The `capabilities` and `serverInfo` to answer initialize / server/discover with.
    fn describe(&self) -> ServerDescription;

    /// An agent session ended here: its DELETE (2025-11-25 HTTP), or the stdio peer went away. What the service
    /// keeps for it (resource subscriptions) can go. A session that merely stops calling is never told.
    fn session_ended(&self, _session: &str) {}

    /// Whether `/readyz` answers 200 (else 503; the front also answers 503 once it is stopping).
    fn ready(&self) -> bool {
        true
    }

    /// [`ready`](Self::ready), with a JSON body saying why (`/readyz` answers `ready` or `not ready` without one).
    fn readiness(&self) -> (bool, Option<Value>) {
        (self.ready(), None)
    }
}

/// How the front describes the service to agents.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerDescription {
    pub capabilities: Value,
    pub server_info: Implementation,
    pub instructions: Option<String>,
}

/// One request's context.
#[derive(Debug, Clone)]
pub struct RequestCtx {
    /// The agent session: a 2025-11-25 session's nonce (the same on every replica), `"stdio"` for the stdio peer,
    /// `None` for a 2026-07-28 request (that era has no sessions).
    pub session: Option<Arc<str>>,
    pub era: Era,
    /// The negotiated (legacy) or enveloped (modern) protocol version.
    pub protocol_version: String,
    pub client_info: Option<Implementation>,
    pub client_capabilities: Value,
    pub progress: Progress,
    /// The agent's log level and where the request's log messages go (see [`Logs`](super::Logs)).
    pub logs: super::Logs,
    /// Fired when the agent cancels the request or the front stops (its reason says which).
    pub cancel: CancelToken,
    /// Who the agent is (`FrontLimits::auth`), for calls made on its behalf; `None` without agent auth.
    pub principal: Option<Principal>,
    /// Sends the agent the requests an upstream makes during the call (sampling, elicitation, roots).
    pub asker: super::Asker,
    /// A 2026-07-28 `subscriptions/listen`'s stream (`None` for any other request).
    pub listen: Option<super::ListenStream>,
}

/// Where a request's progress goes: to the agent, when the request carried a `progressToken` and its transport can
/// carry notifications (an SSE answer, stdio); otherwise nowhere.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    sink: Option<(Value, mpsc::Sender<Message>)>,
}

impl Progress {
    pub(crate) fn new(token: Option<Value>, out: Option<mpsc::Sender<Message>>) -> Progress {
        Progress { sink: token.zip(out) }
    }

    /// The agent's `progressToken`, if it gave one and progress can reach it.
    pub fn token(&self) -> Option<&Value> {
        self.sink.as_ref().map(|(token, _)| token)
    }

    /// Sends one `notifications/progress` to the agent (waiting while its stream is full). False when progress
    /// goes nowhere or the agent has gone.
    pub async fn send(&self, progress: f64, total: Option<f64>, message: Option<String>) -> bool {
        let Some((token, out)) = &self.sink else {
            return false;
        };
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        out.send(Message::notification(method::PROGRESS, Some(params))).await.is_ok()
    }
}

/// The `progressToken` of a request's `params._meta`.
pub(crate) fn progress_token(params: Option<&Value>) -> Option<Value> {
    params?.get("_meta")?.get("progressToken").filter(|t| t.is_string() || t.is_number()).cloned()
}
