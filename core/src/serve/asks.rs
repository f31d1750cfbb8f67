//! Requests the front makes of an agent on behalf of one of its calls (2025-11-25: `sampling/createMessage`,
//! `elicitation/create`, `roots/list` that an upstream sent during the call), and the routing of the agent's answers.
//!
//! A request goes out on the call's own stream (its SSE answer, or stdio) with an id the front mints. The agent
//! answers with a POST that a load balancer may hand to any gateway process, so the id says which process waits for
//! it: `mcpstorm-ask.<n>.<owner>.<tag>`, where `owner` is the waiting process's MCP URL (base64url) and `tag` an
//! HMAC under the session keys every process of the fleet shares. A process that receives an answer it is not
//! waiting for checks the tag and forwards the answer to its owner, as the agent sent it (the same session id and
//! authorization), so no load-balancer affinity is needed and nobody can make a process post anywhere else. A
//! process whose URL is unknown (stdio, a wildcard bind without `advertise`) mints ids without an owner: their answers
//! must come back to it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::keys::Keys;
use crate::cancel::CancelToken;
use crate::conn::Asked;
use crate::jsonrpc::{ErrorCode, ErrorObject, Message, RequestId, Response, ResponseBody};

const PREFIX: &str = "mcpstorm-ask";

/// Answers the agents of this process owe, by the number in their id.
pub(crate) struct Asks {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Result<Value, ErrorObject>>>>,
    /// This process's MCP URL, once it serves HTTP (see [`Asks::serving_at`]).
    owner: OnceLock<String>,
    keys: Keys,
}

impl std::fmt::Debug for Asks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asks").field("owner", &self.owner.get()).finish_non_exhaustive()
    }
}

/// Where an agent's answer goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Delivered to the call waiting here (or to nobody any more: a late answer).
    Here,
    /// Another process of the fleet waits for it: forward the message to this MCP URL.
    Owner(String),
    /// Not an id of ours: ignored, as an answer to nothing.
    Unknown,
}

impl Asks {
    pub fn new(keys: Keys) -> Asks {
        Asks { next: AtomicU64::new(1), waiting: Mutex::default(), owner: OnceLock::new(), keys }
    }

    /// Records where this process serves MCP (the first call wins).
    pub fn serving_at(&self, url: String) {
        let _ = self.owner.set(url);
    }

    fn tag(&self, key: &hmac::Key, prefix: &str, n: u64, owner: &str) -> String {
        URL_SAFE_NO_PAD.encode(hmac::sign(key, signed(prefix, n, owner).as_bytes()).as_ref())
    }

    /// A new number and the id that names it under `prefix`, with this process as its owner when its URL is known.
    pub fn mint(&self, prefix: &str) -> (u64, String) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = match self.owner.get() {
            Some(url) => {
                let owner = URL_SAFE_NO_PAD.encode(url);
                let tag = self.tag(self.keys.current.hmac(), prefix, n, &owner);
                format!("{prefix}.{n}.{owner}.{tag}")
            }
            None => format!("{prefix}.{n}"),
        };
        (n, id)
    }

    /// Whether `owner` (a verified id's) is this process.
    pub fn is_here(&self, owner: Option<&str>) -> bool {
        owner.is_none_or(|owner| self.owner.get().is_some_and(|me| me == owner))
    }

    /// A new id and the receiver of its answer. The entry is removed when the returned guard drops.
    fn register(self: &Arc<Self>) -> (Pending, oneshot::Receiver<Result<Value, ErrorObject>>) {
        let (n, id) = self.mint(PREFIX);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).insert(n, tx);
        (Pending { asks: self.clone(), n, id }, rx)
    }

    /// Routes an agent's answer: delivered here, to be forwarded, or unknown.
    pub fn answer(&self, response: &Response) -> Route {
        let Some(RequestId::String(id)) = response.id.as_ref() else { return Route::Unknown };
        let Some((n, owner)) = self.verify(PREFIX, id) else { return Route::Unknown };
        if let Some(owner) = owner.filter(|o| !self.is_here(Some(o))) {
            return Route::Owner(owner);
        }
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(&n);
        if let Some(tx) = waiting {
            let _ = tx.send(match &response.body {
                ResponseBody::Result(v) => {
                    v.to_value().map_err(|e| ErrorObject::new(ErrorCode::PARSE_ERROR, e.to_string()))
                }
                ResponseBody::Error(e) => Err(e.clone()),
            });
        }
        Route::Here
    }

    /// The number and the verified owner URL of an id minted under `prefix` by a process of this fleet.
    pub fn verify(&self, prefix: &str, id: &str) -> Option<(u64, Option<String>)> {
        let rest = id.strip_prefix(prefix)?.strip_prefix('.')?;
        let mut parts = rest.split('.');
        let n = parts.next()?.parse().ok()?;
        match (parts.next(), parts.next(), parts.next()) {
            (None, _, _) => Some((n, None)),
            (Some(owner), Some(tag), None) => {
                let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
                let signed = signed(prefix, n, owner);
                let ok = self.keys.verifying().any(|k| hmac::verify(k.hmac(), signed.as_bytes(), &tag).is_ok());
                let url = String::from_utf8(URL_SAFE_NO_PAD.decode(owner).ok()?).ok()?;
                ok.then_some((n, Some(url)))
            }
            _ => None,
        }
    }
}

/// What an id's tag signs.
fn signed(prefix: &str, n: u64, owner: &str) -> String {
    format!("{prefix}.{n}.{owner}")
}

/// What a 2026-07-28 call tells the front that may park it (see `parked`): its questions, then its answer.
#[derive(Debug)]
pub(crate) enum Event {
    /// The call asks the agent something.
    Ask(Asked),
    /// The call's answer.
    Done(Result<Value, ErrorObject>),
}

/// One request in flight to an agent; dropping it forgets the answer.
struct Pending {
    asks: Arc<Asks>,
    n: u64,
    id: String,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.asks.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.n);
    }
}

/// How a call asks its agent: the agent's declared capabilities, and the call's stream when requests can reach the
/// agent on it (a 2025-11-25 agent's SSE answer, or stdio).
#[derive(Debug, Clone, Default)]
pub struct Asker {
    to: To,
    capabilities: Value,
    cancel: Option<CancelToken>,
}

/// Where an [`Asker`]'s requests go.
#[derive(Debug, Clone, Default)]
enum To {
    /// Nowhere: the request has no channel to the agent.
    #[default]
    Nobody,
    /// On the call's stream, answered by the agent's response (2025-11-25).
    Stream(Arc<Asks>, mpsc::Sender<Message>),
    /// Into the call's input-required result, answered by the agent's retry (2026-07-28: see `parked`).
    Interim(mpsc::Sender<Event>),
}

impl Asker {
    pub(crate) fn new(
        asks: Option<Arc<Asks>>,
        out: Option<mpsc::Sender<Message>>,
        capabilities: Value,
        cancel: CancelToken,
    ) -> Asker {
        let to = match asks.zip(out) {
            Some((asks, out)) => To::Stream(asks, out),
            None => To::Nobody,
        };
        Asker { to, capabilities, cancel: Some(cancel) }
    }

    /// The asker of a 2026-07-28 call: its requests become the call's input-required result (see `parked`).
    pub(crate) fn interim(events: mpsc::Sender<Event>, capabilities: Value, cancel: CancelToken) -> Asker {
        Asker { to: To::Interim(events), capabilities, cancel: Some(cancel) }
    }

    /// Whether the agent declared any capability it could be asked under (and so whether its calls need a stream).
    pub fn may_be_asked(capabilities: &Value) -> bool {
        ["sampling", "elicitation", "roots"].iter().any(|c| capabilities.get(c).is_some())
    }

    /// Whether anything could be asked of the agent: it declared a capability to be asked under, and its request has
    /// a channel to ask it on.
    pub fn can_ask(&self) -> bool {
        !matches!(self.to, To::Nobody) && Asker::may_be_asked(&self.capabilities)
    }

    /// The capability the agent lacks for being asked `method` with `params`, if any.
    pub fn missing(&self, method: &str, params: Option<&Value>) -> Option<&'static str> {
        missing_capability(method, params, &self.capabilities)
    }

    /// The error `ask` answers at once, without asking: the agent did not declare the capability `method` needs
    /// (-32601 naming it, and `requiredCapabilities` in `data`), or its request has no stream to carry it.
    pub fn refusal(&self, method: &str, params: Option<&Value>) -> Option<ErrorObject> {
        if let Some(missing) = missing_capability(method, params, &self.capabilities) {
            let why = format!("the agent did not declare the `{missing}` capability that {method} needs");
            let mut e = ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, why);
            e.data = Some(json!({ "requiredCapabilities": { missing: {} } }));
            return Some(e);
        }
        matches!(self.to, To::Nobody).then(|| no_stream(method))
    }

    /// Sends `method` to the agent and waits for its answer, until the agent answers or the call is cancelled (its
    /// deadline included: the caller drops this future). A request the agent did not declare the capability for, or
    /// that cannot reach it, is refused at once with -32601 (what a client that does not support a request answers),
    /// naming the capability; one the agent never answered is -32800. Neither counts against the server's health:
    /// the upstream usually hands the error back as its call's.
    pub async fn ask(&self, method: &str, params: Option<Value>) -> Result<Value, ErrorObject> {
        if let Some(refused) = self.refusal(method, params.as_ref()) {
            return Err(refused);
        }
        let (answer, pending) = match &self.to {
            To::Nobody => return Err(no_stream(method)),
            To::Stream(asks, out) => {
                let (pending, answer) = asks.register();
                let request = Message::request(RequestId::String(pending.id.clone()), method, params);
                if out.send(request).await.is_err() {
                    return Err(ErrorObject::new(ErrorCode::REQUEST_CANCELLED, "the agent's stream closed"));
                }
                (answer, Some(pending))
            }
            To::Interim(events) => {
                let (reply, answer) = oneshot::channel();
                let asked = Asked { method: method.to_owned(), params, reply };
                if events.send(Event::Ask(asked)).await.is_err() {
                    return Err(ErrorObject::new(ErrorCode::REQUEST_CANCELLED, "the agent's call has ended"));
                }
                (answer, None)
            }
        };
        let cancelled = async {
            match &self.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let answered = tokio::select! {
            answered = answer => answered,
            () = cancelled => return Err(ErrorObject::new(ErrorCode::REQUEST_CANCELLED, "the call was cancelled")),
        };
        drop(pending);
        answered.unwrap_or_else(|_| Err(ErrorObject::new(ErrorCode::REQUEST_CANCELLED, "the agent never answered")))
    }
}

/// -32601 for a request the agent could take but cannot be sent.
fn no_stream(method: &str) -> ErrorObject {
    let why = format!("{method} cannot reach this agent: its request has no stream to carry it");
    ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, why)
}

/// The capability `method` needs that `capabilities` lacks, if any. An elicitation in URL mode needs
/// `elicitation.url`; a form (the default mode) needs `elicitation` declared with `form` or with neither mode (the
/// 2025-06-18 shape, which means form).
fn missing_capability(method: &str, params: Option<&Value>, capabilities: &Value) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => capabilities.get("sampling").is_none().then_some("sampling"),
        "roots/list" => capabilities.get("roots").is_none().then_some("roots"),
        "elicitation/create" => {
            let Some(declared) = capabilities.get("elicitation") else { return Some("elicitation") };
            let url = params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url");
            let (form_ok, url_ok) = (declared.get("form").is_some(), declared.get("url").is_some());
            match url {
                true if !url_ok => Some("elicitation.url"),
                false if !form_ok && url_ok => Some("elicitation.form"),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Payload;
    use crate::serve::keys::SessionKey;

    fn asks(key: &str, owner: Option<&str>) -> Arc<Asks> {
        let asks = Asks::new(Keys::new(SessionKey::parse(key).expect("a key")));
        if let Some(url) = owner {
            asks.serving_at(url.to_owned());
        }
        Arc::new(asks)
    }

    fn response(id: &str, result: Value) -> Response {
        Response {
            id: Some(RequestId::String(id.to_owned())),
            body: ResponseBody::Result(Payload::from_value(&result)),
        }
    }

    const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    #[tokio::test]
    async fn an_answer_reaches_the_call_that_asked_on_whichever_process_receives_it() {
        let a = asks(KEY, Some("http://10.0.0.1:8848/mcp"));
        let b = asks(KEY, Some("http://10.0.0.2:8848/mcp"));
        let (pending, rx) = a.register();
        assert_eq!(
            b.answer(&response(&pending.id, json!({ "ok": 1 }))),
            Route::Owner("http://10.0.0.1:8848/mcp".into())
        );
        assert_eq!(a.answer(&response(&pending.id, json!({ "ok": 1 }))), Route::Here);
        assert_eq!(rx.await.expect("delivered"), Ok(json!({ "ok": 1 })));
    }

    #[test]
    fn a_forged_or_foreign_id_is_not_forwarded() {
        let a = asks(KEY, Some("http://10.0.0.1:8848/mcp"));
        let (pending, _rx) = a.register();
        let evil = URL_SAFE_NO_PAD.encode("http://169.254.169.254/");
        let mut parts: Vec<&str> = pending.id.split('.').collect();
        parts[2] = &evil;
        let forged = parts.join(".");
        assert_eq!(a.answer(&response(&forged, json!({}))), Route::Unknown, "the tag covers the owner");
        let other = asks(&KEY.replace('0', "1"), Some("http://10.0.0.2:8848/mcp"));
        assert_eq!(other.answer(&response(&pending.id, json!({}))), Route::Unknown, "another fleet's key");
        assert_eq!(a.answer(&response("7", json!({}))), Route::Unknown);
    }

    #[test]
    fn a_capability_the_agent_did_not_declare_is_named() {
        let none = json!({});
        assert_eq!(missing_capability("sampling/createMessage", None, &none), Some("sampling"));
        assert_eq!(missing_capability("roots/list", None, &json!({ "roots": {} })), None);
        let form_only = json!({ "elicitation": {} });
        assert_eq!(missing_capability("elicitation/create", None, &form_only), None);
        let url = json!({ "mode": "url" });
        assert_eq!(missing_capability("elicitation/create", Some(&url), &form_only), Some("elicitation.url"));
        let url_only = json!({ "elicitation": { "url": {} } });
        assert_eq!(missing_capability("elicitation/create", None, &url_only), Some("elicitation.form"));
        assert_eq!(missing_capability("elicitation/create", Some(&url), &url_only), None);
    }
}
