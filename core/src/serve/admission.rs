//! Admission at the front: how many agent requests run at once, and who waits when that is too many.
//!
//! A cap per session answered an ordinary agent's burst (one orchestrator fanning 200 tool calls out on one session)
//! with 429s while the gateway and its upstreams had room, and neither the Python SDK nor rmcp retries a 429. So
//! nothing here refuses while there is room: up to `capacity` requests run at once, whoever sends them. Beyond it a
//! request waits in its session's queue, and each slot that frees goes to the waiting session with the fewest
//! requests running (the oldest waiter among equals): under contention every session gets its share, and a session
//! that sent far more than its share waits for its own earlier requests rather than starving the others. A request
//! is refused only when it waited its whole `wait` (the call's deadline: sent, it could not finish in time), or
//! when the queues are full and its session queues the most (a hostile session sheds its own newest requests, never
//! another's). The refusal carries a `Retry-After` from the rate at which slots have been freeing.
//!
//! Keys are sessions (2025-11-25) or, for requests with no session (2026-07-28, stdio), whatever the front names
//! the agent by; a key's state lives while it has requests running or waiting.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain counters and queues, consistent after any panic.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// It waited its whole wait for a slot.
    Waited { retry_after: Duration },
    /// The queues were full and its session queued the most.
    Shed { retry_after: Duration },
}

impl Refused {
    pub fn retry_after(self) -> Duration {
        match self {
            Refused::Waited { retry_after } | Refused::Shed { retry_after } => retry_after,
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Refused::Waited { .. } => "the gateway is at capacity and no slot freed before this request's deadline",
            Refused::Shed { .. } => {
                "the gateway is at capacity and this session has the most requests waiting: its newest was shed"
            }
        }
    }
}

/// What a waiting request is told.
#[derive(Debug)]
enum Verdict {
    /// A slot is yours (already counted as running).
    Run,
    Shed,
}

#[derive(Debug, Default)]
struct Key {
    running: usize,
    /// (arrival sequence, the waiter's channel), oldest first.
    waiting: VecDeque<(u64, oneshot::Sender<Verdict>)>,
}

#[derive(Debug)]
struct State {
    running: usize,
    waiting: usize,
    seq: u64,
    /// Ordered, so a tie (two keys queueing the most) is broken the same way in every run.
    keys: BTreeMap<Arc<str>, Key>,
    /// Slots freed in the current and the previous second of the rate window, and when the current one started.
    freed: [u64; 2],
    window_start: Instant,
}

/// The front's admission: see the module documentation.
#[derive(Debug)]
pub(crate) struct Admission {
    capacity: usize,
    max_waiting: usize,
    state: Mutex<State>,
}

/// A running request's slot: given back (to the next waiter, if any) when dropped.
#[derive(Debug)]
pub(crate) struct Ticket {
    admission: Arc<Admission>,
    key: Arc<str>,
}

impl Admission {
    pub fn new(capacity: usize, max_waiting: usize) -> Arc<Admission> {
        let state = State {
            running: 0,
            waiting: 0,
            seq: 0,
            keys: BTreeMap::new(),
            freed: [0; 2],
            window_start: Instant::now(),
        };
        Arc::new(Admission { capacity: capacity.max(1), max_waiting, state: Mutex::new(state) })
    }

    /// Requests running now, and waiting now.
    pub fn load(&self) -> (usize, usize) {
        let state = lock(&self.state);
        (state.running, state.waiting)
    }

    /// Admits a request of `key`, waiting at most `wait` for a slot (see the module documentation). Dropping the
    /// future while it waits leaves the queue cleanly.
    pub async fn enter(self: &Arc<Self>, key: &Arc<str>, wait: Duration) -> Result<Ticket, Refused> {
        let rx = {
            let mut state = lock(&self.state);
            if state.running < self.capacity && state.waiting == 0 {
                state.running += 1;
                state.keys.entry(key.clone()).or_default().running += 1;
                return Ok(self.ticket(key));
            }
            if state.waiting >= self.max_waiting && !self.shed_for(&mut state, key) {
                return Err(Refused::Shed { retry_after: self.retry_after(&mut state) });
            }
            let (tx, rx) = oneshot::channel();
            state.seq += 1;
            let seq = state.seq;
            state.keys.entry(key.clone()).or_default().waiting.push_back((seq, tx));
            state.waiting += 1;
            Waiter { admission: self.clone(), key: key.clone(), seq, rx: Some(rx) }
        };
        rx.wait(wait).await
    }

    fn ticket(self: &Arc<Self>, key: &Arc<str>) -> Ticket {
        Ticket { admission: self.clone(), key: key.clone() }
    }

    /// The queues are full: sheds the newest waiter of the key that queues the most, unless that is `key` itself
    /// (then `false`: the newcomer is the one refused).
    fn shed_for(&self, state: &mut State, key: &Arc<str>) -> bool {
        let own = state.keys.get(key).map_or(0, |k| k.waiting.len());
        let Some(victim) = state
            .keys
            .iter()
            .filter(|(k, v)| *k != key && v.waiting.len() > own)
            .max_by_key(|(_, v)| v.waiting.len())
            .map(|(k, _)| k.clone())
        else {
            return false;
        };
        if let Some(key) = state.keys.get_mut(&victim)
            && let Some((_, tx)) = key.waiting.pop_back()
        {
            let _ = tx.send(Verdict::Shed);
            state.waiting -= 1;
        }
        true
    }

    /// A slot freed by `key`: it goes to the waiting key with the fewest running.
    fn release(&self, key: &Arc<str>) {
        let mut state = lock(&self.state);
        self.count_freed(&mut state);
        state.running -= 1;
        if let Some(k) = state.keys.get_mut(key) {
            k.running -= 1;
            if k.running == 0 && k.waiting.is_empty() {
                state.keys.remove(key);
            }
        }
        self.hand_over(&mut state);
    }

    /// Gives free slots to waiters, fewest-running key first.
    fn hand_over(&self, state: &mut State) {
        while state.running < self.capacity && state.waiting > 0 {
            let next = state
                .keys
                .iter()
                .filter_map(|(k, v)| Some((v.running, v.waiting.front()?.0, k)))
                .min()
                .map(|(_, _, k)| k.clone());
            let Some(next) = next else { return };
            let Some(key) = state.keys.get_mut(&next) else { return };
            let Some((_, tx)) = key.waiting.pop_front() else { return };
            state.waiting -= 1;
            // A waiter that has gone (timed out or dropped, racing this) takes nothing: the slot goes to the next.
            if tx.send(Verdict::Run).is_ok() {
                key.running += 1;
                state.running += 1;
            } else if key.running == 0 && key.waiting.is_empty() {
                state.keys.remove(&next);
            }
        }
    }

    /// Removes waiter `seq` of `key` if it is still queued: `true` when it was.
    fn leave(&self, key: &Arc<str>, seq: u64) -> bool {
        let mut state = lock(&self.state);
        let Some(k) = state.keys.get_mut(key) else { return false };
        let Some(at) = k.waiting.iter().position(|(s, _)| *s == seq) else { return false };
        k.waiting.remove(at);
        if k.running == 0 && k.waiting.is_empty() {
            state.keys.remove(key);
        }
        state.waiting -= 1;
        true
    }

    fn count_freed(&self, state: &mut State) {
        self.roll(state);
        state.freed[1] += 1;
    }

    /// Moves the two-second rate window to now.
    fn roll(&self, state: &mut State) {
        let elapsed = state.window_start.elapsed();
        if elapsed >= Duration::from_secs(2) {
            state.freed = [0; 2];
            state.window_start = Instant::now();
        } else if elapsed >= Duration::from_secs(1) {
            state.freed = [state.freed[1], 0];
            state.window_start += Duration::from_secs(1);
        }
    }

    /// When a request refused now may expect a slot: the waiters ahead of it over the rate slots freed lately,
    /// whole seconds, at least 1 and at most 60.
    fn retry_after(&self, state: &mut State) -> Duration {
        self.roll(state);
        let rate = (state.freed[0] + state.freed[1]) as f64 / 2.0;
        let queue = (state.waiting + 1) as f64;
        let secs = if rate > 0.0 { (queue / rate).ceil() } else { 1.0 };
        Duration::from_secs(secs.clamp(1.0, 60.0) as u64)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admission.release(&self.key);
    }
}

/// A request in a queue: leaves it when it times out or is dropped.
struct Waiter {
    admission: Arc<Admission>,
    key: Arc<str>,
    seq: u64,
    rx: Option<oneshot::Receiver<Verdict>>,
}

impl Waiter {
    async fn wait(mut self, wait: Duration) -> Result<Ticket, Refused> {
        let Some(rx) = self.rx.as_mut() else { return Err(self.refused_waiting()) };
        let verdict = match tokio::time::timeout(wait, rx).await {
            Ok(Ok(verdict)) => verdict,
            // The sender cannot go without a verdict while we are queued; treat it as a timeout.
            Ok(Err(_)) | Err(_) => {
                if self.admission.leave(&self.key, self.seq) {
                    self.rx = None;
                    return Err(self.refused_waiting());
                }
                // Handed a verdict just as the wait ended: take it.
                match self.rx.as_mut().map(oneshot::Receiver::try_recv) {
                    Some(Ok(verdict)) => verdict,
                    _ => Verdict::Shed,
                }
            }
        };
        self.rx = None;
        match verdict {
            Verdict::Run => Ok(self.admission.ticket(&self.key)),
            Verdict::Shed => {
                let mut state = lock(&self.admission.state);
                Err(Refused::Shed { retry_after: self.admission.retry_after(&mut state) })
            }
        }
    }

    fn refused_waiting(&self) -> Refused {
        let mut state = lock(&self.admission.state);
        Refused::Waited { retry_after: self.admission.retry_after(&mut state) }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        if self.admission.leave(&self.key, self.seq) {
            return;
        }
        // Dropped after a slot was handed to it: give the slot back.
        if let Ok(Verdict::Run) = rx.try_recv() {
            drop(self.admission.ticket(&self.key));
        }
    }
}

#[cfg(test)]
mod tests;
