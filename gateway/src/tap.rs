//! A watcher of every attempt a node's protected calls send: how the simulator's recorder sees the attempts of a
//! gateway node as it sees a load host's (in-flight gauge, per-replica counts, the call history). The process has
//! none: its metrics count attempts after the call ([`Federation::call_tool`](super::federation::Federation)).

use std::time::Duration;

use mcpstorm_core::gateway::Routed;

/// See the module documentation.
pub trait AttemptTap: Send + Sync {
    /// An attempt is about to be sent (`retry`: the call sent one before). Returns its send time as the tap tells
    /// time, handed back to [`ended`](Self::ended).
    fn sending(&self, retry: bool) -> Duration;

    /// The call to `tool` (its upstream name) with `arguments` ended as `routed`; `sent` holds each attempt's send
    /// time, in attempt order.
    fn ended(&self, tool: &str, arguments: &serde_json::Value, routed: &Routed, sent: &[Duration]);
}
