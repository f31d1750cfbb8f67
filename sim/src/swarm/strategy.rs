//! Fault timelines as a proptest [`Strategy`], for a user's own property tests (the `proptest` feature):
//!
//! ```text
//! proptest!(|(faults in fault_timeline(&scenario, SwarmSpec::default()))| {
//!     let mut s = scenario.clone();
//!     s.faults = faults;
//!     let run = check(&s, Options::default());
//!     prop_assert!(run.passed(), "{:?}", run.violations);
//! });
//! ```
//!
//! A timeline is drawn from a seed exactly as `mcpstorm swarm` draws it, so a failing case is one
//! `mcpstorm swarm --first-seed S --seeds 1` reproduces. proptest shrinks the seed, which does not make the timeline
//! smaller: for a minimal timeline use [`shrink`](super::shrink::shrink) on the failing case.

use proptest::prelude::*;

use super::draw;
use crate::scenario::{Fault, Scenario, SwarmSpec};

/// Timelines over `scenario`'s servers within `bounds` (which replace its `[swarm]` table); seeds whose draw finds
/// no room (a run too short for the bounds) are rejected.
pub fn fault_timeline(scenario: &Scenario, bounds: SwarmSpec) -> impl Strategy<Value = Vec<Fault>> + use<> {
    let mut scenario = scenario.clone();
    scenario.swarm = Some(bounds);
    any::<u64>().prop_filter_map("the run has room for the bounds' faults", move |seed| {
        draw::fault_timeline(&scenario, seed).ok()
    })
}
