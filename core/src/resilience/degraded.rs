//! Degraded semantic responses: when the gateway will not call a tool — its breaker is open, the retry
//! budget is spent, no candidate is left — the agent gets a normal MCP tool result with `isError: true` instead of a
//! bare transport error. An LLM agent reads the text, so the text says what an agent needs to act well: this is a
//! system-level degradation, not its fault; do not retry; what to use instead (a configured fallback tool such as
//! `query_cached_inventory`, or cached data with its age told to the user). Programs read `structuredContent`:
//! `{"degraded": true, "tool", "reason", "retryAfterMs", "fallbackTool"}` (absent values are `null`, so the shape
//! never changes).
//!
//! The text is a pure function of its inputs — no timestamps, no randomness — so agents, tests and the simulator's
//! byte-identical reports can rely on it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, json};

use super::breaker::RejectReason;
use super::retry::GiveUp;
use crate::mcp::CallToolResult;

/// Why the call was not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum DegradedReason {
    BreakerOpen,
    /// The manual switch: an operator force-opened (force-degraded) the tool.
    ForcedOpen,
    #[strum(serialize = "retry_budget_exhausted")]
    BudgetExhausted,
    NoCandidate,
    /// Client-side adaptive throttling shed the call.
    Throttled,
    /// The server's bulkhead had no permit within the queue wait.
    BulkheadFull,
}

impl DegradedReason {
    fn explanation(self) -> &'static str {
        match self {
            DegradedReason::BreakerOpen => {
                "its server is failing or too slow, so the gateway's circuit breaker is open"
            }
            DegradedReason::ForcedOpen => "an operator has switched it off",
            DegradedReason::BudgetExhausted => "the gateway's retry budget for it is spent",
            DegradedReason::NoCandidate => "no healthy server offers it right now",
            DegradedReason::Throttled => "the gateway is shedding load to protect an overloaded server",
            DegradedReason::BulkheadFull => "its server is at its concurrency limit",
        }
    }
}

impl From<RejectReason> for DegradedReason {
    fn from(r: RejectReason) -> Self {
        match r {
            RejectReason::Open | RejectReason::HalfOpenFull => DegradedReason::BreakerOpen,
            RejectReason::ForcedOpen => DegradedReason::ForcedOpen,
        }
    }
}

impl DegradedReason {
    /// The degraded reason for a retry given up on, if the give-up is one the gateway imposed (the budget). Other
    /// give-ups end with the call's own error.
    pub fn from_give_up(g: GiveUp) -> Option<Self> {
        (g == GiveUp::Budget).then_some(DegradedReason::BudgetExhausted)
    }
}

/// Fallback tools, configured per tool: `inventory_lookup` → `query_cached_inventory`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fallbacks {
    by_tool: BTreeMap<String, String>,
}

impl Fallbacks {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, tool: impl Into<String>, fallback: impl Into<String>) -> Self {
        self.by_tool.insert(tool.into(), fallback.into());
        self
    }

    pub fn get(&self, tool: &str) -> Option<&str> {
        self.by_tool.get(tool).map(String::as_str)
    }

    /// The degraded result for `tool`, with its configured fallback.
    pub fn result(&self, tool: &str, reason: DegradedReason, retry_after: Option<Duration>) -> CallToolResult {
        degraded_result(tool, reason, retry_after, self.get(tool))
    }
}

/// Builds the degraded result. `retry_after` is when the gateway expects the tool back, if known; it is told to the
/// agent as information ("in about N s"), never as an invitation to retry sooner.
pub fn degraded_result(
    tool: &str,
    reason: DegradedReason,
    retry_after: Option<Duration>,
    fallback: Option<&str>,
) -> CallToolResult {
    let retry_ms = retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut text = format!(
        "System-level degradation: the tool `{tool}` is temporarily unavailable because {}. This is not a problem \
         with your request, and the call was not made. Do not retry it",
        reason.explanation()
    );
    match retry_ms {
        Some(ms) => text.push_str(&format!("; the gateway expects it back in about {} s.", ms.div_ceil(1000).max(1))),
        None => text.push('.'),
    }
    match fallback {
        Some(f) => text.push_str(&format!(" Use the fallback tool `{f}` instead.")),
        None => text.push_str(" If you have cached data, use it and tell the user how fresh it is."),
    }
    let mut result = CallToolResult::text(text, true);
    result.structured_content = Some(json!({
        "degraded": true,
        "tool": tool,
        "reason": <&str>::from(reason),
        "retryAfterMs": retry_ms,
        "fallbackTool": fallback,
    }));
    result.meta = None;
    result.extra = Map::new();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resilience::breaker::{HealthVerdict, classify_result};

    #[test]
    fn breaker_open_with_fallback_text_and_fields_are_pinned() {
        let fallbacks = Fallbacks::new().with("inventory_lookup", "query_cached_inventory");
        let r = fallbacks.result("inventory_lookup", RejectReason::Open.into(), Some(Duration::from_millis(4200)));
        assert!(r.is_error);
        assert_eq!(
            r.joined_text(),
            "System-level degradation: the tool `inventory_lookup` is temporarily unavailable because its server is \
             failing or too slow, so the gateway's circuit breaker is open. This is not a problem with your request, \
             and the call was not made. Do not retry it; the gateway expects it back in about 5 s. Use the fallback \
             tool `query_cached_inventory` instead."
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({
                "content": [{"type": "text", "text": r.joined_text()}],
                "isError": true,
                "structuredContent": {"degraded": true, "tool": "inventory_lookup", "reason": "breaker_open",
                    "retryAfterMs": 4200, "fallbackTool": "query_cached_inventory"},
            })
        );
    }

    #[test]
    fn without_fallback_or_retry_after_it_points_to_cached_data() {
        let r = Fallbacks::new().result("place_order", DegradedReason::BudgetExhausted, None);
        assert_eq!(
            r.joined_text(),
            "System-level degradation: the tool `place_order` is temporarily unavailable because the gateway's retry \
             budget for it is spent. This is not a problem with your request, and the call was not made. Do not \
             retry it. If you have cached data, use it and tell the user how fresh it is."
        );
        let s = r.structured_content.as_ref().unwrap();
        assert_eq!(
            (s["reason"].as_str(), s["retryAfterMs"].is_null(), s["fallbackTool"].is_null()),
            (Some("retry_budget_exhausted"), true, true)
        );
        assert_eq!(r, degraded_result("place_order", DegradedReason::BudgetExhausted, None, None), "deterministic");
        // A gateway in front of this one reads the degradation as a failure, not as a business answer.
        assert_eq!(classify_result(&r), HealthVerdict::Failure);
        let r = degraded_result("t", DegradedReason::BreakerOpen, Some(Duration::from_millis(10)), None);
        assert_eq!(classify_result(&r), HealthVerdict::RetryAfter(Duration::from_millis(10)));
        assert_eq!(DegradedReason::from_give_up(GiveUp::Budget), Some(DegradedReason::BudgetExhausted));
        assert_eq!(DegradedReason::from_give_up(GiveUp::Deadline), None);
        assert_eq!(<&str>::from(DegradedReason::from(RejectReason::ForcedOpen)), "forced_open");
    }
}
