//! Resilience: what keeps one slow server from taking the gateway down with it.
//!
//! - `breaker/`: the circuit breaker ([`Breaker`]; the gateway keeps one per (replica, tool)) — a pure state
//!   machine and the [`Gate`] on the call path.
//! - `budget.rs`: the retry budget ([`RetryBudget`]: retries ≤ ratio × requests + a floor); `throttle.rs`:
//!   client-side adaptive throttling ([`AdaptiveThrottle`], Google SRE), one per replica in the gateway; `retry.rs`:
//!   which operations retry, one deadline for all attempts ([`RetryPlan`]); `backoff.rs`: the wait between attempts
//!   ([`Backoff`]), for retries and the client's reconnects alike.
//! - `limiter/`: adaptive concurrency ([`Aimd`], [`Gradient2`]) and the limiter-backed permit pool ([`LimitedPool`]);
//!   `bulkhead.rs`: one such pool per replica by default (per server on request), capped by what the replica
//!   declares ([`Bulkheads`]).
//! - `inflight.rs`: the fixed in-flight cap a client shares across all its connections ([`InFlightLimit`]);
//!   `shared_slots.rs`: when the clients of several servers share one, each server's floor of it and the slots it
//!   may borrow ([`SharedSlots`]).
//! - `degraded.rs`: the `isError` tool result an agent gets instead of a call the gateway will not make
//!   ([`degraded_result`]).
//! - `ring.rs`: the time-bucketed sliding window the others count with.
//!
//! Everything here is driven from outside: `now` (a `tokio::time::Instant`) and outcomes come in as arguments,
//! randomness from an injected [`crate::rt::SeededRng`]. No clock reads, so the same code runs in production and,
//! deterministically, inside the simulator.

pub(crate) mod backoff;
pub(crate) mod breaker;
pub(crate) mod budget;
pub(crate) mod bulkhead;
pub(crate) mod degraded;
pub(crate) mod inflight;
pub(crate) mod limiter;
pub(crate) mod retry;
pub(crate) mod ring;
pub(crate) mod shared_slots;
pub(crate) mod throttle;

pub use backoff::Backoff;
pub use breaker::{
    Admission, Breaker, BreakerConfig, BreakerConfigError, BreakerCounts, BreakerState, BreakerTransition, Gate,
    HealthVerdict, ManualSwitch, Permit, RejectReason, Rejected, Ticket, TransitionReason, WindowConfig, classify,
    classify_error, classify_result, classify_rpc_error, retry_after,
};
pub use budget::{BudgetConfig, BudgetConfigError, RetryBudget};
pub use bulkhead::{BulkheadConfig, BulkheadScope, Bulkheads, ClientLimit, PoolKey};
pub use degraded::{DegradedReason, Fallbacks, degraded_result};
pub use inflight::InFlightLimit;
pub use limiter::{
    Aimd, AimdConfig, Fixed, Gradient2, Gradient2Config, LimitPermit, LimitedPool, Limiter, LimiterKind, PoolTimeout,
    Sample, SampleOutcome,
};
pub use retry::{GiveUp, RetryPlan, RetryPolicy, auto_retry_allowed};
pub use shared_slots::{SharedSlots, SlotShare};
pub use throttle::{AdaptiveThrottle, ThrottleConfig, rejection_probability};
