//! The fault handle of a running double (what a scenario's fault timeline will turn): a latency added to every
//! reply, and "stop answering". Crashes and partitions need no knob: the simulator drops or cuts the host.

use std::sync::Arc;
use std::time::Duration;

use super::shared::Shared;

/// Steers one running double, across all its connections. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RedisControl {
    shared: Arc<Shared>,
}

impl RedisControl {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RedisControl { shared }
    }

    /// Holds every reply and pub/sub message back this much longer (from when its command ran);
    /// `Duration::ZERO` ends it.
    pub fn set_latency(&self, latency: Duration) {
        self.shared.set_latency(latency);
    }

    pub fn latency(&self) -> Duration {
        self.shared.latency()
    }

    /// Hangs the double, as a stopped process: connections are still accepted and bytes still arrive, but no command
    /// runs and nothing is written until un-hung; then everything resumes in order.
    pub fn set_hung(&self, hung: bool) {
        self.shared.hung.send_replace(hung);
    }

    pub fn is_hung(&self) -> bool {
        *self.shared.hung.borrow()
    }
}
