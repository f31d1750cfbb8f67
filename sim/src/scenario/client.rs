//! The `[client]` table: the gateway core's connection settings on each load host.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges;
use super::units::Dur;

/// The gateway core's settings on each load host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Global in-flight limit per load host (a default of 50 in-flight calls, the measured client's).
    #[serde(default = "default_max_in_flight")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub max_in_flight: usize,
    /// Per-connection in-flight limit.
    #[serde(default = "default_per_connection")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub per_connection: usize,
    /// Streamable HTTP servers: the most keep-alive connections per replica (each carries one exchange at a time).
    #[serde(default = "default_http_connections")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub http_connections: usize,
    /// Streamable HTTP servers: the most requests waiting for one of those connections, per replica; one more is
    /// refused at once as an overload, like a full in-flight queue.
    #[serde(default = "default_http_queue")]
    #[schemars(range(max = ranges::MAX_CONCURRENCY))]
    pub http_queue: usize,
    /// Longest wait for an in-flight slot (and, over HTTP, for a pooled connection).
    #[serde(default = "default_queue_wait")]
    pub queue_wait: Dur,
    /// Longest wait for the first byte of a response (or progress).
    #[serde(default = "default_first_response")]
    pub first_response: Dur,
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout: Dur,
    /// Overall deadline per attempt.
    #[serde(default = "default_deadline")]
    pub deadline: Dur,
}

fn default_max_in_flight() -> usize {
    50
}
fn default_per_connection() -> usize {
    256
}
fn default_http_connections() -> usize {
    16
}
fn default_http_queue() -> usize {
    256
}
fn default_queue_wait() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_first_response() -> Dur {
    Dur(Duration::from_secs(5))
}
fn default_connect_timeout() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_deadline() -> Dur {
    Dur(Duration::from_secs(30))
}

impl Default for ClientSpec {
    fn default() -> Self {
        ClientSpec {
            max_in_flight: default_max_in_flight(),
            per_connection: default_per_connection(),
            http_connections: default_http_connections(),
            http_queue: default_http_queue(),
            queue_wait: default_queue_wait(),
            first_response: default_first_response(),
            connect_timeout: default_connect_timeout(),
            deadline: default_deadline(),
        }
    }
}
