//! A 2026-07-28 agent's call whose upstream asked something mid-call (sampling, elicitation, roots). That revision has
//! no server-to-client requests: the front answers the agent's request with an input-required result carrying the
//! question, keeps the call running (parked), and resumes it when the agent retries the request with its answers.
//!
//! ```text
//! agent ── tools/call ──► front ── call ──► upstream ── elicitation/create ──► front (parks the call)
//! agent ◄── {resultType: input_required, inputRequests: {"1": …}, requestState: "mcpstorm-park.…"} ──┘
//! agent ── tools/call + inputResponses {"1": …} + requestState ──► any process of the fleet ─► the owner
//!                                             owner: answers the upstream, waits for the call's next event ──┘
//! ```
//!
//! `requestState` names the park and the process that holds it, signed as an ask id is (`asks`): a process that
//! receives a retry it does not hold forwards the whole request to its owner. The call keeps its own deadline and
//! cancellation while the agent thinks; a park whose call ended and whose agent never came back is forgotten after
//! [`KEEP_DONE`], and at most [`MAX_PARKS`] are held (another ask is refused).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::asks::{Asks, Event};
use crate::cancel::CancelToken;
use crate::conn::Asked;
use crate::jsonrpc::{ErrorCode, ErrorObject};

pub(crate) const PREFIX: &str = "mcpstorm-park";
/// Parks held at once per process.
pub(crate) const MAX_PARKS: usize = 4096;
/// How long a finished call's answer waits for its agent's retry.
pub(crate) const KEEP_DONE: Duration = Duration::from_secs(60);
/// The methods whose result may be input-required.
pub(crate) const PARKABLE: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

type Reply = oneshot::Sender<Result<Value, ErrorObject>>;

/// One parked call: its events, and the questions put to the agent and not yet answered, by their key.
struct Park {
    events: tokio::sync::Mutex<mpsc::Receiver<Event>>,
    open: Mutex<HashMap<String, Reply>>,
    /// Cancels the call when the park is forgotten.
    cancel: CancelToken,
}

/// The parked calls of this process.
pub(crate) struct Parks {
    asks: Arc<Asks>,
    /// The parent of every parked call's token: the front's drain deadline ends them.
    pub root: CancelToken,
    table: Mutex<HashMap<u64, Arc<Park>>>,
    next_key: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Parks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parks").finish_non_exhaustive()
    }
}

/// Where a retry goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Not a retry of a parked call.
    Fresh,
    /// This process holds it.
    Here(u64),
    /// Another process of the fleet holds it: forward the request to this MCP URL.
    Owner(String),
}

impl Parks {
    pub fn new(asks: Arc<Asks>, root: CancelToken) -> Parks {
        Parks { asks, root, table: Mutex::default(), next_key: 1.into() }
    }

    /// Whether `params` retry a parked call, and whose.
    pub fn retry_of(&self, params: Option<&Value>) -> Retry {
        let Some(state) = params.and_then(|p| p.get("requestState")).and_then(Value::as_str) else {
            return Retry::Fresh;
        };
        match self.asks.verify(PREFIX, state) {
            Some((n, owner)) if self.asks.is_here(owner.as_deref()) => Retry::Here(n),
            Some((_, Some(owner))) => Retry::Owner(owner),
            // A state of the upstream's own (passed through), or one we cannot read: the call goes on as sent.
            _ => Retry::Fresh,
        }
    }

    /// Parks a call whose first event was `first` (an ask), with the rest of its events on `events`; the call is
    /// cancelled with `cancel` if it is forgotten. The input-required result for the agent, or the ask's refusal
    /// when the table is full; and the park's number.
    pub fn park(&self, first: Asked, events: mpsc::Receiver<Event>, cancel: CancelToken) -> (u64, Value) {
        let (n, state) = self.asks.mint(PREFIX);
        let park =
            Arc::new(Park { events: tokio::sync::Mutex::new(events), open: Mutex::default(), cancel: cancel.clone() });
        {
            let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
            if table.len() >= MAX_PARKS {
                let _ = first.reply.send(Err(ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    "the gateway holds too many calls waiting for their agents; try again later",
                )));
                drop(table);
                cancel.cancel("too many parked calls");
                let busy = "the gateway is busy: too many calls are waiting for their agents";
                return (n, json!({ "content": [{ "type": "text", "text": busy }], "isError": true }));
            }
            table.insert(n, park.clone());
        }
        (n, self.interim(&park, first, &state))
    }

    /// The input-required result asking `asked`, recorded as open on `park`.
    fn interim(&self, park: &Park, asked: Asked, state: &str) -> Value {
        let key = self.next_key.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_string();
        let Asked { method, params, reply } = asked;
        park.open.lock().unwrap_or_else(PoisonError::into_inner).insert(key.clone(), reply);
        let mut request = Map::new();
        request.insert("method".into(), Value::String(method));
        if let Some(params) = params {
            request.insert("params".into(), params);
        }
        json!({ "resultType": "input_required", "inputRequests": { key: request }, "requestState": state })
    }

    /// Resumes park `n` with the agent's `inputResponses` (in `params`), then waits for the call's next event: its
    /// answer, or another question (a new input-required result). A park this process does not hold (expired,
    /// already answered, never ours) is -32602.
    pub async fn resume(
        &self,
        n: u64,
        params: Option<&Value>,
        token: &CancelToken,
    ) -> Option<Result<Value, ErrorObject>> {
        let park = self.table.lock().unwrap_or_else(PoisonError::into_inner).get(&n).cloned();
        let Some(park) = park else {
            let why = "requestState names a call this gateway no longer holds (it ended, or expired): call again";
            return Some(Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, why)));
        };
        let responses = params.and_then(|p| p.get("inputResponses")).and_then(Value::as_object);
        for (key, response) in responses.into_iter().flatten() {
            let reply = park.open.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
            if let Some(reply) = reply {
                let _ = reply.send(Ok(response.clone()));
            }
        }
        let state = params.and_then(|p| p.get("requestState")).and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut events = park.events.lock().await;
        let event = tokio::select! {
            biased;
            // The retry's stream closed: the call stays parked for the agent's next retry.
            () = token.cancelled() => return None,
            event = events.recv() => event,
        };
        drop(events);
        Some(match event {
            Some(Event::Ask(asked)) => Ok(self.interim(&park, asked, &state)),
            Some(Event::Done(answer)) => {
                self.table.lock().unwrap_or_else(PoisonError::into_inner).remove(&n);
                answer
            }
            None => {
                self.table.lock().unwrap_or_else(PoisonError::into_inner).remove(&n);
                Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the call ended without an answer"))
            }
        })
    }

    /// Forgets park `n` once its call is done and `KEEP_DONE` passed without the agent's retry (called by the task
    /// that runs the parked call, after its answer).
    pub async fn expire(self: Arc<Self>, n: u64) {
        tokio::time::sleep(KEEP_DONE).await;
        let park = self.table.lock().unwrap_or_else(PoisonError::into_inner).remove(&n);
        if let Some(park) = park {
            park.cancel.cancel("its agent never came back");
        }
    }
}
