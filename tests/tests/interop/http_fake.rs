//! The fake's Streamable HTTP server is real MCP: the official Python SDK client (`tests/peers/py_http_client.py`)
//! connects to it on loopback (the fake as `serve-fake --transport http` runs it: `live_server` on a tokio TCP
//! listener), in both revisions, lists the tools and calls two, one reporting progress over SSE.

use mcpstorm_fake::{FakeServerConfig, Transport, live_server};
use mcpstorm_tests::real_servers::python_http_client;
use serde_json::{Value, json};

async fn python_client_against_fake(mode: &str, version: &str) {
    let config = FakeServerConfig { transport: Transport::Http, ..FakeServerConfig::builtin() };
    let server = live_server(config).expect("the built-in config is valid");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("bound");
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve(listener).await }
    });
    let seen = peer_or_skip!(python_client_sees(&addr.to_string(), mode).await);
    serving.abort();
    assert_eq!(
        seen,
        json!({
            "protocol_version": version, "server": "mcpstorm-fake", "tools": ["echo", "sleep_ms", "slow_progress"],
            "echo": "hello over http", "echo_error": false, "slow": "done 3 steps", "progress": [1.0, 2.0, 3.0],
        }),
        "{mode}"
    );
    let stats = server.stats();
    assert_eq!((stats.received, stats.completed), (2, 2), "{mode}: {stats:?}");
    if mode == "legacy" {
        // One session, ended by the client's DELETE when it closed.
        assert_eq!((stats.http_sessions_opened, stats.http_sessions_deleted), (1, 1), "{stats:?}");
    }
}

/// Runs the Python SDK's client (`tests/peers/py_http_client.py`) against `http://{addr}/mcp` in `mode`: what it saw
/// (`None` when the SDK is missing and peers are not required).
pub(crate) async fn python_client_sees(addr: &str, mode: &str) -> Option<Value> {
    let mut command = python_http_client(&format!("http://{addr}/mcp"), mode)?;
    let output = tokio::task::spawn_blocking(move || command.output()).await.expect("joined").expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{mode}: {}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    Some(serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{mode}: {e}: {stdout}")))
}

#[tokio::test]
async fn python_sdk_client_speaks_modern_streamable_http_to_the_fake() {
    python_client_against_fake("auto", "2026-07-28").await;
}

#[tokio::test]
async fn python_sdk_client_speaks_legacy_streamable_http_to_the_fake() {
    python_client_against_fake("legacy", "2025-11-25").await;
}
