//! What one run produced. `world` fills it; `report`, `compare` and `check` only read it, so data flows one way:
//! the writers never define what a run is.
//!
//! Everything here is derived from simulated time and seeded draws, so the same scenario and seed give the same
//! values, and the CSV and JSON written from them are byte-identical. Wall-clock figures live only in
//! [`WallClock`], which goes to the console and `summary.md`, never to CSV or JSON. What a run holds in memory while
//! it is recorded is in [`memory`]; its call history is not kept but handed to a [`CallSink`] as it happens.

pub mod audit;
pub mod calls;
pub mod failure;
pub mod memory;
pub mod traces;

pub use audit::{RunAudit, ServerTotals};
pub use calls::{CallSink, CallSinkError, RetryBy};
pub use failure::FailureClass;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One simulated second of the run (row `t` covers `[t, t+1)` seconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondRow {
    pub t: u64,
    /// Logical calls the agents started this second (open loop: intended send times that fell in it).
    pub offered: u64,
    /// Logical calls that reached an outcome this second.
    pub completed: u64,
    pub ok: u64,
    /// Failed logical calls by [`FailureClass`] of their final answer.
    pub err_protocol: u64,
    pub err_lifecycle: u64,
    pub err_transport: u64,
    pub err_local: u64,
    /// A server's result with `isError: true`.
    pub err_tool: u64,
    /// The gateway's degraded result ("do not retry"), given instead of calling a sick replica.
    #[serde(default)]
    pub err_degraded: u64,
    /// Failed on an auth mismatch (no configured credential of a scheme the server accepts).
    pub err_auth: u64,
    /// Latency percentiles of the logical calls completed this second, ms (0 when none completed).
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// Attempts (first tries and retries) in flight at the end of the second, summed over load hosts.
    pub in_flight: u64,
    /// Attempts started this second (first tries plus retries).
    pub attempts: u64,
    pub retries: u64,
    /// Attempts finished this second that a server refused for a stale schema although that load host had already
    /// been refused so by that replica since its last drift (see [`Totals::stale_sends`]).
    pub stale_sends: u64,
    /// Attempts finished this second with session-not-found, as the agent sees them.
    pub session_errors: u64,
    /// Attempts finished this second with an auth mismatch.
    pub auth_errors: u64,
    /// Sessions the gateway replaced with a new handshake, and sessions it renewed, this second.
    pub rehandshakes: u64,
    pub renewals: u64,
    /// Breakers open at the end of the second, summed over the load hosts' gateways.
    pub open_breakers: u64,
    /// Calls the gateways answered with a degraded result this second.
    pub degraded: u64,
    /// Attempts finished this second that a replica served although its server does not meet the call's needs
    /// (see [`Totals::misroutes`]).
    pub misroutes: u64,
}

impl SecondRow {
    /// Attempts per logical call offered this second (0 when none was offered).
    pub fn amplification(&self) -> f64 {
        if self.offered == 0 { 0.0 } else { self.attempts as f64 / self.offered as f64 }
    }

    pub fn errors(&self) -> u64 {
        FailureClass::ALL.iter().map(|c| self.failed(*c)).fold(0, u64::saturating_add)
    }

    /// Failed logical calls of one class this second.
    pub fn failed(&self, class: FailureClass) -> u64 {
        match class {
            FailureClass::Transport => self.err_transport,
            FailureClass::Protocol => self.err_protocol,
            FailureClass::Lifecycle => self.err_lifecycle,
            FailureClass::Local => self.err_local,
            FailureClass::Tool => self.err_tool,
            FailureClass::Degraded => self.err_degraded,
            FailureClass::Auth => self.err_auth,
        }
    }

    /// The counter of `class`.
    pub fn failed_mut(&mut self, class: FailureClass) -> &mut u64 {
        match class {
            FailureClass::Transport => &mut self.err_transport,
            FailureClass::Protocol => &mut self.err_protocol,
            FailureClass::Lifecycle => &mut self.err_lifecycle,
            FailureClass::Local => &mut self.err_local,
            FailureClass::Tool => &mut self.err_tool,
            FailureClass::Degraded => &mut self.err_degraded,
            FailureClass::Auth => &mut self.err_auth,
        }
    }
}

/// Something that happened at one instant: a fault starting or ending, a connection closing, a host restarting.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EventRow {
    /// Simulated milliseconds since the start.
    pub t_ms: u64,
    /// e.g. `fault_start`, `fault_end`, `connection_closed`, `host_crashed`, `host_restarted`.
    pub kind: String,
    /// The server, replica or host concerned.
    pub target: String,
    pub detail: String,
}

/// A fault's window, for shading plots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultWindow {
    pub label: String,
    pub start_s: f64,
    pub end_s: f64,
}

/// One `[checks]` threshold and how the run fared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub limit: f64,
    /// The run's figure; `None` (`null` in JSON) when it has no value: nothing to judge (the check passes), or a
    /// recovery that never came within the run (it fails).
    pub actual: Option<f64>,
    pub passed: bool,
}

impl CheckResult {
    /// The actual figure for people when it has none: [`NOT_RECOVERED`] for a failed check, `n/a` for a passed one.
    pub fn missing_actual(&self) -> &'static str {
        if self.passed { NOT_JUDGED } else { NOT_RECOVERED }
    }
}

/// What the console and `summary.md` print for a recovery that never came before the run ended.
pub const NOT_RECOVERED: &str = "not recovered within the run";
/// What they print for a figure with nothing to judge.
pub const NOT_JUDGED: &str = "n/a";

/// How goodput came back after the last fault window (measured by `world::phases::Phases::recovery`).
///
/// In JSON it is two fields: `recovery_s` (the seconds, `null` unless it recovered) and `recovered` (`true`,
/// `false` when it never did within the run, `null` when there was nothing to judge).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "RecoveryFields", into = "RecoveryFields")]
pub enum Recovery {
    /// No fault window, or no ok call before the first fault: nothing to recover to.
    #[default]
    NotJudged,
    /// Not back by the end of the load.
    Never,
    /// Back this many seconds after the last fault window's end (rounded up to a whole second).
    After(f64),
}

impl Recovery {
    /// The seconds it took, when it recovered.
    pub fn seconds(self) -> Option<f64> {
        match self {
            Recovery::After(s) => Some(s),
            Recovery::NotJudged | Recovery::Never => None,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct RecoveryFields {
    recovery_s: Option<f64>,
    recovered: Option<bool>,
}

impl From<Recovery> for RecoveryFields {
    fn from(r: Recovery) -> RecoveryFields {
        let recovered = match r {
            Recovery::NotJudged => None,
            Recovery::Never => Some(false),
            Recovery::After(_) => Some(true),
        };
        RecoveryFields { recovery_s: r.seconds(), recovered }
    }
}

impl From<RecoveryFields> for Recovery {
    fn from(f: RecoveryFields) -> Recovery {
        match (f.recovery_s, f.recovered) {
            (Some(s), _) => Recovery::After(s),
            (None, Some(false)) => Recovery::Never,
            (None, _) => Recovery::NotJudged,
        }
    }
}

/// Whole-run totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Logical calls issued by agents.
    pub offered: u64,
    pub completed: u64,
    pub ok: u64,
    pub errors: u64,
    /// Failed logical calls by [`FailureClass`] label (classes with none left out).
    #[serde(default)]
    pub errors_by_class: BTreeMap<String, u64>,
    /// Issued but never reached an outcome by the end of the run (must be 0).
    pub lost: u64,
    /// How the completed calls ended, as the agents lived it: ok, answered degraded, or failed after waiting.
    #[serde(default)]
    pub outcomes: Outcomes,
    pub attempts: u64,
    pub retries: u64,
    /// attempts / logical calls.
    pub amplification: f64,
    pub error_rate: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// Goodput: ok calls per simulated second.
    pub ok_per_s: f64,
    /// Attempts a server refused for a stale schema that were sent after the same load host had already received
    /// such a refusal from the same replica since the replica's last drift: sends the gateway could have known to
    /// be stale. The first refusal per pair and drift, and calls already in flight when it arrived, do not count.
    pub stale_sends: u64,
    /// Every tool call the servers refused for arguments their current schema rejects (the servers' own count: sent
    /// while the gateway could not yet know, sent knowing, and hidden by a resend alike).
    pub schema_refusals: u64,
    /// Attempts that ended with session-not-found as the agent sees it (after any transparent re-handshake).
    pub session_errors: u64,
    /// Attempts that ended with an auth mismatch.
    pub auth_errors: u64,
    /// Re-handshakes and renewals by the gateway (its `Event::Session` events).
    pub rehandshakes: u64,
    pub renewals: u64,
    /// One-second buckets from the first fault's start (from 0 without faults) whose share of failed logical calls
    /// exceeds 1%: how long the faults visibly hurt.
    pub error_window_s: u64,
    /// Attempts per logical call over the seconds the fault windows touch (the gateway's own retries included);
    /// `None` without fault windows, or without calls offered in them.
    pub amplification_during_fault: Option<f64>,
    /// Logical calls that completed inside a fault window: how many were ok, the share that failed, and their P99
    /// (`None` without fault windows, or without calls completed in them). The whole-run figures average a fault
    /// away over the calm seconds; these do not.
    #[serde(default)]
    pub ok_during_fault: Option<u64>,
    #[serde(default)]
    pub error_rate_during_fault: Option<f64>,
    #[serde(default)]
    pub p99_during_fault_ms: Option<f64>,
    /// P99 of logical calls to servers no fault targets, before the first fault and during the faults, and their
    /// ratio (`None` when a phase had no such calls).
    pub healthy_p99_before_ms: Option<f64>,
    pub healthy_p99_during_ms: Option<f64>,
    pub healthy_p99_ratio: Option<f64>,
    /// How long after the last fault goodput was back to ≥ 95% of its pre-fault level over 3 s (see
    /// `world::phases`); `recovery_s` and `recovered` in JSON.
    #[serde(flatten)]
    pub recovery: Recovery,
    /// Breaker transitions to open, over every load host's gateway.
    pub breaker_opens: u64,
    /// Degraded results by reason (`breaker_open`, `retry_budget_exhausted`, ...).
    pub degraded: BTreeMap<String, u64>,
    /// Attempts a replica served whose server does not meet the call's needs, judged from the scenario's own server
    /// tables, not by the router: a mix entry naming another server, a tool the server lacks, or a string argument
    /// `a = v` while some server declares `a_support` and this one's does not hold `v`.
    pub misroutes: u64,
    /// Retries that may have run a tool a second time: each one a retry (by the agent or the gateway) that reached a
    /// server, of a call to a tool not marked safe to repeat (neither `readOnlyHint` nor `idempotentHint`) whose
    /// previous attempt may have run there unseen (it ended without an answer after its request may have been sent:
    /// the deadline, a timeout, the connection closed or reset). A request refused before sending, a degraded
    /// result, or an answered error is no such attempt. An upper bound: a deadline that fired before sending
    /// counts too. The figure an idempotency key would bring to 0.
    #[serde(default)]
    pub possible_duplicates: u64,
    /// [`Totals::possible_duplicates`] by who sent the retry: `agent` or `gateway` (those with none left out).
    #[serde(default)]
    pub possible_duplicates_by: BTreeMap<String, u64>,
    /// With `[identity_provider]`: the token requests it received, and what became of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenTraffic>,
    /// Attempts sent to each replica (host name), in name order.
    pub replica_calls: BTreeMap<String, u64>,
    /// Breaker incidents across gateways (several load hosts only): per (replica, tool), from the first gateway's
    /// opening to the moment every gateway had it open.
    pub convergence: Vec<Convergence>,
}

/// The identity provider's token requests over the run (`totals.tokens` in `summary.json`): what a token storm
/// costs it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenTraffic {
    /// Token requests received, whatever became of them.
    pub requests: u64,
    /// The most received in one second.
    pub peak_per_s: u64,
    /// Tokens issued.
    pub issued: u64,
    /// Shed with 503 for want of room in its queue.
    pub shed: u64,
    /// Answered with an outage's error status.
    pub failed: u64,
    /// Connections closed unanswered while it was down.
    pub dropped: u64,
}

/// The completed logical calls split as the agents lived them (`totals.outcomes` in `summary.json`). `errors`
/// counts both kinds of failure alike; this tells apart the gateway's degraded answer ("the system is degraded,
/// do not retry": the agent stops and can fall back) from a call that failed after the agent waited on a server,
/// a timeout or its own retries, and says how long the agents waited on each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcomes {
    /// Calls that ended ok (`totals.ok`).
    pub ok: u64,
    /// Calls that ended with the gateway's degraded result (the `degraded` class of `errors_by_class`).
    pub degraded: u64,
    /// Calls that failed any other way (every other class of `errors_by_class`).
    pub failed: u64,
    /// Seconds the agents waited on the degraded calls, summed over the calls (from each call's intended start).
    pub degraded_wait_s: f64,
    /// The mean wait of a degraded call, ms (0 without any).
    pub degraded_mean_wait_ms: f64,
    /// Seconds the agents waited on the failed calls, summed over the calls (agent-seconds spent for nothing).
    pub failed_wait_s: f64,
    /// The mean wait of a failed call, ms (0 without any).
    pub failed_mean_wait_ms: f64,
}

/// One breaker incident across the gateways.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Convergence {
    /// The replica endpoint whose breaker for `tool` opened.
    pub replica: String,
    pub tool: String,
    /// When the first gateway opened it (simulated ms).
    pub first_open_ms: u64,
    /// From then until the last gateway had it open too; none if some gateway never followed before the first
    /// closed again.
    pub converged_ms: Option<u64>,
}

/// How a run was made: simulated (`mcpstorm sim`), or in real time on real sockets (`mcpstorm live`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    #[default]
    Sim,
    Live,
}

impl RunMode {
    /// The command that makes such a run.
    pub fn command(self) -> &'static str {
        match self {
            RunMode::Sim => "sim",
            RunMode::Live => "live",
        }
    }
}

/// A finished run, ready to write.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunData {
    pub scenario: String,
    pub description: String,
    pub seed: u64,
    /// The gateway profile the load hosts ran (`default` or `naive`).
    pub profile: String,
    /// The routing formula every load host's gateway ran.
    pub formula: String,
    /// Simulated seconds the run covered.
    pub sim_seconds: f64,
    pub seconds: Vec<SecondRow>,
    pub events: Vec<EventRow>,
    pub faults: Vec<FaultWindow>,
    pub totals: Totals,
    pub checks: Vec<CheckResult>,
    /// The exact command that reproduces this run.
    pub reproduce: String,
    /// What the swarm's invariants read; written nowhere.
    #[serde(skip)]
    pub audit: RunAudit,
    /// The calls kept as traces (`traces.otlp.json`) and those the report's waterfall shows; written nowhere else.
    #[serde(skip)]
    pub traces: traces::Traces,
    /// Simulated or live: `summary.json`'s `mode` (and the console's first line).
    #[serde(skip)]
    pub mode: RunMode,
    /// Whether the gateways' attempts were recorded: not in a live run through gateway nodes, whose attempts are
    /// made in their processes (the attempt figures are then zero, and say so).
    #[serde(skip)]
    pub attempts_recorded: bool,
}

impl RunData {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

/// Real time the run took: printed and put in `summary.md`, never in CSV or JSON (it differs run to run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WallClock {
    pub wall: Duration,
    pub sim: Duration,
}

impl WallClock {
    /// How many times faster than real time the simulation ran.
    pub fn speedup(&self) -> f64 {
        self.sim.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)
    }
}

/// One row of a sweep: the parameter's value and that run's totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepRow {
    pub value: String,
    /// The value as a number when it is one (for plotting against it).
    pub numeric: Option<f64>,
    pub totals: Totals,
    pub sim_seconds: f64,
    pub passed: bool,
}

/// A whole sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepData {
    pub scenario: String,
    pub param: String,
    pub seed: u64,
    pub rows: Vec<SweepRow>,
    pub reproduce: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_survive_json_with_each_kind_of_recovery() {
        for recovery in [Recovery::NotJudged, Recovery::Never, Recovery::After(2.0)] {
            let t = Totals { recovery, healthy_p99_ratio: Some(1.5), ..Totals::default() };
            let text = serde_json::to_string(&t).expect("serializes");
            assert_eq!(serde_json::from_str::<Totals>(&text).expect("parses"), t, "{text}");
        }
        let text = serde_json::to_string(&Totals { recovery: Recovery::Never, ..Totals::default() }).expect("ok");
        assert!(text.contains(r#""recovery_s":null,"recovered":false"#), "{text}");
    }
}
