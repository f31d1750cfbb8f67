//! Call history: every call to a server as a [`ServerCallRecord`], kept in a bounded ring, for three uses:
//!
//! - **Resume.** The history is serde-serialisable with the rest of a workflow's state; after a crash,
//!   [`CallHistory::completed`] says which calls already succeeded so they are not made again.
//! - **Idempotency.** [`IdempotencyCache`]: read-only or idempotent tools answered from a recent identical call.
//! - **Failure attribution.** [`CallHistory::attribute_failure`]: the last non-success, its server and code, and
//!   that server's metrics in the window before it.
//!
//! The history is a plain value the caller owns and feeds (`begin` before a call, `record` after): it does not
//! reach into the client. Inputs and outputs are identified by the SHA-256 of their canonical JSON
//! ([`ContentHash`], the same digest as the capability record's ETag), never stored, so the history holds no arguments
//! or results, and with them no secrets.
//!
//! Two clocks, for two purposes. The record's `timestamp_ms` is wall time from the [`Clock`] seam, for people and
//! for correlating with logs; it can be skewed and can jump. Windows and ordering use `start_offset`, monotonic time
//! from the history's origin. A restored history sets a new origin at its first `begin` and continues the offsets
//! from the end of its last record, so offsets keep increasing across a resume (the time the process was down is
//! not counted).
//!
//! Bounded: the ring keeps `capacity` records and drops the oldest, counting what it dropped; `seq` keeps counting,
//! so a reader sees the gap. The resume index holds one 32-byte digest per successful record still in the ring.

mod attribution;
mod idempotency;
mod record;

use std::collections::{BTreeMap, VecDeque};
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::schema::ContentHash;
pub use attribution::{FailureAttribution, WindowMetrics};
pub use idempotency::{CacheStats, IdempotencyCache, IdempotencyConfig, PutOutcome};
pub use record::{CallCode, CallKey, CallStart, CallStatus, ServerCallRecord, result_hash};

use crate::error::CallError;
use crate::mcp::CallToolResult;
use crate::rt::Clock;

/// The format version written into saved histories.
const STATE_VERSION: u32 = 1;

/// A bounded, serde-serialisable history of calls.
///
/// Defaults (see [`CallHistory::new`]): attribution window 60 s.
#[derive(Debug, Clone)]
pub struct CallHistory {
    capacity: usize,
    records: VecDeque<ServerCallRecord>,
    /// The `seq` the next record gets.
    next_seq: u64,
    /// Records pushed out of the ring.
    dropped: u64,
    attribution_window: Duration,
    /// Offset at the origin: 0 for a new history; for a restored one, the latest end offset it held.
    base: Duration,
    /// Monotonic origin, set at the first `begin` (never serialised: instants do not survive a process).
    origin: OnceLock<Instant>,
    /// Resume index: key digest of (server, tool, input) -> `seq` of the latest successful record still held.
    completed: BTreeMap<[u8; 32], u64>,
}

impl CallHistory {
    /// The default window of [`CallHistory::attribute_failure`].
    pub const DEFAULT_ATTRIBUTION_WINDOW: Duration = Duration::from_secs(60);

    /// A history that keeps at most `capacity` records (at least 1).
    pub fn new(capacity: usize) -> Self {
        CallHistory {
            capacity: capacity.max(1),
            records: VecDeque::new(),
            next_seq: 0,
            dropped: 0,
            attribution_window: Self::DEFAULT_ATTRIBUTION_WINDOW,
            base: Duration::ZERO,
            origin: OnceLock::new(),
            completed: BTreeMap::new(),
        }
    }

    /// How far before a failure [`CallHistory::attribute_failure`] looks.
    pub fn with_attribution_window(mut self, window: Duration) -> Self {
        self.attribution_window = window;
        self
    }

    /// Reads the clock before a call: wall time for the record, monotonic time for its offset and duration.
    pub fn begin(&self, clock: &dyn Clock) -> CallStart {
        let origin = *self.origin.get_or_init(|| clock.now());
        CallStart::from_clock(clock, origin, self.base)
    }

    /// Records a finished call (hashing its result) and returns the record's `seq`.
    pub fn record(
        &mut self,
        start: CallStart,
        key: CallKey,
        outcome: Result<&CallToolResult, &CallError>,
        retries: u32,
    ) -> u64 {
        self.push(ServerCallRecord::new(start, key, outcome, retries))
    }

    /// Appends a record built by the caller; its `seq` is overwritten with the next one, which is returned. The
    /// oldest record is dropped when the ring is full.
    pub fn push(&mut self, mut record: ServerCallRecord) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        record.seq = seq;
        if self.records.len() >= self.capacity {
            if let Some(old) = self.records.pop_front() {
                self.dropped += 1;
                if old.is_success() {
                    let digest = old.key_digest();
                    if self.completed.get(&digest) == Some(&old.seq) {
                        self.completed.remove(&digest);
                    }
                }
            }
        }
        if record.is_success() {
            self.completed.insert(record.key_digest(), seq);
        }
        self.records.push_back(record);
        seq
    }

    /// The latest successful call of `tool` on `server` with this input hash, if the ring still holds it: a resumed
    /// workflow can skip that call.
    pub fn completed(&self, input_hash: &ContentHash, tool: &str, server: &str) -> Option<&ServerCallRecord> {
        let seq = *self.completed.get(&CallKey::digest(server, tool, input_hash))?;
        let r = self.get(seq)?;
        // The index is keyed by a digest; compare the parts anyway.
        (r.is_success() && r.server == server && r.tool == tool && r.input_sha256 == *input_hash).then_some(r)
    }

    /// The record with this `seq`, if still held.
    pub fn get(&self, seq: u64) -> Option<&ServerCallRecord> {
        let first = self.records.front()?.seq;
        let i = usize::try_from(seq.checked_sub(first)?).ok()?;
        self.records.get(i)
    }

    /// The last non-success, its server, tool, status and code, and that server's metrics in the attribution
    /// window before it. `None` when every held record succeeded.
    pub fn attribute_failure(&self) -> Option<FailureAttribution> {
        self.attribute_failure_within(self.attribution_window)
    }

    /// [`CallHistory::attribute_failure`] with an explicit window.
    pub fn attribute_failure_within(&self, window: Duration) -> Option<FailureAttribution> {
        let failed = self.records.iter().rev().find(|r| !r.is_success())?;
        let from = failed.start_offset.saturating_sub(window);
        let around = self
            .records
            .iter()
            .filter(|r| r.server == failed.server && r.start_offset >= from && r.start_offset <= failed.start_offset);
        Some(FailureAttribution { record: failed.clone(), window, server_metrics: WindowMetrics::of(around) })
    }

    /// Held records, oldest first.
    pub fn records(&self) -> impl DoubleEndedIterator<Item = &ServerCallRecord> + ExactSizeIterator {
        self.records.iter()
    }

    /// The held records, oldest first, consuming the history.
    pub fn into_records(self) -> Vec<ServerCallRecord> {
        self.records.into()
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Records pushed out of the ring so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Records ever pushed (held plus dropped).
    pub fn total(&self) -> u64 {
        self.next_seq
    }
}

/// The saved form. `version` lets a later format refuse or migrate an old one.
#[derive(Serialize)]
struct StateRef<'a> {
    version: u32,
    capacity: usize,
    next_seq: u64,
    dropped: u64,
    attribution_window_ms: u64,
    records: &'a VecDeque<ServerCallRecord>,
}

#[derive(Deserialize)]
struct State {
    version: u32,
    capacity: usize,
    next_seq: u64,
    dropped: u64,
    attribution_window_ms: u64,
    records: VecDeque<ServerCallRecord>,
}

impl Serialize for CallHistory {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StateRef {
            version: STATE_VERSION,
            capacity: self.capacity,
            next_seq: self.next_seq,
            dropped: self.dropped,
            attribution_window_ms: u64::try_from(self.attribution_window.as_millis()).unwrap_or(u64::MAX),
            records: &self.records,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for CallHistory {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let state = State::deserialize(d)?;
        CallHistory::restore(state).map_err(serde::de::Error::custom)
    }
}

impl CallHistory {
    /// Checks a saved history and rebuilds what is not saved (the resume index, the offset base).
    fn restore(state: State) -> Result<CallHistory, String> {
        if state.version != STATE_VERSION {
            return Err(format!("call history version {} is not supported (expected {STATE_VERSION})", state.version));
        }
        if state.capacity == 0 {
            return Err("call history capacity must be at least 1".into());
        }
        if state.records.len() > state.capacity {
            return Err(format!(
                "call history holds {} records, more than its capacity {}",
                state.records.len(),
                state.capacity
            ));
        }
        let first = state.next_seq.checked_sub(state.records.len() as u64);
        match first {
            Some(first) if first == state.dropped => {}
            _ => {
                return Err(format!(
                    "call history counts do not add up: next_seq {} but {} records held and {} dropped",
                    state.next_seq,
                    state.records.len(),
                    state.dropped
                ));
            }
        }
        let mut completed = BTreeMap::new();
        let mut base = Duration::ZERO;
        for (i, r) in state.records.iter().enumerate() {
            let expected = state.dropped + i as u64;
            if r.seq != expected {
                return Err(format!("call history record {i} has seq {}, expected {expected}", r.seq));
            }
            if r.is_success() {
                completed.insert(r.key_digest(), r.seq);
            }
            base = base.max(r.end_offset());
        }
        Ok(CallHistory {
            capacity: state.capacity,
            records: state.records,
            next_seq: state.next_seq,
            dropped: state.dropped,
            attribution_window: Duration::from_millis(state.attribution_window_ms),
            base,
            origin: OnceLock::new(),
            completed,
        })
    }
}

#[cfg(test)]
mod tests;
