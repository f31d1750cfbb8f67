//! Log messages through the front, with the core's own client over HTTP: a 2025-11-25 session's level is what its
//! `logging/setLevel` set, a 2026-07-28 request's is in its `_meta`; an agent gets only what its level admits, on
//! the request's stream, and the client hands each message to the call it came with.

use mcpstorm_core::jsonrpc::ErrorCode;
use mcpstorm_core::mcp::logging::{LogLevel, LogSink};
use mcpstorm_core::{CallError, CallOptions, McpClient};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{http_client, start_default};

/// An `echo` call asking for log messages at `level`: the messages that reached it.
async fn echo_logs(client: &McpClient, level: LogLevel) -> Vec<Value> {
    let (tx, mut rx) = mpsc::channel(8);
    let opts = CallOptions { logs: Some(LogSink { level, tx }), ..CallOptions::default() };
    let result = client.call_tool("echo", json!({"text": "hi"}), opts).await.expect("echo");
    assert_eq!(result.joined_text(), "hi");
    let mut got = Vec::new();
    while let Ok(message) = rx.try_recv() {
        got.push(message);
    }
    got
}

fn message(level: &str) -> Value {
    json!({"level": level, "data": format!("echo {level}")})
}

#[tokio::test]
async fn a_2025_11_25_session_gets_the_log_messages_of_the_level_it_set() {
    let (_echo, _front, addr) = start_default().await;
    let client = http_client(&addr, true);
    assert_eq!(echo_logs(&client, LogLevel::Debug).await, [] as [Value; 0], "no level set yet: no message");
    let session = client.session().await.expect("session");
    let set = |level: &str| {
        let params = json!({"level": level});
        let conn = session.conn.clone();
        async move { conn.request("logging/setLevel", Some(params), CallOptions::default()).await }
    };
    let refused = set("loud").await.expect_err("not a level");
    assert!(matches!(&refused, CallError::Protocol(e) if e.code() == ErrorCode::INVALID_PARAMS), "{refused:?}");
    assert_eq!(set("info").await.expect("set"), json!({}));
    // The session's level decides, not the one the request's `_meta` carries.
    assert_eq!(echo_logs(&client, LogLevel::Debug).await, [message("info")]);
    assert_eq!(set("debug").await.expect("set"), json!({}));
    assert_eq!(echo_logs(&client, LogLevel::Debug).await, [message("debug"), message("info")]);
    client.close().await;
}

#[tokio::test]
async fn a_2026_07_28_request_gets_the_log_messages_of_its_own_level() {
    let (_echo, _front, addr) = start_default().await;
    let client = http_client(&addr, false);
    assert_eq!(echo_logs(&client, LogLevel::Info).await, [message("info")]);
    assert_eq!(echo_logs(&client, LogLevel::Debug).await, [message("debug"), message("info")]);
    assert_eq!(echo_logs(&client, LogLevel::Error).await, [] as [Value; 0]);
    let plain = client.call_tool("echo", json!({"text": "quiet"}), CallOptions::default()).await.expect("echo");
    assert_eq!(plain.joined_text(), "quiet", "a request without a level: no message, and its answer as before");
    client.close().await;
}
