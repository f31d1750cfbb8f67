//! What one node tells the others about one breaker: the wire of breaker sync, one JSON object, published on the
//! channel and kept in the hash (one field per node and breaker) for a node that starts late.

use serde::{Deserialize, Serialize};

use crate::resilience::breaker::{BreakerState, BreakerTransition, TransitionReason};

/// A breaker's shared state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shared {
    /// Opened by this node's own calls, for `open_ms`.
    Open,
    /// Closed again by this node's own probes.
    Closed,
    /// Forced open by an operator (the admin API): every node follows, no corroboration asked.
    ForcedOpen,
    /// An operator's reset: every node resets.
    Reset,
}

/// One report. `(incarnation, seq)` orders one node's reports: a node's incarnation is drawn when it starts, and
/// `seq` counts its reports since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub node: String,
    pub incarnation: u64,
    pub seq: u64,
    pub replica: String,
    pub tool: String,
    pub state: Shared,
    /// How long an `open` lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_ms: Option<u64>,
    /// When an `open` ends, in Unix milliseconds by the sender's clock: a node reading the hash later skips what
    /// has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<u64>,
    /// A forced degrade's fallback tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// An `open` for slowness alone (the sender's calls were slow, not failing): a node that follows it refuses for
    /// slowness alone too (`Rejected::slow_only`), so a server slow everywhere is not declined on any node. Absent
    /// (false) from nodes older than the field, which is what they meant.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub slow: bool,
}

impl Report {
    /// The hash field of this report: a node's own state has one per (replica, tool, node); an operator's switch
    /// one per (replica, tool), whichever node it was made on, so the latest switch is the one a late reader sees.
    pub fn field(&self) -> String {
        match self.state {
            Shared::Open | Shared::Closed => format!("{}\u{1f}{}\u{1f}{}", self.replica, self.tool, self.node),
            Shared::ForcedOpen | Shared::Reset => format!("{}\u{1f}{}", self.replica, self.tool),
        }
    }
}

/// Whether a transition to open was for slowness alone (see [`Report::slow`]).
pub fn opened_for_slowness(t: &BreakerTransition) -> bool {
    matches!(t.reason, TransitionReason::SlowCallRate | TransitionReason::ProbeSlow)
}

/// What of a local transition is shared: opens and closes this node's own calls caused. Followed transitions
/// (reason `remote`) are never echoed, and an operator's switches are shared where they are made
/// ([`super::BreakerSync::operate`]), with their fallback.
pub fn shared_state(t: &BreakerTransition) -> Option<Shared> {
    match (t.reason, t.to) {
        (TransitionReason::Remote | TransitionReason::Manual, _) => None,
        (_, BreakerState::Open) => Some(Shared::Open),
        (_, BreakerState::Closed) => Some(Shared::Closed),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_round_trips_and_omits_what_it_lacks() {
        let r = Report {
            node: "gw-1".into(),
            incarnation: 7,
            seq: 3,
            replica: "http://a/mcp".into(),
            tool: "get".into(),
            state: Shared::Open,
            open_ms: Some(5000),
            until_ms: Some(1_000),
            fallback: None,
            slow: false,
        };
        let text = serde_json::to_string(&r).expect("encodes");
        assert!(!text.contains("fallback") && !text.contains("slow"), "{text}");
        assert_eq!(serde_json::from_str::<Report>(&text).expect("decodes"), r);
        let slow = Report { slow: true, ..r.clone() };
        let text = serde_json::to_string(&slow).expect("encodes");
        assert!(text.contains(r#""slow":true"#), "{text}");
        assert_eq!(serde_json::from_str::<Report>(&text).expect("decodes"), slow);
        assert_eq!(r.field(), "http://a/mcp\u{1f}get\u{1f}gw-1");
        let switch = Report { state: Shared::Reset, open_ms: None, until_ms: None, ..r };
        assert_eq!(switch.field(), "http://a/mcp\u{1f}get", "a switch's field is the breaker's, whoever made it");
    }
}
