//! Layer 7: the optional `--call TOOL JSON` sample, its arguments checked against the inputSchema before it is sent.

use mcpstorm_core::CallOptions;
use mcpstorm_core::Capabilities;
use mcpstorm_core::jsonrpc::ErrorCode;
use mcpstorm_core::{CallError, LocalError};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::Diagnosis;
use super::report::Check;
use crate::cli::Failure;

/// `--call TOOL JSON`, parsed before anything is dialled: arguments must be a JSON object.
pub(super) fn sample_call(call: Option<&[String]>) -> Result<Option<(String, Value)>, Failure> {
    let Some([tool, arguments]) = call else {
        return Ok(None);
    };
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| Failure::BadInput(format!("--call arguments are not valid JSON ({e}): {arguments}")))?;
    if !value.is_object() {
        return Err(Failure::BadInput(format!("--call arguments must be a JSON object, got {value}")));
    }
    Ok(Some((tool.clone(), value)))
}

impl Diagnosis<'_> {
    /// Layer 7: the optional sample call. Arguments that fail the inputSchema are reported and never sent.
    pub(super) async fn call(&self, caps: &Capabilities, sample: Option<(String, Value)>) -> Check {
        let Some((tool, arguments)) = sample else {
            return Check::skip("call", "no --call TOOL 'JSON' given");
        };
        if caps.tool(&tool).is_none() {
            let names: Vec<&str> = caps.entries().map(|t| t.name()).collect();
            return Check::fail(
                "call",
                None,
                format!("the server has no tool {tool:?}; not sent"),
                "tool names are case-sensitive; `mcpstorm tools` lists them",
            )
            .details(vec![format!("tools: {}", names.join(", "))]);
        }
        let started = Instant::now();
        let result = self.client.call_tool(&tool, arguments, CallOptions::default()).await;
        let took = Some(started.elapsed());
        match result {
            Ok(r) if !r.is_error => {
                Check::pass("call", took, format!("{tool} returned: {}", summary(&r.joined_text())))
                    .data(json!({"sent": true, "result": r}))
            }
            Ok(r) => Check::fail(
                "call",
                took,
                format!("{tool} returned an error result: {}", summary(&r.joined_text())),
                "the tool itself reported the failure (isError: true): check the arguments and the server's logs",
            )
            .data(json!({"sent": true, "result": r})),
            Err(CallError::Local(LocalError::InvalidArguments(e))) => {
                let mut details: Vec<String> = e.violations.iter().map(ToString::to_string).collect();
                if e.truncated {
                    details.push("...".into());
                }
                Check::fail(
                    "call",
                    took,
                    format!("arguments do not match the inputSchema of {tool:?}; not sent"),
                    "fix the values at the JSON pointers above (`mcpstorm tools --json` shows the inputSchema)",
                )
                .details(details)
                .data(json!({
                    "sent": false,
                    "violations": e.violations.iter().map(|v| json!({
                        "pointer": v.pointer, "keyword": v.keyword, "message": v.message,
                    })).collect::<Vec<_>>(),
                }))
            }
            Err(e @ CallError::Local(LocalError::UnusableSchema(_))) => Check::fail(
                "call",
                took,
                format!("{e}; not sent"),
                "the tool's schema does not compile (see the tools check), so its calls are never sent",
            ),
            Err(e) => {
                let hint = match &e {
                    CallError::Protocol(obj) if obj.code == ErrorCode::INVALID_PARAMS.0 => {
                        "the server rejected arguments that match its own inputSchema: its validation and its \
                         schema disagree"
                    }
                    CallError::Protocol(_) => "the server answered with a JSON-RPC error: see its message and logs",
                    CallError::MalformedResponse(_) => {
                        "the result is not valid MCP, or its structuredContent violates the tool's outputSchema"
                    }
                    CallError::Local(LocalError::FirstResponseTimeout(_) | LocalError::IdleTimeout(_)) => {
                        "the tool is slow or hung: raise --timeout if it is expected to take this long"
                    }
                    _ => "the connection failed during the call: check the server's stderr",
                };
                Check::fail("call", took, format!("{} error: {e}", e.class()), hint)
            }
        }
    }
}

/// A result's text on one line, for a summary (the report bounds it when it is shown; `data.result` has it all). A
/// JSON text (often pretty-printed, its first line a bare `{`) is shown compact, whole; other text by its first line
/// and a count of the lines left out.
fn summary(text: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        return value.to_string();
    }
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    match lines.count() {
        0 => first.to_owned(),
        1 => format!("{first} [1 more line; --json prints it whole]"),
        more => format!("{first} [{more} more lines; --json prints them whole]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_summed_up_on_one_line() {
        assert_eq!(summary("Echo: hi"), "Echo: hi");
        assert_eq!(summary("{\n  \"a\": [1,\n 2]\n}"), r#"{"a":[1,2]}"#);
        assert_eq!(summary("first\nsecond\nthird"), "first [2 more lines; --json prints them whole]");
        assert_eq!(summary("first\nsecond"), "first [1 more line; --json prints it whole]");
        assert_eq!(summary(""), "");
    }

    #[test]
    fn call_arguments_must_be_a_json_object() {
        let call = |args: &str| sample_call(Some(&["echo".to_owned(), args.to_owned()][..]));
        assert!(matches!(call("{"), Err(Failure::BadInput(m)) if m.contains("not valid JSON")));
        assert!(matches!(call("[1]"), Err(Failure::BadInput(m)) if m.contains("must be a JSON object")));
        assert!(matches!(call(r#"{"a": 1}"#), Ok(Some((t, v))) if t == "echo" && v == json!({"a": 1})));
        assert!(matches!(sample_call(None), Ok(None)));
    }
}
