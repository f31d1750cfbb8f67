//! What a call's outcome says about the replica that served it.

use crate::error::{CallError, LocalError};
use crate::mcp::CallToolResult;

/// The router's reading of one outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The replica served the call.
    Ok,
    /// The replica failed it: transport, timeout, protocol error, or a tool result with `isError`.
    Failed,
    /// Nothing about the replica: the caller's own mistake caught before sending (invalid arguments, an unknown
    /// tool, an unusable schema), a cancellation, or a credential that does not fit. Counting these as failures
    /// would let one confused agent drain a healthy replica's weight.
    NoVerdict,
}

impl Verdict {
    pub fn of(outcome: &Result<CallToolResult, CallError>) -> Verdict {
        match outcome {
            Ok(r) if !r.is_error => Verdict::Ok,
            Ok(_) => Verdict::Failed,
            Err(CallError::Local(
                LocalError::InvalidArguments(_)
                | LocalError::UnknownTool(_)
                | LocalError::UnusableSchema(_)
                | LocalError::Cancelled(_),
            ))
            | Err(CallError::Auth(_)) => Verdict::NoVerdict,
            Err(_) => Verdict::Failed,
        }
    }
}
