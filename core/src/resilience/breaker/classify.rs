//! What one call's outcome says about the health of the (server, tool) behind it.
//!
//! Only evidence about the server counts. Transport failures, timeouts, malformed answers, internal and overload
//! errors count as failures. Our own mistakes (invalid arguments, unknown tools, protocol-level rejections of the
//! request), credential or version mismatches (a configuration problem no waiting cures), cancellations and local
//! queueing say nothing about the server, so they are [`HealthVerdict::Ignore`]d: neither success nor failure, as
//! resilience4j's ignored exceptions. A tool result with `isError: true` is a business answer from a working server,
//! so it counts as a success (slow if it was slow) — unless it is a gateway's degraded response
//! (`structuredContent.degraded: true`), a failure. A server-dictated retry-after (`data.retryAfterMs` on an error,
//! or `structuredContent.retryAfterMs` on an error result) opens the breaker for that long.

use crate::resilience::limiter::SampleOutcome;
use std::time::Duration;

use serde_json::Value;

use crate::error::{CallError, LifecycleError, LocalError, TransportError};
use crate::jsonrpc::{ErrorCode, ErrorObject};
use crate::mcp::CallToolResult;

/// The breaker's reading of one outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthVerdict {
    Success,
    Failure,
    /// Not evidence either way: not counted; a half-open probe slot is freed.
    Ignore,
    /// The server asked us to stay away this long: a failure that opens the breaker for exactly that (capped).
    RetryAfter(Duration),
}

impl HealthVerdict {
    /// The replica failed the call (transport, timeout, overload, a server error): evidence against it, for the
    /// throttle's accept count and the retry decision alike.
    pub fn replica_failed(self) -> bool {
        matches!(self, HealthVerdict::Failure | HealthVerdict::RetryAfter(_))
    }
}

/// What an attempt's outcome tells an adaptive limiter. Its loss signal is congestion only: a phase timeout (first
/// response, stream idle), a stalled stream, an overload error (-32000) or a retry-after. A server that fails fast
/// (an internal error, a closed connection) is not short of capacity, and shrinking its pool would only queue, then
/// shed, calls it answers at once; such an outcome is no evidence either way, like a request-level error. Nor is the
/// call's own deadline running out: it is the caller's budget, often spent waiting in the gateway before the attempt
/// was sent, and counted as a loss it shrank the pool further with every queued call (the swarm found a pool held
/// near one permit for 2 s after a hang had ended).
pub fn limiter_sample(outcome: &Result<CallToolResult, CallError>, verdict: HealthVerdict) -> SampleOutcome {
    match verdict {
        HealthVerdict::Success => SampleOutcome::Ok,
        HealthVerdict::RetryAfter(_) => SampleOutcome::Dropped,
        HealthVerdict::Ignore => SampleOutcome::Ignored,
        HealthVerdict::Failure => match outcome {
            Err(
                CallError::Local(LocalError::FirstResponseTimeout(_) | LocalError::IdleTimeout(_))
                | CallError::Transport(TransportError::Stalled(_)),
            ) => SampleOutcome::Dropped,
            Err(CallError::Protocol(obj)) if obj.code == OVERLOADED => SampleOutcome::Dropped,
            _ => SampleOutcome::Ignored,
        },
    }
}

/// The server-error code servers (ours included) send when overloaded.
const OVERLOADED: i64 = -32000;

/// The JSON-RPC "server error" range; -32000 is what servers (ours included) send when overloaded.
const SERVER_ERRORS: std::ops::RangeInclusive<i64> = -32099..=-32000;

/// MCP- and JSON-RPC-defined codes in the server-error range or elsewhere that describe the request, the session or
/// the credentials rather than the server's health.
const NOT_HEALTH: [ErrorCode; 11] = [
    ErrorCode::PARSE_ERROR,
    ErrorCode::INVALID_REQUEST,
    ErrorCode::METHOD_NOT_FOUND,
    ErrorCode::INVALID_PARAMS,
    ErrorCode::REQUEST_CANCELLED,
    ErrorCode::RESOURCE_NOT_FOUND,
    ErrorCode::HEADER_MISMATCH,
    ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
    ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
    ErrorCode::SESSION_NOT_FOUND,
    ErrorCode::AUTH_MISMATCH,
];

/// Classifies a finished `tools/call`.
pub fn classify(outcome: &Result<CallToolResult, CallError>) -> HealthVerdict {
    match outcome {
        Ok(result) => classify_result(result),
        Err(e) => classify_error(e),
    }
}

pub fn classify_result(result: &CallToolResult) -> HealthVerdict {
    if !result.is_error {
        return HealthVerdict::Success;
    }
    let structured = result.structured_content.as_ref();
    if let Some(d) = retry_after(structured) {
        HealthVerdict::RetryAfter(d)
    } else if structured.and_then(|s| s.get("degraded")).and_then(Value::as_bool) == Some(true) {
        // Another gateway's degraded response (see `resilience::degraded`): the tool is not being served.
        HealthVerdict::Failure
    } else {
        HealthVerdict::Success
    }
}

pub fn classify_error(error: &CallError) -> HealthVerdict {
    match error {
        CallError::Protocol(obj) => classify_rpc_error(obj),
        CallError::MalformedResponse(_) => HealthVerdict::Failure,
        CallError::Lifecycle(LifecycleError::VersionMismatch { .. }) => HealthVerdict::Ignore,
        CallError::Lifecycle(_) => HealthVerdict::Failure,
        CallError::Transport(TransportError::Shutdown) => HealthVerdict::Ignore,
        CallError::Transport(_) => HealthVerdict::Failure,
        CallError::Local(e) => match e {
            LocalError::FirstResponseTimeout(_) | LocalError::IdleTimeout(_) | LocalError::DeadlineExceeded => {
                HealthVerdict::Failure
            }
            LocalError::QueueTimeout(_)
            | LocalError::QueueFull
            | LocalError::Cancelled(_)
            | LocalError::InvalidArguments(_)
            | LocalError::UnknownTool(_)
            | LocalError::UnusableSchema(_) => HealthVerdict::Ignore,
        },
        CallError::Auth(_) => HealthVerdict::Ignore,
    }
}

/// A JSON-RPC error from the server: retry-after first, then the code.
pub fn classify_rpc_error(obj: &ErrorObject) -> HealthVerdict {
    if let Some(d) = retry_after(obj.data.as_ref()) {
        return HealthVerdict::RetryAfter(d);
    }
    let code = ErrorCode(obj.code);
    if NOT_HEALTH.contains(&code) {
        HealthVerdict::Ignore
    } else if code == ErrorCode::INTERNAL_ERROR || SERVER_ERRORS.contains(&obj.code) {
        HealthVerdict::Failure
    } else {
        // An application-defined code: the server answered deliberately.
        HealthVerdict::Ignore
    }
}

/// `retryAfterMs` as a finite non-negative number of milliseconds; anything else is as if absent.
pub fn retry_after(data: Option<&Value>) -> Option<Duration> {
    let ms = data?.get("retryAfterMs")?.as_f64().filter(|ms| ms.is_finite() && *ms >= 0.0)?;
    Duration::try_from_secs_f64(ms / 1000.0).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::AuthError;

    fn rpc(code: i64, data: Option<Value>) -> CallError {
        CallError::Protocol(ErrorObject { code, message: "m".into(), data })
    }

    #[test]
    fn server_faults_count_and_caller_faults_do_not() {
        let fail = [
            CallError::Transport(TransportError::Closed),
            CallError::Transport(TransportError::Stalled(Duration::from_secs(1))),
            CallError::Local(LocalError::FirstResponseTimeout(Duration::from_secs(1))),
            CallError::Local(LocalError::DeadlineExceeded),
            CallError::MalformedResponse("x".into()),
            CallError::Lifecycle(LifecycleError::NotInitialized),
            rpc(-32000, None),
            rpc(-32603, None),
        ];
        for e in &fail {
            assert_eq!(classify_error(e), HealthVerdict::Failure, "{e:?}");
        }
        let ignore = [
            rpc(-32602, None),
            rpc(-32601, None),
            rpc(-32003, None),
            rpc(-32001, None),
            rpc(42, None),
            CallError::Auth(AuthError::Mismatch { accepted: vec![], offered: vec![] }),
            CallError::Local(LocalError::Cancelled("user".into())),
            CallError::Local(LocalError::UnknownTool("t".into())),
            CallError::Local(LocalError::QueueFull),
            CallError::Transport(TransportError::Shutdown),
            CallError::Lifecycle(LifecycleError::VersionMismatch { ours: vec![], theirs: "x".into() }),
        ];
        for e in &ignore {
            assert_eq!(classify_error(e), HealthVerdict::Ignore, "{e:?}");
        }
    }

    #[test]
    fn retry_after_from_error_data_or_error_result() {
        let e = rpc(-32000, Some(json!({"retryAfterMs": 1500})));
        assert_eq!(classify(&Err(e)), HealthVerdict::RetryAfter(Duration::from_millis(1500)));
        // Even on a code that would otherwise be ignored: the server's word about when to come back wins.
        assert_eq!(
            classify_error(&rpc(42, Some(json!({"retryAfterMs": 0})))),
            HealthVerdict::RetryAfter(Duration::ZERO)
        );
        assert_eq!(classify_error(&rpc(-32000, Some(json!({"retryAfterMs": -1})))), HealthVerdict::Failure);
        assert_eq!(classify_error(&rpc(-32000, Some(json!({"retryAfterMs": "soon"})))), HealthVerdict::Failure);

        let mut r = CallToolResult::text("busy", true);
        r.structured_content = Some(json!({"retryAfterMs": 250}));
        assert_eq!(classify(&Ok(r.clone())), HealthVerdict::RetryAfter(Duration::from_millis(250)));
        r.is_error = false;
        assert_eq!(classify(&Ok(r)), HealthVerdict::Success, "a successful result's fields are data, not a request");
        assert_eq!(classify(&Ok(CallToolResult::text("not found", true))), HealthVerdict::Success);
    }
}
