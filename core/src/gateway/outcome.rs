//! What a call's outcome says about the replica that served it, for the router's statistics.

use crate::error::CallError;
use crate::mcp::CallToolResult;
use crate::resilience::breaker::Verdict as BreakerVerdict;

/// The router's reading of one outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The replica served the call.
    Ok,
    /// The replica failed it: transport, timeout, a server error, or a tool result with `isError`.
    Failed,
    /// Nothing about the replica: the caller's own mistake caught before sending (invalid arguments, an unknown
    /// tool), a cancellation, a credential that does not fit. Counting these as failures would let one confused
    /// agent drain a healthy replica's weight.
    NoVerdict,
}

impl Verdict {
    /// The breaker's classification of `outcome` (`breaker`, from [`classify`](crate::resilience::breaker::classify),
    /// made once per attempt), with one difference: a tool result with `isError` counts against the replica here. The
    /// breaker leaves deliberate tool errors out of a server's health; the router's error rate (the linear health
    /// score's `error_rate`) is about which replica serves a tool *successfully*, and a replica that answers everything
    /// with `isError` should lose weight.
    pub fn of(outcome: &Result<CallToolResult, CallError>, breaker: BreakerVerdict) -> Verdict {
        if matches!(outcome, Ok(r) if r.is_error) {
            return Verdict::Failed;
        }
        match breaker {
            BreakerVerdict::Success => Verdict::Ok,
            BreakerVerdict::Ignore => Verdict::NoVerdict,
            BreakerVerdict::Failure | BreakerVerdict::RetryAfter(_) => Verdict::Failed,
        }
    }
}
