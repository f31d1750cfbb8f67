//! Why a client fetched a tool list again. Named by the [`super::Event::SchemaRefetched`] event, so it lives here
//! rather than beside the drift signals that raise it (`capabilities/drift.rs`): the metrics seam stays below
//! the capability cache and imports nothing from it.

/// Why the tool list was fetched again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum RefetchReason {
    ListChanged,
    Ttl,
    InvalidParams,
    ToolErrorText,
    ServerVersion,
}

impl RefetchReason {
    /// Whether the call that raised the signal was rejected before running (and may be resent after a re-check).
    pub fn rejected_call(self) -> bool {
        matches!(self, RefetchReason::InvalidParams | RefetchReason::ToolErrorText)
    }
}
