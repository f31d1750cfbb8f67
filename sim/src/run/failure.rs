//! The classes a failed logical call is counted under, by its final answer. A degraded result is its own class: the
//! gateway answered "do not retry" instead of calling a sick replica, which is neither the server's error (`tool`)
//! nor a failure of the gateway's own machinery (`local`).

/// How a failed logical call ended: the class of its final answer. The names are the `err_<class>` columns of
/// `timeseries.csv`, the keys of `totals.errors_by_class` and the error panel's legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailureClass {
    /// The connection failed: refused, reset, closed, timed out.
    Transport,
    /// A JSON-RPC error response.
    Protocol,
    /// The session or client was not usable (initialize failed, shut down).
    Lifecycle,
    /// Failed inside the gateway or agent before any answer: a deadline, no replica, a bad request.
    Local,
    /// A server's result with `isError: true`.
    Tool,
    /// The gateway's own answer instead of a call (breaker open, budget spent, bulkhead full): "do not retry".
    Degraded,
    /// An auth mismatch: no configured credential of a scheme the server accepts.
    Auth,
}

impl FailureClass {
    /// Every class, in the error panel's stacking order (bottom first).
    pub const ALL: [FailureClass; 7] = [
        FailureClass::Transport,
        FailureClass::Protocol,
        FailureClass::Lifecycle,
        FailureClass::Local,
        FailureClass::Tool,
        FailureClass::Degraded,
        FailureClass::Auth,
    ];

    pub fn label(self) -> &'static str {
        match self {
            FailureClass::Transport => "transport",
            FailureClass::Protocol => "protocol",
            FailureClass::Lifecycle => "lifecycle",
            FailureClass::Local => "local",
            FailureClass::Tool => "tool",
            FailureClass::Degraded => "degraded",
            FailureClass::Auth => "auth",
        }
    }

    /// The class of a `CallError` by its label (`CallError::label`); anything else is
    /// local.
    pub fn of_error(label: &str) -> FailureClass {
        match label {
            "protocol" => FailureClass::Protocol,
            "lifecycle" => FailureClass::Lifecycle,
            "transport" => FailureClass::Transport,
            "auth" => FailureClass::Auth,
            _ => FailureClass::Local,
        }
    }
}
