//! The offered load (`[load]`, its `mix`) and how the agents that send it react to failures (`[agent]`).

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ranges::{
    self, MAX_ATTEMPTS, MAX_CALLS, MAX_HOSTS, MAX_RATE, MAX_SESSIONS, MAX_SPEED, MAX_WEIGHT, Ranges, Upper,
};
use super::rules::Rules;
use super::servers::ServerSpec;
use super::shared::{empty_args, object_schema, one};
use super::target::names;
use super::trace::Trace;
use super::units::Dur;

/// The offered load: many agent sessions multiplexed on a few load-generator hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// `"closed"` (needs `sessions`), `"open"` (needs `rate`) or `"replay"` (needs `trace`).
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
    /// Replay: the recorded calls to send again, a `calls.csv` of `mcpstorm sim` or a gateway's `[history]` file
    /// (JSON lines); a path relative to the scenario file's directory, or absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Replay: how much faster than recorded (2.0: every call at half its recorded offset); default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_SPEED))]
    pub speed: Option<f64>,
    /// Stop issuing after this many logical calls (the run then ends when they are done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CALLS))]
    pub calls: Option<u64>,
    /// Load-generator hosts; sessions and arrivals are spread across them.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = ranges::MAX_HOSTS))]
    pub hosts: usize,
    /// What agents call, picked by weight for each logical call. Replay: the arguments of a trace's calls (the
    /// entry naming the call's server and tool); may be empty.
    #[serde(default)]
    pub mix: Vec<MixEntry>,
    /// Replay: the trace as read when the scenario loaded (never written back: `trace` names it).
    #[serde(skip)]
    #[schemars(skip)]
    pub replay: Option<Arc<Trace>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoadMode {
    Closed,
    Open,
    /// Arrivals at the offsets of a recorded trace (`trace`), scaled by `speed`.
    Replay,
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
/// | `backoff_cap` | `"10s"`   | `polite`: the longest wait; `retry_after`: the longest wait honoured  |
/// | `retry_after` | false     | retry a "too many requests" answer after the wait it names           |
///
/// Every model but `stubborn` stops at a degraded result (`structuredContent.degraded == true`): the gateway said
/// "do not retry". Every model but `stubborn` also stops at a "too many requests" answer (HTTP 429, a 503 with
/// `Retry-After`, or a JSON-RPC error saying so), as the rmcp and Python SDK clients do, unless `retry_after = true`:
/// then, whatever the model, it retries after the `Retry-After` it was given (`backoff` when none was; at most
/// `backoff_cap`), within `max_retries`.
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
    /// Retry a "too many requests" answer after its `Retry-After`; false: it ends the call, as the SDKs' clients do.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retry_after: bool,
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
            retry_after: false,
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

impl Load {
    /// Replay's speed: `speed`, 1 when absent.
    pub fn speed(&self) -> f64 {
        self.speed.unwrap_or(1.0)
    }

    /// The table's rules; `servers` are what the mix may name.
    pub(super) fn problems(&self, servers: &[ServerSpec], rules: &mut Rules) {
        match self.mode {
            LoadMode::Closed => {
                match self.sessions {
                    None => rules.fail("load.sessions", "is required when mode = \"closed\""),
                    Some(n) => rules.at_least_one("load.sessions", n),
                }
                if self.rate.is_some() {
                    rules.fail(
                        "load.rate",
                        "applies only to mode = \"open\" (a closed loop's rate follows from sessions)",
                    );
                }
            }
            LoadMode::Open => {
                match self.rate {
                    None => rules.fail("load.rate", "is required when mode = \"open\" (calls per second)"),
                    Some(r) if !(r.is_finite() && r > 0.0) => {
                        rules.fail("load.rate", format!("must be a number of calls per second > 0, got {r}"))
                    }
                    Some(_) => {}
                }
                if self.sessions.is_some() {
                    rules.fail("load.sessions", "applies only to mode = \"closed\" (an open loop has no sessions)");
                }
            }
            LoadMode::Replay => {
                if self.trace.as_deref().is_none_or(|t| t.trim().is_empty()) {
                    rules.fail("load.trace", "is required when mode = \"replay\" (a calls.csv or a call history file)");
                }
                if let Some(speed) = self.speed
                    && !(speed.is_finite() && speed > 0.0)
                {
                    rules.fail("load.speed", format!("must be a number > 0 (2.0 replays twice as fast), got {speed}"));
                }
                if self.rate.is_some() {
                    rules.fail("load.rate", "applies only to mode = \"open\" (a replay's arrivals are the trace's)");
                }
                if self.sessions.is_some() {
                    rules.fail("load.sessions", "applies only to mode = \"closed\" (a replay has no sessions)");
                }
            }
        }
        if self.mode != LoadMode::Replay {
            if self.trace.is_some() {
                rules.fail("load.trace", "applies only to mode = \"replay\"");
            }
            if self.speed.is_some() {
                rules.fail("load.speed", "applies only to mode = \"replay\"");
            }
            if self.mix.is_empty() {
                rules.fail("load.mix", "needs at least one entry: what the agents call");
            }
        }
        if self.calls == Some(0) {
            rules.fail("load.calls", "must be at least 1 (omit it to call until the end of the run)");
        }
        rules.at_least_one("load.hosts", self.hosts);
        for (j, entry) in self.mix.iter().enumerate() {
            entry.problems(j, servers, rules);
        }
    }

    /// The table's durations and counts with their bounds.
    pub(super) fn ranges(&self, out: &mut Ranges) {
        out.duration("load.think_time", self.think_time.0, Upper::Run);
        if let Some(n) = self.sessions {
            out.count("load.sessions", n as f64, MAX_SESSIONS as f64);
        }
        if let Some(rate) = self.rate {
            out.count("load.rate", rate, MAX_RATE);
        }
        if let Some(speed) = self.speed {
            out.count("load.speed", speed, MAX_SPEED);
        }
        if let Some(n) = self.calls {
            out.count("load.calls", n as f64, MAX_CALLS as f64);
        }
        out.count("load.hosts", self.hosts as f64, MAX_HOSTS as f64);
        for (j, entry) in self.mix.iter().enumerate() {
            out.count(format!("load.mix[{j}].weight"), entry.weight, MAX_WEIGHT);
        }
    }
}

impl MixEntry {
    /// Entry `j`'s rules: a positive weight, a table of arguments, and a tool that a named server (or any) offers.
    fn problems(&self, j: usize, servers: &[ServerSpec], rules: &mut Rules) {
        let at = |field: &str| format!("load.mix[{j}].{field}");
        if !(self.weight.is_finite() && self.weight > 0.0) {
            rules.fail(at("weight"), format!("must be a finite number > 0, got {}", self.weight));
        }
        if !self.args.is_object() {
            rules.fail(at("args"), "must be a table of arguments, e.g. { message = \"hi\" }");
        }
        let Some(name) = &self.server else {
            if !servers.iter().any(|srv| srv.tools.iter().any(|t| t.name == self.tool)) {
                rules.fail(at("tool"), format!("no server offers a tool {:?}", self.tool));
            }
            return;
        };
        match servers.iter().find(|srv| &srv.name == name) {
            None => rules.fail(at("server"), format!("no server is named {name:?}{}", names(servers))),
            Some(server) => {
                if !server.tools.iter().any(|t| t.name == self.tool) {
                    let tools: Vec<String> = server.tools.iter().map(|t| format!("{:?}", t.name)).collect();
                    rules.fail(
                        at("tool"),
                        format!(
                            "server {:?} has no tool {:?} (it has {})",
                            server.name,
                            self.tool,
                            if tools.is_empty() { "none".to_owned() } else { tools.join(", ") }
                        ),
                    );
                }
            }
        }
    }
}

impl Agent {
    /// The table's rules.
    pub(super) fn problems(&self, rules: &mut Rules) {
        if self.retry.retries() && self.max_retries == 0 {
            let mode = serde_json::to_value(self.retry).ok().and_then(|v| v.as_str().map(str::to_owned));
            rules.fail("agent.max_retries", format!("must be at least 1 with retry = {:?}", mode.unwrap_or_default()));
        } else if self.retry_after && self.max_retries == 0 {
            rules.fail("agent.max_retries", "must be at least 1 with retry_after = true: each retry counts");
        }
        if self.backoff.0 > self.backoff_cap.0 {
            rules.fail("agent.backoff", "must not exceed agent.backoff_cap");
        }
    }

    /// The table's durations and counts with their bounds.
    pub(super) fn ranges(&self, out: &mut Ranges) {
        out.duration("agent.backoff", self.backoff.0, Upper::Week);
        out.duration("agent.backoff_cap", self.backoff_cap.0, Upper::Week);
        out.count("agent.max_retries", f64::from(self.max_retries), MAX_ATTEMPTS as f64);
    }
}
