//! A 2026-07-28 server's input-required result (its way of asking the agent something mid-call: the questions under
//! `inputRequests`, its `requestState`) on its way to an agent. A 2026-07-28 agent gets it as it came and retries with
//! its answers, which the gateway passes on (`federation::resumed`). A 2025-11-25 agent cannot read it: the gateway
//! asks it each question over its call's stream (`Asker`) and makes the call again with the answers, as a 2026-07-28
//! client would.

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::CallToolResult;
use mcpstorm_core::serve::Asker;
use serde_json::{Map, Value};

/// Rounds of questions one 2025-11-25 agent's call may take (the Python and TypeScript SDKs' client default).
pub const MAX_ROUNDS: usize = 10;

/// Whether a tool call's result asks for input.
pub fn asks(result: &CallToolResult) -> bool {
    result.extra.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// [`asks`], of a result as a tree.
fn is(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The agent's answers to `result`'s questions, with the server's state to send back.
pub async fn answer(asker: &Asker, result: &Value) -> Result<(Map<String, Value>, Option<Value>), ErrorObject> {
    let mut responses = Map::new();
    let requests = result.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
    for (key, request) in requests {
        let Some(method) = request.get("method").and_then(Value::as_str) else {
            let why = format!("the server's input request {key:?} names no method");
            return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, why));
        };
        let answer = asker.ask(method, request.get("params").cloned()).await?;
        responses.insert(key, answer);
    }
    Ok((responses, result.get("requestState").cloned()))
}

/// A 2025-11-25 agent cannot read an input-required result it was not asked through (it declared none of the
/// capabilities, or the server kept asking past `MAX_ROUNDS`): the error it gets instead, or `None` for any other
/// result.
pub fn for_legacy_agent(asker: &Asker, result: &Value) -> Option<ErrorObject> {
    if !is(result) {
        return None;
    }
    if let Some((method, missing)) = first_missing(asker, result) {
        let why =
            format!("the server asks for {method}, which needs the `{missing}` capability the agent did not declare");
        return Some(refusal(ErrorCode::METHOD_NOT_FOUND, why, missing));
    }
    let why = format!("the server still asked for input after {MAX_ROUNDS} rounds of answers");
    Some(ErrorObject::new(ErrorCode::INTERNAL_ERROR, why))
}

/// The first question of `result` the agent lacks the capability for: its method, and the capability.
fn first_missing(asker: &Asker, result: &Value) -> Option<(String, &'static str)> {
    let requests = result.get("inputRequests").and_then(Value::as_object)?;
    requests.values().find_map(|request| {
        let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
        asker.missing(method, request.get("params")).map(|missing| (method.to_owned(), missing))
    })
}

fn refusal(code: ErrorCode, why: String, missing: &str) -> ErrorObject {
    let mut e = ErrorObject::new(code, why);
    e.data = Some(serde_json::json!({ "requiredCapabilities": { missing: {} } }));
    e
}

/// The call's params again, with the answers and the server's state.
pub fn resume(params: Option<Value>, (responses, state): (Map<String, Value>, Option<Value>)) -> Option<Value> {
    let mut params = params.unwrap_or_else(|| Value::Object(Map::new()));
    if let Some(obj) = params.as_object_mut() {
        obj.insert("inputResponses".into(), Value::Object(responses));
        match state {
            Some(state) => obj.insert("requestState".into(), state),
            None => obj.remove("requestState"),
        };
    }
    Some(params)
}

/// An input-required result as a 2026-07-28 agent reads it: without the empty `content` the core's typed result
/// gives every tool result. A question the agent did not declare the capability for is the spec's -32021 instead
/// (the server was told the gateway's capabilities, which are every agent's it relays for).
pub fn for_modern_agent(asker: &Asker, result: &mut Value) -> Result<(), ErrorObject> {
    if !is(result) {
        return Ok(());
    }
    if let Some((method, missing)) = first_missing(asker, result) {
        let why = format!(
            "the server asks for {method}, which needs the `{missing}` capability this request did not declare"
        );
        return Err(refusal(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, why, missing));
    }
    if let Some(obj) = result.as_object_mut()
        && obj.get("content").and_then(Value::as_array).is_some_and(Vec::is_empty)
    {
        obj.remove("content");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_resumed_call_carries_the_answers_and_the_servers_state() {
        let params = Some(json!({ "name": "archive", "arguments": { "p": 1 }, "requestState": "old" }));
        let answers = Map::from_iter([("q1".to_owned(), json!({ "action": "accept" }))]);
        let resumed = resume(params, (answers, Some(json!("s2")))).expect("params");
        assert_eq!(
            resumed,
            json!({ "name": "archive", "arguments": { "p": 1 }, "inputResponses": { "q1": { "action": "accept" } }, "requestState": "s2" })
        );
        let mut asking = json!({ "resultType": "input_required", "content": [], "inputRequests": {} });
        for_modern_agent(&Asker::default(), &mut asking).expect("nothing asked");
        assert_eq!(asking, json!({ "resultType": "input_required", "inputRequests": {} }));
        let mut eliciting =
            json!({ "resultType": "input_required", "inputRequests": { "a": { "method": "elicitation/create" } } });
        let refused = for_modern_agent(&Asker::default(), &mut eliciting).expect_err("no capability declared");
        assert_eq!(refused.code(), ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    }
}
