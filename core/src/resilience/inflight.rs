//! The global in-flight cap a client shares across its connections (a default of 50 in-flight calls, the measured
//! client's): a fixed limit, where [`super::bulkhead`] and [`super::limiter`] are per replica and adaptive.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The global in-flight limit, shared by every connection of a client. Cloning shares the same limit.
#[derive(Debug, Clone)]
pub struct InFlightLimit {
    sem: Arc<Semaphore>,
    max: usize,
}

impl InFlightLimit {
    /// The measured client's default.
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

    /// A permit if one is free now: what [`InFlightLimit::acquire`] would give on its first poll (while a permit is
    /// free, nobody is queued for one).
    pub fn try_acquire(&self) -> Option<OwnedSemaphorePermit> {
        self.sem.clone().try_acquire_owned().ok()
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
