//! The runtime control handle: the knobs the fault timeline turns.

use std::time::Duration;

use mcpstorm_core::{CallError, CallOptions, LocalError};
use serde_json::json;
use tokio::time::Instant;

use super::*;

#[tokio::test(start_paused = true)]
async fn hang_withholds_every_answer_until_unhung() {
    let fake = FakeServer::builtin();
    let control = fake.control();
    let client = client(&fake);
    assert_eq!(call_ok(&client, "echo", json!({"message": "a"})).await, "a");
    control.set_hung(true);
    assert!(control.is_hung());
    let opts = CallOptions { first_response: Some(Duration::from_millis(500)), ..CallOptions::default() };
    let outcome = client.call_tool("echo", json!({"message": "b"}), opts).await;
    assert!(matches!(outcome, Err(CallError::Local(LocalError::FirstResponseTimeout(_)))), "{outcome:?}");
    control.set_hung(false);
    assert_eq!(call_ok(&client, "echo", json!({"message": "c"})).await, "c");
}

#[tokio::test(start_paused = true)]
async fn answers_held_during_a_hang_are_sent_when_it_ends() {
    let fake = FakeServer::builtin();
    let mut raw = Raw::connect(&fake);
    fake.control().set_hung(true);
    raw.request(1, "ping", json!({})).await;
    raw.request(2, "tools/call", json!({"name": "sleep_ms", "arguments": {"ms": 10}})).await;
    assert_eq!(raw.recv_within(Duration::from_secs(1)).await, None);
    assert_eq!(fake.stats().in_progress, 1, "a hung call keeps its worker");
    fake.control().set_hung(false);
    let mut ids = [raw.recv().await["id"].clone(), raw.recv().await["id"].clone()];
    ids.sort_by_key(|v| v.as_i64());
    assert_eq!(ids, [json!(1), json!(2)]);
}

#[tokio::test(start_paused = true)]
async fn error_rate_override_and_latency_knobs() {
    let fake = server(config(vec![fixed("t", 50.0)]));
    let control = fake.control();
    let client = client(&fake);
    client.list_tools().await.expect("tools/list");

    control.set_error_rate(Some(1.0));
    assert!(call(&client, "t", json!({})).await.expect("result").is_error);
    control.set_error_rate(None);
    assert!(!call(&client, "t", json!({})).await.expect("result").is_error);

    let timed = |client: Arc<McpClient>| async move {
        let start = Instant::now();
        let text = call_ok(&client, "t", json!({})).await;
        (ms_since(start), text)
    };
    control.set_latency_multiplier(2.0);
    assert_eq!(timed(client.clone()).await, (100, "ok t 100ms".to_owned()));
    control.set_extra_latency(Duration::from_millis(30));
    assert_eq!(timed(client.clone()).await.0, 130);
    assert_eq!(control.faults().extra_latency, Duration::from_millis(30));
    control.reset();
    assert_eq!(timed(client.clone()).await.0, 50);
}

#[tokio::test(start_paused = true)]
async fn workers_can_be_resized_at_runtime() {
    let fake = builtin_with_workers(1);
    let control = fake.control();
    let client = client(&fake);
    client.list_tools().await.expect("tools/list");
    let three = |client: Arc<McpClient>| async move {
        let start = Instant::now();
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move { call_ok(&client, "sleep_ms", json!({"ms": 50})).await })
            })
            .collect();
        for task in tasks {
            task.await.expect("call task");
        }
        ms_since(start)
    };
    control.set_workers(Some(3));
    assert_eq!(control.workers(), Some(3));
    assert_eq!(three(client.clone()).await, 50);
    control.set_workers(Some(1));
    assert_eq!(three(client.clone()).await, 150);
    control.set_workers(None);
    assert_eq!(three(client.clone()).await, 50);
}
