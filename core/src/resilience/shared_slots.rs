//! Work-conserving shares of an in-flight limit that the clients of several servers share (a load host's 50 slots).
//!
//! Each server is guaranteed a floor of the slots (`slots / (2 × servers)`, at least 1), and may borrow any slot
//! that is not kept for the others. What is kept for another server is what it has shown it needs, not its whole
//! floor: the most it held at once lately (the last two [`DEMAND_WINDOW`]s), plus one, up to its floor, less what it
//! holds now. So:
//! - a hung server (a partition that swallowed its requests, a process that stopped answering) can hold every slot
//!   but what the other servers use, and they keep being served;
//! - a server that is merely slow may use every slot the others leave idle, so the gateway does not shed (or queue)
//!   a call a slow server would answer in time only because of a fixed split;
//! - a server below its floor takes any free slot, even one kept for another: the guarantee, within the limit.
//!
//! One lock, held for a few additions per call; waiters are woken on every release (there are only waiters when
//! every slot is taken), in FIFO order of their wake-ups, so the simulator replays the same grants for a seed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a server's peak use is remembered, per bucket (two buckets are kept).
pub const DEMAND_WINDOW: Duration = Duration::from_secs(5);

/// An in-flight limit of `slots`, shared by the clients of `servers` servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotShare {
    pub slots: usize,
    pub servers: usize,
}

impl SlotShare {
    /// The slots each server is guaranteed.
    pub fn floor(&self) -> usize {
        (self.slots / (2 * self.servers.max(1))).max(1)
    }
}

/// One server's use of the slots.
#[derive(Debug, Clone, Copy)]
struct Use {
    held: usize,
    /// The most held at once in the current demand bucket, and in the one before it.
    peak: usize,
    previous: usize,
    bucket: u64,
}

impl Use {
    fn roll(&mut self, bucket: u64) {
        if bucket != self.bucket {
            self.previous = if bucket == self.bucket + 1 { self.peak } else { 0 };
            self.peak = self.held;
            self.bucket = bucket;
        }
    }

    /// The slots kept for this server while another borrows.
    fn kept(&self, floor: usize) -> usize {
        let demand = self.peak.max(self.previous);
        (demand + 1).min(floor).saturating_sub(self.held)
    }
}

#[derive(Debug)]
struct State {
    /// Server name → index into `uses` (names are looked up without allocating).
    index: BTreeMap<String, usize>,
    uses: Vec<Use>,
    held: usize,
    /// The demand bucket the uses were last rolled to: they are rolled only when it changes, not on every call.
    bucket: u64,
}

/// The shares of one limit.
#[derive(Debug)]
pub struct SharedSlots {
    share: SlotShare,
    origin: Instant,
    state: Mutex<State>,
    freed: Notify,
}

/// One slot, given back when dropped.
#[derive(Debug)]
pub struct SlotPermit {
    slots: Option<Arc<SharedSlots>>,
    server: usize,
}

impl SlotPermit {
    /// Keeps the slot for good: the planted defect of a leaking bulkhead, nothing else.
    #[cfg(feature = "testing")]
    pub(crate) fn forget(mut self) {
        self.slots = None;
    }
}

impl Drop for SlotPermit {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            slots.release(self.server);
        }
    }
}

impl SharedSlots {
    pub fn new(share: SlotShare, origin: Instant) -> Arc<Self> {
        let state = State { index: BTreeMap::new(), uses: Vec::new(), held: 0, bucket: 0 };
        Arc::new(SharedSlots { share, origin, state: Mutex::new(state), freed: Notify::new() })
    }

    pub fn share(&self) -> SlotShare {
        self.share
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Updates are a few additions; a poisoned lock still holds consistent counts.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for one of `server`'s calls now, if its floor or what the others do not keep allows one.
    pub fn try_acquire(self: &Arc<Self>, server: &str, now: Instant) -> Option<SlotPermit> {
        let bucket = (now.saturating_duration_since(self.origin).as_nanos() / DEMAND_WINDOW.as_nanos()) as u64;
        let floor = self.share.floor();
        let mut s = self.lock();
        let me = match s.index.get(server) {
            Some(&i) => i,
            None => {
                let i = s.uses.len();
                s.uses.push(Use { held: 0, peak: 0, previous: 0, bucket });
                s.index.insert(server.to_owned(), i);
                i
            }
        };
        if bucket != s.bucket {
            s.bucket = bucket;
            for u in &mut s.uses {
                u.roll(bucket);
            }
        }
        // Servers that have not called yet keep their floor: they may wake up at any moment.
        let unseen = self.share.servers.saturating_sub(s.uses.len()) * floor;
        let kept: usize = s.uses.iter().enumerate().filter(|(i, _)| *i != me).map(|(_, u)| u.kept(floor)).sum();
        let mine = s.uses[me].held;
        if s.held >= self.share.slots || (mine >= floor && s.held + kept + unseen >= self.share.slots) {
            return None;
        }
        s.held += 1;
        let u = &mut s.uses[me];
        u.held += 1;
        u.peak = u.peak.max(u.held);
        Some(SlotPermit { slots: Some(self.clone()), server: me })
    }

    /// Waits until `deadline` for a slot, trying again at every release.
    pub async fn acquire(self: &Arc<Self>, server: &str, deadline: Instant) -> Option<SlotPermit> {
        loop {
            // Register before trying, so that a release between the try and the wait is not missed.
            let freed = self.freed.notified();
            let mut freed = std::pin::pin!(freed);
            freed.as_mut().enable();
            if let Some(p) = self.try_acquire(server, Instant::now()) {
                return Some(p);
            }
            tokio::time::timeout_at(deadline, freed).await.ok()?;
        }
    }

    fn release(&self, server: usize) {
        let mut s = self.lock();
        s.held = s.held.saturating_sub(1);
        if let Some(u) = s.uses.get_mut(server) {
            u.held = u.held.saturating_sub(1);
        }
        drop(s);
        self.freed.notify_waiters();
    }

    /// Slots held now, over every server.
    pub fn in_flight(&self) -> usize {
        self.lock().held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_are_half_the_slots_split_between_the_servers() {
        assert_eq!(SlotShare { slots: 50, servers: 2 }.floor(), 12);
        assert_eq!(SlotShare { slots: 50, servers: 3 }.floor(), 8);
        assert_eq!(SlotShare { slots: 3, servers: 4 }.floor(), 1, "never below one slot");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_server_borrows_what_an_idle_one_does_not_use_and_a_waking_one_gets_its_floor() {
        let t0 = Instant::now();
        let slots = SharedSlots::new(SlotShare { slots: 50, servers: 2 }, t0);
        // db has shown it needs two slots at a time: it keeps 2 + 1 = 3 (it holds none now).
        drop((slots.try_acquire("db", t0), slots.try_acquire("db", t0)));
        let api: Vec<_> = std::iter::from_fn(|| slots.try_acquire("api", t0)).collect();
        assert_eq!(api.len(), 47, "api borrows all but what db keeps");
        let db: Vec<_> = std::iter::from_fn(|| slots.try_acquire("db", t0)).take(20).collect();
        assert_eq!(db.len(), 3, "db takes what was kept for it, and no more while api holds the rest");
        assert_eq!(slots.in_flight(), 50);
        drop(db);
        drop(api);
        assert_eq!(slots.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_never_called_keeps_its_whole_floor() {
        let t0 = Instant::now();
        let slots = SharedSlots::new(SlotShare { slots: 50, servers: 2 }, t0);
        let api: Vec<_> = std::iter::from_fn(|| slots.try_acquire("api", t0)).collect();
        assert_eq!(api.len(), 38, "db has not called yet: its floor of 12 is kept");
        let db: Vec<_> = std::iter::from_fn(|| slots.try_acquire("db", t0)).collect();
        assert_eq!(db.len(), 12, "and it is there when db calls, whatever api holds");
    }

    #[tokio::test(start_paused = true)]
    async fn demand_is_forgotten_after_two_windows() {
        let t0 = Instant::now();
        let slots = SharedSlots::new(SlotShare { slots: 50, servers: 2 }, t0);
        let burst: Vec<_> = std::iter::from_fn(|| slots.try_acquire("db", t0)).take(12).collect();
        drop(burst);
        let api: Vec<_> = std::iter::from_fn(|| slots.try_acquire("api", t0)).collect();
        assert_eq!(api.len(), 38, "db just held 12: it keeps its floor");
        drop(api);
        let later = t0 + DEMAND_WINDOW * 2;
        let api: Vec<_> = std::iter::from_fn(|| slots.try_acquire("api", later)).collect();
        assert_eq!(api.len(), 49, "two windows on, db's demand is 0: it keeps one slot");
        drop(api);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_is_served_at_a_release_and_gives_up_at_its_deadline() {
        let t0 = Instant::now();
        let slots = SharedSlots::new(SlotShare { slots: 2, servers: 1 }, t0);
        let mut held: Vec<_> = std::iter::from_fn(|| slots.try_acquire("a", t0)).collect();
        assert_eq!(held.len(), 2);
        assert!(slots.acquire("a", t0 + Duration::from_millis(20)).await.is_none());
        assert_eq!(Instant::now() - t0, Duration::from_millis(20));
        drop(held.pop());
        assert!(slots.acquire("a", Instant::now() + Duration::from_millis(20)).await.is_some());
    }
}
