//! Concurrency limits. For now the global in-flight cap (seed 002: default 50); bulkheads and adaptive limits join
//! it here.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The global in-flight limit, shared by every connection of a client. Cloning shares the same limit.
#[derive(Debug, Clone)]
pub struct InFlightLimit {
    sem: Arc<Semaphore>,
    max: usize,
}

impl InFlightLimit {
    /// Seed 002's default.
    pub const DEFAULT: usize = 50;

    pub fn new(max: usize) -> Self {
        InFlightLimit { sem: Arc::new(Semaphore::new(max)), max }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn in_flight(&self) -> usize {
        self.max - self.sem.available_permits()
    }

    /// Waits for a permit (FIFO). The permit is released when dropped, on every path.
    pub async fn acquire(&self) -> OwnedSemaphorePermit {
        // The semaphore is never closed, so acquisition cannot fail.
        match self.sem.clone().acquire_owned().await {
            Ok(p) => p,
            Err(_) => unreachable!("in-flight semaphore is never closed"),
        }
    }
}

impl Default for InFlightLimit {
    fn default() -> Self {
        Self::new(Self::DEFAULT)
    }
}
