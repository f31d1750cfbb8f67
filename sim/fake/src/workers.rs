//! The server-side worker pool: the fake's "serial DB lock". Shared by every connection of one server; calls beyond
//! it wait in FIFO order (tokio's semaphore is fair).
//!
//! Resizable at runtime for the overload fault. Growing adds permits at once. Shrinking forgets idle permits at once
//! and takes the rest back lazily, as busy workers finish (`debt`), so a running call is never interrupted.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug, Clone)]
pub struct WorkerPool {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    sem: Arc<Semaphore>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The target size; `Semaphore::MAX_PERMITS` stands for unlimited.
    capacity: usize,
    /// Permits still to be forgotten when busy workers return them.
    debt: usize,
}

/// A worker, held for the whole call. Dropping it (call finished, cancelled, or its connection closed) returns it.
#[derive(Debug)]
pub struct Worker {
    permit: Option<OwnedSemaphorePermit>,
    pool: Arc<Inner>,
}

impl WorkerPool {
    /// `None` is unlimited.
    pub fn new(workers: Option<usize>) -> Self {
        let capacity = Self::capacity_of(workers);
        WorkerPool {
            inner: Arc::new(Inner {
                sem: Arc::new(Semaphore::new(capacity)),
                state: Mutex::new(State { capacity, debt: 0 }),
            }),
        }
    }

    fn capacity_of(workers: Option<usize>) -> usize {
        workers.map_or(Semaphore::MAX_PERMITS, |n| n.min(Semaphore::MAX_PERMITS))
    }

    /// Waits for a worker, in arrival order. Cancel-safe: a waiter that is dropped leaves the queue.
    pub async fn acquire(&self) -> Worker {
        // The semaphore is never closed; should that ever change, a call runs rather than hanging forever.
        let permit = self.inner.sem.clone().acquire_owned().await.ok();
        Worker { permit, pool: self.inner.clone() }
    }

    /// The configured size (`None`: unlimited).
    pub fn size(&self) -> Option<usize> {
        let capacity = self.inner.lock().capacity;
        (capacity < Semaphore::MAX_PERMITS).then_some(capacity)
    }

    /// Resizes the pool. 0 is allowed at runtime: every new call then waits until the pool grows again.
    pub fn resize(&self, workers: Option<usize>) {
        let target = Self::capacity_of(workers);
        let mut state = self.inner.lock();
        if target >= state.capacity {
            let grow = target - state.capacity;
            let repaid = grow.min(state.debt);
            state.debt -= repaid;
            self.inner.sem.add_permits(grow - repaid);
        } else {
            let shrink = state.capacity - target;
            let forgotten = self.inner.sem.forget_permits(shrink);
            state.debt += shrink - forgotten;
        }
        state.capacity = target;
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section is a few integer updates; a panic inside one cannot leave the state torn.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else { return };
        // Decide under the lock, so a concurrent resize sees either the returned permit or the paid-off debt.
        let mut state = self.pool.lock();
        if state.debt > 0 {
            state.debt -= 1;
            permit.forget();
        } else {
            drop(permit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn try_acquire(pool: &WorkerPool) -> Option<Worker> {
        tokio::time::timeout(Duration::from_millis(1), pool.acquire()).await.ok()
    }

    #[tokio::test(start_paused = true)]
    async fn shrinking_takes_busy_workers_back_lazily_and_growing_repays_debt() {
        let pool = WorkerPool::new(Some(3));
        let a = pool.acquire().await;
        let b = pool.acquire().await;
        pool.resize(Some(1)); // one idle permit forgotten now, one busy one owed
        assert_eq!(pool.size(), Some(1));
        assert!(try_acquire(&pool).await.is_none());
        drop(a); // repays the debt instead of freeing a worker
        assert!(try_acquire(&pool).await.is_none());
        drop(b); // now the single worker is free
        let c = try_acquire(&pool).await.expect("one worker free");
        assert!(try_acquire(&pool).await.is_none());
        pool.resize(Some(2));
        let d = try_acquire(&pool).await.expect("grown");
        drop((c, d));
        pool.resize(None);
        assert_eq!(pool.size(), None);
        let many: Vec<Worker> = acquire_up_to(&pool, 100).await;
        assert_eq!(many.len(), 100);
    }

    async fn acquire_up_to(pool: &WorkerPool, n: usize) -> Vec<Worker> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.extend(try_acquire(pool).await);
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn shrink_while_busy_then_grow_before_they_finish() {
        let pool = WorkerPool::new(Some(2));
        let a = pool.acquire().await;
        let b = pool.acquire().await;
        pool.resize(Some(0)); // both owed
        pool.resize(Some(1)); // one debt forgiven
        drop(a); // pays the remaining debt
        assert!(try_acquire(&pool).await.is_none());
        drop(b); // returned: exactly one worker
        let c = try_acquire(&pool).await.expect("one worker");
        assert!(try_acquire(&pool).await.is_none());
        drop(c);
    }
}
