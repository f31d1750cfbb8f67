//! The table of requests in flight in one scope: an NDJSON connection, a Streamable HTTP session, or one HTTP request
//! of a session-less client. Requests are answered and cancelled through it, whatever the transport.
//!
//! A task claims its request's slot before it answers; a cancellation removes the slot and aborts the task, so
//! exactly one of them wins and a cancelled request is never answered.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::sync::{Mutex, MutexGuard};

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject, RequestId};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::stats::Counters;

#[derive(Debug)]
pub(crate) struct InFlight {
    slots: Mutex<BTreeMap<RequestId, Slot>>,
    /// Signalled when a request leaves the table, for [`InFlight::drained`].
    left: Notify,
    /// Most requests in the table at once (`max_in_flight_per_connection`).
    max: usize,
}

#[derive(Debug)]
struct Slot {
    /// `None` only between the spawn and the line after it.
    task: Option<AbortHandle>,
    /// A `tools/call` (counted in the stats), not a ping or list.
    call: bool,
}

impl InFlight {
    pub fn new(max: usize) -> InFlight {
        InFlight { slots: Mutex::default(), left: Notify::new(), max }
    }

    fn slots(&self) -> MutexGuard<'_, BTreeMap<RequestId, Slot>> {
        // Held for single map operations only; a panic inside one cannot tear the map.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a slot for `id`, or says why not: the id is already in flight, or the table is full.
    pub fn enter(&self, id: &RequestId, call: bool) -> Result<(), ErrorObject> {
        let mut slots = self.slots();
        let full = slots.len() >= self.max;
        // One walk of the map for the check and the insert.
        let Entry::Vacant(slot) = slots.entry(id.clone()) else {
            return Err(ErrorObject::new(ErrorCode::INVALID_REQUEST, format!("request id {id} is already in flight")));
        };
        if full {
            let msg = format!("server busy: {} requests already in flight on this connection", self.max);
            return Err(ErrorObject::new(ErrorCode(-32000), msg));
        }
        slot.insert(Slot { task: None, call });
        Ok(())
    }

    /// Records the task answering `id` (right after its spawn), so a cancellation can abort it.
    pub fn started(&self, id: &RequestId, task: AbortHandle) {
        if let Some(slot) = self.slots().get_mut(id) {
            slot.task = Some(task);
        }
    }

    /// Claims the right to answer `id`. False when the request was cancelled (or its scope closed).
    pub fn claim(&self, id: &RequestId) -> bool {
        let claimed = self.slots().remove(id).is_some();
        // `notify_one` keeps a permit when no one waits yet, so `drained` cannot miss the last departure.
        self.left.notify_one();
        claimed
    }

    /// Cancels `id` if it is still unanswered: its task is aborted (returning its worker) and a call is counted as
    /// cancelled. False when it was not in flight (answered already, or unknown): the spec says ignore that.
    pub fn cancel(&self, counters: &Counters, id: &RequestId) -> bool {
        let Some(slot) = self.slots().remove(id) else {
            return false;
        };
        self.left.notify_one();
        if let Some(task) = slot.task {
            task.abort();
        }
        if slot.call {
            Counters::bump(&counters.cancelled);
        }
        true
    }

    pub fn is_empty(&self) -> bool {
        self.slots().is_empty()
    }

    /// Resolves once no request is in flight.
    pub async fn drained(&self) {
        while !self.is_empty() {
            self.left.notified().await;
        }
    }

    /// Aborts everything still in flight (the scope closed) and counts the calls among them as abandoned.
    pub fn abandon_all(&self, counters: &Counters) {
        let slots = std::mem::take(&mut *self.slots());
        let mut abandoned = 0;
        for slot in slots.into_values() {
            if let Some(task) = slot.task {
                task.abort();
            }
            abandoned += u64::from(slot.call);
        }
        Counters::add(&counters.abandoned, abandoned);
    }
}
