//! Schema checks against the real servers: the Python `mcp` SDK (schemas 2020-12 by default) and server-everything
//! (schemas declaring draft 07). Invalid arguments fail locally naming the pointer, structured results validate
//! against the declared output schema, and compiled schemas are reused across sessions while the tool list's hash is
//! unchanged.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpstorm_core::CallOptions;
use mcpstorm_core::{CallError, LocalError};
use mcpstorm_core::{ClientConfig, McpClient};
use mcpstorm_core::{Dialer, StdioDialer};
use mcpstorm_core::{Event, Observer};
use mcpstorm_core::{schema::ArgumentError, schema::Dialect};
use mcpstorm_tests::real_servers::{everything_server, python_server};
use serde_json::json;

fn stdio_client(dialer: StdioDialer) -> McpClient {
    let mut config = ClientConfig::default();
    config.connection.first_response = Duration::from_secs(20);
    McpClient::new(dialer.describe(), Arc::new(dialer), config, mcpstorm_core::SeededRng::new(0))
}

/// Requests finished on the connection, by method.
#[derive(Debug, Default)]
struct Requests(Mutex<BTreeMap<String, u64>>);

impl Requests {
    fn count(&self, method: &str) -> u64 {
        self.0.lock().expect("not poisoned").get(method).copied().unwrap_or(0)
    }
}

impl Observer for Requests {
    fn event(&self, event: &Event<'_>) {
        if let Event::RequestFinished { method, .. } = event {
            *self.0.lock().expect("not poisoned").entry((*method).to_owned()).or_default() += 1;
        }
    }
}

fn invalid_arguments(result: Result<mcpstorm_core::mcp::CallToolResult, CallError>) -> ArgumentError {
    match result {
        Err(CallError::Local(LocalError::InvalidArguments(e))) => e,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

fn pointers_and_keywords(e: &ArgumentError) -> Vec<(&str, &str)> {
    e.violations.iter().map(|v| (v.pointer.as_str(), v.keyword.as_str())).collect()
}

/// The acceptance test: `echo` with `{"message": 3}` fails locally naming `/message`, and nothing but a tools/list
/// goes out on the connection meanwhile; a valid call right after does go out (so the counter is the one to watch).
///
/// server-everything announces `notifications/tools/list_changed` just after start-up, so the first call after it
/// lists the tools again: that re-fetch is the one message allowed, and it must not recompile anything (the list
/// is the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_echo_fails_locally_naming_the_pointer_on_both_real_servers() {
    for dialer in [python_server(), everything_server()] {
        let requests = Arc::new(Requests::default());
        let c = stdio_client(peer_or_skip!(dialer)).with_observer(requests.clone());
        c.capabilities().await.expect("tools/list");
        let compiled = c.schema_compilations();
        let conn = c.session().await.unwrap().conn;
        let (sent_before, lists_before) = (conn.stats().sent, requests.count("tools/list"));

        let e = invalid_arguments(c.call_tool("echo", json!({"message": 3}), CallOptions::default()).await);
        assert_eq!(pointers_and_keywords(&e), [("/message", "type")], "{e}");
        assert_eq!(e.to_string(), r#"tool "echo": /message: 3 is not of type "string""#);
        let e = invalid_arguments(c.call_tool("echo", json!({}), CallOptions::default()).await);
        assert_eq!(pointers_and_keywords(&e), [("", "required")], "{e}");
        let relisted = requests.count("tools/list") - lists_before;
        assert_eq!(conn.stats().sent - sent_before, relisted, "an invalid call reached the wire");
        assert_eq!(requests.count("tools/call"), 0);
        // The first call compiled echo's schemas (lazily); the drift re-listing each refusal triggers compiled
        // nothing more.
        assert_eq!(c.schema_compilations(), compiled + 1, "an unchanged re-listing compiled again");

        let ok = c.call_tool("echo", json!({"message": "3"}), CallOptions::default()).await.unwrap();
        assert!(ok.joined_text().ends_with('3'));
        assert_eq!(conn.stats().sent - sent_before, relisted + 1);
        assert_eq!(requests.count("tools/call"), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_of_server_everything_compiles_as_draft_07() {
    let c = stdio_client(peer_or_skip!(everything_server()));
    let caps = c.capabilities().await.unwrap();
    assert_eq!(caps.server().name, "mcp-servers/everything");
    let mut with_output = Vec::new();
    for entry in caps.entries() {
        let schemas = entry.schemas().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(schemas.input().dialect(), Dialect::Draft7, "{}", entry.name());
        if let Some(out) = schemas.output() {
            assert_eq!(out.dialect(), Dialect::Draft7);
            with_output.push(entry.name());
        }
    }
    assert!(caps.entries().count() >= 10, "{} tools", caps.entries().count());
    assert!(with_output.contains(&"get-structured-content"), "{with_output:?}");
    assert_eq!(c.schema_compilations(), caps.entries().count() as u64);
    let echo = caps.tool("echo").unwrap().annotations();
    assert!(echo.read_only() && echo.idempotent() && !echo.destructive() && !echo.open_world());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_structured_content_validates_against_its_output_schema() {
    let c = stdio_client(peer_or_skip!(everything_server()));
    let r = c.call_tool("get-structured-content", json!({"location": "Chicago"}), CallOptions::default()).await;
    let r = r.expect("a structured result that satisfies the declared outputSchema");
    let content = r.structured_content.expect("structuredContent");
    let caps = c.capabilities().await.unwrap();
    let out = caps.tool("get-structured-content").unwrap().schemas().unwrap().output().expect("outputSchema");
    assert!(out.is_valid(&content), "{content}");
    // The check is not vacuous: the same content with a wrong type, or an extra property, fails it.
    let mut wrong = content.clone();
    wrong["temperature"] = json!("hot");
    assert_eq!(out.check(&wrong).unwrap_err().0[0].pointer, "/temperature");
    wrong = content;
    wrong["extra"] = json!(1);
    assert_eq!(out.check(&wrong).unwrap_err().0[0].keyword, "additionalProperties");

    let e = invalid_arguments(
        c.call_tool("get-structured-content", json!({"location": "Paris"}), CallOptions::default()).await,
    );
    assert_eq!(pointers_and_keywords(&e), [("/location", "enum")]);
}

/// The Python SDK lists no `$schema` (so 2020-12) and an output schema for every tool, and returns matching
/// `{"result": ...}` structured content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_schemas_are_2020_12_and_its_structured_results_validate() {
    let c = stdio_client(peer_or_skip!(python_server()));
    let caps = c.capabilities().await.unwrap();
    for entry in caps.entries() {
        let schemas = entry.schemas().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(schemas.input().dialect(), Dialect::Draft202012, "{}", entry.name());
        assert!(schemas.output().is_some(), "{}", entry.name());
    }
    let r = c.call_tool("sleep_ms", json!({"ms": 1}), CallOptions::default()).await.unwrap();
    assert_eq!(r.structured_content, Some(json!({"result": "slept 1ms"})));
    let e = invalid_arguments(c.call_tool("sleep_ms", json!({"ms": 1.5}), CallOptions::default()).await);
    assert_eq!(pointers_and_keywords(&e), [("/ms", "type")]);
}

/// A new session (here: a new server process) listing the same tools compiles nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_with_an_unchanged_tool_list_reuses_the_compiled_schemas() {
    let c = stdio_client(peer_or_skip!(everything_server()));
    let first = c.capabilities().await.unwrap();
    let first_conn = c.session().await.unwrap().conn.id();
    // Schemas compile at a tool's first use: use every one now.
    assert_eq!(c.schema_compilations(), 0, "nothing compiled at listing");
    assert!(first.entries().all(|e| e.schemas().is_ok()));
    let compiled = c.schema_compilations();
    assert!(compiled >= 10);
    c.close().await;
    let second = c.capabilities().await.unwrap();
    assert_ne!(c.session().await.unwrap().conn.id(), first_conn, "a new session");
    assert_eq!(second.hash(), first.hash());
    assert!(second.shares_tools_with(&first));
    assert!(second.entries().all(|e| e.schemas().is_ok()));
    assert_eq!(c.schema_compilations(), compiled, "the new session's tools reuse every validator");
    c.call_tool("echo", json!({"message": "again"}), CallOptions::default()).await.unwrap();
}
