//! Retries that may have run a tool twice (`possible_duplicates`): the figure an idempotency key is for.
//!
//! An attempt that ends without an answer after its request may have been written leaves the caller not knowing
//! whether the tool ran. Sending the call again is then safe only for a tool that says repeating it has no further
//! effect. So a retry that reaches a server after such an attempt, of a tool that does not say so, is a possible
//! duplicate, whoever sent it: the agent (`calls.csv`'s `retry_by = agent`) or the gateway (`gateway`).

use std::collections::{BTreeMap, BTreeSet};

use mcpstorm_core::CallError;
use mcpstorm_core::error::{Delivery, LocalError};
use mcpstorm_core::mcp::{CallToolResult, ToolAnnotations};

use super::AttemptEnd;
use crate::run::{RetryBy, Totals};
use crate::scenario::{Scenario, replica_host};

/// Whether an attempt may have run the tool on its server while the caller never learnt how it went: its request was
/// written, or may have been, and no answer came (the connection closed or reset, the stream stalled, a timer or the
/// deadline fired). A deadline that fired before the request was written counts too: from outside, the two look
/// alike, so the figure this feeds is an upper bound. Not: an answer (ok, an error, `isError`), a request never
/// sent (refused connection, no permit, a full queue), or a degraded result (never an attempt).
pub fn may_have_run(outcome: Result<&CallToolResult, &CallError>) -> bool {
    match outcome {
        Ok(_) => false,
        Err(CallError::Local(LocalError::DeadlineExceeded)) => true,
        Err(e) => e.delivery() == Delivery::MaybeDelivered,
    }
}

/// Whether an attempt reached a server's tool, or may have: it was answered, or [`may_have_run`].
fn reached(outcome: Result<&CallToolResult, &CallError>) -> bool {
    match outcome {
        Ok(_) | Err(CallError::Protocol(_) | CallError::MalformedResponse(_)) => true,
        Err(_) => may_have_run(outcome),
    }
}

/// What the count needs to remember between a call's attempts.
#[derive(Debug, Default)]
pub(super) struct Duplicates {
    /// Per replica host, the tools it lists as safe to repeat (`readOnlyHint` or `idempotentHint`, as the gateway's
    /// retry layer reads them); any other tool is not, so a tool without annotations is not.
    idempotent: BTreeMap<String, BTreeSet<String>>,
    /// Per load host (or node), the logical calls to a tool not safe to repeat whose last attempt so far
    /// [`may_have_run`]. A call leaves when a retry of it reaches a server; those whose last attempt may have run
    /// stay (as many as such failed calls, a few bytes each).
    unsettled: BTreeMap<String, BTreeSet<u64>>,
}

impl Duplicates {
    /// The scenario's tools by replica host.
    pub(super) fn of(scenario: &Scenario) -> Duplicates {
        let mut idempotent = BTreeMap::new();
        for server in &scenario.servers {
            let safe: BTreeSet<String> = server
                .tools
                .iter()
                .filter(|t| ToolAnnotations::from_value(t.annotations.as_ref()).idempotent())
                .map(|t| t.name.clone())
                .collect();
            for i in 0..server.replicas {
                let endpoint = format!("{}#{i}", server.name);
                idempotent.insert(replica_host(&endpoint).into_owned(), safe.clone());
            }
        }
        Duplicates { idempotent, unsettled: BTreeMap::new() }
    }

    /// Attempt `end` of logical call number `logical` finished: a possible duplicate when it is a retry that reached
    /// a server after an attempt of the same call that may have run, for a tool not safe to repeat (counted in
    /// `totals`, under who sent the retry); then it remembers whether this one may have run.
    pub(super) fn attempt(&mut self, logical: u64, end: &AttemptEnd<'_>, totals: &mut Totals) {
        if self.idempotent.get(end.replica).is_some_and(|tools| tools.contains(end.tool)) {
            return;
        }
        if end.by != RetryBy::First && reached(end.outcome) {
            let repeated = self.unsettled.get_mut(end.load_host).is_some_and(|calls| calls.remove(&logical));
            if repeated {
                totals.possible_duplicates += 1;
                *totals.possible_duplicates_by.entry(end.by.label().to_owned()).or_default() += 1;
            }
        }
        if may_have_run(end.outcome) {
            self.unsettled.entry(end.load_host.to_owned()).or_default().insert(logical);
        }
    }
}
