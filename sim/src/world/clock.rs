//! The core's `Clock` seam inside turmoil: monotonic time is tokio's (turmoil drives it), and wall time is turmoil's
//! pinned simulated epoch plus the host's elapsed time plus a per-host offset, so a scenario can skew one host's
//! clock against the others (the seed's gateway ran 3 minutes ahead of a server).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use mcpstorm_core::rt::Clock;

#[derive(Debug, Clone, Default)]
pub struct SimClock {
    /// Milliseconds added to this host's wall clock (negative: behind). Shared so a fault can change it mid-run.
    offset_ms: Arc<AtomicI64>,
}

impl SimClock {
    pub fn new(offset_ms: i64) -> Self {
        SimClock { offset_ms: Arc::new(AtomicI64::new(offset_ms)) }
    }

    pub fn set_offset_ms(&self, offset_ms: i64) {
        self.offset_ms.store(offset_ms, Ordering::Relaxed);
    }
}

impl Clock for SimClock {
    /// Outside a simulation (no turmoil host is running) this reads 0 plus the offset: the simulator never calls it
    /// there.
    fn wall_ms(&self) -> u64 {
        let since_epoch = turmoil::since_epoch().unwrap_or_default().as_millis() as i64;
        since_epoch.saturating_add(self.offset_ms.load(Ordering::Relaxed)).max(0) as u64
    }
}
