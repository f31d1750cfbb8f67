//! Schema checks end to end: arguments validated before sending (the server never sees an invalid call), structured
//! results validated against the tool's output schema, and compiled schemas reused while the tool list's hash is
//! unchanged. Against the fake server over loopback TCP and hand-played servers (`notifications/tools/list_changed`,
//! hostile tool lists); the real servers' schemas are checked by the interop tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcpstorm_core::CallOptions;
use mcpstorm_core::TcpDialer;
use mcpstorm_core::schema::ArgumentError;
use mcpstorm_core::{CallError, LocalError};
use mcpstorm_core::{ClientConfig, McpClient};
use mcpstorm_fake::doubles::line_server::{LineDialer, serve_lines};
use mcpstorm_fake::{FakeServer, FakeServerConfig, ToolConfig};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Notify;

fn invalid_arguments(result: Result<mcpstorm_core::mcp::CallToolResult, CallError>) -> ArgumentError {
    match result {
        Err(CallError::Local(LocalError::InvalidArguments(e))) => e,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

fn pointers_and_keywords(e: &ArgumentError) -> Vec<(&str, &str)> {
    e.violations.iter().map(|v| (v.pointer.as_str(), v.keyword.as_str())).collect()
}

async fn start_fake(config: FakeServerConfig) -> (FakeServer, Arc<McpClient>) {
    let server = FakeServer::new(config).expect("valid fake config");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("bound address").to_string();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    let config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
    (server, Arc::new(McpClient::new("fake", Arc::new(TcpDialer { addr }), config, mcpstorm_core::SeededRng::new(0))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_server_never_receives_an_invalid_call() {
    let (server, c) = start_fake(FakeServerConfig::builtin()).await;
    c.capabilities().await.unwrap();
    let cases = [
        ("echo", json!({"message": 3}), ("/message", "type")),
        ("echo", json!({}), ("", "required")),
        ("sleep_ms", json!({"ms": -1}), ("/ms", "minimum")),
        ("slow_progress", json!({"steps": 1, "step_ms": "10"}), ("/step_ms", "type")),
    ];
    for (tool, args, expected) in cases {
        let e = invalid_arguments(c.call_tool(tool, args, CallOptions::default()).await);
        assert_eq!(pointers_and_keywords(&e), [expected], "{e}");
    }
    assert_eq!(server.stats().received, 0);
    c.call_tool("sleep_ms", json!({"ms": 0}), CallOptions::default()).await.unwrap();
    assert_eq!(server.stats().received, 1);
}

/// A server whose structured result contradicts its own output schema: the call fails as a malformed response
/// naming the tool and the pointer; a tool whose result matches is fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_output_violating_its_schema_is_a_malformed_response() {
    let mut config = FakeServerConfig::builtin();
    config.tools.push(ToolConfig {
        structured_content: true,
        reply: Some("sunny".into()),
        output_schema: Some(json!({"type": "object", "properties": {"result": {"type": "integer"}},
            "required": ["result"]})),
        ..ToolConfig::new("liar")
    });
    config.tools.push(ToolConfig { structured_content: true, reply: Some("ok".into()), ..ToolConfig::new("honest") });
    let (server, c) = start_fake(config).await;

    let err = c.call_tool("liar", json!({}), CallOptions::default()).await.unwrap_err();
    let CallError::MalformedResponse(message) = &err else { panic!("expected a malformed response, got {err:?}") };
    assert_eq!(
        message,
        r#"tool "liar" returned structuredContent that violates its outputSchema: /result: "sunny" is not of type "integer""#
    );
    assert!(!err.retry_allowed(true) && !err.closes_connection());
    assert_eq!(server.stats().completed, 1, "the server did answer");

    let ok = c.call_tool("honest", json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(ok.structured_content, Some(json!({"result": "ok"})));
}

/// A hand-played server over TCP: answers `initialize` and `tools/list` (always the same list), refuses anything
/// else with -32601, and sends `notifications/tools/list_changed` when the test asks.
struct Scripted {
    addr: String,
    lists: Arc<AtomicU64>,
    announce: Arc<Notify>,
}

async fn scripted_server() -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("bound address").to_string();
    let (lists, announce) = (Arc::new(AtomicU64::new(0)), Arc::new(Notify::new()));
    let (l, a) = (lists.clone(), announce.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_scripted(stream, l.clone(), a.clone()));
        }
    });
    Scripted { addr, lists, announce }
}

async fn serve_scripted(stream: tokio::net::TcpStream, lists: Arc<AtomicU64>, announce: Arc<Notify>) {
    let tools = json!([
        {"name": "add", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]}, "annotations": {"readOnlyHint": true},
            "_meta": {"latency_p95_ms": 40, "io.mcpstorm/max_concurrent_requests": 4}},
        {"name": "tuple", "inputSchema": {"type": "object", "properties": {"p": {"type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}}}}
    ]);
    serve_lines(stream, announce, |msg| match msg["method"].as_str() {
        Some("initialize") => Ok(json!({
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "scripted", "version": "1"}, "_meta": {"latency_p95_ms": 500}})),
        Some("tools/list") => {
            lists.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"tools": tools}))
        }
        Some("tools/call") => Ok(json!({"content": [{"type": "text", "text": "done"}]})),
        Some("ping") => Ok(json!({})),
        _ => Err(json!({"code": -32601, "message": "method not found"})),
    })
    .await;
}

/// `list_changed` makes the client list the tools again; the listing hashes the same, so nothing compiles again.
/// The record carries the annotations and router hints (tool `_meta` over the initialize result's `_meta`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_with_an_unchanged_list_refetches_but_compiles_nothing() {
    let server = scripted_server().await;
    let config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
    let c = McpClient::new(
        "scripted",
        Arc::new(TcpDialer { addr: server.addr.clone() }),
        config,
        mcpstorm_core::SeededRng::new(0),
    );
    let first = c.capabilities().await.unwrap();
    assert_eq!((server.lists.load(Ordering::SeqCst), c.schema_compilations()), (1, 0), "compiled at first use");
    let add = first.hints("add").unwrap();
    assert_eq!(add.latency_p95, Some(Duration::from_millis(40)));
    assert_eq!(add.max_concurrent_requests, Some(4));
    assert_eq!(first.hints("tuple").unwrap().latency_p95, Some(Duration::from_millis(500)));
    assert!(first.tool("add").unwrap().annotations().read_only());
    // 2020-12 without `$schema`: `prefixItems` applies.
    let e = invalid_arguments(c.call_tool("tuple", json!({"p": [1, 2]}), CallOptions::default()).await);
    assert_eq!(pointers_and_keywords(&e), [("/p/0", "type")]);
    assert_eq!(c.schema_compilations(), 1, "only the tool called");

    server.announce.notify_one();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.lists.load(Ordering::SeqCst) < 2 {
        assert!(tokio::time::Instant::now() < deadline, "list_changed did not lead to a new tools/list");
        c.capabilities().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let second = c.capabilities().await.unwrap();
    assert_eq!(second.hash(), first.hash());
    assert!(second.shares_tools_with(&first));
    assert_eq!(c.schema_compilations(), 1, "the re-listing compiled nothing");
    c.call_tool("add", json!({"a": 1, "b": 2}), CallOptions::default()).await.unwrap();
    c.call_tool("tuple", json!({"p": ["x", 1]}), CallOptions::default()).await.unwrap();
    assert_eq!(c.schema_compilations(), 2, "tuple's validator was kept across the re-listing");
}

/// A scripted server whose `tools/list` pages come from `page(cursor) -> (tools, next cursor)`.
fn paging_server(page: impl Fn(u64) -> (Vec<serde_json::Value>, Option<u64>) + Send + Sync + 'static) -> LineDialer {
    let answer = move |msg: &serde_json::Value| match msg["method"].as_str() {
        Some("initialize") => {
            Ok(json!({"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"}}))
        }
        Some("tools/list") => {
            let cursor = msg["params"]["cursor"].as_str().and_then(|c| c.parse().ok()).unwrap_or(0);
            let (tools, next) = page(cursor);
            Ok(json!({"tools": tools, "nextCursor": next.map(|n| n.to_string())}))
        }
        Some("ping") => Ok(json!({})),
        _ => Err(json!({"code": -32601, "message": "method not found"})),
    };
    LineDialer { answer: Arc::new(answer), pipe: 1 << 20 }
}

fn small_tool(i: u64) -> serde_json::Value {
    json!({"name": format!("t{i}"), "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}})
}

fn client_of(dialer: LineDialer, config: ClientConfig) -> McpClient {
    let config = ClientConfig { lifecycle_retries: 0, ..config };
    McpClient::new("hostile", Arc::new(dialer), config, mcpstorm_core::SeededRng::new(0))
}

/// What these tests check is the limits, not the time: an 11 MB page takes seconds to build and parse in a debug
/// build on a loaded machine, longer than the default first-response timeout.
fn patient() -> ClientConfig {
    let mut config = ClientConfig::default();
    config.connection.first_response = std::time::Duration::from_secs(120);
    config
}

fn refused_for(c: &Result<Arc<mcpstorm_core::Capabilities>, CallError>, limit: &str) -> bool {
    matches!(c, Err(CallError::MalformedResponse(m)) if m.contains(limit) && m.contains("raise the limit"))
}

/// A hostile server cannot make the client hold an unbounded tool list: one page of 100,000 small tools (11 MB,
/// under the frame limit), endless pages of 5,000, and a few tools with megabyte schemas are each refused with an
/// error naming the limit that stopped them, and nothing was compiled. Within the limits, a listing is accepted
/// whole and compiles nothing until a tool is called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_beyond_the_limits_is_refused_naming_the_limit() {
    let one_page = client_of(paging_server(|_| ((0..100_000).map(small_tool).collect(), None)), patient());
    let got = one_page.capabilities().await;
    assert!(refused_for(&got, "ClientConfig::max_tools"), "{got:?}");

    let endless = client_of(
        paging_server(|cursor| ((cursor * 5_000..(cursor + 1) * 5_000).map(small_tool).collect(), Some(cursor + 1))),
        patient(),
    );
    let got = endless.capabilities().await;
    assert!(refused_for(&got, "ClientConfig::max_tools"), "{got:?}");

    let huge_schema = |i: u64| {
        let props: serde_json::Map<String, serde_json::Value> =
            (0..20_000).map(|p| (format!("p{i}_{p}_{}", "x".repeat(30)), json!({"type": "string"}))).collect();
        json!({"name": format!("big{i}"), "inputSchema": {"type": "object", "properties": props}})
    };
    let fat = client_of(paging_server(move |cursor| (vec![huge_schema(cursor)], Some(cursor + 1))), patient());
    let got = fat.capabilities().await;
    assert!(refused_for(&got, "ClientConfig::max_tool_list_bytes"), "{got:?}");
    assert_eq!(one_page.schema_compilations() + endless.schema_compilations() + fat.schema_compilations(), 0);

    let fine = client_of(paging_server(|_| ((0..2_000).map(small_tool).collect(), None)), ClientConfig::default());
    let caps = fine.capabilities().await.expect("2,000 tools are within the limits");
    assert_eq!((caps.entries().count(), fine.schema_compilations()), (2_000, 0));
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config { cases: 32, ..proptest::test_runner::Config::default() })]

    /// Whatever the pages and the limit, a listing is accepted exactly when its tools fit `max_tools` — and then
    /// whole, in order — or refused naming the limit: the client never holds more than the limit.
    #[test]
    fn tool_list_limits_hold_for_any_paging(pages in proptest::collection::vec(0u64..40, 1..6), max_tools in 0usize..120) {
        let total: u64 = pages.iter().sum();
        let starts: Vec<u64> = pages.iter().scan(0, |acc, n| { let s = *acc; *acc += n; Some(s) }).collect();
        let (p, st) = (pages.clone(), starts.clone());
        let server = paging_server(move |cursor| {
            let i = cursor as usize;
            let tools = (st[i]..st[i] + p[i]).map(small_tool).collect();
            (tools, (i + 1 < p.len()).then_some(cursor + 1))
        });
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let got = runtime.block_on(client_of(server, ClientConfig { max_tools, ..ClientConfig::default() }).capabilities());
        if total as usize <= max_tools {
            let caps = got.map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            let names: Vec<String> = caps.entries().map(|e| e.name().to_owned()).collect();
            let expected: Vec<String> = (0..total).map(|i| format!("t{i}")).collect();
            proptest::prop_assert_eq!(names, expected);
        } else {
            proptest::prop_assert!(refused_for(&got, "ClientConfig::max_tools"), "{:?}", got.map(|c| c.entries().count()));
        }
    }
}
