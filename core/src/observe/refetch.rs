//! Why a client fetched a tool list again. Named by the [`super::Event::SchemaRefetched`] event, so it lives here
//! rather than beside the drift signals that raise it (`capabilities/drift.rs`): the metrics seam stays below
//! the capability cache and imports nothing from it.

/// Why the tool list was fetched again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefetchReason {
    ListChanged,
    Ttl,
    InvalidParams,
    ToolErrorText,
    ServerVersion,
}

impl RefetchReason {
    pub const ALL: [RefetchReason; 5] = [
        RefetchReason::ListChanged,
        RefetchReason::Ttl,
        RefetchReason::InvalidParams,
        RefetchReason::ToolErrorText,
        RefetchReason::ServerVersion,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RefetchReason::ListChanged => "list_changed",
            RefetchReason::Ttl => "ttl",
            RefetchReason::InvalidParams => "invalid_params",
            RefetchReason::ToolErrorText => "tool_error_text",
            RefetchReason::ServerVersion => "server_version",
        }
    }

    /// Whether the call that raised the signal was rejected before running (and may be resent after a re-check).
    pub fn rejected_call(self) -> bool {
        matches!(self, RefetchReason::InvalidParams | RefetchReason::ToolErrorText)
    }
}
