//! Retry policy: which operations retry automatically, how long to wait, and when to give up.
//!
//! - **What retries.** Only idempotent operations retry automatically: `ping`, `initialize` and
//!   `server/discover`, and tools whose annotations say read-only or idempotent
//!   ([`ToolAnnotations::idempotent`]). Any other call retries only with an explicit per-call [`RetryPolicy`] from
//!   the caller, who then vouches for it. The error must allow it too ([`CallError::retry_allowed`]).
//! - **Backoff.** Full jitter by default (AWS's "Exponential Backoff and Jitter"): the n-th retry waits uniformly in
//!   `[0, min(cap, base × 2ⁿ)]`, which spreads a crowd of clients best. The client's reconnect schedule (1, 2, 4, 8 s
//!   capped at 10 s, ±20%) is [`Backoff::RECONNECT`], the same type (see [`super::backoff`]).
//! - **One deadline for all attempts.** A retry whose backoff would end at or after the deadline is not made: the
//!   caller's time is spent once, not per attempt.
//! - **The budget last.** A retry that passes everything else asks the [`RetryBudget`]; asking earlier would spend
//!   tokens on retries that are then not made.

use std::time::Duration;

use tokio::time::Instant;

use super::backoff::Backoff;
use super::budget::RetryBudget;
use crate::error::CallError;
use crate::mcp::ToolAnnotations;
use crate::rt::SeededRng;

/// How many attempts in all (the first included) and how to wait between them.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub backoff: Backoff,
}

impl Default for RetryPolicy {
    /// Three attempts with full jitter.
    fn default() -> Self {
        RetryPolicy { max_attempts: 3, backoff: Backoff::default() }
    }
}

/// Methods that are idempotent by the protocol's definition.
const IDEMPOTENT_METHODS: [&str; 3] = ["ping", "initialize", "server/discover"];

/// Whether `method` (with the tool's annotations for `tools/call`) may retry without the caller's explicit policy.
pub fn auto_retry_allowed(method: &str, tool: Option<&ToolAnnotations>) -> bool {
    IDEMPOTENT_METHODS.contains(&method) || (method == "tools/call" && tool.is_some_and(ToolAnnotations::idempotent))
}

/// Why no retry is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum GiveUp {
    /// The error or the operation does not allow it.
    NotRetryable,
    Attempts,
    Deadline,
    #[strum(serialize = "budget_exhausted")]
    Budget,
}

/// One call's retry state: its policy, its deadline across all attempts and the attempts made so far.
#[derive(Debug, Clone)]
pub struct RetryPlan {
    policy: RetryPolicy,
    deadline: Instant,
    idempotent: bool,
    attempts: u32,
}

impl RetryPlan {
    /// `idempotent`: from [`auto_retry_allowed`], or `true` when the caller gave an explicit policy.
    pub fn new(policy: RetryPolicy, deadline: Instant, idempotent: bool) -> Self {
        RetryPlan { policy, deadline, idempotent, attempts: 0 }
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Attempts started so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Call before each attempt (the first included); the attempt's time left is `deadline − now`.
    pub fn start_attempt(&mut self) {
        self.attempts += 1;
    }

    /// After a failed attempt at `now`: wait this long and retry, or give up and say why.
    pub fn next(
        &self,
        error: &CallError,
        now: Instant,
        rng: &SeededRng,
        budget: Option<&mut RetryBudget>,
    ) -> Result<Duration, GiveUp> {
        self.next_if(error.retry_allowed(self.idempotent), now, rng, budget)
    }

    /// Whether the operation may be retried automatically (see [`RetryPlan::new`]).
    pub fn idempotent(&self) -> bool {
        self.idempotent
    }

    /// [`RetryPlan::next`] with the caller's own verdict on whether the failure is retryable — a gateway that knows
    /// the failure was the replica's (a server error from one of several replicas) may retry an idempotent call
    /// elsewhere where the error class alone would not.
    pub fn next_if(
        &self,
        retryable: bool,
        now: Instant,
        rng: &SeededRng,
        budget: Option<&mut RetryBudget>,
    ) -> Result<Duration, GiveUp> {
        if !retryable {
            return Err(GiveUp::NotRetryable);
        }
        if self.attempts >= self.policy.max_attempts {
            return Err(GiveUp::Attempts);
        }
        let delay = self.policy.backoff.delay(self.attempts.saturating_sub(1), rng);
        if now + delay >= self.deadline {
            return Err(GiveUp::Deadline);
        }
        // No budget: the policy's attempts and the deadline are the only limits.
        if budget.is_some_and(|b| !b.try_withdraw(now)) {
            return Err(GiveUp::Budget);
        }
        Ok(delay)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::{LocalError, TransportError};
    use crate::resilience::budget::BudgetConfig;

    #[test]
    fn only_idempotent_operations_retry_automatically() {
        let ann = |v| ToolAnnotations::from_value(Some(&v));
        assert!(auto_retry_allowed("ping", None) && auto_retry_allowed("initialize", None));
        assert!(auto_retry_allowed("tools/call", Some(&ann(json!({"readOnlyHint": true})))));
        assert!(auto_retry_allowed("tools/call", Some(&ann(json!({"idempotentHint": true})))));
        assert!(!auto_retry_allowed("tools/call", Some(&ann(json!({"destructiveHint": false})))));
        assert!(!auto_retry_allowed("tools/call", None));
        assert!(!auto_retry_allowed("resources/subscribe", None));
    }

    #[test]
    fn gives_up_on_error_attempts_deadline_then_budget() {
        let t0 = Instant::now();
        let rng = SeededRng::new(1);
        let reconnect =
            Backoff::Proportional { base: Backoff::RECONNECT_BASE, cap: Backoff::RECONNECT_CAP, jitter: 0.0 };
        let policy = RetryPolicy { max_attempts: 3, backoff: reconnect };
        let mut budget = RetryBudget::new(BudgetConfig::default(), t0).unwrap();
        let closed = CallError::Transport(TransportError::Closed);

        let mut plan = RetryPlan::new(policy.clone(), t0 + Duration::from_secs(60), true);
        plan.start_attempt();
        assert_eq!(plan.next(&closed, t0, &rng, Some(&mut budget)), Ok(Duration::from_secs(1)));
        plan.start_attempt();
        assert_eq!(plan.next(&closed, t0, &rng, Some(&mut budget)), Ok(Duration::from_secs(2)));
        plan.start_attempt();
        assert_eq!(plan.next(&closed, t0, &rng, Some(&mut budget)), Err(GiveUp::Attempts));

        let cancelled = CallError::Local(LocalError::Cancelled("user".into()));
        assert_eq!(plan.next(&cancelled, t0, &rng, Some(&mut budget)), Err(GiveUp::NotRetryable));
        let mut not_idempotent = RetryPlan::new(policy.clone(), t0 + Duration::from_secs(60), false);
        not_idempotent.start_attempt();
        assert_eq!(not_idempotent.next(&closed, t0, &rng, Some(&mut budget)), Err(GiveUp::NotRetryable));

        // The deadline covers every attempt: 1.5 s left cannot fit a 2 s backoff.
        let mut late = RetryPlan::new(policy.clone(), t0 + Duration::from_millis(2500), true);
        late.start_attempt();
        late.start_attempt();
        assert_eq!(late.next(&closed, t0 + Duration::from_secs(1), &rng, Some(&mut budget)), Err(GiveUp::Deadline));

        let empty = BudgetConfig { min_per_second: 0.0, ..BudgetConfig::default() };
        let mut broke = RetryBudget::new(empty, t0).unwrap();
        let mut plan = RetryPlan::new(policy, t0 + Duration::from_secs(60), true);
        plan.start_attempt();
        assert_eq!(plan.next(&closed, t0, &rng, Some(&mut broke)), Err(GiveUp::Budget));
        assert_eq!(<&str>::from(GiveUp::Budget), "budget_exhausted");
    }
}
