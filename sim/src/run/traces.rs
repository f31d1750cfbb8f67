//! The calls a run keeps as traces: what the recorder saw of one logical call, gateway call by gateway call and
//! attempt by attempt, in simulated time. `report::traces` turns them into OpenTelemetry spans (`traces.otlp.json`)
//! and `report::waterfall` draws a few of them.
//!
//! Kept as facts, not as spans: span ids are drawn from the run's seed when the file is written, so a call's ids do
//! not depend on which other calls were kept.

use std::time::Duration;

use super::RetryBy;

/// One logical call: the agent's view (from its intended start to its outcome) and what its gateway did.
#[derive(Debug, Clone, PartialEq)]
pub struct CallTrace {
    /// Its number in the order calls were offered (the call history's sampling counts the same way).
    pub logical: u64,
    /// The load host whose agent made it (empty when no gateway call was seen: through gateway nodes).
    pub load_host: String,
    /// Empty when the call never reached a gateway that named it.
    pub tool: String,
    /// Simulated time the agent meant to start it, and when it reached its outcome.
    pub start: Duration,
    pub end: Duration,
    /// `ok`, `degraded`, or a failure's class (`local`, `transport`, `tool` ...).
    pub outcome: &'static str,
    /// The agent's calls through its gateway, in order: its first, then each of its own retries.
    pub gateway_calls: Vec<GatewayCall>,
}

/// One call an agent made through its gateway: the attempts the gateway sent for it, and whether it declined.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayCall {
    pub start: Duration,
    pub end: Duration,
    /// Why the gateway answered degraded instead of (or after) sending, e.g. `breaker_open`.
    pub declined: Option<&'static str>,
    pub attempts: Vec<AttemptTrace>,
}

/// One attempt the gateway sent to a replica.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptTrace {
    /// The replica host, e.g. `db-1`.
    pub replica: String,
    /// Attempts of the logical call before this one.
    pub retry: u32,
    pub by: RetryBy,
    pub sent: Duration,
    pub end: Duration,
    /// The call history's status: `success`, `timeout`, `error`, `rejected`.
    pub status: &'static str,
    /// The call history's code: a JSON-RPC code or a label (`deadline_exceeded`, `tool_error` ...).
    pub code: Option<String>,
    /// Whether the replica answered (a result or a JSON-RPC error): only then is there a server span to show.
    pub answered: bool,
}

impl CallTrace {
    pub fn ok(&self) -> bool {
        self.outcome == "ok"
    }

    pub fn attempts(&self) -> impl Iterator<Item = &AttemptTrace> {
        self.gateway_calls.iter().flat_map(|g| &g.attempts)
    }
}

/// Why the report shows a call in its waterfall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pick {
    /// The slowest call of the run.
    Slowest,
    /// A failed call (not degraded): the one with the most attempts.
    Failed,
    /// A call the gateway answered degraded, a breaker's if any.
    Degraded,
}

impl Pick {
    pub fn label(self) -> &'static str {
        match self {
            Pick::Slowest => "the slowest call",
            Pick::Failed => "a failed call",
            Pick::Degraded => "a call answered degraded",
        }
    }
}

/// What a run kept as traces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Traces {
    /// The calls `[report] traces` keeps, in the order they ended; `None` with `traces = "off"`.
    pub kept: Option<Vec<CallTrace>>,
    /// The calls the report's waterfall shows, chosen among all the run's calls whatever `traces` says.
    pub shown: Vec<(Pick, CallTrace)>,
}
