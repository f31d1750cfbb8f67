//! Wire-level behaviour: exact frames in, exact frames out.

use std::time::Duration;

use mcpstorm_core::mcp::LATEST_PROTOCOL_VERSION;
use serde_json::json;

use super::*;

fn init_params(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}})
}

#[tokio::test(start_paused = true)]
async fn initialize_negotiates_the_version_and_basic_methods_answer() {
    let mut raw = Raw::connect(&FakeServer::builtin());
    let r = raw.roundtrip(1, "initialize", init_params("2025-06-18")).await;
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(r["result"]["capabilities"], json!({"tools": {"listChanged": true}}));
    assert_eq!(r["result"]["serverInfo"], json!({"name": "mcpstorm-fake", "version": "1.0.0"}));
    let r = raw.roundtrip(2, "initialize", init_params("1999-01-01")).await;
    assert_eq!(r["result"]["protocolVersion"], LATEST_PROTOCOL_VERSION);
    let r = raw.roundtrip(3, "initialize", json!({})).await;
    assert_eq!(r["error"]["code"], -32602);
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(raw.roundtrip(4, "ping", json!({})).await, json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
    let r = raw.roundtrip(5, "resources/list", json!({})).await;
    assert_eq!(r["error"]["code"], -32601);
    // String ids are echoed as they came.
    raw.send(json!({"jsonrpc": "2.0", "id": "s-1", "method": "ping"})).await;
    assert_eq!(raw.recv().await["id"], "s-1");
}

#[tokio::test(start_paused = true)]
async fn tools_list_pages_with_cursors_and_rejects_bad_ones() {
    let tools = (0..5).map(|i| ToolConfig::new(format!("t{i}"))).collect();
    let mut raw = Raw::connect(&server(FakeServerConfig { page_size: Some(2), ..config(tools) }));
    let names = |r: &Value| -> Vec<String> {
        r["result"]["tools"].as_array().map(|a| a.iter().map(|t| t["name"].to_string()).collect()).unwrap_or_default()
    };
    let r = raw.roundtrip(1, "tools/list", json!({})).await;
    assert_eq!((names(&r), &r["result"]["nextCursor"]), (vec!["\"t0\"".into(), "\"t1\"".into()], &json!("2")));
    let r = raw.roundtrip(2, "tools/list", json!({"cursor": "2"})).await;
    assert_eq!((names(&r), &r["result"]["nextCursor"]), (vec!["\"t2\"".into(), "\"t3\"".into()], &json!("4")));
    let r = raw.roundtrip(3, "tools/list", json!({"cursor": "4"})).await;
    assert_eq!(names(&r), vec!["\"t4\"".to_owned()]);
    assert!(r["result"].get("nextCursor").is_none(), "{r}");
    for (id, cursor) in [(4, json!("bogus")), (5, json!("5")), (6, json!(2))] {
        let r = raw.roundtrip(id, "tools/list", json!({"cursor": cursor})).await;
        assert_eq!(r["error"]["code"], -32602, "cursor {cursor}: {r}");
    }
}

#[tokio::test(start_paused = true)]
async fn responses_on_one_connection_leave_in_completion_order() {
    let fake = server(config(vec![fixed("a", 30.0), fixed("b", 20.0), fixed("c", 10.0)]));
    let mut raw = Raw::connect(&fake);
    for (id, tool) in [(1, "a"), (2, "b"), (3, "c")] {
        raw.request(id, "tools/call", json!({"name": tool, "arguments": {}})).await;
    }
    let mut order = Vec::new();
    for _ in 0..3 {
        order.push(raw.recv().await["id"].as_i64().unwrap_or(-1));
    }
    assert_eq!(order, [3, 2, 1]);
}

#[tokio::test(start_paused = true)]
async fn call_errors_follow_real_servers() {
    let fake = FakeServer::builtin();
    let mut raw = Raw::connect(&fake);
    let r = raw.roundtrip(1, "tools/call", json!({"name": "nope", "arguments": {}})).await;
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(r["result"]["content"][0]["text"], "Unknown tool: nope");
    let r = raw.roundtrip(2, "tools/call", json!({"name": "echo", "arguments": 5})).await;
    assert_eq!(r["error"]["code"], -32602);
    let r = raw.roundtrip(3, "tools/call", json!({"arguments": {}})).await;
    assert_eq!(r["error"]["code"], -32602);
    let r = raw.roundtrip(4, "tools/call", json!({"name": "echo", "arguments": {}})).await;
    assert_eq!(r["result"]["isError"], true);
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("missing required argument `message`"), "{text}");
    let r = raw.roundtrip(5, "tools/call", json!({"name": "sleep_ms", "arguments": {"ms": "soon"}})).await;
    assert_eq!(r["result"]["isError"], true);
    let stats = fake.stats();
    assert_eq!((stats.received, stats.errored, stats.completed), (5, 5, 0));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_is_never_answered() {
    let fake = FakeServer::builtin();
    let mut raw = Raw::connect(&fake);
    raw.request(1, "tools/call", json!({"name": "sleep_ms", "arguments": {"ms": 100}})).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})).await;
    assert_eq!(raw.recv_within(Duration::from_millis(500)).await, None);
    // Cancelling something unknown or malformed is ignored, and the connection carries on.
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}})).await;
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"nope": true}})).await;
    assert_eq!(raw.roundtrip(2, "ping", json!({})).await["result"], json!({}));
    let stats = fake.stats();
    assert_eq!((stats.cancelled, stats.completed, stats.in_progress), (1, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn progress_needs_a_token_and_echoes_it() {
    let mut raw = Raw::connect(&FakeServer::builtin());
    let args = json!({"steps": 2, "step_ms": 10});
    let r = raw.roundtrip(1, "tools/call", json!({"name": "slow_progress", "arguments": args})).await;
    assert_eq!(r["result"]["content"][0]["text"], "done 2 steps");
    let meta = json!({"progressToken": "tok"});
    raw.request(2, "tools/call", json!({"name": "slow_progress", "arguments": args, "_meta": meta})).await;
    for k in [1, 2] {
        let note = raw.recv().await;
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], "tok");
        assert_eq!((&note["params"]["progress"], &note["params"]["total"]), (&json!(k as f64), &json!(2.0)));
    }
    assert_eq!(raw.recv().await["id"], 2);
}

#[tokio::test(start_paused = true)]
async fn malformed_frames_are_answered_per_spec_and_the_connection_survives() {
    let fake = FakeServer::builtin().with_max_frame(256);
    let mut raw = Raw::connect(&fake);
    let cases: [(&[u8], Value, i64); 6] = [
        (b"this is not json", Value::Null, -32700),
        (b"\xff\xfe", Value::Null, -32700),
        (br#"{"jsonrpc":"2.0","id":7,"method":5}"#, json!(7), -32600),
        (br#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#, json!("a"), -32600),
        (b"[1,2]", Value::Null, -32600),
        (&[b'x'; 1000], Value::Null, -32600),
    ];
    for (frame, id, code) in cases {
        raw.send_bytes(frame).await;
        let r = raw.recv().await;
        assert_eq!((&r["id"], &r["error"]["code"]), (&id, &json!(code)), "{}: {r}", String::from_utf8_lossy(frame));
        assert!(r["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{r}");
    }
    assert_eq!(raw.roundtrip(8, "ping", json!({})).await["result"], json!({}));
    let r = raw.roundtrip(9, "tools/call", json!({"name": "echo", "arguments": {"message": "still here"}})).await;
    assert_eq!(r["result"]["content"][0]["text"], "still here");
    assert_eq!(fake.stats().rejected_frames, 6);
}

#[tokio::test(start_paused = true)]
async fn a_reused_request_id_is_refused_while_in_flight() {
    let mut raw = Raw::connect(&FakeServer::builtin());
    raw.request(1, "tools/call", json!({"name": "sleep_ms", "arguments": {"ms": 50}})).await;
    let r = raw.roundtrip(1, "ping", json!({})).await;
    assert_eq!(r["error"]["code"], -32600);
    let r = raw.recv().await;
    assert_eq!((&r["id"], &r["result"]["content"][0]["text"]), (&json!(1), &json!("slept 50ms")));
}

#[tokio::test(start_paused = true)]
async fn requests_in_flight_per_connection_are_bounded() {
    let fake = FakeServer::builtin();
    fake.control().set_hung(true);
    let mut raw = Raw::connect(&fake);
    // Nothing is answered while hung, so every ping stays in flight until the table is full.
    for id in 0..4096 {
        raw.request(id, "ping", json!({})).await;
    }
    let r = raw.roundtrip(4096, "ping", json!({})).await;
    assert_eq!(r["error"]["code"], -32000, "{r}");
    fake.control().set_hung(false);
    for _ in 0..4096 {
        assert_eq!(raw.recv().await["result"], json!({}));
    }
}
