//! The core's own client through the front: Streamable HTTP in both eras and stdio, with progress, cancellation,
//! a broadcast `list_changed`, and a service panic that costs one request.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcpstorm_core::mcp::{CallToolResult, ProgressParams};
use mcpstorm_core::serve::{FrontLimits, Keys};
use mcpstorm_core::session::Era;
use mcpstorm_core::{CallError, CallOptions, CancelToken, LocalError, McpClient, SeededRng};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Echo, StdioPipe, http_client, start_default, test_config};

fn whoami(result: &CallToolResult) -> Value {
    serde_json::from_str(&result.joined_text()).expect("whoami JSON")
}

/// Calls `echo` asking for progress: the text back and both progress notifications.
async fn echo_with_progress(client: &McpClient) {
    let (tx, mut rx) = mpsc::channel::<ProgressParams>(8);
    let opts = CallOptions { progress: Some(tx), ..CallOptions::default() };
    let result = client.call_tool("echo", json!({"text": "hello"}), opts).await.expect("echo");
    assert_eq!(result.joined_text(), "hello");
    let mut steps = Vec::new();
    while let Ok(p) = rx.try_recv() {
        steps.push((p.progress, p.message));
    }
    assert_eq!(steps, [(1.0, Some("step 1".to_owned())), (2.0, Some("step 2".to_owned()))]);
}

/// A `hold` call cancelled by the client reaches the service as a cancellation.
async fn cancelled_hold(client: &Arc<McpClient>, echo: &Echo) {
    let cancel = CancelToken::new();
    let opts = CallOptions { cancel: Some(cancel.clone()), ..CallOptions::default() };
    let c = client.clone();
    let call = tokio::spawn(async move { c.call_tool("hold", json!({}), opts).await });
    echo.until_held().await;
    cancel.cancel("the test cancels");
    let err = call.await.expect("join").expect_err("cancelled");
    assert!(matches!(err, CallError::Local(LocalError::Cancelled(_))), "{err:?}");
    echo.until_cancelled().await;
}

#[tokio::test]
async fn a_2025_11_25_session_over_http_carries_progress_and_cancellation() {
    let (echo, front, addr) = start_default().await;
    let client = Arc::new(http_client(&addr, true));
    let me = whoami(&client.call_tool("whoami", json!({}), CallOptions::default()).await.expect("whoami"));
    assert_eq!((me["era"].as_str(), me["version"].as_str()), (Some("legacy"), Some("2025-11-25")));
    assert!(me["session"].as_str().is_some_and(|s| s.len() == 32), "the session's nonce: {me}");
    assert_eq!(client.session().await.expect("session").era, Era::Legacy);
    echo_with_progress(&client).await;
    cancelled_hold(&client, &echo).await;
    assert_eq!(client.list_tools().await.expect("tools").len(), 4);
    assert_eq!(front.live_sessions(), 1);
    client.close().await;
}

#[tokio::test]
async fn a_2026_07_28_client_is_served_without_a_session() {
    let (echo, _front, addr) = start_default().await;
    let client = Arc::new(http_client(&addr, false));
    let me = whoami(&client.call_tool("whoami", json!({}), CallOptions::default()).await.expect("whoami"));
    assert_eq!(me["era"], "modern");
    assert_eq!(me["version"], "2026-07-28");
    assert_eq!(me["session"], Value::Null);
    assert_eq!(client.session().await.expect("session").era, Era::Modern);
    echo_with_progress(&client).await;
    // Cancelling closes the request's stream: the front cancels the request.
    cancelled_hold(&client, &echo).await;
}

#[tokio::test]
async fn a_service_panic_costs_one_request_and_the_session_goes_on() {
    let (_echo, _front, addr) = start_default().await;
    let client = http_client(&addr, true);
    let err = client.call_tool("boom", json!({}), CallOptions::default()).await.expect_err("a JSON-RPC error");
    assert!(matches!(&err, CallError::Protocol(e) if e.code == -32603), "{err:?}");
    let again = client.call_tool("echo", json!({"text": "still here"}), CallOptions::default()).await;
    assert_eq!(again.expect("echo").joined_text(), "still here");
}

#[tokio::test]
async fn list_changed_reaches_a_2025_11_25_agent_on_its_get_stream() {
    let (_echo, front, addr) = start_default().await;
    let client = http_client(&addr, true);
    let before = client.capabilities().await.expect("capabilities");
    // The client opens its GET stream after the handshake; until it is there, a broadcast reaches no one.
    while front.notify_all("notifications/tools/list_changed", None) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The client re-lists on `list_changed`: a new capability record replaces the one it had.
    loop {
        let now = client.capabilities().await.expect("capabilities");
        if !Arc::ptr_eq(&now, &before) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn stdio_serves_both_eras_with_progress_and_cancellation() {
    let echo = Echo::new();
    let front = mcpstorm_core::serve::Front::new(
        Arc::new(echo.clone()),
        Keys::random().unwrap(),
        FrontLimits::default(),
        super::clock(),
    )
    .expect("front");
    for (legacy, era) in [(true, "legacy"), (false, "modern")] {
        let dialer = Arc::new(StdioPipe(front.clone()));
        let client = Arc::new(McpClient::new("front", dialer, test_config(legacy), SeededRng::new(1)));
        let me = whoami(&client.call_tool("whoami", json!({}), CallOptions::default()).await.expect("whoami"));
        assert_eq!((me["era"].as_str(), me["session"].as_str()), (Some(era), Some("stdio")), "{me}");
        echo_with_progress(&client).await;
        echo.0.held.store(0, Ordering::SeqCst);
        echo.0.cancelled.store(0, Ordering::SeqCst);
        cancelled_hold(&client, &echo).await;
        client.close().await;
    }
}

/// Raw NDJSON through a pipe: a garbage line costs an error reply, and a broadcast reaches the stdio peer.
#[tokio::test]
async fn stdio_answers_garbage_and_relays_broadcasts() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let front = super::start_default().await.1;
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (reader, writer) = tokio::io::split(theirs);
    let serving = tokio::spawn({
        let front = front.clone();
        async move { front.serve_stdio(reader, writer).await }
    });
    let (read, mut write) = tokio::io::split(ours);
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"{not json\n").await.unwrap();
    let reply: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(reply["error"]["code"], -32700);
    write.write_all(format!("{}\n", super::initialize_body(1)).as_bytes()).await.unwrap();
    let init: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "echo-front");
    assert!(front.notify_all("notifications/tools/list_changed", None) >= 1, "the stdio peer listens");
    let note: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(note["method"], "notifications/tools/list_changed");
    // The agent closes its end: the front is done with it.
    write.shutdown().await.unwrap();
    serving.await.unwrap();
}
