use std::fmt::Debug;
use std::time::Duration;

use tokio::time::Instant;

/// Time as the core sees it.
///
/// Monotonic time is tokio's, which a simulator drives. Wall time (for logs and anything a server's clock is compared
/// with) is separate, so a simulator can give each host an offset: clock skew. Session expiry must never be computed
/// from wall time.
pub trait Clock: Send + Sync + Debug + 'static {
    /// Monotonic now.
    fn now(&self) -> Instant {
        Instant::now()
    }

    /// Wall time in milliseconds since the Unix epoch.
    fn wall_ms(&self) -> u64;
}

/// tokio's monotonic clock, with wall time extrapolated from one reading taken by the embedding program.
///
/// The core never reads the system clock itself (turmoil cannot simulate it); the binary reads it once and passes it
/// in.
#[derive(Debug, Clone)]
pub struct TokioClock {
    anchor: Instant,
    anchor_wall_ms: u64,
}

impl TokioClock {
    pub fn new(wall_ms_now: u64) -> Self {
        TokioClock { anchor: Instant::now(), anchor_wall_ms: wall_ms_now }
    }
}

impl Clock for TokioClock {
    fn wall_ms(&self) -> u64 {
        let elapsed: Duration = Instant::now().saturating_duration_since(self.anchor);
        self.anchor_wall_ms.saturating_add(elapsed.as_millis() as u64)
    }
}
