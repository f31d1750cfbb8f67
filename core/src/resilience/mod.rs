//! Resilience: what keeps one slow server from taking the gateway down with it.
//!
//! - [`breaker`]: the circuit breaker (the gateway keeps one per (replica, tool)) — a pure state machine and the gate
//!   on the call path.
//! - [`budget`]: the retry budget (retries ≤ ratio × requests + a floor); [`throttle`]: client-side adaptive
//!   throttling (Google SRE), one per replica in the gateway; [`retry`]: which operations retry, one deadline for all
//!   attempts; [`backoff`]: the wait between attempts, for retries and the client's reconnects alike.
//! - [`limiter`]: adaptive concurrency (AIMD, Gradient2) and the limiter-backed permit pool; [`bulkhead`]: one such
//!   pool per replica by default (per server on request), capped by what the replica declares.
//! - [`inflight`]: the fixed in-flight cap a client shares across all its connections.
//! - [`degraded`]: the `isError` tool result an agent gets instead of a call the gateway will not make.
//! - [`ring`]: the time-bucketed sliding window the others count with.
//!
//! Everything here is driven from outside: `now` (a `tokio::time::Instant`) and outcomes come in as arguments,
//! randomness from an injected [`crate::rt::SeededRng`]. No clock reads, so the same code runs in production and,
//! deterministically, inside the simulator.

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod degraded;
pub mod inflight;
pub mod limiter;
pub mod retry;
pub mod ring;
pub mod throttle;
