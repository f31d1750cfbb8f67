//! A notification for one agent session (`Front::notify_session`, how a gateway hands a subscribed agent its
//! `notifications/resources/updated`): it reaches that session's GET stream and no other's, and the core's client
//! hands the updated URI to its `watch_resources` hook.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::client::ResourceUpdated;
use mcpstorm_core::mcp::method;
use mcpstorm_core::{CallOptions, McpClient};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{http_client, start_default};

/// A 2025-11-25 agent, its session's id as the service knows it, and the URIs of the updates it gets.
async fn watcher(addr: &str) -> (McpClient, String, mpsc::Receiver<String>) {
    let client = http_client(addr, true);
    let (tx, rx) = mpsc::channel(8);
    client.watch_resources(ResourceUpdated(Arc::new(move |uri: &str| {
        let _ = tx.try_send(uri.to_owned());
    })));
    let me = client.call_tool("whoami", json!({}), CallOptions::default()).await.expect("whoami");
    let me: Value = serde_json::from_str(&me.joined_text()).expect("whoami JSON");
    let session = me["session"].as_str().expect("a 2025-11-25 session").to_owned();
    (client, session, rx)
}

#[tokio::test]
async fn a_notification_for_one_session_reaches_its_get_stream_only() {
    let (_echo, front, addr) = start_default().await;
    let (a, a_session, mut a_updates) = watcher(&addr).await;
    let (b, b_session, mut b_updates) = watcher(&addr).await;
    assert_ne!(a_session, b_session);
    // Each client opens its GET stream after the handshake; until both are there, a notice may reach no one.
    while front.notify_all("notifications/resources/list_changed", None) < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    front.notify_session(&a_session, method::RESOURCES_UPDATED, Some(json!({"uri": "test://for-a"})));
    front.notify_session(&b_session, method::RESOURCES_UPDATED, Some(json!({"uri": "test://for-b"})));
    assert_eq!(a_updates.recv().await.as_deref(), Some("test://for-a"));
    // b's stream carries both notices in the order they were sent: had a's reached b, it would come first.
    assert_eq!(b_updates.recv().await.as_deref(), Some("test://for-b"));
    front.notify_session("no-such-session", method::RESOURCES_UPDATED, Some(json!({"uri": "test://nobody"})));
    front.notify_session(&a_session, method::RESOURCES_UPDATED, Some(json!({"uri": "test://again"})));
    assert_eq!(a_updates.recv().await.as_deref(), Some("test://again"));
    assert!(b_updates.try_recv().is_err());
    a.close().await;
    b.close().await;
}
