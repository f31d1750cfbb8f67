//! The design's manual switch, for an operator: force-open a tool's breaker at once (its calls answer degraded,
//! "do not retry"), force-degrade it (the same, naming a fallback tool in the degraded result), or reset it.
//! Every transition goes to the observer like a local one, with reason `manual`.

use std::sync::Arc;

use super::{Gateway, layers};
use crate::resilience::breaker::{BreakerTransition, Gate, ManualSwitch};

/// What an operator asks of one (replica, tool) breaker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Refuse every call now, with the degraded result.
    ForceOpen,
    /// [`Operation::ForceOpen`], and name `fallback` (a tool) in the degraded result of every replica of the tool.
    ForceDegrade { fallback: Option<String> },
    /// Back to closed with empty windows, and forget a fallback set by [`Operation::ForceDegrade`].
    Reset,
}

/// Why an operation could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManualError {
    #[error("the circuit breaker layer is off")]
    BreakersOff,
    #[error("no replica {0:?} in the router")]
    UnknownReplica(String),
}

impl Gateway {
    /// The breaker of `(endpoint, tool)`, made now if no call has made it yet (an operator may switch a tool off
    /// before its first call). `None` when breakers are off.
    pub fn breaker(&self, endpoint: &str, tool: &str) -> Option<Arc<Gate>> {
        self.layers.breaker(endpoint, tool)
    }

    /// Applies `op` to the breaker of `(endpoint, tool)`. `Ok(None)`: nothing changed (e.g. already forced open).
    pub fn operate(
        &self,
        endpoint: &str,
        tool: &str,
        op: &Operation,
    ) -> Result<Option<BreakerTransition>, ManualError> {
        let route = self.route_to(endpoint).ok_or_else(|| ManualError::UnknownReplica(endpoint.to_owned()))?;
        let gate = self.layers.breaker(endpoint, tool).ok_or(ManualError::BreakersOff)?;
        let now = self.clock.now();
        let transition = match op {
            Operation::ForceOpen => gate.set_manual(now, ManualSwitch::ForcedOpen),
            Operation::ForceDegrade { fallback } => {
                self.layers.set_fallback(tool, fallback.clone());
                gate.set_manual(now, ManualSwitch::ForcedOpen)
            }
            Operation::Reset => {
                self.layers.set_fallback(tool, None);
                gate.reset(now)
            }
        };
        layers::report(self.observer.as_ref(), &route, tool, transition.clone());
        Ok(transition)
    }
}
