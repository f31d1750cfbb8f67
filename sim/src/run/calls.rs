//! Where a run's call history goes: one [`ServerCallRecord`] per attempt, handed over as the attempt finishes, so the
//! history is never held in memory however long the run. The world feeds a sink; the report's `calls.csv` writer is
//! the one the CLI gives it.

use std::fmt;

use mcpstorm_core::history::ServerCallRecord;

/// A sink's failure to keep a record (a full disk): the run stops writing to it and reports this at its end.
pub type CallSinkError = Box<dyn std::error::Error + Send + Sync>;

/// Takes a run's call records in the order attempts finish.
pub trait CallSink: Send + fmt::Debug {
    /// Keeps one attempt's record; `by` says who made it (`calls.csv`'s `retry_by`).
    fn write(&mut self, record: &ServerCallRecord, by: RetryBy) -> Result<(), CallSinkError>;

    /// The run is over: make everything written durable (flush).
    fn finish(&mut self) -> Result<(), CallSinkError>;
}

/// Who made an attempt of a logical call. The agent makes the first; after a failure, either the gateway tries again
/// inside the same call (its `[gateway.retry]`, or a failover to another replica), or the call returns to the agent,
/// whose model (`[agent] retry`) may send it again. Both matter for a tool that is not safe to repeat, and only the
/// agent's retry is visible to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RetryBy {
    /// The logical call's first attempt: not a retry.
    First,
    /// The agent sent the call again after its gateway call had ended.
    Agent,
    /// The gateway sent it again within one of the agent's calls.
    Gateway,
}

impl RetryBy {
    /// Attempt number `index` (0 first) of one gateway call, the logical call's attempt number `earlier` (its
    /// `retries`: attempts sent before it, in this gateway call and the agent's earlier ones).
    pub fn of(earlier: u32, index: usize) -> RetryBy {
        match (earlier, index) {
            (_, 1..) => RetryBy::Gateway,
            (1.., 0) => RetryBy::Agent,
            (0, 0) => RetryBy::First,
        }
    }

    /// `calls.csv`'s and `summary.json`'s word: empty for a first attempt.
    pub fn label(self) -> &'static str {
        match self {
            RetryBy::First => "",
            RetryBy::Agent => "agent",
            RetryBy::Gateway => "gateway",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_within_a_gateway_call_is_the_gateways_and_a_new_call_the_agents() {
        let cases =
            [(0, 0, RetryBy::First), (0, 1, RetryBy::Gateway), (2, 0, RetryBy::Agent), (2, 3, RetryBy::Gateway)];
        for (earlier, index, by) in cases {
            assert_eq!(RetryBy::of(earlier, index), by, "{earlier} {index}");
        }
        assert_eq!(
            [RetryBy::First.label(), RetryBy::Agent.label(), RetryBy::Gateway.label()],
            ["", "agent", "gateway"]
        );
    }
}
