//! Resource subscriptions through `mcpstorm gateway`, end to end, against server-everything (over stdio, which the
//! gateway speaks 2025-11-25 to; its `toggle-subscriber-updates` tool makes it send `notifications/resources/updated`
//! for what its client subscribed to, at once and then every 5 seconds). Agents are the core's own client over
//! Streamable HTTP: 2025-11-25 agents subscribe and get the updates on their GET streams; a hidden resource is
//! refused as on read; a 2026-07-28 agent has no `resources/subscribe`; an agent that unsubscribed gets nothing more;
//! and when the server's process is killed, the gateway subscribes again on the new one. A 2026-07-28 agent (the
//! Python SDK's client) listens instead (`subscriptions/listen`) and gets its updates on that stream.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::client::ResourceUpdated;
use mcpstorm_core::jsonrpc::ErrorCode;
use mcpstorm_core::session::EraMode;
use mcpstorm_core::{CallError, CallOptions, ClientConfig, HttpEndpoint, McpClient, SeededRng};
use mcpstorm_tests::real_servers::{everything_server, python_http_client, repo_root};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::gateway::gateway;

/// Bounds each wait for an update, so that a broken relay fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(60);

/// An agent of `era_mode` whose resource updates come to the receiver.
fn agent(url: &str, era_mode: EraMode) -> (McpClient, mpsc::Receiver<String>) {
    let config = ClientConfig { era_mode, ..ClientConfig::default() };
    let client = McpClient::http("agent", HttpEndpoint::new(url).expect("url"), config, SeededRng::new(1));
    let (tx, rx) = mpsc::channel(64);
    client.watch_resources(ResourceUpdated(Arc::new(move |uri: &str| {
        let _ = tx.try_send(uri.to_owned());
    })));
    (client, rx)
}

async fn request(agent: &McpClient, method: &str, params: Value) -> Result<Value, CallError> {
    let session = agent.session().await.expect("session");
    session.conn.request(method, Some(params), CallOptions::default()).await
}

fn code(outcome: Result<Value, CallError>) -> Result<ErrorCode, String> {
    match outcome {
        Err(CallError::Protocol(e)) => Ok(e.code()),
        other => Err(format!("{other:?}")),
    }
}

async fn next_update(updates: &mut mpsc::Receiver<String>) -> String {
    let update = tokio::time::timeout(PATIENCE, updates.recv()).await;
    update.expect("an update within the patience bound").expect("the agent's hook is alive")
}

fn drain(updates: &mut mpsc::Receiver<String>) -> usize {
    std::iter::from_fn(|| updates.try_recv().ok()).count()
}

/// Turns server-everything's updates on (for the server process the gateway now talks to), trying again while the
/// gateway reconnects to a server process that was killed.
async fn updates_on(agent: &McpClient) {
    for _ in 0..100 {
        let toggled = agent.call_tool("toggle-subscriber-updates", json!({}), CallOptions::default()).await;
        if toggled.as_ref().is_ok_and(|r| !r.is_error && r.joined_text().starts_with("Started")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("toggle-subscriber-updates never started the updates");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribed_agents_get_the_updates_and_a_restarted_server_is_subscribed_again() {
    peer_or_skip!(everything_server());
    let script = repo_root().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let pid_file = std::env::temp_dir().join(format!("mcpstorm-subscriptions-{}.pid", std::process::id()));
    // The shell writes its PID, then becomes the server: the PID is the server's, for the test to kill.
    let command = format!("sh -c 'echo $$ > {}; exec node {} stdio'", pid_file.display(), script.display());
    let servers = format!(
        "[[servers]]\nname = \"everything\"\nresources.deny = [\"*/architecture.md\"]\n\
         [[servers.replicas]]\nstdio = {command:?}\n"
    );
    let (mut process, url) = gateway(&servers).await;
    let (a, mut a_updates) = agent(&url, EraMode::Legacy);
    let (b, mut b_updates) = agent(&url, EraMode::Legacy);
    let (modern, _) = agent(&url, EraMode::Auto);

    let uri = "demo://resource/static/document/features.md";
    let hidden = "demo://resource/static/document/architecture.md";
    assert_eq!(
        code(request(&a, "resources/subscribe", json!({"uri": hidden})).await),
        Ok(ErrorCode::RESOURCE_NOT_FOUND)
    );
    let refused = request(&modern, "resources/subscribe", json!({"uri": uri})).await;
    assert_eq!(code(refused), Ok(ErrorCode::METHOD_NOT_FOUND), "2026-07-28 has subscriptions/listen instead");
    let init = a.session().await.expect("session");
    assert_eq!(init.init.capabilities.pointer("/resources/subscribe"), Some(&json!(true)));
    for agent in [&a, &b] {
        assert_eq!(request(agent, "resources/subscribe", json!({"uri": uri})).await.expect("subscribe"), json!({}));
    }

    updates_on(&a).await;
    assert_eq!(next_update(&mut a_updates).await, uri);
    assert_eq!(next_update(&mut b_updates).await, uri, "both subscribers, one upstream subscription");

    assert_eq!(request(&b, "resources/unsubscribe", json!({"uri": uri})).await.expect("unsubscribe"), json!({}));
    // Kill the server: its subscription and its updates' timer die with it.
    let pid = std::fs::read_to_string(&pid_file).expect("the server's PID");
    let killed = std::process::Command::new("kill").arg("-9").arg(pid.trim()).status().expect("kill");
    assert!(killed.success());
    let alive = || {
        let mut probe = std::process::Command::new("kill");
        probe.arg("-0").arg(pid.trim()).stderr(std::process::Stdio::null());
        probe.status().is_ok_and(|s| s.success())
    };
    while alive() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drain(&mut a_updates);
    drain(&mut b_updates);
    // The new server process sends updates only for what is subscribed on it: only what the gateway subscribed
    // again.
    updates_on(&a).await;
    assert_eq!(next_update(&mut a_updates).await, uri);
    assert_eq!(next_update(&mut a_updates).await, uri);
    assert_eq!(drain(&mut b_updates), 0, "b unsubscribed");

    let _ = std::fs::remove_file(&pid_file);
    for agent in [a, b, modern] {
        agent.close().await;
    }
    process.stop().await;
}

/// A 2026-07-28 agent nobody here wrote (the Python SDK's client, `tests/peers/py_listen_client.py`) listens
/// (`subscriptions/listen`) for a resource of server-everything through the gateway: the acknowledgement honours the
/// resource and tool list changes, and the server's update reaches the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_agent_listens_for_a_resource_through_the_gateway() {
    peer_or_skip!(everything_server());
    peer_or_skip!(python_http_client("http://127.0.0.1:1/mcp", "auto"));
    let script = repo_root().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let servers =
        format!("[[servers]]\nname = \"everything\"\n[[servers.replicas]]\nstdio = \"node {}\"\n", script.display());
    let (mut process, url) = gateway(&servers).await;
    let uri = "demo://resource/static/document/features.md";
    let python = std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut client = std::process::Command::new(python);
    client.arg(repo_root().join("tests/peers/py_listen_client.py")).args([url.as_str(), uri]);
    let output = tokio::task::spawn_blocking(move || client.output()).await.expect("join").expect("run the agent");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(seen["protocol_version"], "2026-07-28", "{seen}");
    assert_eq!(seen["honored"], json!({ "toolsListChanged": true, "resourceSubscriptions": [uri] }), "{seen}");
    assert_eq!((seen["event"].as_str(), seen["uri"].as_str()), (Some("ResourceUpdated"), Some(uri)), "{seen}");
    process.stop().await;
}
