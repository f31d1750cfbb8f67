//! The core against real MCP servers nobody here wrote: the Python `mcp` SDK 2.x (tests/peers/py_server.py) and
//! `@modelcontextprotocol/server-everything`, both over stdio. A missing peer skips loudly, or fails under
//! `MCPSTORM_REQUIRE_PEERS=1` (as in CI).

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::mcp::{CallToolResult, method};
use mcpstorm_core::{
    CallError, CallOptions, CancelToken, ClientConfig, Connection, ConnectionConfig, Dialer, LocalError, McpClient,
    NoopObserver, StdioDialer, conn::ConnectionParts, observe::ConnId, transport::DEFAULT_MAX_FRAME,
    transport::line_transport,
};
use mcpstorm_tests::real_servers::{everything_server, python_blocking_server, python_server};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

fn client(dialer: StdioDialer) -> McpClient {
    let mut config = ClientConfig::default();
    config.connection.max_in_flight = 512;
    config.connection.first_response = Duration::from_secs(20);
    // A peer started on a loaded machine (CI builds in parallel; the Python SDK's imports alone take seconds) may
    // answer its first request later than the 5 s default era probe waits. That probe then falls back to
    // `initialize` and leaves a cancel and a late response behind, which the tests counting them would see.
    config.discover_timeout = Duration::from_secs(20);
    McpClient::new(dialer.describe(), Arc::new(dialer), config, mcpstorm_core::SeededRng::new(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_handshake_tools_echo_and_ping() {
    let c = client(peer_or_skip!(python_server()));
    let session = c.session().await.expect("handshake");
    // The SDK serves both eras; the core detects and picks the modern one (tests/tests/interop/eras.rs).
    assert_eq!(session.init.protocol_version, "2026-07-28");
    assert_eq!(session.init.server_info.name, "mcpstorm-py-peer");
    let tools = c.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["sleep_ms", "echo", "slow_progress"]);
    assert_eq!(tools[0].input_schema["required"], json!(["ms"]));
    let r = c.call_tool("echo", json!({"message": "héllo \"world\"\n"}), CallOptions::default()).await.unwrap();
    assert!(!r.is_error);
    assert_eq!(r.joined_text(), "héllo \"world\"\n");
    c.ping().await.unwrap();
}

/// A server that runs one request at a time answers nothing while its tool runs, pings included. Its pipes lose no
/// bytes, so the client does not probe a child's silent stream early: a 3.5 s tool, within the 5 s first-response
/// phase, is answered on the same connection (an early probe would have declared the stream dead at 3 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_blocked_by_its_own_slow_tool_keeps_its_connection() {
    let config = ClientConfig { discover_timeout: Duration::from_secs(20), ..ClientConfig::default() };
    let dialer = peer_or_skip!(python_blocking_server());
    let c = McpClient::new(dialer.describe(), Arc::new(dialer), config, mcpstorm_core::SeededRng::new(0));
    // Connected first, so the call's 5 s phase holds only the tool.
    c.list_tools().await.expect("tools");
    let r = c.call_tool("block_ms", json!({"ms": 3500}), CallOptions::default()).await.expect("answered");
    assert_eq!(r.joined_text(), "blocked 3500ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_handshake_tools_echo_and_ping() {
    let c = client(peer_or_skip!(everything_server()));
    let session = c.session().await.expect("handshake");
    assert_eq!(session.init.protocol_version, "2025-11-25");
    assert_eq!(session.init.server_info.name, "mcp-servers/everything");
    assert!(session.init.tools_list_changed());
    let tools = c.list_tools().await.unwrap();
    let echo = tools.iter().find(|t| t.name == "echo").expect("echo tool");
    assert!(echo.hint("readOnlyHint") && echo.hint("idempotentHint"));
    assert!(tools.iter().any(|t| t.name == "trigger-long-running-operation"));
    let r = c.call_tool("echo", json!({"message": "hi"}), CallOptions::default()).await.unwrap();
    assert_eq!(r.joined_text(), "Echo: hi");
    c.ping().await.unwrap();
}

/// 200 concurrent calls on one connection with different sleeps: responses come back out of order, and each must
/// reach its own caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_200_concurrent_calls_on_one_connection() {
    let c = Arc::new(client(peer_or_skip!(python_server())));
    c.list_tools().await.unwrap();
    let conn_id = c.session().await.unwrap().conn.id();
    let started = Instant::now();
    let calls: Vec<_> = (0..200u64)
        .map(|i| {
            let c = c.clone();
            // 200 ms for most, a spread for every fifth, so completion order differs from send order.
            let ms = if i % 5 == 0 { 100 + (i * 7) % 200 } else { 200 };
            tokio::spawn(async move { (ms, c.call_tool("sleep_ms", json!({"ms": ms}), CallOptions::default()).await) })
        })
        .collect();
    for call in calls {
        let (ms, result) = call.await.unwrap();
        assert_eq!(result.unwrap().joined_text(), format!("slept {ms}ms"));
    }
    let wall = started.elapsed();
    eprintln!("200 concurrent sleep_ms calls on one stdio connection: {wall:?}");
    // Serially this is 40 s; anything near the longest single sleep proves they overlapped on one connection.
    assert!(wall < Duration::from_secs(10), "calls did not overlap: {wall:?}");
    let session = c.session().await.unwrap();
    assert_eq!(session.conn.id(), conn_id, "all calls used the one connection");
    assert_eq!((session.conn.pending(), session.conn.stats().in_flight), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tool_is_an_is_error_result_on_both_servers() {
    for dialer in [python_server(), everything_server()] {
        let c = client(peer_or_skip!(dialer));
        let session = c.session().await.unwrap();
        let raw = session
            .conn
            .request(method::TOOLS_CALL, Some(json!({"name": "no-such-tool", "arguments": {}})), CallOptions::default())
            .await
            .expect("a result, not a JSON-RPC error");
        let r: CallToolResult = serde_json::from_value(raw).unwrap();
        assert!(r.is_error, "{r:?}");
        assert!(r.joined_text().contains("no-such-tool"), "{}", r.joined_text());
        // The client refuses the same call locally, without touching the server.
        let local = c.call_tool("no-such-tool", json!({}), CallOptions::default()).await.unwrap_err();
        assert_eq!(local, CallError::Local(LocalError::UnknownTool("no-such-tool".into())));
    }
}

/// server-everything keeps sending progress after a cancellation and never answers; the Python SDK stops at once.
/// Either way the local call resolves immediately and the connection stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_long_running_call_mid_way() {
    let cases = [
        (everything_server(), "trigger-long-running-operation", json!({"duration": 2, "steps": 10})),
        (python_server(), "slow_progress", json!({"steps": 10, "step_ms": 200})),
    ];
    for (dialer, tool, args) in cases {
        let c = client(peer_or_skip!(dialer));
        c.list_tools().await.unwrap();
        let (tx, mut progress) = tokio::sync::mpsc::channel(64);
        let token = CancelToken::new();
        let opts = CallOptions { cancel: Some(token.clone()), progress: Some(tx), ..Default::default() };
        let call = tokio::spawn({
            let c = Arc::new(c);
            let c2 = c.clone();
            async move { (c2.call_tool(tool, args, opts).await, c) }
        });
        // Wait for two progress events: the call is genuinely mid-way.
        for _ in 0..2 {
            tokio::time::timeout(Duration::from_secs(10), progress.recv()).await.expect("progress").expect("open");
        }
        let cancelled_at = Instant::now();
        token.cancel("test cancels mid-way");
        let (result, c) = call.await.unwrap();
        assert_eq!(result.unwrap_err(), CallError::Local(LocalError::Cancelled("test cancels mid-way".into())));
        assert!(cancelled_at.elapsed() < Duration::from_millis(100), "cancel took {:?}", cancelled_at.elapsed());
        // Let whatever the server does after a cancel arrive, then check nothing leaked and it still works.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let r = c.call_tool("echo", json!({"message": "still here"}), CallOptions::default()).await.unwrap();
        assert!(r.joined_text().ends_with("still here"));
        let stats = c.session().await.unwrap().conn.stats();
        assert_eq!((stats.pending, stats.in_flight, stats.cancels_sent), (0, 0, 1), "{tool}: {stats:?}");
        assert_eq!(stats.late_responses, 0, "{tool}: no server answers a cancelled call: {stats:?}");
        eprintln!("{tool}: after cancel, {} progress notifications arrived and were dropped", stats.stray_progress);
    }
}

/// Real servers answer malformed lines with silence. The client must not wait on them, and the connection keeps
/// working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_the_wire_gets_silence_and_the_connection_survives() {
    for dialer in [python_server(), everything_server()] {
        let dialer = peer_or_skip!(dialer);
        let mut stream = dialer.dial().await.unwrap();
        stream.writer.write_all(b"{not json\n[1,2]\n{\"foo\":1}\n").await.unwrap();
        let (sink, source) = line_transport(stream.reader, stream.writer, DEFAULT_MAX_FRAME);
        let conn = Connection::start(
            sink,
            source,
            ConnectionParts {
                id: ConnId(0),
                server: dialer.describe(),
                config: ConnectionConfig::default(),
                observer: Arc::new(NoopObserver),
                global: None,
                on_notification: None,
                guard: stream.guard,
            },
        );
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "mcpstorm-test", "version": "0"}});
        let result = conn.request(method::INITIALIZE, Some(init), CallOptions::default()).await.unwrap();
        assert_eq!(result["protocolVersion"], "2025-11-25");
        conn.request(method::PING, None, CallOptions::default()).await.unwrap();
        let stats = conn.stats();
        assert_eq!((stats.rejected_frames, stats.unknown_responses), (0, 0), "{stats:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_a_clear_non_retryable_error() {
    let c = client(StdioDialer::new("/nonexistent/mcp-server", Vec::<String>::new()));
    let err = c.session().await.unwrap_err();
    assert!(matches!(err, CallError::Transport(mcpstorm_core::TransportError::SpawnFailed(_))), "{err:?}");
    assert!(!err.retry_allowed(true));
}
