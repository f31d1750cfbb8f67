//! Property tests for the wire layer and the connection core.
//!
//! - The JSON-RPC codec round-trips every message and always fits the newline framing (`codec`).
//! - The line framing delivers a message sequence intact whatever the read splits, and survives arbitrary garbage:
//!   no panic, bounded frames, termination, resynchronisation on the next newline (`framing`).
//! - A connection driven by a random script (calls, answers, errors, late and unknown responses, progress, cancels,
//!   time jumps, garbage, disconnects) resolves every call exactly once, never to another caller, and drains its
//!   pending table and permits to zero (`connection`).
//! - Sessions under an arbitrary server clock (offset, linear drift, step jumps) and random call gaps: no call goes
//!   out on a session the server already considers expired, except the one that discovers it (then resent once)
//!   (`sessions`).
//!
//! The strategies are in `messages` and `garbage`. Case counts default per test and follow `PROPTEST_CASES` when
//! set. Every async case runs on its own paused current-thread runtime, so a case is deterministic and a failure
//! shrinks to a minimal script.
//!
//! `regressions` holds minimised counter-examples the connection property once found in the core (fixed).

mod codec;
mod connection;
mod framing;
mod garbage;
mod messages;
mod regressions;
mod sessions;

use std::time::Duration;

use proptest::prelude::*;

/// `PROPTEST_CASES` wins; otherwise each test's own default keeps the debug-build run to a few seconds.
pub(crate) fn config(default_cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default_cases);
    let persistence = proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions");
    ProptestConfig { cases, failure_persistence: Some(Box::new(persistence)), ..ProptestConfig::default() }
}

/// A paused current-thread runtime: virtual time only moves when every task is idle (or we move it), so a case
/// replays identically and a hang shows up as a timeout firing in virtual time instead of a stuck test.
pub(crate) fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("tokio runtime")
}

/// Virtual time after which an await that should complete without time passing counts as a hang.
pub(crate) const HANG: Duration = Duration::from_secs(3600);
