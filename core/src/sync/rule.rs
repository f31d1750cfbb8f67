//! The rule against poisoning: what a node does with another node's report that a breaker opened.
//!
//! Shared breaker state can let one bad node eject a replica everywhere (Polly's maintainers refused it for that
//! reason). A node whose own link to a replica is cut sees every call fail and opens its breaker; if the others
//! simply followed, a replica they still reach would be ejected fleet-wide. So a remote open is followed only when
//! it is corroborated:
//! - by this node's own evidence: its window already shows at least half the failure rate that would trip it; or
//! - by a second node: another node than the sender also reports that breaker open, and its report is live.
//!
//! Otherwise the breaker becomes *suspect*: closed → half-open, so that a few probes decide with this node's own
//! calls (they succeed: closed again; they fail: open). A cut-off node costs the others a few probes per report,
//! never the replica.

use std::time::Duration;

use crate::resilience::breaker::{BreakerCounts, BreakerState};

/// What to do with a remote open.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Open here too, for this long.
    Follow(Duration),
    /// Closed → half-open: probes decide.
    Suspect,
    /// Nothing: the breaker is not closed here (open already, probing, switched by hand), or is not routed to.
    Nothing,
}

/// This node's view of one breaker.
#[derive(Debug, Clone, Copy)]
pub struct Local {
    pub state: BreakerState,
    pub counts: BreakerCounts,
    /// The failure rate that trips it.
    pub trip_rate: f64,
}

/// The action for a remote open lasting `open_for`, given this node's view (`None`: not routed here, or breakers
/// off) and how many nodes other than the sender report that breaker open now.
pub fn on_remote_open(local: Option<Local>, others_open: usize, open_for: Duration) -> Action {
    let Some(local) = local else { return Action::Nothing };
    if local.state != BreakerState::Closed {
        return Action::Nothing;
    }
    let own_evidence = local.counts.failures > 0 && local.counts.failure_rate() >= local.trip_rate / 2.0;
    if own_evidence || others_open > 0 { Action::Follow(open_for) } else { Action::Suspect }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(calls: u32, failures: u32) -> Option<Local> {
        Some(Local { state: BreakerState::Closed, counts: BreakerCounts { calls, failures, slow: 0 }, trip_rate: 0.5 })
    }

    const FIVE: Duration = Duration::from_secs(5);

    #[test]
    fn a_lone_report_against_a_healthy_window_only_makes_the_breaker_suspect() {
        assert_eq!(on_remote_open(closed(100, 0), 0, FIVE), Action::Suspect);
        // One failure in a hundred is no evidence.
        assert_eq!(on_remote_open(closed(100, 1), 0, FIVE), Action::Suspect);
        assert_eq!(on_remote_open(closed(0, 0), 0, FIVE), Action::Suspect);
    }

    #[test]
    fn own_evidence_or_a_second_node_is_followed() {
        assert_eq!(on_remote_open(closed(10, 3), 0, FIVE), Action::Follow(FIVE));
        assert_eq!(on_remote_open(closed(100, 0), 1, FIVE), Action::Follow(FIVE));
    }

    #[test]
    fn a_breaker_that_is_not_closed_here_is_left_alone() {
        for state in [BreakerState::Open, BreakerState::HalfOpen, BreakerState::ForcedOpen, BreakerState::Disabled] {
            let local = Some(Local { state, counts: BreakerCounts::default(), trip_rate: 0.5 });
            assert_eq!(on_remote_open(local, 2, FIVE), Action::Nothing);
        }
        assert_eq!(on_remote_open(None, 2, FIVE), Action::Nothing);
    }
}
