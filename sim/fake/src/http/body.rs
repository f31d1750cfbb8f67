//! The response side: the body type and the responses are the core's (`mcpstorm_core::serve::body`, shared with the
//! production MCP front); what is the fake's own is how a 2026-07-28 stream's close cancels its request.

use std::sync::Arc;

use mcpstorm_core::jsonrpc::RequestId;
use mcpstorm_core::serve::body::{self, Held};
pub(crate) use mcpstorm_core::serve::body::{Reply, empty, error, json, read, with_session};
pub(crate) use mcpstorm_core::serve::headers::SESSION_HEADER;
use tokio::sync::mpsc;

use crate::inflight::InFlight;
use crate::shared::Shared;
use crate::sse::Chunk;

/// 2026-07-28: closing a request's SSE stream cancels the request. Held by the stream's body (or, for a JSON answer,
/// by the handler awaiting it); dropping it before the answer is claimed cancels through the request's in-flight
/// table, exactly as `notifications/cancelled` does on NDJSON. After the answer it does nothing.
#[derive(Debug)]
pub(crate) struct CancelOnDrop {
    pub shared: Arc<Shared>,
    pub table: Arc<InFlight>,
    pub id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.table.cancel(&self.shared.counters, &self.id);
    }
}

/// An SSE stream fed by `rx`; with `cancel`, the client closing it cancels the request.
pub(crate) fn sse(rx: mpsc::Receiver<Chunk>, cancel: Option<CancelOnDrop>) -> Reply {
    body::sse(rx, cancel.map(Held::new))
}
