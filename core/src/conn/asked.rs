//! The requests a server makes of its client during a call (2025-11-25: `sampling/createMessage`,
//! `elicitation/create`, `roots/list`), handed to whoever the call's [`CallOptions::asks`](super::CallOptions) names:
//! a gateway relays them to the agent that made the call. The reader answers the server with whatever comes back on
//! `reply`, or with an error when nobody answers (the call ended, the sink is full).

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc::ErrorObject;

/// One server request, to be answered on `reply`.
#[derive(Debug)]
pub struct Asked {
    pub method: String,
    pub params: Option<Value>,
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// Takes a call's server requests. The reader calls [`AskRelay::take`] and never waits, so it must not block: it
/// starts the answer (a task, or an answer sent at once) and returns.
pub trait AskRelay: Send + Sync + std::fmt::Debug {
    /// Takes `asked`, to answer on its `reply`; hands it back when it cannot now (the server gets an error).
    fn take(&self, asked: Asked) -> Result<(), Asked>;

    /// Whether an ask could be answered at all. `false` (a gateway's agent that declared no capability to be asked
    /// under, or has no channel for it) lets a call go where no server can ask: on a 2025-11-25 session to a server
    /// that speaks 2026-07-28 too, it is sent in the 2026-07-28 era (see `Connection::set_stateless_meta`).
    fn may_ask(&self) -> bool {
        true
    }
}

/// Where a call's server requests go. A trait object rather than a channel, so that a call whose requests will never
/// come costs no task waiting on one.
pub type AskSink = Arc<dyn AskRelay>;

/// A channel is a relay: the requests are answered, in order, by whoever holds the receiver.
impl AskRelay for mpsc::Sender<Asked> {
    fn take(&self, asked: Asked) -> Result<(), Asked> {
        self.try_send(asked).map_err(|e| match e {
            mpsc::error::TrySendError::Full(a) | mpsc::error::TrySendError::Closed(a) => a,
        })
    }
}

/// The requests a client may be asked mid-call and relays; anything else a server asks gets "method not found".
pub use crate::mcp::method::ASKED_OF_CLIENTS as RELAYED;
