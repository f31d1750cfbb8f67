//! What a run leaves behind for the swarm's invariants (see `crate::swarm::invariants`): the gateways' in-flight
//! counters once the drain is over, responses the core dropped as addressed to no caller, and per-server outcomes.
//! Kept out of every CSV and JSON the `sim` command writes (the run's outputs stay as they were).

use std::collections::BTreeMap;

use mcpstorm_core::gateway::InFlightSnapshot;

/// The audit of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunAudit {
    /// Each load host's gateway's [`InFlightSnapshot`] after its calls ended and its background work stopped, in
    /// host order; a host whose drain never ended (the run hit its time limit) has none.
    pub end: Vec<Option<InFlightSnapshot>>,
    /// Responses the core dropped because they named a request id its connection never issued.
    pub unknown_responses: u64,
    /// Responses that came after their caller had given up (dropped; not an error, but worth a look).
    pub late_responses: u64,
    /// Logical calls by the server they were for (the mix entry's server, else the one that served the last
    /// attempt; `?` when neither is known: a call declined before any replica was chosen).
    pub servers: BTreeMap<String, ServerTotals>,
    /// The most attempts in flight at any per-second sample.
    pub peak_in_flight: u64,
}

/// One server's logical calls.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerTotals {
    pub calls: u64,
    /// Calls whose outcome was not ok (an error, an `isError` result or a degraded result).
    pub failed: u64,
    /// Ok calls *waited out*: the call (or its answering attempt) started inside a fault window on the answering
    /// replica (or its whole server) and was answered after the window ended, having waited or been retried by its
    /// agent until then (see `world::Phases::waited_out`).
    pub waited_out: u64,
    pub p99_ms: f64,
}

impl ServerTotals {
    /// Calls whose outcome was ok.
    pub fn ok(&self) -> u64 {
        self.calls.saturating_sub(self.failed)
    }
}
