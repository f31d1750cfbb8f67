//! The requests a server makes of its client during a call (2025-11-25: `sampling/createMessage`,
//! `elicitation/create`, `roots/list`), handed to whoever the call's [`CallOptions::asks`](super::CallOptions) names:
//! a gateway relays them to the agent that made the call. The reader answers the server with whatever comes back on
//! `reply`, or with an error when nobody answers (the call ended, the sink is full).

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

/// Where a call's server requests go.
pub type AskSink = mpsc::Sender<Asked>;

/// The requests a client may be asked mid-call and relays; anything else a server asks gets "method not found".
pub use crate::mcp::method::ASKED_OF_CLIENTS as RELAYED;
