//! Agent models: what an agent does after an attempt of a logical call failed. Agents cause storms, so
//! the simulator needs the kinds that do and the kind that does not:
//!
//! | model        | retries                        | arguments                    | degraded result |
//! |--------------|--------------------------------|------------------------------|-----------------|
//! | `none`       | never                          |                              |                 |
//! | `immediate`  | at once, up to `max_retries`   | the same                     | stops           |
//! | `reflective` | at once, up to `max_retries`   | changed every retry          | stops           |
//! | `polite`     | after full-jitter backoff      | the same                     | stops           |
//! | `stubborn`   | at once, up to `max_retries`   | the same                     | **retries**     |
//!
//! A degraded result (`isError: true` with `structuredContent.degraded == true`) is the gateway saying "this is a
//! system-level degradation, do not retry": every model but `stubborn` honours it. Every model but `stubborn` also
//! stops at a "too many requests" answer ([`too_many_requests`]), since the rmcp and Python SDK clients hand it to
//! their caller without retrying it, unless the agent's `retry_after` option makes it wait what the answer names. `reflective` mimics an LLM that
//! "tries again differently": it rephrases its first string argument (or adds a `retry_note` when it has none), so a
//! result cache or an idempotency key derived from the arguments never recognises the retry.

use std::sync::OnceLock;
use std::time::Duration;

use mcpstorm_core::CallError;
use mcpstorm_core::mcp::CallToolResult;
use mcpstorm_core::resilience::Backoff;
use mcpstorm_core::{McpClient, SeededRng};
use serde_json::{Value, json};

use crate::scenario::{Agent, RetryMode};
use crate::seed::Seed;

/// A logical call's own random stream (the polite backoff's jitter), fixed by the run's seed and the call's intended
/// start. Made on first draw: only `polite` agents draw, and making a stream for every call cost more than the rest
/// of the agent. Boxed once made: a stream is a few hundred bytes, and inline it would enlarge every call's future.
#[derive(Debug)]
pub struct AgentRng {
    run: Seed,
    intended: Duration,
    made: OnceLock<Box<SeededRng>>,
}

impl AgentRng {
    pub fn for_call(run: Seed, intended: Duration) -> AgentRng {
        AgentRng { run, intended, made: OnceLock::new() }
    }

    fn get(&self) -> &SeededRng {
        self.made.get_or_init(|| self.run.fork("agent").fork(&self.intended.as_nanos().to_string()).seeded_rng().into())
    }
}

/// What the agent does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Done: the call succeeded, the agent gives up, or the gateway said not to retry.
    Stop,
    /// Another attempt after `after`, with these arguments.
    Retry { after: Duration, args: Value },
}

/// Whether a result is the gateway's degraded answer.
pub fn is_degraded(result: &CallToolResult) -> bool {
    result.is_error
        && result.structured_content.as_ref().and_then(|s| s.get("degraded")).and_then(Value::as_bool) == Some(true)
}

/// The agent's decision after attempt number `attempt` (0 for the first) of a call with arguments `args` ended with
/// `result`. `rng` is the agent's own seeded stream (the polite backoff's jitter).
pub fn next(
    agent: &Agent,
    attempt: u32,
    result: Result<&CallToolResult, &CallError>,
    args: &Value,
    rng: &AgentRng,
) -> Next {
    let failed = match result {
        Ok(r) if !r.is_error => return Next::Stop,
        Ok(r) => {
            if is_degraded(r) && agent.retry != RetryMode::Stubborn {
                return Next::Stop;
            }
            true
        }
        Err(_) => true,
    };
    if let Some(wait) = too_many_requests(result)
        && agent.retry != RetryMode::Stubborn
    {
        if !agent.retry_after || attempt >= agent.max_retries {
            return Next::Stop;
        }
        let after = wait.unwrap_or(agent.backoff.0).min(agent.backoff_cap.0);
        return Next::Retry { after, args: args.clone() };
    }
    if !failed || !agent.retry.retries() || attempt >= agent.max_retries {
        return Next::Stop;
    }
    match agent.retry {
        RetryMode::None => Next::Stop,
        RetryMode::Immediate | RetryMode::Stubborn => Next::Retry { after: Duration::ZERO, args: args.clone() },
        RetryMode::Reflective => Next::Retry { after: Duration::ZERO, args: rephrase(args, attempt + 1) },
        RetryMode::Polite => {
            let backoff = Backoff::FullJitter { base: agent.backoff.0, cap: agent.backoff_cap.0 };
            Next::Retry { after: backoff.delay(attempt, rng.get()), args: args.clone() }
        }
    }
}

/// Whether an attempt's failure says "too many requests", and the wait it names: HTTP 429, or 503 with `Retry-After`
/// (the core's client turns them into a JSON-RPC -32000 with `data.httpStatus`, and `data.retryAfterMs` when a
/// wait was named), or a JSON-RPC error whose message says so (a gateway's front over stdio).
pub fn too_many_requests(result: Result<&CallToolResult, &CallError>) -> Option<Option<Duration>> {
    let Err(CallError::Protocol(e)) = result else { return None };
    let data = e.data.as_ref();
    let status = data.and_then(|d| d.get("httpStatus")).and_then(Value::as_u64);
    let wait = data
        .and_then(|d| d.get("retryAfterMs"))
        .and_then(Value::as_f64)
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map(|ms| Duration::from_millis(ms as u64));
    let said = e.message.to_ascii_lowercase().contains("too many requests");
    (status == Some(429) || (status == Some(503) && wait.is_some()) || said).then_some(wait)
}

/// The arguments of retry number `retry` of a reflective agent: its first string argument (in key order) with a
/// rephrasing appended, or, with no string argument, an added `retry_note`.
fn rephrase(args: &Value, retry: u32) -> Value {
    let mut out = args.clone();
    let Some(obj) = out.as_object_mut() else { return out };
    let mut keys: Vec<String> = obj.keys().cloned().collect();
    keys.sort();
    let first_string = keys.into_iter().find(|k| obj.get(k).is_some_and(Value::is_string));
    match first_string {
        Some(k) => {
            if let Some(Value::String(s)) = obj.get_mut(&k) {
                s.push_str(&format!(" (rephrased, try {})", retry + 1));
            }
        }
        None => {
            obj.insert("retry_note".to_owned(), json!(format!("second thoughts #{retry}")));
        }
    }
    out
}

/// The arguments an agent sends: the mix entry's, plus every *required* property they lack, filled from the schema
/// the gateway shows now (as an LLM agent builds its call from the tool schema it is given): the property's
/// `default`, else its first `examples` entry, else a zero value of its `type`.
///
/// So agents follow a drift exactly as far as the gateway lets them see it: after a re-fetch (default profile) they
/// adapt; with schemas cached forever (naive profile) they never do. A renamed tool is not chased: the gateway
/// reports the old name as unknown, as it would to an agent holding a stale plan.
pub async fn agent_arguments(client: &McpClient, tool: &str, args: Value) -> Value {
    let Ok(caps) = client.capabilities().await else { return args };
    let Some(entry) = caps.tool(tool) else { return args };
    fill_required(&entry.tool().input_schema, args)
}

/// `args` with each property `schema.required` names but `args` lacks filled in (see [`agent_arguments`]).
pub(crate) fn fill_required(schema: &Value, mut args: Value) -> Value {
    let (Some(required), Some(obj)) = (schema.get("required").and_then(Value::as_array), args.as_object_mut()) else {
        return args;
    };
    for name in required.iter().filter_map(Value::as_str) {
        if obj.contains_key(name) {
            continue;
        }
        let prop = schema.get("properties").and_then(|p| p.get(name));
        let value = prop
            .and_then(|p| p.get("default").or_else(|| p.get("examples").and_then(|e| e.get(0))))
            .cloned()
            .unwrap_or_else(|| zero_of(prop.and_then(|p| p.get("type"))));
        obj.insert(name.to_owned(), value);
    }
    args
}

/// A zero value of a JSON Schema `type` (the first listed, for a list); `null` when there is none.
fn zero_of(ty: Option<&Value>) -> Value {
    let name = match ty {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Array(list)) => list.first().and_then(Value::as_str).unwrap_or("null"),
        _ => "null",
    };
    match name {
        "string" => json!(""),
        "integer" | "number" => json!(0),
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => json!({}),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpstorm_core::CallError;
    use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
    use mcpstorm_core::resilience::{DegradedReason, degraded_result};

    fn agent(retry: RetryMode) -> Agent {
        Agent { retry, max_retries: 3, ..Agent::default() }
    }

    fn failure() -> CallError {
        CallError::MalformedResponse("boom".into())
    }

    fn rng() -> AgentRng {
        AgentRng::for_call(Seed::new(1), Duration::ZERO)
    }

    #[test]
    fn every_model_stops_on_success_and_after_max_retries() {
        let ok = CallToolResult::text("fine", false);
        for mode in
            [RetryMode::None, RetryMode::Immediate, RetryMode::Reflective, RetryMode::Polite, RetryMode::Stubborn]
        {
            let a = agent(mode);
            assert_eq!(next(&a, 0, Ok(&ok), &json!({}), &rng()), Next::Stop, "{mode:?}");
            assert_eq!(next(&a, 3, Err(&failure()), &json!({}), &rng()), Next::Stop, "{mode:?}");
        }
        assert_eq!(next(&agent(RetryMode::None), 0, Err(&failure()), &json!({}), &rng()), Next::Stop);
    }

    #[test]
    fn only_the_stubborn_agent_retries_a_degraded_result() {
        let degraded = degraded_result("lookup", DegradedReason::BreakerOpen, None, Some("lookup_cached"));
        assert!(is_degraded(&degraded));
        for mode in [RetryMode::Immediate, RetryMode::Reflective, RetryMode::Polite] {
            assert_eq!(next(&agent(mode), 0, Ok(&degraded), &json!({}), &rng()), Next::Stop, "{mode:?}");
        }
        let stubborn = next(&agent(RetryMode::Stubborn), 0, Ok(&degraded), &json!({"q": 1}), &rng());
        assert_eq!(stubborn, Next::Retry { after: Duration::ZERO, args: json!({"q": 1}) });
        // An ordinary tool error (not degraded) is retried by the naive agent.
        let tool_error = CallToolResult::text("db timeout", true);
        assert!(!is_degraded(&tool_error));
        assert!(matches!(
            next(&agent(RetryMode::Immediate), 0, Ok(&tool_error), &json!({}), &rng()),
            Next::Retry { .. }
        ));
    }

    fn too_many(status: u16, retry_after_ms: Option<u64>) -> CallError {
        let mut e = ErrorObject::new(ErrorCode(-32000), format!("server overloaded: HTTP {status}"));
        let mut data = json!({"httpStatus": status});
        if let Some(ms) = retry_after_ms {
            data["retryAfterMs"] = json!(ms);
        }
        e.data = Some(data);
        CallError::Protocol(e)
    }

    #[test]
    fn too_many_requests_ends_the_call_as_the_sdks_do_unless_the_agent_honours_retry_after() {
        let stdio = CallError::Protocol(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            "too many requests in flight on this session",
        ));
        let busy = [too_many(429, Some(1000)), too_many(429, None), too_many(503, Some(2000)), stdio];
        for e in &busy {
            assert!(too_many_requests(Err(e)).is_some(), "{e}");
            for mode in [RetryMode::None, RetryMode::Immediate, RetryMode::Reflective, RetryMode::Polite] {
                assert_eq!(next(&agent(mode), 0, Err(e), &json!({}), &rng()), Next::Stop, "{mode:?} {e}");
            }
        }
        // A 503 that names no wait is an ordinary failure, retried by the models that retry.
        assert_eq!(too_many_requests(Err(&too_many(503, None))), None);
        assert!(matches!(
            next(&agent(RetryMode::Immediate), 0, Err(&too_many(503, None)), &json!({}), &rng()),
            Next::Retry { .. }
        ));
        // With the option, any model (even `none`) waits what the answer names, capped, and retries the same call.
        let honours = |retry| Agent { retry_after: true, ..agent(retry) };
        let args = json!({"q": "x"});
        let ms = Duration::from_millis;
        let waits: Vec<Next> = busy.iter().map(|e| next(&honours(RetryMode::None), 0, Err(e), &args, &rng())).collect();
        let retry = |after| Next::Retry { after, args: args.clone() };
        assert_eq!(waits, [retry(ms(1000)), retry(ms(500)), retry(ms(2000)), retry(ms(500))], "backoff when unnamed");
        let capped = Agent { backoff_cap: crate::scenario::Dur(ms(1500)), ..honours(RetryMode::Reflective) };
        assert_eq!(next(&capped, 0, Err(&busy[2]), &args, &rng()), retry(ms(1500)));
        assert_eq!(next(&honours(RetryMode::Polite), 3, Err(&busy[0]), &args, &rng()), Next::Stop, "max_retries");
        // The stubborn agent does not listen: at once, as for any failure.
        assert_eq!(next(&agent(RetryMode::Stubborn), 0, Err(&busy[0]), &args, &rng()), retry(Duration::ZERO));
    }

    #[test]
    fn reflective_agents_change_their_arguments_every_retry() {
        let a = agent(RetryMode::Reflective);
        let args = json!({"sku": "A-1", "count": 2});
        let Next::Retry { after, args: first } = next(&a, 0, Err(&failure()), &args, &rng()) else { panic!() };
        let Next::Retry { args: second, .. } = next(&a, 1, Err(&failure()), &args, &rng()) else { panic!() };
        assert_eq!(after, Duration::ZERO);
        assert_ne!(first, args);
        assert_ne!(first, second);
        assert_eq!(first["count"], 2);
        let Next::Retry { args: noted, .. } = next(&a, 0, Err(&failure()), &json!({"n": 1}), &rng()) else { panic!() };
        assert!(noted.get("retry_note").is_some());
    }

    #[test]
    fn polite_backoff_is_full_jitter_below_a_doubling_capped_ceiling() {
        let a = Agent { backoff_cap: crate::scenario::Dur(Duration::from_secs(2)), ..agent(RetryMode::Polite) };
        let r = rng();
        for attempt in 0..3 {
            let ceiling = Duration::from_millis(500 * (1 << attempt)).min(Duration::from_secs(2));
            for _ in 0..50 {
                let Next::Retry { after, .. } = next(&a, attempt, Err(&failure()), &json!({}), &r) else { panic!() };
                assert!(after <= ceiling, "{after:?} > {ceiling:?}");
            }
        }
        // Deterministic: the same stream gives the same waits.
        let waits = |seed| {
            let r = AgentRng::for_call(Seed::new(seed), Duration::from_millis(7));
            (0..3).map(|i| next(&a, i, Err(&failure()), &json!({}), &r)).collect::<Vec<_>>()
        };
        assert_eq!(waits(5), waits(5));
    }

    #[test]
    fn agents_fill_missing_required_parameters_from_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "region": {"type": "string", "default": "eu"},
                "limit": {"type": "integer", "examples": [25, 50]},
                "exact": {"type": ["boolean", "null"]},
                "tags": {"type": "array"},
                "anything": {}
            },
            "required": ["q", "region", "limit", "exact", "tags", "anything", "undeclared"]
        });
        let filled = fill_required(&schema, json!({"q": "mine", "extra": 1}));
        let expected = json!({"q": "mine", "extra": 1, "region": "eu", "limit": 25, "exact": false, "tags": [],
            "anything": null, "undeclared": null});
        assert_eq!(filled, expected, "given values stay, defaults then examples then zeros fill the rest");
        // Optional properties are left alone, and a schema without `required` changes nothing.
        let optional = json!({"type": "object", "properties": {"n": {"type": "integer", "default": 3}}});
        assert_eq!(fill_required(&optional, json!({})), json!({}));
        assert_eq!(fill_required(&json!({"required": "nope"}), json!({"a": 1})), json!({"a": 1}));
    }
}
