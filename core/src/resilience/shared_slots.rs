//! Work-conserving shares of an in-flight limit that the clients of several servers share (a load host's 50 slots).
//!
//! Each server keeps a floor of the slots that no other server can take, and may borrow any slot outside the floors.
//! A hung server (a partition that swallowed its requests, a process that stopped answering) can hold every slot
//! but the other servers' floors, so they keep being served; a server that is merely slow may use every slot the
//! others leave idle, so the gateway never sheds a call that a slow server would answer in time only because of an
//! arbitrary split. The floor is `slots / (2 × servers)` (at least 1): half the slots are floors, half are common.
//!
//! Two semaphores per call: the server's floor first, then the common pool. Both are tokio semaphores, FIFO, so
//! the simulator replays the same grants for the same seed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// An in-flight limit of `slots`, shared by the clients of `servers` servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotShare {
    pub slots: usize,
    pub servers: usize,
}

impl SlotShare {
    /// The slots each server keeps for itself.
    pub fn floor(&self) -> usize {
        (self.slots / (2 * self.servers.max(1))).max(1)
    }

    /// The slots outside every floor, which any server may borrow.
    pub fn common(&self) -> usize {
        self.slots.saturating_sub(self.floor() * self.servers)
    }
}

/// The shares of one limit: a floor semaphore per server (made on first use) and the common one.
#[derive(Debug)]
pub struct SharedSlots {
    share: SlotShare,
    common: Arc<Semaphore>,
    floors: Mutex<BTreeMap<String, Arc<Semaphore>>>,
}

impl SharedSlots {
    pub fn new(share: SlotShare) -> Self {
        SharedSlots { share, common: Arc::new(Semaphore::new(share.common())), floors: Mutex::default() }
    }

    pub fn share(&self) -> SlotShare {
        self.share
    }

    fn floor_of(&self, server: &str) -> Arc<Semaphore> {
        let mut floors = self.floors.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = floors.get(server) {
            return s.clone();
        }
        let s = Arc::new(Semaphore::new(self.share.floor()));
        floors.insert(server.to_owned(), s.clone());
        s
    }

    /// A slot for one of `server`'s calls now: its floor first, else a common one.
    pub fn try_acquire(&self, server: &str) -> Option<OwnedSemaphorePermit> {
        let floor = self.floor_of(server);
        floor.try_acquire_owned().ok().or_else(|| self.common.clone().try_acquire_owned().ok())
    }

    /// Waits until `deadline` for a slot of either kind, whichever frees first (the floor on a tie).
    pub async fn acquire(&self, server: &str, deadline: Instant) -> Option<OwnedSemaphorePermit> {
        let floor = self.floor_of(server);
        tokio::select! {
            biased;
            p = floor.acquire_owned() => p.ok(),
            p = self.common.clone().acquire_owned() => p.ok(),
            () = tokio::time::sleep_until(deadline) => None,
        }
    }

    /// Slots held now, over every server.
    pub fn in_flight(&self) -> usize {
        let floors = self.floors.lock().unwrap_or_else(PoisonError::into_inner);
        let floor = self.share.floor();
        let held = floors.values().map(|s| floor - s.available_permits().min(floor)).sum::<usize>();
        held + self.share.common() - self.common.available_permits().min(self.share.common())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn floors_are_half_the_slots_split_between_the_servers() {
        let share = SlotShare { slots: 50, servers: 2 };
        assert_eq!((share.floor(), share.common()), (12, 26));
        let share = SlotShare { slots: 50, servers: 3 };
        assert_eq!((share.floor(), share.common()), (8, 26));
        assert_eq!(SlotShare { slots: 3, servers: 4 }.floor(), 1, "never below one slot");
    }

    #[test]
    fn a_server_borrows_what_the_others_leave_idle_but_never_their_floors() {
        let slots = SharedSlots::new(SlotShare { slots: 50, servers: 2 });
        // A slow (or hung) server takes its floor and every common slot: 38 of 50.
        let held: Vec<_> = std::iter::from_fn(|| slots.try_acquire("api")).collect();
        assert_eq!(held.len(), 38);
        assert_eq!(slots.in_flight(), 38);
        // The other server's floor is still whole.
        let db: Vec<_> = (0..12).map(|_| slots.try_acquire("db").expect("db's floor")).collect();
        assert!(slots.try_acquire("db").is_none(), "and nothing more: api holds the common slots");
        drop(held);
        assert!(slots.try_acquire("db").is_some(), "db may borrow once api gave them back");
        drop(db);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_takes_whichever_slot_frees_first_and_gives_up_at_its_deadline() {
        let slots = SharedSlots::new(SlotShare { slots: 4, servers: 2 });
        let held: Vec<_> = std::iter::from_fn(|| slots.try_acquire("a")).collect();
        assert_eq!(held.len(), 3, "a's floor of 1 and the 2 common slots");
        let start = Instant::now();
        assert!(slots.acquire("a", start + Duration::from_millis(20)).await.is_none());
        assert_eq!(start.elapsed(), Duration::from_millis(20));
        let mut held = held;
        let freed = held.pop();
        drop(freed);
        assert!(slots.acquire("a", Instant::now() + Duration::from_millis(20)).await.is_some());
    }
}
