//! `[[servers]]` filters through the real gateway process, against real servers nobody here wrote (the Python `mcp`
//! SDK's server and server-everything, over stdio): what a server's `tools`, `prompts` or `resources` filter hides is
//! absent from every list and refused when called, and hiding a colliding tool removes its prefix.

use mcpstorm_core::CallError;
use mcpstorm_core::jsonrpc::ErrorCode;
use serde_json::{Value, json};

use super::gateway::{agent, gateway, python_and_everything};

/// The JSON-RPC error code of a refusal, or what came instead.
fn code<T: std::fmt::Debug>(outcome: Result<T, CallError>) -> Result<ErrorCode, String> {
    match outcome {
        Err(CallError::Protocol(e)) => Ok(e.code()),
        other => Err(format!("{other:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_server_filter_hides_is_absent_from_every_list_and_refused_on_call() {
    let py = "tools.allow = [\"echo\", \"sleep_*\"]\n";
    let everything = "tools.deny = [\"echo\", \"get-*\"]\nprompts.deny = [\"args-*\"]\n\
                      resources.deny = [\"demo://resource/dynamic/blob/*\", \"*/architecture.md\"]\n";
    let servers = peer_or_skip!(python_and_everything(py, everything));
    let (mut process, url) = gateway(&servers).await;
    let agent = agent(&url);

    let tools = agent.list_tools().await.expect("tools/list through the gateway");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    // Both servers have an `echo`; server-everything's is hidden, so Python's keeps its own name, unprefixed.
    assert!(names.contains(&"echo") && names.contains(&"sleep_ms"), "{names:?}");
    for hidden in ["py__echo", "everything__echo", "slow_progress"] {
        assert!(!names.contains(&hidden), "{hidden}: {names:?}");
    }
    assert!(!names.iter().any(|n| n.contains("get-")), "get-* denied: {names:?}");
    assert!(names.iter().any(|n| n.starts_with("trigger-")), "server-everything's other tools stay: {names:?}");
    let echo = agent.call_tool("echo", json!({"message": "to python"}), Default::default()).await.expect("call");
    assert!(!echo.is_error, "{echo:?}");
    assert_eq!(echo.content[0]["text"], "to python", "the allowed tool works, at its server");
    let session = agent.session().await.expect("session");
    let request = |method: &'static str, params: Option<Value>| {
        let conn = session.conn.clone();
        async move { conn.request(method, params, Default::default()).await }
    };
    // Refused as an unknown tool is (the spec's -32602), whatever its spelling. Sent raw: the core's client would
    // refuse a name missing from its listing before sending it.
    for hidden in ["everything__echo", "get-sum", "everything__get-sum", "slow_progress", "py__slow_progress"] {
        let refused = request("tools/call", Some(json!({"name": hidden, "arguments": {"a": 1, "b": 2}}))).await;
        assert_eq!(code(refused), Ok(ErrorCode::INVALID_PARAMS), "{hidden}");
    }
    let listed = |page: &Value, key: &str, member: &str| -> Vec<String> {
        let entries = page[key].as_array().cloned().unwrap_or_default();
        entries.iter().filter_map(|e| e[member].as_str().map(str::to_owned)).collect()
    };
    let prompts = listed(&request("prompts/list", None).await.expect("prompts/list"), "prompts", "name");
    assert!(prompts.iter().any(|p| p == "simple-prompt"), "{prompts:?}");
    assert!(!prompts.iter().any(|p| p.starts_with("args-")), "{prompts:?}");
    let refused = request("prompts/get", Some(json!({"name": "args-prompt", "arguments": {"city": "Paris"}}))).await;
    assert_eq!(code(refused), Ok(ErrorCode::INVALID_PARAMS));

    let resources = listed(&request("resources/list", None).await.expect("resources/list"), "resources", "uri");
    let hidden = "demo://resource/static/document/architecture.md";
    assert!(!resources.iter().any(|u| u == hidden), "{resources:?}");
    assert!(resources.iter().any(|u| u.starts_with("demo://resource/static/document/")), "{resources:?}");
    assert_eq!(code(request("resources/read", Some(json!({"uri": hidden}))).await), Ok(ErrorCode::RESOURCE_NOT_FOUND));
    let page = request("resources/templates/list", None).await.expect("resources/templates/list");
    let templates = listed(&page, "resourceTemplates", "uriTemplate");
    assert!(templates.iter().any(|t| t.starts_with("demo://resource/dynamic/text/")), "{templates:?}");
    assert!(!templates.iter().any(|t| t.contains("/blob/")), "{templates:?}");
    // A URI no listing holds, read through a template: the filter decides on the URI itself.
    let read = request("resources/read", Some(json!({"uri": "demo://resource/dynamic/text/1"}))).await;
    assert!(read.as_ref().is_ok_and(|r| r["contents"].as_array().is_some_and(|c| !c.is_empty())), "{read:?}");
    let blob = request("resources/read", Some(json!({"uri": "demo://resource/dynamic/blob/1"}))).await;
    assert_eq!(code(blob), Ok(ErrorCode::RESOURCE_NOT_FOUND));
    agent.close().await;
    process.stop().await;
}
