//! The offered load (`[load]`, its `mix`) and how the agents that send it react to failures (`[agent]`).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{empty_args, object_schema, one};
use super::ranges;
use super::units::Dur;

/// The offered load: many agent sessions multiplexed on a few load-generator hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// `"closed"` (needs `sessions`) or `"open"` (needs `rate`).
    pub mode: LoadMode,
    /// Closed loop: agent sessions, each calling, waiting for the outcome, thinking, calling again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_SESSIONS))]
    pub sessions: Option<usize>,
    /// Closed loop: pause between a call's outcome and the session's next call; at most the run's `duration`.
    #[serde(default)]
    pub think_time: Dur,
    /// Open loop: Poisson arrivals per second across all load hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_RATE))]
    pub rate: Option<f64>,
    /// Stop issuing after this many logical calls (the run then ends when they are done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CALLS))]
    pub calls: Option<u64>,
    /// Load-generator hosts; sessions and arrivals are spread across them.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = ranges::MAX_HOSTS))]
    pub hosts: usize,
    /// What agents call, picked by weight for each logical call.
    pub mix: Vec<MixEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoadMode {
    Closed,
    Open,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MixEntry {
    /// A server's `name`: the call goes to that server's replicas only (the gateway is asked for the tag
    /// `server:<name>`). Absent: to any server offering the tool, as the router chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// One of that server's tools (without `server`: a tool some server offers).
    pub tool: String,
    /// Relative weight (> 0).
    #[serde(default = "unit_weight")]
    #[schemars(range(max = ranges::MAX_WEIGHT))]
    pub weight: f64,
    /// The call's arguments, a table.
    #[serde(default = "empty_args")]
    #[schemars(schema_with = "object_schema")]
    pub args: Value,
}

fn unit_weight() -> f64 {
    1.0
}

/// How agents react to a failed call (see `world::agent` for each model's behaviour).
///
/// | key           | default   | meaning                                                              |
/// |---------------|-----------|----------------------------------------------------------------------|
/// | `retry`       | `"none"`  | `"none"`, `"immediate"` (alias `"naive"`), `"reflective"`, `"polite"`, `"stubborn"` |
/// | `max_retries` | 0         | retries per logical call (at most `1 + max_retries` attempts)        |
/// | `backoff`     | `"500ms"` | `polite`: the first wait's ceiling (full jitter, doubling per retry)  |
/// | `backoff_cap` | `"10s"`   | `polite`: the longest wait                                           |
///
/// Every model but `stubborn` stops at a degraded result (`structuredContent.degraded == true`): the gateway said
/// "do not retry".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// `"none"`, `"immediate"` (`"naive"`), `"reflective"`, `"polite"` or `"stubborn"`.
    #[serde(default)]
    pub retry: RetryMode,
    /// Retries per logical call (so at most `1 + max_retries` attempts).
    #[serde(default)]
    #[schemars(range(min = 0, max = ranges::MAX_ATTEMPTS))]
    pub max_retries: u32,
    /// `polite`: the ceiling of the first wait; each retry doubles it (full jitter: uniform below the ceiling).
    #[serde(default = "default_agent_backoff")]
    pub backoff: Dur,
    /// `polite`: the longest wait's ceiling.
    #[serde(default = "default_agent_backoff_cap")]
    pub backoff_cap: Dur,
}

fn default_agent_backoff() -> Dur {
    Dur(Duration::from_millis(500))
}

fn default_agent_backoff_cap() -> Dur {
    Dur(Duration::from_secs(10))
}

impl Default for Agent {
    fn default() -> Self {
        Agent {
            retry: RetryMode::None,
            max_retries: 0,
            backoff: default_agent_backoff(),
            backoff_cap: default_agent_backoff_cap(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum RetryMode {
    /// Give up on the first failure.
    #[default]
    None,
    /// The naive agent: retry at once on every failure (the storm-maker).
    #[serde(alias = "naive")]
    Immediate,
    /// Retry at once with changed arguments, as LLM agents do (a rephrased string argument, or an added `retry_note`):
    /// caches and idempotency keys do not recognise the retry.
    Reflective,
    /// Retry after a full-jitter backoff (`backoff`, doubling, capped at `backoff_cap`).
    Polite,
    /// Like `immediate`, and it ignores degraded results too: what happens when agents do not listen.
    Stubborn,
}

impl RetryMode {
    /// Whether the mode retries at all.
    pub fn retries(self) -> bool {
        self != RetryMode::None
    }
}
