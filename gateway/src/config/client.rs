//! The `[client]` table: the gateway core's connection settings on each load host (and in `mcpstorm gateway`).
//!
//! The table is flat and the core's settings are not, so four keys carry a qualifier the core's nesting gives its
//! field. This module is the one place that maps them ([`ClientSpec::to_core`], [`ClientSpec::pool`]):
//!
//! | key                | core setting                                   |
//! |--------------------|------------------------------------------------|
//! | `max_in_flight`    | `InFlightLimit` (one per load host or process) |
//! | `per_connection`   | `ConnectionConfig::max_in_flight`              |
//! | `http_connections` | `PoolConfig::max_connections`                  |
//! | `http_queue`       | `PoolConfig::max_waiting`                      |
//! | `queue_wait`       | `ConnectionConfig::queue_wait`, `PoolConfig::max_wait` (default: `deadline`) |
//! | `first_response`   | `ConnectionConfig::first_response` (default: `deadline`) |
//! | `connect_timeout`  | `ClientConfig::connect_timeout`                |
//! | `deadline`         | `ConnectionConfig::call_deadline`, `GatewayConfig::call_deadline` |
//! | `lifecycle_retries` | `ClientConfig::lifecycle_retries`             |

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mcpstorm_core::{ClientConfig, transport::PoolConfig};

use super::gateway::{CredentialSpec, GatewaySpec};
use super::ranges::{self, MAX_CONCURRENCY, Ranges, Upper};
use super::rules::Rules;
use super::units::Dur;

/// The gateway core's settings on each load host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An absent key takes its value from `Default`: a default is declared once, there.
#[serde(default, deny_unknown_fields)]
pub struct ClientSpec {
    /// Global in-flight limit per load host or gateway process. High by default (1,024, Envoy's default circuit
    /// breaker of a cluster): the bulkheads and adaptive limits are what protect a server, and a fixed low cap made the
    /// gateway slower than a plain proxy on one agent's burst.
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub max_in_flight: usize,
    /// Per-connection in-flight limit.
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub per_connection: usize,
    /// Streamable HTTP servers: the most keep-alive connections per replica (each carries one exchange at a time, so
    /// this is also the most requests in flight to it: a plain proxy opens as many as its agents need).
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub http_connections: usize,
    /// Streamable HTTP servers: the most requests waiting for one of those connections, per replica; one more is
    /// refused at once as an overload, like a full in-flight queue.
    #[schemars(range(max = ranges::MAX_CONCURRENCY))]
    pub http_queue: usize,
    /// Longest wait for an in-flight slot, a bulkhead's room and, over HTTP, a pooled connection. Default: the
    /// deadline, so protection sheds only a call that could not have been served in time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_wait: Option<Dur>,
    /// Longest wait for the first byte of a response (or progress). Default: the deadline, so a slow tool that
    /// sends no progress is never cut before the call's own deadline (a tool may think for a minute; nginx waits
    /// 60 s). Set it shorter only for servers known to answer fast.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_response: Option<Dur>,
    pub connect_timeout: Dur,
    /// Overall deadline per attempt.
    pub deadline: Dur,
    /// Reconnect attempts within one call after a failed connect or handshake (backoff 1, 2, 4, 8 s ±20%). Default:
    /// 3 for a server with one replica (a call rides out a quick restart), 0 for a server with several: a call whose
    /// replica just died goes to a sibling at once instead of waiting through the backoff (7 s with 3), and the dead
    /// replica is ejected until a probe reaches it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = MAX_LIFECYCLE_RETRIES))]
    pub lifecycle_retries: Option<u32>,
}

/// The most reconnect attempts a call may make.
const MAX_LIFECYCLE_RETRIES: u32 = 10;

impl Default for ClientSpec {
    /// The core's per-connection limit and connect timeout; the other values are the gateway's own (each key's doc
    /// says why), not a lone client's.
    fn default() -> Self {
        let core = ClientConfig::default();
        ClientSpec {
            max_in_flight: 1024,
            per_connection: core.connection.max_in_flight,
            http_connections: 1024,
            http_queue: 1024,
            queue_wait: None,
            first_response: None,
            connect_timeout: Dur(core.connect_timeout),
            deadline: Dur(Duration::from_secs(30)),
            lifecycle_retries: None,
        }
    }
}

impl ClientSpec {
    /// Reconnects within one call to a replica of a server with `replicas` replicas: as set, else 3 for a lone
    /// replica and 0 when a sibling can take the call. [`ClientSpec::to_core`] gives the lone replica's; the
    /// connectors set each server's.
    pub fn lifecycle_retries(&self, replicas: usize) -> u32 {
        self.lifecycle_retries.unwrap_or(if replicas > 1 { 0 } else { ClientConfig::default().lifecycle_retries })
    }

    /// The longest wait for a slot, room or a connection: as set, else the deadline.
    pub fn queue_wait(&self) -> Dur {
        self.queue_wait.unwrap_or(self.deadline)
    }

    /// The first-response phase's limit: as set, else the deadline.
    pub fn first_response(&self) -> Dur {
        self.first_response.unwrap_or(self.deadline)
    }

    /// Every duration the table sets, by key (one that defaults to the deadline is the deadline's to check).
    fn durations(&self) -> impl Iterator<Item = (&'static str, Dur)> {
        let derived = [("queue_wait", self.queue_wait), ("first_response", self.first_response)];
        let derived = derived.into_iter().filter_map(|(key, d)| Some((key, d?)));
        [("connect_timeout", self.connect_timeout), ("deadline", self.deadline)].into_iter().chain(derived)
    }

    /// Every count of the table, by key.
    fn counts(&self) -> [(&'static str, usize); 4] {
        [
            ("max_in_flight", self.max_in_flight),
            ("per_connection", self.per_connection),
            ("http_connections", self.http_connections),
            ("http_queue", self.http_queue),
        ]
    }

    /// Values below their ranges (the upper bounds are in [`ranges`](Self::ranges)).
    pub fn problems(&self, rules: &mut Rules) {
        for (key, n) in self.counts() {
            // An empty HTTP queue is allowed: every request beyond the pool's connections is refused at once.
            if key != "http_queue" {
                rules.at_least_one(&format!("client.{key}"), n);
            }
        }
        for (key, d) in self.durations() {
            rules.positive(&format!("client.{key}"), d.0);
        }
    }

    /// The table's durations and counts with their bounds.
    pub fn ranges(&self, out: &mut Ranges) {
        for (key, d) in self.durations() {
            out.duration(format!("client.{key}"), d.0, Upper::Week);
        }
        for (key, n) in self.counts() {
            out.count(format!("client.{key}"), n as f64, MAX_CONCURRENCY as f64);
        }
        if let Some(n) = self.lifecycle_retries {
            out.count("client.lifecycle_retries", f64::from(n), f64::from(MAX_LIFECYCLE_RETRIES));
        }
    }

    /// The core's client settings of each replica's client: this table's timeouts and limits, with the gateway's
    /// profile and credentials. The global limit (`max_in_flight`) is one per load host, and the HTTP pool is
    /// [`pool`](Self::pool): both are shared, so they are not per-client settings.
    pub fn to_core(&self, gateway: &GatewaySpec) -> ClientConfig {
        let mut config = ClientConfig {
            connect_timeout: self.connect_timeout.0,
            lifecycle_retries: self.lifecycle_retries(1),
            profile: gateway.profile,
            credentials: gateway.credentials.iter().map(CredentialSpec::to_core).collect(),
            ..ClientConfig::default()
        };
        config.connection.max_in_flight = self.per_connection;
        config.connection.queue_wait = self.queue_wait().0;
        config.connection.first_response = self.first_response().0;
        config.connection.call_deadline = self.deadline.0;
        config
    }

    /// The keep-alive pool each replica's client keeps to a Streamable HTTP server.
    pub fn pool(&self) -> PoolConfig {
        PoolConfig {
            max_connections: self.http_connections,
            max_waiting: self.http_queue,
            max_wait: self.queue_wait().0,
        }
    }
}
