//! What every connection of one double shares: the data (keyspace and channels, under one lock, so commands run one
//! at a time as in Redis), the configuration, the clock and the fault knobs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcpstorm_core::Clock;
use tokio::sync::watch;
use tokio::time::Instant;

use super::RedisConfig;
use super::keyspace::Keyspace;
use super::pubsub::PubSub;

/// How often expired keys nobody reads are dropped (on the double's clock).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub(crate) struct State {
    pub keyspace: Keyspace,
    pub pubsub: PubSub,
    last_sweep: Option<Instant>,
}

impl State {
    pub(crate) fn sweep_if_due(&mut self, now: Instant) {
        if self.last_sweep.is_none_or(|last| now.saturating_duration_since(last) >= SWEEP_EVERY) {
            self.keyspace.sweep(now);
            self.last_sweep = Some(now);
        }
    }
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub config: RedisConfig,
    pub clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Added to every reply (a latency fault).
    latency: Mutex<Duration>,
    /// True: the double answers nothing and runs nothing until set false again.
    pub hung: watch::Sender<bool>,
    next_client: AtomicU64,
}

impl Shared {
    pub(crate) fn new(config: RedisConfig, clock: Arc<dyn Clock>) -> Self {
        Shared {
            config,
            clock,
            state: Mutex::default(),
            latency: Mutex::default(),
            hung: watch::Sender::new(false),
            next_client: AtomicU64::new(0),
        }
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the data half-changed in a way that matters to a test double.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn latency(&self) -> Duration {
        *self.latency.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set_latency(&self, latency: Duration) {
        *self.latency.lock().unwrap_or_else(|e| e.into_inner()) = latency;
    }

    pub(crate) fn next_client_id(&self) -> u64 {
        self.next_client.fetch_add(1, Ordering::Relaxed)
    }

    /// Waits while the double is hung.
    pub(crate) async fn running(&self) {
        let mut hung = self.hung.subscribe();
        // The sender lives as long as `self`: the wait cannot fail.
        let _ = hung.wait_for(|hung| !*hung).await;
    }
}
