//! What a call's outcome says about the replica that served it, for the router's statistics.

use crate::error::CallError;
use crate::mcp::CallToolResult;
use crate::resilience::breaker::HealthVerdict;

/// The router's reading of one outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouterVerdict {
    /// The replica served the call.
    Ok,
    /// The replica failed it: transport, timeout, a server error, or a tool result with `isError`.
    Failed,
    /// Nothing about the replica: the caller's own mistake caught before sending (invalid arguments, an unknown
    /// tool), a cancellation, a credential that does not fit. Counting these as failures would let one confused
    /// agent drain a healthy replica's weight.
    NoVerdict,
}

impl RouterVerdict {
    /// The breaker's classification of `outcome` (`breaker`, from [`classify`](crate::resilience::breaker::classify),
    /// made once per attempt), with one difference: a tool result with `isError` counts against the replica here. The
    /// breaker leaves deliberate tool errors out of a server's health; the router's error rate (the linear health
    /// score's `error_rate`) is about which replica serves a tool *successfully*, and a replica that answers everything
    /// with `isError` should lose weight.
    pub fn of(outcome: &Result<CallToolResult, CallError>, breaker: HealthVerdict) -> RouterVerdict {
        if matches!(outcome, Ok(r) if r.is_error) {
            return RouterVerdict::Failed;
        }
        match breaker {
            HealthVerdict::Success => RouterVerdict::Ok,
            HealthVerdict::Ignore => RouterVerdict::NoVerdict,
            HealthVerdict::Failure | HealthVerdict::RetryAfter(_) => RouterVerdict::Failed,
        }
    }
}
