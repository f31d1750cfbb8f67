//! The circuit breaker, with resilience4j's threshold semantics; the gateway keeps one per (replica, tool).
//!
//! ```text
//!                 failure rate ≥ threshold, or slow-call rate ≥ threshold
//!                 (with ≥ minimum_calls in the window), or a server retry-after
//!        ┌────────┐ ──────────────────────────────────────────────────────────▶ ┌──────┐
//!        │ closed │                                                             │ open │ rejects; retry_after = rest
//!        └────────┘ ◀──────┐                                 ┌─────────────────▶ └──────┘ of the open period
//!             ▲            │ half_open_probes consecutive    │ a probe failed, was      │
//!             │            │ probe successes (growth resets) │ slow or got a retry-after;│ open period elapsed
//!             │            │                         ┌───────────┐ or no decision     │ (noticed on the next
//!             │            └──────────────────────── │ half-open │ within             │ call or `advance`)
//!             │                                      └───────────┘ half_open_max_wait  │
//!             │                                            ▲                          │
//!             │ reset (manual)                             └──────────────────────────┘
//!   manual switch, from any state: forced-open (reject all) · disabled (admit all, record nothing)
//!                                  · metrics-only (admit all, record, never trip)
//! ```
//!
//! - **Window.** Count-based (the last N calls) or time-based (ring buckets, O(1) reads; see
//!   [`crate::resilience::ring`]). A fresh window starts at every close: what happened before an open period says
//!   nothing about the server after it.
//! - **Thresholds** are inclusive (`rate ≥ threshold` trips, as resilience4j) and need `minimum_calls` in the window
//!   (capped at a count window's size), so three failures out of three calls at startup do not open a breaker whose
//!   minimum is ten. A call is slow when it takes at least `slow_call`, whether it succeeded or failed.
//! - **Open period** grows on each re-open without a successful close in between: `open ×
//!   open_growth^(n−1)`, capped at `open_max`, then scaled by a uniform factor in `1 ± open_jitter` so breakers
//!   opened together by one incident do not probe in lockstep. A successful close resets the growth. A server's
//!   retry-after (see [`classify`]) opens for exactly that long (capped at `retry_after_cap`), without growth.
//! - **Half-open** admits at most `half_open_probes` calls in flight (letting everything through turns recovery into a
//!   stampede). Any failed or slow probe re-opens; `half_open_probes` consecutive successes close. An ignored outcome
//!   (a cancellation, our own invalid arguments) frees the slot without deciding. If no decision comes within
//!   `half_open_max_wait`, it re-opens, so a probe that never reports cannot wedge the breaker.
//! - **Slowness alone.** An open that slow answers caused (not failures) refuses "for slowness alone"
//!   ([`Rejected::slow_only`]) through its open and half-open periods, until a probe fails: the gateway passes such a
//!   breaker when no replica took the call and the answer fits the call's deadline (`gateway/protected.rs`).
//! - **Epochs.** Every transition starts a new epoch; an outcome counts only toward the epoch it was admitted in, so
//!   a late answer from before an open period cannot close or trip the next one.
//! - **Events.** Every method that can change state returns the [`BreakerTransition`]; the embedder forwards it to its
//!   observer (CSV in the simulator, tracing in production). Transitions on time are noticed lazily, on the next
//!   admission, outcome or [`Gate::advance`].

mod classify;
mod config;
mod gate;
mod machine;
mod window;

#[cfg(test)]
mod slow_only_tests;
#[cfg(test)]
mod tests;

pub use classify::{
    HealthVerdict, classify, classify_error, classify_result, classify_rpc_error, limiter_sample, retry_after,
};
pub use config::{BreakerConfig, BreakerConfigError, WindowConfig};
pub use gate::{Gate, Permit};
pub use machine::{
    Admission, Breaker, BreakerState, BreakerTransition, ManualSwitch, RejectReason, Rejected, Ticket, TransitionReason,
};
pub use window::BreakerCounts;
